"""`toolwire serve --mcp-servers FILE`, for real: a subprocess, server-everything, a client over the wire.

The served app is `tests/mcp_served_app.py` (a function model that expands the `everything`
container and calls `echo` or `get-sum`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from serving import Server, serve_app, wait_gone
from toolwire import ResultType
from toolwire.client import ServerToolResult, connect

APP = Path(__file__).resolve().parent.parent / "mcp_served_app.py"
TOKEN = "mcp-serve-token-0123456789abcdef"


def servers_file(tmp_path: Path, everything: dict[str, Any]) -> Path:
    """server-everything (echo and get-sum), collapsed as `everything`."""
    entry = {**everything, "collapsed": True, "tools": ["echo", "get-sum"]}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"everything": entry}}))
    return path


def serve(tmp_path: Path, everything: dict[str, Any]) -> Any:
    path = servers_file(tmp_path, everything)
    return serve_app(tmp_path, APP.read_text(), "mcp_served_app", "--mcp-servers", str(path), token=TOKEN)


async def server_results(server: Server, text: str) -> list[tuple[str, ResultType, Any]]:
    """The server tool results a client is shown while the run of `text` goes on."""
    seen: list[tuple[str, ResultType, Any]] = []
    async with connect(server.url, token=server.token) as client:
        async for event in client.send(text):
            if isinstance(event, ServerToolResult):
                seen.append((event.tool_name, event.result.type, event.result.data))
    return seen


async def test_an_mcp_tool_of_the_file_runs_and_its_result_reaches_the_client(
    tmp_path: Path, everything: dict[str, Any]
) -> None:
    with serve(tmp_path, everything) as server:
        seen = await server_results(server, "echo over the wire")
    # The container's expansion is the runtime's own, not shown (as a client group's is not).
    assert seen == [("echo", ResultType.SUCCESS, "Echo: over the wire")]


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found: list[int] = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the server's process in /proc")
def test_the_mcp_server_starts_with_toolwire_serve_is_announced_and_stops_with_it(
    tmp_path: Path, everything: dict[str, Any]
) -> None:
    with serve(tmp_path, everything) as server:
        [child] = _children(server.process.pid)  # started before the server listens
        status, _ = server.stop()
    said = "MCP server 'everything': 2 tools (collapsed)\n" in server.started
    assert (said, status, wait_gone(child, timeout=10)) == (True, 0, True)


def _start(tmp_path: Path, content: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """`toolwire serve --mcp-servers` with a file of `content`, which must not start."""
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(content))
    (tmp_path / "mcp_served_app.py").write_text(APP.read_text())
    command = [sys.executable, "-m", "toolwire.cli", "serve", "--port", "0", "--data-dir", str(tmp_path / "data")]
    command += ["--token", TOKEN, "--app", "mcp_served_app:make_agent", "--mcp-servers", str(path)]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)


def test_a_server_that_does_not_start_stops_toolwire_serve_with_one_line(tmp_path: Path) -> None:
    done = _start(tmp_path, {"mcpServers": {"broken": {"command": "no-such-command-toolwire"}}})
    assert (done.returncode, "serving" in done.stdout, done.stderr.splitlines()) == (
        2,
        False,
        [
            f"toolwire: MCP server 'broken' of {tmp_path / 'mcp.json'} did not start: "
            "[Errno 2] No such file or directory: 'no-such-command-toolwire'"
        ],
    )


def test_a_file_with_an_unknown_key_stops_toolwire_serve_with_one_line(tmp_path: Path) -> None:
    done = _start(tmp_path, {"mcpServers": {"ev": {"command": "node", "trustd": True}}})
    assert (done.returncode, done.stderr.splitlines()) == (
        2,
        [
            f"toolwire: MCP servers file {tmp_path / 'mcp.json'}: server 'ev': "
            "unknown key 'trustd' (did you mean 'trusted'?)"
        ],
    )
