"""The documentation site (mkdocs.yml) builds with `--strict`, and every page of docs/ is in its nav.

A strict build fails on a broken link or anchor, a page left out of the nav, and an API reference
(`::: toolwire...`) that names nothing or whose docstring griffe cannot read, so a change to the
code or the pages that breaks the site fails here rather than on the next publication.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings_handlers") is None:
    pytest.skip(
        "needs mkdocs-material and mkdocstrings-python: pip install -e '.[dev]' (make setup does)",
        allow_module_level=True,
    )


def nav_pages(nav: Any) -> list[str]:
    """The page files a nav (a list of pages, titled pages and titled sections) names, in order."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in nav_pages(item)]
    assert isinstance(nav, dict)
    return [page for value in nav.values() for page in nav_pages(value)]


def load_config() -> dict[str, Any]:
    from mkdocs.config import load_config

    return dict(load_config(str(ROOT / "mkdocs.yml")))


def test_every_page_of_docs_is_in_the_nav() -> None:
    pages = nav_pages(load_config()["nav"])
    on_disk = sorted(str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md"))
    assert sorted(pages) == on_disk, "add the page to `nav:` in mkdocs.yml (or remove the nav entry)"
    assert len(pages) == len(set(pages)), "a page is in the nav twice"


def documented() -> list[object]:
    """The objects the reference's `::: toolwire...` directives name, and the public names of the modules they name."""
    objects: list[object] = []
    for page in sorted((DOCS / "reference").glob("*.md")):
        for path in re.findall(r"^::: (toolwire[\w.]*)$", page.read_text(), re.M):
            module_name, found = path, None
            while found is None:
                try:
                    found = importlib.import_module(module_name)
                except ModuleNotFoundError:
                    module_name = module_name.rpartition(".")[0]
            for attribute in path.removeprefix(module_name).split(".")[1:]:
                found = getattr(found, attribute)
            objects.append(found)
            objects += [getattr(found, name) for name in getattr(found, "__all__", [])]
    return objects


def test_every_public_name_is_in_the_reference() -> None:
    import toolwire

    known = documented()
    missing = [name for name in toolwire.__all__ if not any(getattr(toolwire, name) is obj for obj in known)]
    assert not missing, f"add `::: MODULE.NAME` for these to a page of docs/reference/: {missing}"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # the notice of Material's end of life
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, f"`mkdocs build --strict` failed:\n{done.stdout}\n{done.stderr}"
    assert "WARNING" not in done.stderr, done.stderr
    agent = (tmp_path / "site" / "reference" / "agent" / "index.html").read_text()
    assert "Drive a model" in agent  # the reference is rendered from the docstrings
