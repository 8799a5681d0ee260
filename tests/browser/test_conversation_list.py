"""The chat page's conversation list follows the server's (`GET /conversations`) and deletes there too.

A module of its own: its server's conversations are only the ones these tests make.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("playwright", reason="the browser tests need the playwright package: pip install -e '.[dev]'")

from browser_support import TOKEN, ChatPage
from playwright.sync_api import Browser, BrowserContext, expect


def listed(server: str) -> list[dict[str, object]]:
    """What `GET /conversations` lists for the page's token."""
    request = urllib.request.Request(f"{server}/conversations", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())["conversations"]


@pytest.fixture
def tab(chromium: Browser, server: str, artifacts: Path) -> Iterator[Callable[[], ChatPage]]:
    """Open the chat page in a fresh browser context (its own storage: another browser, as far as the page knows)."""
    opened: list[tuple[ChatPage, BrowserContext]] = []

    def open_tab() -> ChatPage:
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = ChatPage(context.new_page(), server, artifacts)
        page.watch()
        page.page.on("dialog", lambda dialog: dialog.accept())  # "Delete …?": yes
        opened.append((page, context))
        return page

    yield open_tab
    for page, context in opened:
        context.close()
        assert not page.problems, "the page reported problems:\n" + "\n".join(page.problems)


def test_the_list_shows_a_conversation_made_elsewhere_and_deletes_it_on_the_server(
    tab: Callable[[], ChatPage], server: str
) -> None:
    first = tab()
    first.open()
    first.send("tools please")
    expect(first.answer()).to_contain_text("Offered: Page, get_weather")
    first.page.context.close()  # that browser is gone; only the server remembers its conversation
    [made] = [item for item in listed(server) if item["title"] == "tools please"]

    other = tab()
    other.open()
    entry = other.page.locator("#conversation-list li", has_text="tools please")
    expect(entry).to_have_count(1)  # not in this browser's storage: from the server's list
    entry.locator("button.conversation").click()
    other.wait_ready()
    expect(other.page.locator("#timeline .entry.user")).to_have_count(1)
    expect(other.page.locator("#timeline .entry.user")).to_contain_text("tools please")
    expect(other.answer()).to_contain_text("Offered: Page, get_weather")  # its transcript, from the server
    other.screenshot("opened-from-the-server")

    entry.get_by_role("button", name="Delete “tools please”").click()
    expect(entry).to_have_count(0)
    expect(other.page.locator("#conversation-list [aria-current=true]")).to_contain_text("Untitled conversation")
    other.wait_ready()  # a new conversation in its place
    assert made["id"] not in [item["id"] for item in listed(server)]
    other.screenshot("deleted")
