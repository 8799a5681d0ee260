"""A live `toolwire serve --ai-sdk` (the test app, two principals) and the AI SDK client pointed at it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from aisdk_client import CLIENT, HERE, TOKENS, Client

from serving import Server, serve_command


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if shutil.which("node") is None or not CLIENT.is_dir():
        pytest.skip("needs node and `npm ci --prefix tests/aisdk`")
    tmp_path = tmp_path_factory.mktemp("aisdk")
    shutil.copy(HERE / "aisdk_app.py", tmp_path / "aisdk_app.py")
    (tmp_path / "tokens.txt").write_text(TOKENS)
    arguments = ("--app", "aisdk_app:make_agent", "--ai-sdk", "--tokens", str(tmp_path / "tokens.txt"))
    with serve_command(tmp_path, *arguments, token="unused-token-0123456789") as running:
        yield running


@pytest.fixture
def client(server: Server) -> Client:
    return Client(server.url.replace("ws://", "http://").removesuffix("/ws") + "/ai-sdk/chat")
