"""`LlamaServer`: llama-cpp-python's OpenAI-compatible server, run as a supervised child process.

```python
async with LlamaServer("model.gguf", log_path="llama-server.log") as server:
    child = await server.wait_ready()  # child.base_url: http://127.0.0.1:PORT/v1
```

llama.cpp is native code: when it crashes (a stack overflow while parsing a grammar, an assertion
in a kernel) it ends its process with a signal and no Python traceback. Run in a child process, it
cannot take the server that uses it down; `LocalModel` is the model adapter that talks to it.

- Entering starts `python -m llama_cpp.server` on a free loopback port (one thread each for
  generation and prompt evaluation, requests queued, never interrupting one another) and waits
  until it answers; a child that exits or stays silent while starting is a `ProviderError`
  naming its exit and the last line of its log.
- A child that exits later is restarted at once; when it keeps failing soon after starting, after
  1, 2, 4 ... up to 30 s. Requests wait for the restarted child (`wait_ready`), then fail.
- Exiting stops the child: SIGTERM, then SIGKILL after 5 s. The child runs in its own process
  group (a Ctrl-C in the terminal reaches only its parent, which stops it in order), and on Linux
  it asks the kernel to SIGKILL it when its parent dies (`PR_SET_PDEATHSIG`): not even a `kill -9`
  of the parent leaves a model server behind.

The child's output goes to `log_path`, appended, with a line of toolwire's own (`--- toolwire TIME:`)
for each start and each exit.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import runpy
import signal
import socket
import subprocess
import sys
import tempfile
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Final, Self

import anyio
import anyio.abc

from ..errors import ProviderError, UsageError

__all__ = ["ChildProcess", "LlamaServer"]

ALIAS: Final = "local"
"""The model name the child serves (its `--model_alias`)."""
STARTUP_SECONDS: Final = 120.0
"""How long a start may take before it counts as failed."""
STOP_SECONDS: Final = 5.0
"""How long a stopping child has after SIGTERM before it gets SIGKILL."""
STABLE_SECONDS: Final = 60.0
"""A child that ran this long before it exited is restarted at once."""
MAX_BACKOFF_SECONDS: Final = 30.0

_PROVIDER: Final = "llama.cpp"
_PARENT_PID: Final = "TOOLWIRE_PARENT_PID"
_PR_SET_PDEATHSIG: Final = 1
# llama-cpp-python's server reads these from the environment, over its command line.
_SERVER_ENVIRONMENT: Final = ("CONFIG_FILE", "HOST", "PORT")

_log = logging.getLogger(__name__)


@dataclass(eq=False)
class ChildProcess:
    """One run of the server process, from its start until it exits."""

    pid: int
    base_url: str
    """The OpenAI-compatible API root, e.g. `http://127.0.0.1:PORT/v1`."""
    exited: anyio.Event = field(default_factory=anyio.Event)
    """Set once the process has exited."""
    exit_reason: str | None = None
    """How it exited (`was killed by SIGSEGV`, `exited with code 1`), once it has."""


class LlamaServer:
    """Runs `python -m llama_cpp.server` on a GGUF file as a supervised child process.

    Args:
        path: The GGUF file.
        n_ctx: The context window in tokens.
        n_threads: Threads for generation and for prompt evaluation. More than the free cores
            makes llama.cpp crawl; one is right on a small shared machine.
        log_path: Where the child's output goes; when None, a temporary file removed at exit.
        startup_seconds: How long a start may take, and how long `wait_ready` waits.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        n_ctx: int = 4096,
        n_threads: int = 1,
        log_path: str | os.PathLike[str] | None = None,
        startup_seconds: float = STARTUP_SECONDS,
    ) -> None:
        self.path = Path(path)
        self.n_ctx, self.n_threads, self.startup_seconds = n_ctx, n_threads, startup_seconds
        self.log_path = Path(log_path) if log_path is not None else None
        self._own_log = False
        """Whether `log_path` is a temporary file of ours, removed at exit."""
        self.starts = 0
        """How many children were started (failed starts included)."""
        self._child: ChildProcess | None = None
        self._ready = anyio.Event()
        self._failure = "it was not started"
        self._group: anyio.abc.TaskGroup | None = None

    def __repr__(self) -> str:
        return f"LlamaServer({str(self.path)!r})"

    async def __aenter__(self) -> Self:
        """Start the child and wait until it answers; then supervise it until exit.

        Raises:
            UsageError: The GGUF file does not exist, or llama-cpp-python is not installed.
            ProviderError: The child exited or stayed silent while starting (e.g. not a GGUF
                file); the message names how it exited and the last line of its log.
        """
        if not self.path.is_file():
            raise UsageError(f"no GGUF model file at {self.path}; pass the path of a downloaded .gguf file")
        if importlib.util.find_spec("llama_cpp") is None:
            raise UsageError("the local model needs the 'local' extra: pip install 'toolwire[local]'")
        if self.log_path is None or self._own_log:
            fd, name = tempfile.mkstemp(prefix="toolwire-llama-server-", suffix=".log")
            os.close(fd)
            self.log_path, self._own_log = Path(name), True
        try:
            process = await self._start()  # a first start that fails is the caller's error
        except _NotStarted as exc:
            raise ProviderError(
                _PROVIDER, f"the local model server did not start: {exc} (log: {self.log_path})"
            ) from None
        group = anyio.create_task_group()
        await group.__aenter__()
        self._group = group
        group.start_soon(self._supervise, process)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop the child (SIGTERM, then SIGKILL after `STOP_SECONDS`) and the supervision."""
        group, self._group = self._group, None
        if group is not None:
            group.cancel_scope.cancel()
            await group.__aexit__(None, None, None)
        if self._own_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)

    async def wait_ready(self) -> ChildProcess:
        """Return the running child, waiting up to `startup_seconds` for one being (re)started.

        Raises:
            UsageError: The server was not entered (`async with`).
            ProviderError: No child came up in time; the message says how the last one ended
                and where its log is.
        """
        if self._group is None:
            raise UsageError("start the local model server first: `async with LlamaServer(...)`")
        with anyio.move_on_after(self.startup_seconds):
            await self._ready.wait()
        if self._child is None:
            raise ProviderError(
                _PROVIDER, f"the local model server is not running: {self._failure} (log: {self.log_path})"
            )
        return self._child

    # -- the child's lifetime ---------------------------------------------------------------------

    async def _supervise(self, process: anyio.abc.Process) -> None:
        """Wait for the child to exit, then start another; back off while starts keep failing."""
        failures = 0
        try:
            while True:
                started = anyio.current_time()
                await process.wait()
                child, self._child, self._ready = self._child, None, anyio.Event()
                assert child is not None and process.returncode is not None
                child.exit_reason = _describe(process.returncode)
                child.exited.set()
                await process.aclose()
                self._failure = f"its process {child.exit_reason}"
                failures = 0 if anyio.current_time() - started >= STABLE_SECONDS else failures + 1
                while True:
                    delay = 0.0 if failures <= 1 else min(MAX_BACKOFF_SECONDS, 2.0 ** (failures - 2))
                    note = f"the local model server stopped ({self._failure}); restarting in {delay:.0f} s"
                    _log.warning("%s (log: %s)", note, self.log_path)
                    self._note(note)
                    await anyio.sleep(delay)
                    try:
                        process = await self._start()
                    except _NotStarted as exc:
                        self._failure, failures = f"a restart failed: {exc}", failures + 1
                        continue
                    break
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
            if (child := self._child) is not None and process.returncode is not None:
                self._child, child.exit_reason = None, _describe(process.returncode)
                child.exited.set()

    async def _start(self) -> anyio.abc.Process:
        """Start a child and wait until it answers; it is then the running `_child`.

        Raises:
            _NotStarted: It exited or stayed silent; the message has the last line of its log.
        """
        assert self.log_path is not None
        port = _free_port()
        command = [
            sys.executable, "-m", __name__, "--model", str(self.path), "--model_alias", ALIAS,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads),
            "--interrupt_requests", "False",
        ]  # fmt: skip
        env = {key: value for key, value in os.environ.items() if key not in _SERVER_ENVIRONMENT}
        # Idle OpenMP threads would spin on the cores the server and the tools need.
        env |= {"OMP_WAIT_POLICY": env.get("OMP_WAIT_POLICY", "PASSIVE"), _PARENT_PID: str(os.getpid())}
        self._note(f"starting {' '.join(command[2:])}")
        with self.log_path.open("ab") as log:
            # Forked by the event loop's thread, which lives as long as the process:
            # PR_SET_PDEATHSIG fires when the thread that forked the child ends.
            process = await anyio.open_process(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        self.starts += 1
        child = ChildProcess(process.pid, f"http://127.0.0.1:{port}/v1")
        try:
            await self._wait_listening(process, child)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await _stop(process)
            raise
        self._child = child
        self._ready.set()
        return process

    async def _wait_listening(self, process: anyio.abc.Process, child: ChildProcess) -> None:
        import httpx

        deadline = anyio.current_time() + self.startup_seconds
        async with httpx.AsyncClient(timeout=2.0) as client:
            while anyio.current_time() < deadline:
                with suppress(httpx.TransportError):  # not listening yet
                    if (await client.get(f"{child.base_url}/models")).status_code == 200:
                        return
                with anyio.move_on_after(0.2):  # the pause between polls, and a crash detector
                    await process.wait()
                if process.returncode is not None:
                    line = self._last_log_line()
                    raise _NotStarted(
                        f"its process {_describe(process.returncode)} while starting{': ' + line if line else ''}"
                    )
        raise _NotStarted(f"it did not answer within {self.startup_seconds:.0f} s")

    def _note(self, text: str) -> None:
        """Write a line of our own in the child's log, among its lines."""
        assert self.log_path is not None
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(f"--- toolwire {datetime.now(UTC).isoformat(timespec='seconds')}: {text}\n")

    def _last_log_line(self) -> str:
        assert self.log_path is not None
        lines = self.log_path.read_text(errors="replace").splitlines()
        return next((line.strip() for line in reversed(lines) if line.strip()), "")


class _NotStarted(Exception):
    """A child exited or stayed silent while starting; the message says how."""


async def _stop(process: anyio.abc.Process) -> None:
    """SIGTERM, then SIGKILL if it is still running after `STOP_SECONDS`; then release it."""
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(STOP_SECONDS):
            await process.wait()
        if process.returncode is None:
            process.kill()
    await process.aclose()


def _describe(returncode: int) -> str:
    if returncode < 0:
        with suppress(ValueError):
            return f"was killed by {signal.Signals(-returncode).name}"
        return f"was killed by signal {-returncode}"
    return f"exited with code {returncode}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _main(argv: list[str]) -> None:
    """The child's entry point: die with the parent, then run llama-cpp-python's server."""
    parent = int(os.environ.pop(_PARENT_PID, "0"))
    if sys.platform == "linux":
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent and os.getppid() != parent:
        sys.exit("toolwire: the parent process ended before the local model server started")
    sys.argv = ["llama_cpp.server", *argv]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _main(sys.argv[1:])
