"""The MCP conformance suite (`@modelcontextprotocol/conformance`, run with node 22 from npm) against
toolwire's MCP server and client, and against the official SDK's as the reference that shows the
harness itself works.

Both pinned in tests/mcp/package.json. The suite speaks Streamable HTTP only: its server scenarios
connect to a server URL; its client scenarios start a test server per scenario and run a client
command with the URL as its last argument (`MCP_CONFORMANCE_SCENARIO` names the scenario).

- Server scenarios run once per server (one run of the suite's active suite, plus its pending
  one), each scenario then asserted on its own: toolwire's server is the real
  `toolwire mcp serve --app conformance_app:make_agent --http --port 0` subprocess; the reference
  is the SDK's `MCPServer` (tests/mcp/conformance_server.py). A scenario toolwire cannot pass is a
  strict xfail naming what it needs.
- Client scenarios run one by one: toolwire's client is tests/mcp/conformance_client.py, an
  `Agent` over `MCPToolset.http(url)`; the reference is the SDK's `mcp.Client`. The suite's
  `auth/*` client scenarios (OAuth flows) are not run: `MCPToolset.http` sends static headers
  and has no OAuth client.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

NODE = HERE / "node_modules" / "node" / "bin" / "node"
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CLIENT = HERE / "conformance_client.py"
REFERENCE_SERVER = [sys.executable, str(HERE / "conformance_server.py")]
TOOLWIRE_SERVER = [
    *(sys.executable, "-m", "toolwire", "mcp", "serve"),
    *("--app", "conformance_app:make_agent", "--http", "--port", "0"),
    "--no-token",  # the suite's server scenarios send no credentials (it has no option for them)
]
BAD = {"FAILURE", "WARNING"}

# What each server scenario needs that toolwire's server lacks (the rest pass), from its failure against
# `toolwire mcp serve` and its expectation in the suite's source.
SERVER_NEEDS = {
    "logging-set-level": "the logging capability (logging/setLevel: Method not found)",
    "completion-complete": "completion/complete (Method not found)",
    "tools-call-image": "image content in a tool result (a toolwire result is text or JSON)",
    "tools-call-audio": "audio content in a tool result (a toolwire result is text or JSON)",
    "tools-call-embedded-resource": "embedded resources in a tool result (toolwire has no resources)",
    "tools-call-mixed-content": "several content blocks, an image and a resource among them, in one tool result",
    "tools-call-with-logging": "log notifications sent by a tool while it runs (no logging capability)",
    "tools-call-sampling": "a tool that asks the client for a sampling (sampling/createMessage)",
    "tools-call-elicitation": "a tool that puts a form (username, email) to the client; ToolContext.ask "
    "asks yes/no only",
    "elicitation-sep1034-defaults": "a tool that puts a form with defaults to the client (SEP-1034); "
    "ToolContext.ask asks yes/no only",
    "elicitation-sep1330-enums": "a tool that puts a form with enum fields to the client (SEP-1330); "
    "ToolContext.ask asks yes/no only",
    "resources-list": "resources (toolwire serves tools only)",
    "resources-read-text": "resources (toolwire serves tools only)",
    "resources-read-binary": "resources (toolwire serves tools only)",
    "resources-templates-read": "resource templates (toolwire serves tools only)",
    "resources-subscribe": "resource subscriptions (toolwire serves tools only)",
    "resources-unsubscribe": "resource subscriptions (toolwire serves tools only)",
    "prompts-list": "prompts (toolwire serves tools only)",
    "prompts-get-simple": "prompts (toolwire serves tools only)",
    "prompts-get-with-args": "prompts (toolwire serves tools only)",
    "prompts-get-embedded-resource": "prompts (toolwire serves tools only)",
    "prompts-get-with-image": "prompts (toolwire serves tools only)",
    "server-sse-polling": "an SSE event store (priming event ids, retry) and a test_reconnection tool that closes "
    "the stream mid-call (SEP-1699; the SDK's reference server, without an event store, fails it too)",
}
SERVER_PASSES = (
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "tools-call-with-progress",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "json-schema-2020-12",
)
REFERENCE_PASSES = (
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)
"""The scenarios the reference server (the SDK's `MCPServer` with the tools conformance_server.py gives it) passes."""

CLIENT_SCENARIOS = ("initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults")
CLIENT_NEEDS = {
    "elicitation-sep1034-client-defaults": "a form accepted with its schema's defaults (SEP-1034): MCPToolset "
    "declares elicitation, but a consent answer fills only yes/no forms, so it declines this one",
}


@pytest.fixture(scope="module")
def suite() -> list[str]:
    """The command that runs the conformance suite with node 22."""
    if not NODE.exists() or not SUITE.exists():
        pytest.fail("the conformance suite is not installed: run `npm ci --no-audit --no-fund --prefix tests/mcp`")
    return [str(NODE), str(SUITE)]


def checks_of(results: Path) -> dict[str, list[dict[str, Any]]]:
    """The checks of each scenario the suite saved under `results` (one directory per scenario)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(results.glob("*/checks.json")):
        name = path.parent.name.rsplit("-", 6)[0].removeprefix("server-")  # drop the timestamp
        found[name] = json.loads(path.read_text())
    return found


def problems(checks: list[dict[str, Any]]) -> list[str]:
    return [
        f"{check['status']} {check['id']}: {check.get('errorMessage', '')}"
        for check in checks
        if check["status"] in BAD
    ]


def environment() -> dict[str, str]:
    """The environment of the servers and clients: this checkout's toolwire and tests/mcp/ on the path, no token."""
    kept = {key: value for key, value in os.environ.items() if not key.startswith("TOOLWIRE_")}
    return {**kept, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(HERE)]), "PYTHONUNBUFFERED": "1"}


