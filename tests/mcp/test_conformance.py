"""The MCP conformance suite (`@modelcontextprotocol/conformance`, run with node 22 from npm) against
toolwire's MCP server and client, and against the official SDK's as the reference that shows the
harness itself works.

Both pinned in tests/mcp/package.json. The suite speaks Streamable HTTP only: its server scenarios
connect to a server URL; its client scenarios start a test server per scenario and run a client
command with the URL as its last argument (`MCP_CONFORMANCE_SCENARIO` names the scenario).

- Server scenarios run once per server (one run of the suite's active suite, plus its pending
  one), each scenario then asserted on its own: toolwire's server is `build_server` on the SDK's
  Streamable HTTP transport (tests/mcp/conformance_server.py) until `toolwire mcp serve` has its
  own; a scenario toolwire cannot pass yet is a strict xfail naming what it needs.
- Client scenarios run one by one: toolwire's client is tests/mcp/conformance_client.py, an
  `Agent` over an `MCPToolset`; it needs `MCPToolset(url=...)`, so those tests skip until then.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conformance_client import toolwire_speaks_http  # tests/mcp/ is on the path (rootdir-relative imports)

HERE = Path(__file__).resolve().parent

NODE = HERE / "node_modules" / "node" / "bin" / "node"
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CLIENT = HERE / "conformance_client.py"
SERVER = HERE / "conformance_server.py"
BAD = {"FAILURE", "WARNING"}

# What each server scenario needs that toolwire's server lacks (the rest pass).
SERVER_NEEDS = {
    "logging-set-level": "the logging capability (logging/setLevel)",
    "completion-complete": "completion/complete",
    "tools-call-image": "image content in a tool result (toolwire results are text or JSON)",
    "tools-call-audio": "audio content in a tool result",
    "tools-call-embedded-resource": "embedded resources in a tool result",
    "tools-call-mixed-content": "several content blocks, image and resource among them, in a tool result",
    "tools-call-with-logging": "log notifications sent by a tool while it runs",
    "tools-call-with-progress": "progress notifications sent by a tool while it runs",
    "tools-call-sampling": "sampling/createMessage asked of the client by a tool",
    "tools-call-elicitation": "a tool that elicits input (toolwire elicits only to approve a call)",
    "elicitation-sep1034-defaults": "a tool that elicits input with defaults (SEP-1034)",
    "elicitation-sep1330-enums": "a tool that elicits input with enum schemas (SEP-1330)",
    "resources-list": "resources",
    "resources-read-text": "resources",
    "resources-read-binary": "resources",
    "resources-templates-read": "resource templates",
    "resources-subscribe": "resource subscriptions",
    "resources-unsubscribe": "resource subscriptions",
    "prompts-list": "prompts",
    "prompts-get-simple": "prompts",
    "prompts-get-with-args": "prompts",
    "prompts-get-embedded-resource": "prompts",
    "prompts-get-with-image": "prompts",
    "server-sse-polling": "a test_reconnection tool that closes the SSE stream mid-call, and SSE event ids and "
    "retry (SEP-1699; the SDK's own server fails it too)",
}
SERVER_PASSES = (
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
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
    "elicitation-sep1034-client-defaults": "MCPToolset to declare elicitation and answer a server's question "
    "(here with the schema's defaults)",
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


def run_server_suite(suite: list[str], kind: str, results: Path) -> dict[str, list[dict[str, Any]]]:
    """Start the `kind` server, run the suite's active and pending server scenarios against it."""
    with subprocess.Popen(
        [sys.executable, str(SERVER), kind], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as server:
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()  # printed once the socket listens
            assert url.startswith("http://127.0.0.1:"), f"the {kind} server did not start"
            for which in ("active", "pending"):
                command = [*suite, "server", "--url", url, "--suite", which, "-o", str(results)]
                subprocess.run(command, capture_output=True, timeout=100, check=False)
        finally:
            server.terminate()
    return checks_of(results)


@pytest.fixture(scope="module")
def toolwire_server(suite: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    return run_server_suite(suite, "toolwire", tmp_path_factory.mktemp("toolwire-server"))


@pytest.fixture(scope="module")
def reference_server(suite: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    return run_server_suite(suite, "sdk", tmp_path_factory.mktemp("sdk-server"))


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


def run_client(suite: list[str], command: list[str], scenario: str, results: Path) -> subprocess.CompletedProcess[str]:
    assert not any(" " in part for part in command), "the suite splits --command on spaces"
    argv = [*suite, "client", "--command", " ".join(command), "--scenario", scenario, "-o", str(results)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=100, check=False)


@pytest.mark.parametrize("scenario", CLIENT_SCENARIOS)
def test_reference_client_scenario(suite: list[str], tmp_path: Path, scenario: str) -> None:
    run = run_client(suite, [sys.executable, str(CLIENT), "--sdk"], scenario, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]


def client_cases() -> Iterator[Any]:
    for scenario in CLIENT_SCENARIOS:
        need = CLIENT_NEEDS.get(scenario)
        yield scenario if need is None else pytest.param(scenario, marks=pytest.mark.xfail(reason=need, strict=True))


@pytest.mark.parametrize("scenario", list(client_cases()))
def test_toolwire_client_scenario(suite: list[str], tmp_path: Path, scenario: str) -> None:
    if not toolwire_speaks_http():
        pytest.skip(
            "MCPToolset speaks only stdio; the suite's client scenarios need Streamable HTTP (MCPToolset(url=))"
        )
    run = run_client(suite, [sys.executable, str(CLIENT)], scenario, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
