"""The MCP servers file (`read_servers`, `load_servers`): its shape, its checks, its messages.

Pure and fast: nothing is started, except the two tests at the end (one command that does not
exist, and server-everything through the file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolwire import Agent, ToolMode
from toolwire.errors import UsageError
from toolwire.interop.mcp import ConfiguredServer, MCPToolset, Stdio, StreamableHTTP, load_servers, read_servers
from toolwire.testing import ScriptedModel
from toolwire.toolsets.collapsed import Collapsed


def write(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def servers(**entries: Any) -> dict[str, Any]:
    return {"mcpServers": entries}


def refusal(tmp_path: Path, content: Any, environ: dict[str, str] | None = None) -> str:
    """The message of the `UsageError` reading the file raises, without the file's name."""
    path = write(tmp_path, content)
    with pytest.raises(UsageError) as raised:
        load_servers(path, environ=environ or {})
    message = str(raised.value)
    assert message.startswith(f"MCP servers file {path}: ")
    return message.removeprefix(f"MCP servers file {path}: ")


# -- what a file gives ----------------------------------------------------------------------------


def test_a_claude_desktop_entry_is_a_stdio_server(tmp_path: Path) -> None:
    entry = {"command": "npx", "args": ["-y", "server"], "env": {"LOG": "1"}}
    [server] = load_servers(write(tmp_path, servers(files=entry)), environ={})
    assert server.mcp.address == Stdio("npx", ("-y", "server"), {"LOG": "1"}, None)


def test_a_url_entry_is_a_streamable_http_server_with_its_headers(tmp_path: Path) -> None:
    entry = {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}}
    [server] = load_servers(write(tmp_path, servers(search=entry)), environ={})
    assert server.mcp.address == StreamableHTTP("https://mcp.example.com/mcp", {"Authorization": "Bearer t"})


def test_a_claude_code_type_key_is_accepted(tmp_path: Path) -> None:
    entry = {"type": "http", "url": "http://127.0.0.1:8000/mcp"}
    [server] = load_servers(write(tmp_path, servers(local=entry)), environ={})
    assert isinstance(server.mcp.address, StreamableHTTP)


def test_the_servers_keep_the_files_order_and_names(tmp_path: Path) -> None:
    entries = {"b": {"command": "b"}, "a": {"command": "a"}, "c": {"url": "http://c/mcp"}}
    loaded = load_servers(write(tmp_path, servers(**entries)), environ={})
    assert [(server.name, server.mcp.label) for server in loaded] == [("b", "b"), ("a", "a"), ("c", "c")]


def test_toolwires_keys_become_the_toolsets_options(tmp_path: Path) -> None:
    entry = {
        "command": "node",
        "trusted": True,
        "minimumMode": "safe_write",
        "tools": ["echo"],
        "prefix": "ev_",
        "timeout": 5,
        "elicitation": False,
    }
    [server] = load_servers(write(tmp_path, servers(ev=entry)), environ={})
    toolset = server.mcp
    options = (toolset.trusted, toolset.minimum_mode, toolset.include, toolset.prefix, toolset.timeout)
    assert (*options, toolset.elicitation) == (True, ToolMode.SAFE_WRITE, {"echo"}, "ev_", 5.0, False)


def test_an_untrusted_server_keeps_the_external_floor_by_default(tmp_path: Path) -> None:
    [server] = load_servers(write(tmp_path, servers(ev={"command": "node"})), environ={})
    assert server.mcp.minimum_mode is ToolMode.EXTERNAL


def test_a_collapsed_server_is_a_container_named_like_the_server(tmp_path: Path) -> None:
    [server] = load_servers(write(tmp_path, servers(everything={"command": "node", "collapsed": True})), environ={})
    assert isinstance(server.toolset, Collapsed) and server.toolset.name == "everything"


def test_a_collapsed_servers_container_has_a_default_description(tmp_path: Path) -> None:
    [server] = load_servers(write(tmp_path, servers(everything={"command": "node", "collapsed": True})), environ={})
    assert isinstance(server.toolset, Collapsed)
    assert server.toolset.description == "Tools of the MCP server 'everything'."