def run_server_suite(suite: list[str], server: list[str], results: Path) -> dict[str, list[dict[str, Any]]]:
    """Start `server`, run the suite's active and pending server scenarios against it.

    The server's log goes to a file (a pipe nobody reads could fill up and stall it).
    """
    log = results / "server.log"
    with (
        log.open("w") as errors,
        subprocess.Popen(
            server, cwd=HERE, env=environment(), stdout=subprocess.PIPE, stderr=errors, text=True
        ) as process,
    ):
        try:
            assert process.stdout is not None
            lines: list[str] = []
            for line in process.stdout:  # the URL is printed once the socket listens
                lines.append(line)
                if found := re.search(r"(http://127\.0\.0\.1:\d+/mcp)", line):
                    break
            else:
                process.wait(timeout=10)
                raise AssertionError(f"{server} did not start:\n" + "".join(lines) + log.read_text())
            for which in ("active", "pending"):
                command = [*suite, "server", "--url", found.group(1), "--suite", which, "-o", str(results)]
                subprocess.run(command, capture_output=True, timeout=100, check=False)
        finally:
            process.terminate()
    return checks_of(results)


@pytest.fixture(scope="module")
def toolwire_server(suite: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    return run_server_suite(suite, TOOLWIRE_SERVER, tmp_path_factory.mktemp("toolwire-server"))


@pytest.fixture(scope="module")
def reference_server(suite: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    return run_server_suite(suite, REFERENCE_SERVER, tmp_path_factory.mktemp("sdk-server"))


def server_cases() -> Iterator[Any]:
    for scenario in SERVER_PASSES:
        yield scenario
    for scenario, need in SERVER_NEEDS.items():
        yield pytest.param(scenario, marks=pytest.mark.xfail(reason=f"needs {need}", strict=True))


@pytest.mark.parametrize("scenario", list(server_cases()))
def test_toolwire_server_scenario(toolwire_server: dict[str, list[dict[str, Any]]], scenario: str) -> None:
    assert scenario in toolwire_server, f"the suite did not run {scenario}"
    assert problems(toolwire_server[scenario]) == []


def test_every_server_scenario_is_accounted_for(toolwire_server: dict[str, list[dict[str, Any]]]) -> None:
    assert set(toolwire_server) == set(SERVER_PASSES) | set(SERVER_NEEDS)


@pytest.mark.parametrize("scenario", REFERENCE_PASSES)
def test_reference_server_scenario(reference_server: dict[str, list[dict[str, Any]]], scenario: str) -> None:
    assert problems(reference_server[scenario]) == []


def run_client(suite: list[str], command: list[str], scenario: str, results: Path) -> list[dict[str, Any]]:
    """Run one client scenario with `command` as the client; the checks the suite saved."""
    assert not any(" " in part for part in command), "the suite splits --command on spaces"
    argv = [*suite, "client", "--command", " ".join(command), "--scenario", scenario, "-o", str(results)]
    run = subprocess.run(argv, env=environment(), capture_output=True, text=True, timeout=100, check=False)
    found = checks_of(results)
    assert scenario in found, f"the suite saved no checks for {scenario}:\n{run.stdout[-2000:]}{run.stderr[-2000:]}"
    return found[scenario]


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_reference_client_scenario(suite: list[str], tmp_path: Path, scenario: str) -> None:
    assert problems(run_client(suite, [sys.executable, str(CLIENT), "--sdk"], scenario, tmp_path)) == []


def client_cases() -> Iterator[Any]:
    for scenario in CLIENT_SCENARIOS:
        need = CLIENT_NEEDS.get(scenario)
        yield scenario if need is None else pytest.param(scenario, marks=pytest.mark.xfail(reason=need, strict=True))


@pytest.mark.parametrize("scenario", list(client_cases()))
def test_toolwire_client_scenario(suite: list[str], tmp_path: Path, scenario: str) -> None:
    assert problems(run_client(suite, [sys.executable, str(CLIENT)], scenario, tmp_path)) == []
