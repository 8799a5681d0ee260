"""The example front ends of examples/frontends/ in Chromium, each doing one front-end tool call.

Each example's `dist/` (built with npm when missing or older than its sources) is served from a
loopback port, and a live `toolwire serve --agui --ai-sdk` of the AG-UI tests' scripted agent
(`tests/agui/agui_app.py`: "pick" calls the front end's `pick_color` with red and blue, then answers
`Got {"pick_color": <the result>}`) allows that origin. The person types "pick" and clicks blue;
the answer must show it, and the stored transcript must hold the call's one result.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

pytest.importorskip("playwright", reason="the browser tests need the playwright package: pip install -e '.[dev]'")

from browser_support import HERE, TOKEN
from playwright.sync_api import Browser, ConsoleMessage, Error, Page, Request, expect

from serving import Server, serve_app, transcript_of
from toolwire.messages import ToolResultMessage
from toolwire.testing import validate_transcript

EXAMPLES = HERE.parent.parent / "examples" / "frontends"
APP = HERE.parent / "agui" / "agui_app.py"
ENDPOINTS = {"agui": "/agui", "ai-sdk": "/ai-sdk/chat"}
"""Each example and the endpoint it posts to."""


def build(example: Path) -> None:
    """`npm ci` (without node_modules) and `npm run build` (without a dist/ newer than the sources)."""
    bundle = example / "dist" / "main.js"
    sources = [example / "build.mjs", example / "package-lock.json", *(example / "src").iterdir()]
    if bundle.is_file() and bundle.stat().st_mtime >= max(path.stat().st_mtime for path in sources):
        return
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"{example.name}'s dist/ is not built and npm is missing: npm ci && npm run build in {example}")
    commands = [[npm, "ci", "--no-audit", "--no-fund"]] if not (example / "node_modules").is_dir() else []
    for command in [*commands, [npm, "run", "build"]]:
        done = subprocess.run(command, cwd=example, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{' '.join(command[1:])} in {example} failed:\n{done.stdout}{done.stderr}"


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test's output clean: no line per request."""


@pytest.fixture(scope="module")
def pages() -> Iterator[str]:
    """examples/frontends/ over http on a loopback port, each example built; yield its origin."""
    for name in ENDPOINTS:
        build(EXAMPLES / name)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(EXAMPLES)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture(scope="module")
def agent_server(chromium: Browser, pages: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`toolwire serve --agui --ai-sdk` of the scripted agent, with the pages' origin allowed."""
    tmp_path = tmp_path_factory.mktemp("frontend-examples")
    extra = ("--agui", "--ai-sdk", "--allow-origin", pages)
    with serve_app(tmp_path, APP.read_text(), "agui_app", *extra, token=TOKEN) as served:
        yield served


def http_of(server: Server) -> str:
    """The server's HTTP origin (its endpoints are beside `/ws`)."""
    return server.url.replace("ws://", "http://", 1).removesuffix("/ws")


def ask(page: Page, example: str, server: str, prompt: str) -> None:
    """Open the example's built page on `server` and send `prompt`."""
    page.goto(f"{example}/dist/index.html?" + urlencode({"server": server, "token": TOKEN}))
    message = page.get_by_label("Message", exact=True)
    message.fill(prompt)
    message.press("Enter")


@pytest.mark.parametrize("example", list(ENDPOINTS))
def test_the_example_answers_a_front_end_tool_call_with_the_persons_click(
    example: str, chromium: Browser, pages: str, agent_server: Server, artifacts: Path
) -> None:
    server = http_of(agent_server)
    context = chromium.new_context(viewport={"width": 1000, "height": 800})
    page = context.new_page()
    problems: list[str] = []
    bodies: list[dict[str, Any]] = []

    def console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            problems.append(f"console {message.type}: {message.text}")

    def page_error(error: Error) -> None:
        problems.append(f"uncaught: {error.message}")

    def request(sent: Request) -> None:
        if sent.method == "POST" and sent.url == server + ENDPOINTS[example]:
            bodies.append(json.loads(sent.post_data or "null"))

    page.on("console", console)
    page.on("pageerror", page_error)
    page.on("request", request)
    try:
        ask(page, f"{pages}/{example}", server, "pick")

        call = page.locator('.tool-call[data-tool="pick_color"]')
        expect(call).to_have_attribute("data-state", "waiting")
        expect(call.locator(".mode")).to_have_text("external")
        expect(page.get_by_role("button", name="Send")).to_be_disabled()  # the page owes the result
        call.get_by_role("button", name="blue").click()

        expect(page.locator(".message.assistant").last).to_contain_text('Got {"pick_color": "blue"}')
        expect(call).to_have_attribute("data-state", "answered")
        expect(page.get_by_role("button", name="Send")).to_be_enabled()
        page.screenshot(path=artifacts / f"{example}.png", full_page=True)
    finally:
        context.close()
    assert not problems, "the page reported problems:\n" + "\n".join(problems)

    assert len(bodies) == 2, "one request for the prompt, one that carries the result"
    thread = bodies[0]["threadId" if example == "agui" else "id"]
    transcript = transcript_of(agent_server.data_dir, thread)
    validate_transcript(transcript)
    [result] = [message for message in transcript if isinstance(message, ToolResultMessage)]
    assert (result.tool_name, result.result.data) == ("pick_color", "blue")


@pytest.mark.parametrize("example", list(ENDPOINTS))
def test_the_example_asks_the_person_before_a_call_the_policy_asks_about(
    example: str, chromium: Browser, pages: str, agent_server: Server
) -> None:
    """ "run" calls `run_command`, a `local` tool: the policy asks. AG-UI: the run ends with an
    interrupt; the AI SDK: with a tool approval request. The page shows Allow / Deny, and Allow
    goes on: the call runs and the model answers."""
    context = chromium.new_context()
    page = context.new_page()
    try:
        ask(page, f"{pages}/{example}", http_of(agent_server), "run")

        call = page.locator('.tool-call[data-tool="run_command"]')
        expect(call).to_have_attribute("data-state", "asking")
        expect(call.locator(".mode")).to_have_text("local")
        expect(page.get_by_role("button", name="Send")).to_be_disabled()  # the page owes the answer
        call.get_by_role("button", name="Allow").click()

        expect(page.locator(".message.assistant").last).to_contain_text('Got {"run_command": "ran ls"}')
        expect(call).to_have_attribute("data-state", "answered")
    finally:
        context.close()
