from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from browser_support import ChatPage
    from playwright.sync_api import Browser

HERE = Path(__file__).resolve().parent
NO_PLAYWRIGHT = "the browser tests need the playwright package: pip install -e '.[dev]'"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    pytest.importorskip("playwright", reason=NO_PLAYWRIGHT)
    from browser_support import CHROMIUM_ARGS, chromium_path
    from playwright.sync_api import expect, sync_playwright

    executable = chromium_path()
    if executable is None:
        pytest.skip("the browser tests need Chromium: apt-get install chromium (or set TOOLWIRE_CHROMIUM)")
    expect.set_options(timeout=15_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def server(chromium: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the module's browser tests; each test's fresh browser context starts its own conversation."""
    from browser_support import serve

    with serve(tmp_path_factory.mktemp("browser-server")) as url:
        yield url


@pytest.fixture
def artifacts(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where a test saves its screenshots: `TOOLWIRE_BROWSER_ARTIFACTS/<test>` when set, else `tmp_path`."""
    root = os.environ.get("TOOLWIRE_BROWSER_ARTIFACTS")
    if not root:
        return tmp_path
    path = Path(root) / request.node.name
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def chat(chromium: Browser, server: str, artifacts: Path) -> Iterator[ChatPage]:
    """The chat page in a fresh browser context (empty storage); no console error or warning allowed."""
    from browser_support import ChatPage

    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = ChatPage(context.new_page(), server, artifacts)
    page.watch()
    try:
        yield page
    finally:
        context.close()
    assert not page.problems, "the page reported problems:\n" + "\n".join(page.problems)