def test_a_collapsed_servers_description_is_the_containers(tmp_path: Path) -> None:
    entry = {"command": "node", "collapsed": True, "description": "Test tools"}
    [server] = load_servers(write(tmp_path, servers(ev=entry)), environ={})
    assert isinstance(server.toolset, Collapsed) and server.toolset.description == "Test tools"


def test_a_relative_cwd_is_taken_from_the_files_directory(tmp_path: Path) -> None:
    [server] = load_servers(write(tmp_path, servers(ev={"command": "node", "cwd": "servers"})), environ={})
    assert isinstance(server.mcp.address, Stdio) and server.mcp.address.cwd == tmp_path / "servers"


def test_variables_are_expanded_from_the_environment(tmp_path: Path) -> None:
    entry = {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    [server] = read_servers(write(tmp_path, servers(ev=entry)), environ={"HOST": "h.example", "TOKEN": "s3"}).values()
    assert (server.url, server.headers) == ("https://h.example/mcp", {"Authorization": "Bearer s3"})


def test_a_variables_default_is_used_when_it_is_not_set(tmp_path: Path) -> None:
    entry = {"command": "${NODE:-node}", "args": ["${SCRIPT:-index.js}"], "env": {"LEVEL": "${LEVEL:-info}"}}
    [server] = read_servers(write(tmp_path, servers(ev=entry)), environ={"SCRIPT": "main.js"}).values()
    assert (server.command, server.args, server.env) == ("node", ["main.js"], {"LEVEL": "info"})


def test_toolwires_keys_are_not_expanded(tmp_path: Path) -> None:
    entry = {"command": "node", "collapsed": True, "description": "costs ${PRICE}"}
    [server] = read_servers(write(tmp_path, servers(ev=entry)), environ={"PRICE": "1"}).values()
    assert server.description == "costs ${PRICE}"


def test_an_empty_file_of_servers_gives_no_toolsets(tmp_path: Path) -> None:
    assert load_servers(write(tmp_path, servers()), environ={}) == []


# -- what a file is refused for -----------------------------------------------------------------


def test_an_unknown_key_is_refused_with_the_nearest_known_one(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"command": "node", "trustd": True}))
    assert message == "server 'ev': unknown key 'trustd' (did you mean 'trusted'?)"


def test_an_unknown_key_far_from_any_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"command": "node", "autoApprove": ["echo"]}))
    assert message == (
        "server 'ev': unknown key 'autoApprove' (known keys: args, collapsed, command, cwd, description, "
        "elicitation, env, headers, minimumMode, prefix, timeout, tools, trusted, type, url)"
    )


def test_a_flag_must_be_a_boolean(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"command": "node", "trusted": "yes"}))
    assert message == "server 'ev': key 'trusted': Input should be a valid boolean"


def test_an_unknown_minimum_mode_is_refused_with_the_modes(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"command": "node", "minimumMode": "harmless"}))
    assert message == (
        "server 'ev': key 'minimumMode': Input should be 'read', 'safe_write', 'destructive', 'local' or 'external'"
    )


def test_a_timeout_must_be_positive(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"command": "node", "timeout": 0}))
    assert message == "server 'ev': key 'timeout': Input should be greater than 0"


def test_an_argument_must_be_a_string(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"command": "node", "args": ["--port", 80]}))
    assert message == "server 'ev': key 'args' (at 1): Input should be a valid string"


@pytest.mark.parametrize("entry", [{}, {"command": "node", "url": "http://h/mcp"}])
def test_a_server_needs_exactly_one_of_command_and_url(entry: dict[str, Any], tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev=entry))
    assert (
        message == "server 'ev': give either 'command' (a stdio server) or 'url' (Streamable HTTP), not both or neither"
    )


def test_an_sse_server_is_refused(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"type": "sse", "url": "http://h/sse"}))
    assert message == (
        "server 'ev': the SSE transport is not supported: give the server's Streamable HTTP endpoint as 'url'"
    )


