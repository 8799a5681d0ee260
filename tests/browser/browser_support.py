"""Chromium, a real `toolwire serve` with the scripted agent of `browser_app.py`, and the chat page.

Chromium is Debian's (`/usr/bin/chromium`, or `TOOLWIRE_CHROMIUM`), driven by the `playwright`
package (`playwright install` is never needed). Screenshots go to `TOOLWIRE_BROWSER_ARTIFACTS/<test>`
when that is set (docs/chat-page.png is one of them), else to the test's `tmp_path`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import ConsoleMessage, Error, Locator, Page, expect

from serving import serve_app

HERE = Path(__file__).resolve().parent
TOKEN = "browser-token-0123456789abcdef"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
]


def chromium_path() -> str | None:
    """Debian's chromium, or the one `TOOLWIRE_CHROMIUM` names; None when there is none."""
    named = os.environ.get("TOOLWIRE_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    return shutil.which("chromium") or (p if Path(p := "/usr/bin/chromium").is_file() else None)


@contextmanager
def serve(tmp_path: Path) -> Iterator[str]:
    """Start `toolwire serve --app browser_app:make_agent` on a free loopback port; yield its http:// URL."""
    source = (HERE / "browser_app.py").read_text()
    with serve_app(tmp_path, source, "browser_app", token=TOKEN) as server:
        yield server.url.replace("ws://", "http://", 1).removesuffix("/ws")


@dataclass
class ChatPage:
    """The chat page in one browser tab, with what its console reported."""

    page: Page
    url: str
    artifacts: Path
    problems: list[str] = field(default_factory=list)

    def watch(self) -> None:
        """Collect console errors and warnings and uncaught exceptions (none are expected)."""

        def console(message: ConsoleMessage) -> None:
            if message.type in ("error", "warning"):
                self.problems.append(f"console {message.type}: {message.text} ({message.location})")

        def page_error(error: Error) -> None:
            self.problems.append(f"uncaught: {error.message}")

        self.page.on("console", console)
        self.page.on("pageerror", page_error)

    def open(self) -> None:
        """Load the page with the token in the fragment, as `toolwire serve` prints it; wait until ready."""
        self.page.goto(f"{self.url}/#token={TOKEN}")
        self.wait_ready()

    def wait_ready(self) -> None:
        """Connected and the Page group registered: the Send button is enabled."""
        expect(self.page.locator("#connection")).to_have_attribute("data-state", "open")
        expect(self.page.get_by_role("button", name="Send", exact=True)).to_be_enabled()

    def send(self, text: str) -> None:
        """Type a message and press Enter."""
        box = self.page.get_by_label("Message", exact=True)
        box.fill(text)
        box.press("Enter")

    def notes(self) -> Locator:
        """The page's notes area (what GetSelection reads)."""
        return self.page.get_by_role("textbox", name=re.compile(r"^Notes"))

    def answer(self) -> Locator:
        """The last answer of the timeline."""
        return self.page.locator("#timeline .entry.answer").last

    def tool(self, name: str) -> Locator:
        """The timeline entries of a tool's calls."""
        return self.page.locator(f'#timeline .entry.tool[data-tool="{name}"]')

    def screenshot(self, name: str) -> Path:
        """Save a full-page screenshot under the test's artifacts."""
        path = self.artifacts / f"{name}.png"
        self.page.screenshot(path=path, full_page=True)
        return path
