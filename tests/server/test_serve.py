"""`toolwire serve`'s own choices: which agent, which tokens."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from toolwire import Agent
from toolwire.errors import UsageError
from toolwire.server.serve import ServeOptions, _auth, load_agent
from toolwire.store.memory import MemoryStore


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


def test_without_a_token_a_new_one_is_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLWIRE_TOKEN", raising=False)
    out = io.StringIO()
    auth, printed = _auth(ServeOptions(), out)
    token = out.getvalue().removeprefix("token: ").strip()
    assert auth.authenticate(token) == "default" and printed == token


def test_a_given_token_is_not_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    auth, printed = _auth(ServeOptions(token="given-token-0123456789"), out)
    assert (auth.authenticate("given-token-0123456789"), out.getvalue(), printed) == ("default", "", None)