def test_a_type_that_contradicts_the_address_is_refused(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"type": "http", "command": "node"}))
    assert message == "server 'ev': 'type' 'http' needs 'url', not 'command'"


def test_stdio_keys_beside_a_url_are_refused(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"url": "http://h/mcp", "env": {"A": "1"}}))
    assert message == "server 'ev': key 'env' is for a stdio server ('command'), not for a 'url'"


def test_headers_beside_a_command_are_refused(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"command": "node", "headers": {"A": "1"}}))
    assert message == "server 'ev': key 'headers' is for a 'url', not for a stdio server ('command'): it takes 'env'"


def test_a_description_without_collapsed_is_refused(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"command": "node", "description": "Test tools"}))
    assert message == "server 'ev': 'description' describes the container: set 'collapsed': true too"


def test_a_collapsed_server_needs_a_tool_name(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(**{"my server": {"command": "node", "collapsed": True}}))
    assert message == (
        "server 'my server': with 'collapsed', the name is the container's tool name: "
        "use 1-64 letters, digits, '_' or '-'"
    )


def test_a_bad_prefix_is_refused(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"command": "node", "prefix": "a b"}))
    assert message == "server 'ev': key 'prefix': prefix 'a b' is not valid: use up to 32 letters, digits, '_' or '-'"


def test_a_url_that_is_not_http_is_refused(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"url": "ftp://h/mcp"}))
    assert message == "server 'ev': an MCP server's URL must start with http:// or https://, not 'ftp://h/mcp'"


def test_an_unset_variable_is_refused_with_its_name_and_key(tmp_path: Path) -> None:
    message = refusal(tmp_path, servers(ev={"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}))
    assert (
        message
        == "server 'ev': key 'headers': environment variable 'TOKEN' is not set (set it, or write ${TOKEN:-default})"
    )


def test_vs_codes_servers_key_is_refused_with_the_right_one(tmp_path: Path) -> None:
    message = refusal(tmp_path, {"servers": {"ev": {"command": "node"}}})
    assert message == "unknown key 'servers': the file holds 'mcpServers' only (the servers go under 'mcpServers')"


def test_a_file_without_mcp_servers_is_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path, {}) == 'no \'mcpServers\': the file is {"mcpServers": {"NAME": {...}, ...}}'


def test_a_server_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path, servers(ev=["node"])) == "server 'ev': must be an object (Input should be an object)"


def test_a_file_that_is_not_json_is_refused_with_where(tmp_path: Path) -> None:
    message = refusal(tmp_path, '{"mcpServers": {"ev": {"command": "node",}}}')
    assert message == "not valid JSON: trailing comma at line 1 column 42"


def test_a_file_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        UsageError, match=r"^MCP servers file .*nope\.json: cannot be read \(No such file or directory\)$"
    ):
        read_servers(tmp_path / "nope.json")


# -- starting ---------------------------------------------------------------------------------------


async def test_a_server_that_does_not_start_names_itself_and_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, servers(broken={"command": "no-such-command-toolwire"}))
    agent = Agent(ScriptedModel([]))
    agent.add_toolsets(load_servers(path, environ={}))
    with pytest.raises(UsageError) as raised:
        async with agent:
            pass
    assert str(raised.value) == (
        f"MCP server 'broken' of {path} did not start: [Errno 2] No such file or directory: 'no-such-command-toolwire'"
    )


async def test_a_collapsed_server_of_the_file_runs_its_tools(tmp_path: Path, everything: dict[str, Any]) -> None:
    path = write(tmp_path, servers(everything={**everything, "collapsed": True, "tools": ["echo", "get-sum"]}))
    [server] = load_servers(path, environ={})
    async with Agent(ScriptedModel([]), tools=[server]):
        assert isinstance(server, ConfiguredServer) and isinstance(server.mcp, MCPToolset)
        assert server.mcp.toolbox.names == ["echo", "get-sum"]
