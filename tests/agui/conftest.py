"""A live `toolwire serve --agui` (the test app, two principals) and the AG-UI client pointed at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agui_client import CLIENT, HERE, Client

from serving import Server, serve_front_end


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp("agui")
    with serve_front_end(tmp_path, HERE / "agui_app.py", "make_agent", "--agui", CLIENT) as running:
        yield running


@pytest.fixture
def client(server: Server) -> Client:
    return Client(server.url.replace("ws://", "http://").removesuffix("/ws") + "/agui")
