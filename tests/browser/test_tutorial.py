"""docs/tutorial/browser.md in Chromium: the chat page saves its Notes selection through step 2's `notes_app.py`.

The server runs the first Python block of docs/tutorial/client-tool.md as `notes_app.py`, as the
tutorial has the reader save it; the page follows the numbered steps of "Save a selection".
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("playwright", reason="the browser tests need the playwright package: pip install -e '.[dev]'")

from browser_support import TOKEN, ChatPage
from playwright.sync_api import Browser, expect

from serving import serve_app

STEP_2 = Path(__file__).resolve().parent.parent.parent / "docs" / "tutorial" / "client-tool.md"


@pytest.fixture(scope="module")
def server(chromium: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`toolwire serve --app notes_app:make_agent`, with the tutorial's `notes_app.py`."""
    [notes_app, *_] = re.findall(r"^```python\n(.*?)^```", STEP_2.read_text(), re.S | re.M)
    with serve_app(tmp_path_factory.mktemp("tutorial"), textwrap.dedent(notes_app), "notes_app", token=TOKEN) as live:
        yield live.url.replace("ws://", "http://", 1).removesuffix("/ws")


def test_the_page_saves_the_selection_after_consent(chat: ChatPage) -> None:
    chat.open()
    notes = chat.notes()
    notes.fill("call the bank before Friday")
    notes.select_text()
    chat.send("Save what I selected as a note.")

    selection = chat.tool("GetSelection")
    expect(selection).to_have_attribute("data-where", "browser")
    expect(selection).to_have_attribute("data-outcome", "success")
    expect(selection.locator(".badge.mode")).to_have_text("read")

    dialog = chat.page.get_by_role("dialog", name="Allow add_note?")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("button", name="Deny")).to_be_focused()
    expect(dialog).to_contain_text("call the bank before Friday")
    dialog.get_by_role("button", name="Allow once").click()

    expect(chat.answer()).to_contain_text("Saved your selection as note 1.")
    saved = chat.tool("add_note")
    expect(saved).to_have_attribute("data-where", "server")
    expect(saved).to_have_attribute("data-outcome", "success")
    chat.screenshot("tutorial")
