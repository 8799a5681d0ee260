"""The servers the MCP tests of tests/mcp_serve/ talk to, and the client's protocol generations."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("mcp")

from .peers import LEGACY, MODERN, http_server


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with http_server() as url:
        yield url


@pytest.fixture(params=["stdio", "http"])
def server(request: pytest.FixtureRequest) -> str | None:
    """Where the client connects: None for a stdio subprocess of its own, else the HTTP server's URL."""
    return None if request.param == "stdio" else request.getfixturevalue("http_url")


@pytest.fixture(params=[LEGACY, MODERN])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param
