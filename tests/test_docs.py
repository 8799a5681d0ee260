"""The README's quick start and the examples work as documented."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_quick_start_prints_what_the_readme_says():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    code, expected = re.findall(r"```(?:python)?\n(.*?)```", section, re.S)[:2]
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert completed.stdout == expected


def test_example_shows_every_outcome_type():
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    outcomes = set(re.findall(r"-> (\w+):", completed.stdout))
    assert outcomes == {"SUCCESS", "ERROR", "CANCELED", "TIMEOUT", "DENIED"}


def test_client_tools_example_prints_what_docs_client_tools_shows():
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "client_tools.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    page = (ROOT / "docs" / "client-tools.md").read_text()
    shown = re.findall(r"```text\n(.*?)```", page, re.S)[0]
    assert completed.stdout == shown
