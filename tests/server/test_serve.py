"""`toolwire serve`'s own choices: which agent, which tokens (and the one it keeps across restarts)."""

from __future__ import annotations

import io
import os
import signal
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from serving import serve_app
from toolwire import Agent
from toolwire.client import Reconnect, connect
from toolwire.errors import UsageError
from toolwire.server.auth import kept_token
from toolwire.server.serve import ServeOptions, _auth, load_agent
from toolwire.store.memory import MemoryStore

HELLO_APP = textwrap.dedent(
    """
    from toolwire import Agent
    from toolwire.messages import UserMessage
    from toolwire.testing import FunctionModel

    def script(request):
        last = [m for m in request.messages if isinstance(m, UserMessage)][-1]
        return f"Hello, {last.content}."

    def make_agent(store):
        return Agent(FunctionModel(script), store=store)
    """
)


def write_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    """Write `servedapp.py` and make it the one imported (each test gets a fresh module)."""
    (tmp_path / "servedapp.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "servedapp", raising=False)


def test_a_factory_with_a_store_parameter_gets_the_servers_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = "from toolwire import Agent\nfrom toolwire.testing import ScriptedModel\n"
    source += "def make(store):\n    return Agent(ScriptedModel(['hi']), store=store)\n"
    write_app(tmp_path, monkeypatch, source)
    store = MemoryStore()
    agent = load_agent("servedapp:make", store, None)
    assert isinstance(agent, Agent) and agent.store is store


def test_a_factory_that_returns_no_agent_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_app(tmp_path, monkeypatch, "def make():\n    return 42\n")
    with pytest.raises(UsageError, match="returned int, not an Agent"):
        load_agent("servedapp:make", MemoryStore(), None)


@pytest.mark.parametrize("spec", ["servedapp", "missing_module:make", "servedapp:missing"])
def test_an_app_that_cannot_be_loaded_is_named(spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_app(tmp_path, monkeypatch, "def make():\n    return 42\n")
    with pytest.raises(UsageError, match="--app"):
        load_agent(spec, MemoryStore(), None)


def test_without_a_token_the_kept_one_is_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLWIRE_TOKEN", raising=False)
    out = io.StringIO()
    auth, printed = _auth(ServeOptions(data_dir=tmp_path), out)
    token = out.getvalue().splitlines()[0].removeprefix("token: ")
    assert auth.authenticate(token) == "default" and printed == token
    assert (tmp_path / "token").read_text().strip() == token


def test_a_given_token_is_not_printed_nor_kept(tmp_path: Path) -> None:
    out = io.StringIO()
    auth, printed = _auth(ServeOptions(data_dir=tmp_path, token="given-token-0123456789"), out)
    assert (auth.authenticate("given-token-0123456789"), out.getvalue(), printed) == ("default", "", None)
    assert not (tmp_path / "token").exists()


def test_a_kept_token_is_made_owner_only_and_then_reused(tmp_path: Path) -> None:
    path = tmp_path / "data" / "token"
    token = kept_token(path)
    assert kept_token(path) == token and len(token) >= 40
    if os.name == "posix":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["token"]  # no temporary file left behind


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_token_file_others_can_read_is_refused_not_used(tmp_path: Path) -> None:
    path = tmp_path / "token"
    kept_token(path)
    path.chmod(0o644)
    with pytest.raises(UsageError, match=r"readable by other users.*delete it to get a new token") as refused:
        kept_token(path)
    assert path.read_text().strip() not in str(refused.value)


@pytest.mark.parametrize("content", ["", "short\n", "two words-0123456789abcdef\n"])
def test_a_token_file_without_a_token_is_refused(content: str, tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(content)
    path.chmod(0o600)
    with pytest.raises(UsageError, match="holds no token: delete it"):
        kept_token(path)


async def test_a_restarted_server_keeps_its_token_and_its_clients(tmp_path: Path) -> None:
    data = tmp_path / "data"
    patient = Reconnect(attempts=100, initial_delay=0.05, max_delay=0.2)  # about 20 s of attempts
    with serve_app(tmp_path, HELLO_APP, "helloapp", token=None, data_dir=data) as first:
        port = first.url.rsplit(":", 1)[1].split("/", 1)[0]
        async with connect(first.url, token=first.token, reconnect=patient) as client:
            assert await client.ask("hello") == "Hello, hello."
            first.process.send_signal(signal.SIGINT)  # a graceful stop; the client starts reconnecting
            first.process.wait(timeout=15)
            with serve_app(tmp_path, HELLO_APP, "helloapp", "--port", port, token=None, data_dir=data) as second:
                assert second.token == first.token
                if os.name == "posix":
                    assert stat.S_IMODE((data / "token").stat().st_mode) == 0o600
                assert await client.ask("again") == "Hello, again."  # sent while reconnecting
                assert client.conversation_id
