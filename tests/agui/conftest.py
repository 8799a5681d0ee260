"""A live `toolwire serve --agui` (the test app, two principals) and the AG-UI client pointed at it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from agui_client import CLIENT, HERE, TOKENS, Client

from serving import Server, serve_command


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if shutil.which("node") is None or not CLIENT.is_dir():
        pytest.skip("needs node and `npm ci --prefix tests/agui`")
    tmp_path = tmp_path_factory.mktemp("agui")
    shutil.copy(HERE / "agui_app.py", tmp_path / "agui_app.py")
    (tmp_path / "tokens.txt").write_text(TOKENS)
    arguments = ("--app", "agui_app:make_agent", "--agui", "--tokens", str(tmp_path / "tokens.txt"))
    with serve_command(tmp_path, *arguments, token="unused-token-0123456789") as running:
        yield running


@pytest.fixture
def client(server: Server) -> Client:
    return Client(server.url.replace("ws://", "http://").removesuffix("/ws") + "/agui")
