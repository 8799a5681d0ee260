"""docs/client.md's example runs against a real server and prints what the page shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from client_support import TOKEN, Server

PAGE = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def test_the_example_prints_what_the_page_shows(server: Server) -> None:
    page = PAGE.read_text()
    code = re.findall(r"```python\n(.*?)```", page, re.S)[0]
    shown = re.findall(r"```text\n(.*?)```", page, re.S)[0]
    env = {**os.environ, "TOOLWIRE_URL": server.url, "TOOLWIRE_TOKEN": TOKEN}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown
