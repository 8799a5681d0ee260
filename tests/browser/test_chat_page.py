"""The chat page in Chromium against a real `toolwire serve` with a scripted model (browser_app.py).

Each test saves screenshots of the states it reaches (see browser_support.py for where).
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

pytest.importorskip("playwright", reason="the browser tests need the playwright package: pip install -e '.[dev]'")

from browser_support import HERE, ChatPage
from playwright.sync_api import Browser, expect

from serving import serve_app


def test_the_page_registers_its_group_collapsed(chat: ChatPage) -> None:
    chat.open()
    expect(chat.page.locator("#page-tools")).not_to_have_attribute("open", "")  # the panel starts collapsed
    chat.send("tools")
    # The model's first request offers the "Page" container, not the tools behind it.
    expect(chat.answer()).to_contain_text("Offered: Page, get_weather")
    expect(chat.answer()).not_to_contain_text("GetSelection")
    expect(chat.page.locator("#conversation-list [aria-current=true]")).to_contain_text("tools")
    chat.screenshot("registered")


def test_the_model_expands_the_group_and_reads_the_selection(chat: ChatPage) -> None:
    chat.open()
    notes = chat.notes()
    notes.fill("alpha beta gamma")
    notes.press("End")
    for _ in "gamma":
        notes.press("Shift+ArrowLeft")  # select "gamma" with the keyboard
    chat.send("selection please")
    expect(chat.answer()).to_have_text(re.compile(r"Done\. GetSelection=SUCCESS:gamma"))
    entry = chat.tool("GetSelection")
    expect(entry).to_have_attribute("data-outcome", "success")
    expect(entry).to_have_attribute("data-where", "browser")
    expect(entry).to_contain_text("Success")
    expect(entry).to_contain_text("ran in this browser")
    expect(entry.locator(".badge.mode")).to_have_text("read")
    expect(entry.locator(".duration")).to_have_text(re.compile(r"\d+ ms|< 1 ms"))
    chat.screenshot("selection")


def test_consent_allow_once_then_deny_with_a_reason(chat: ChatPage) -> None:
    page = chat.page
    chat.open()
    chat.notes().fill("keep this")
    chat.send("delete the notes")

    dialog = page.get_by_role("dialog", name="Allow DeleteNotes?")
    expect(dialog).to_be_visible()
    # Keyboard: the focus starts on Deny (the safe choice) and stays in the dialog.
    expect(dialog.get_by_role("button", name="Deny")).to_be_focused()
    page.keyboard.press("Tab")
    expect(dialog.get_by_label("Reason, if you deny")).to_be_focused()
    expect(chat.tool("DeleteNotes")).to_contain_text("Waiting for your answer")
    chat.screenshot("consent-dialog")
    dialog.get_by_role("button", name="Allow once").click()
    expect(chat.answer()).to_contain_text("DeleteNotes=SUCCESS")
    allowed = chat.tool("DeleteNotes").first
    expect(allowed).to_have_attribute("data-outcome", "success")
    expect(allowed).to_contain_text("Allowed once")
    expect(chat.notes()).to_have_value("")
    # A destructive call that declares its undo offers it; it asks the model to run SetNotes.
    allowed.get_by_role("button", name="Undo: restore the notes").click()
    expect(chat.notes()).to_have_value("keep this")
    expect(chat.tool("SetNotes").locator(".preview")).to_contain_text("keep this")
    expect(allowed.get_by_role("button", name="Undo requested")).to_be_disabled()

    chat.send("delete them again")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Reason, if you deny").fill("I still need them")
    dialog.get_by_role("button", name="Deny").click()
    expect(chat.answer()).to_contain_text("DeleteNotes=DENIED")
    expect(chat.answer()).to_contain_text("I still need them")
    denied = chat.tool("DeleteNotes").last
    expect(denied).to_have_attribute("data-outcome", "denied")
    expect(denied).to_contain_text("Denied: I still need them")
    expect(chat.notes()).to_have_value("keep this")
    expect(chat.tool("DeleteNotes")).to_have_count(2)
    chat.screenshot("consent-allowed-and-denied")

    # The policy denies an identical call again by itself; a new conversation asks again.
    # Enter in the reason field denies (never the form's default button, Allow once), and so does Escape.
    for key, reason in (("Enter", "not now"), ("Escape", "the user said no")):
        page.get_by_role("button", name="New conversation").click()
        chat.wait_ready()
        expect(page.locator("#timeline .entry")).to_have_count(0)
        chat.send(f"delete them, I will press {key}")
        expect(dialog).to_be_visible()
        if key == "Enter":
            dialog.get_by_label("Reason, if you deny").fill(reason)
        page.keyboard.press(key)
        expect(dialog).to_be_hidden()
        expect(chat.tool("DeleteNotes")).to_contain_text(f"Denied: {reason}")
        expect(chat.answer()).to_contain_text("DeleteNotes=DENIED")
    # (The list also shows the other tests' conversations: one principal, one server.)
    mine = page.locator("#conversation-list li", has_text=re.compile(r"delete (the notes|them, I will press)"))
    expect(mine).to_have_count(3)

    # The conversations are kept: after a reload the first one opens again, as it was.
    page.reload()
    chat.wait_ready()
    expect(mine).to_have_count(3)
    page.get_by_role("button", name=re.compile(r"^delete the notes")).click()
    chat.wait_ready()
    expect(page.locator("#conversation-list [aria-current=true]")).to_contain_text("delete the notes")
    expect(chat.tool("DeleteNotes")).to_have_count(2)
    expect(chat.answer()).to_contain_text("I still need them")


def test_a_reload_during_a_client_call_resumes_and_completes_it(chat: ChatPage) -> None:
    page = chat.page
    chat.open()
    chat.send("ask me something")
    question = page.get_by_label("What should I call you?")
    expect(question).to_be_visible()  # GetUserInput waits for the person
    expect(chat.tool("GetUserInput")).to_contain_text("Running")
    chat.screenshot("before-reload")

    page.reload()  # the handler dies with the page; the saved ledger says the call is open
    expect(page.locator("#connection")).to_have_attribute("data-state", "open")
    expect(chat.tool("GetUserInput")).to_contain_text("Running")  # the timeline came back too
    question = page.get_by_label("What should I call you?")
    expect(question).to_be_visible()  # a read tool runs again on resume
    question.fill("Ada")
    question.press("Enter")

    expect(chat.answer()).to_have_text(re.compile(r"Done\. GetUserInput=SUCCESS:Ada"))
    entry = chat.tool("GetUserInput")
    expect(entry).to_have_count(1)
    expect(entry).to_have_attribute("data-outcome", "success")
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()
    expect(page.locator("#conversation-list li", has_text="ask me something")).to_have_count(1)
    chat.screenshot("after-reload")


def test_a_browser_call_the_server_withdraws_shows_as_withdrawn_and_is_not_asked_again(chat: ChatPage) -> None:
    page = chat.page
    chat.open()
    chat.send("ask me something")
    question = page.get_by_label("What should I call you?")
    expect(question).to_be_visible()  # GetUserInput waits for the person
    page.get_by_role("button", name="Stop", exact=True).click()  # ControlStop: the server settles the call

    entry = chat.tool("GetUserInput")
    expect(entry).to_have_attribute("data-withdrawn", "canceled")
    expect(entry).to_have_attribute("data-outcome", "canceled")
    expect(entry.locator(".withdrawn")).to_have_text(re.compile(r"^Canceled by the server: canceled"))
    expect(entry.locator(".outcome")).to_have_text("Canceled")
    expect(question).to_have_count(0)  # the question left with the call
    expect(page.locator("#timeline .entry.notice").last).to_contain_text("Stopped")
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_enabled()
    chat.screenshot("withdrawn")

    page.reload()  # the withdrawal is saved: the call stays settled, the question is not asked again
    chat.wait_ready()
    expect(entry).to_have_attribute("data-withdrawn", "canceled")
    expect(question).to_have_count(0)
    chat.send("selection please")
    expect(chat.answer()).to_have_text(re.compile(r"Done\. GetSelection=SUCCESS"))
    expect(question).to_have_count(0)
    expect(entry).to_have_count(1)
    expect(entry).to_have_attribute("data-outcome", "canceled")


def test_a_tour_of_every_treatment_without_console_errors_also_at_375_px(chat: ChatPage) -> None:
    page = chat.page
    chat.open()
    chat.notes().fill("Lunch with Sam on Friday; bring the slides.")
    chat.send("tour of the page tools")
    dialog = page.get_by_role("dialog", name="Allow DeleteNotes?")
    dialog.get_by_role("button", name="Always allow in this conversation").click()
    expect(chat.answer()).to_contain_text("the Undo button brings them back")

    weather, atlantis = chat.tool("get_weather").first, chat.tool("get_weather").last
    expect(weather).to_have_attribute("data-where", "server")
    expect(weather).to_contain_text("ran on the server")
    expect(weather).to_have_attribute("data-outcome", "success")
    expect(atlantis).to_have_attribute("data-outcome", "error")
    expect(atlantis.locator(".outcome")).to_have_text("Error")
    expect(atlantis).to_contain_text("No weather station in Atlantis")
    theme = chat.tool("SetTheme")
    expect(theme.locator(".preview")).to_contain_text("light")  # safe_write: a preview of the change
    expect(theme.locator(".preview")).to_contain_text("dark")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    message = chat.tool("ShowMessage")
    expect(message).to_contain_text("logged")  # external: listed as logged
    expect(page.locator("#call-log")).to_contain_text("ShowMessage")
    expect(page.get_by_role("status").filter(has_text="Paris is sunny today.")).to_be_visible()
    deleted = chat.tool("DeleteNotes")
    expect(deleted).to_contain_text("Allowed for this conversation")
    expect(deleted.get_by_role("button", name="Undo: restore the notes")).to_be_enabled()
    expect(page.locator("#connection")).to_contain_text("Connected")
    page.set_viewport_size({"width": 1280, "height": 1200})  # the whole run in view: docs/chat-page.png
    chat.screenshot("tour")

    page.set_viewport_size({"width": 375, "height": 812})
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow == 0, f"the page is {overflow}px wider than a 375-px viewport"
    chat.screenshot("tour-375px")
    assert not chat.problems, chat.problems


# What Chromium itself logs when a server is down or refuses an upgrade (not the page's doing).
NETWORK_NOISE = re.compile(r"WebSocket connection to .* failed|Failed to load resource|net::ERR_CONNECTION_REFUSED")


def test_a_token_refused_after_a_restart_is_asked_for_again_and_the_call_completes(
    chromium: Browser, tmp_path: Path, artifacts: Path
) -> None:
    source = (HERE / "browser_app.py").read_text()
    before, after = "before-restart-0123456789abcdef", "after-restart-0123456789abcdef"
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        with serve_app(tmp_path, source, "browser_app", token=before) as first:
            base = first.url.replace("ws://", "http://", 1).removesuffix("/ws")
            chat = ChatPage(context.new_page(), base, artifacts)
            chat.watch()
            page = chat.page
            page.goto(f"{base}/#token={before}")
            chat.wait_ready()
            chat.send("ask me something")
            expect(page.get_by_label("What should I call you?")).to_be_visible()
            expect(chat.tool("GetUserInput")).to_contain_text("Running")
            port = base.rsplit(":", 1)[1]
            first.process.send_signal(signal.SIGINT)
            first.process.wait(timeout=15)
        with serve_app(tmp_path, source, "browser_app", "--port", port, token=after, data_dir=first.data_dir):
            problem = page.get_by_role("alert").filter(has_text="The server refused the token")
            expect(problem).to_be_visible()
            expect(page.locator("#connection")).to_have_attribute("data-state", "closed")
            expect(page.locator("#connection")).to_contain_text("token refused")
            field = page.get_by_label("Token (printed by toolwire serve)")
            expect(field).to_be_focused()
            chat.screenshot("token-refused")
            field.fill(after)
            field.press("Enter")
            # The same conversation, resumed: the call it was running asks again.
            expect(page.locator("#connection")).to_have_attribute("data-state", "open")
            expect(field).to_be_hidden()
            question = page.get_by_label("What should I call you?")
            question.fill("Ada")
            question.press("Enter")
            expect(chat.answer()).to_have_text(re.compile(r"Done\. GetUserInput=SUCCESS:Ada"))
            expect(chat.tool("GetUserInput")).to_have_count(1)
            expect(page.locator("#conversation-list li")).to_have_count(1)
            assert page.evaluate("sessionStorage.getItem('toolwire.token')") == after
    finally:
        context.close()
    unexpected = [problem for problem in chat.problems if not NETWORK_NOISE.search(problem)]
    assert not unexpected, "the page reported problems:\n" + "\n".join(unexpected)
