"""Start a real `toolwire serve` subprocess on a free loopback port, for the server, client and browser tests."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from toolwire.messages import Message, message_from_dict


@dataclass
class Server:
    """A running `toolwire serve`; what it prints after its start is read as it prints (`printed`):
    a server blocked on a full pipe serves nobody."""

    process: subprocess.Popen[str]
    url: str
    data_dir: Path
    token: str
    """The token given, or the one the server printed."""
    started: list[str]
    """The lines it printed up to the "serving" line (included)."""
    printed: list[str] = field(default_factory=list[str])
    """The lines it printed since, so far."""
    _reader: threading.Thread | None = None

    def __post_init__(self) -> None:
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self.printed.extend, args=(self.process.stdout,), daemon=True)
        self._reader.start()

    def kill(self) -> None:
        """kill -9: no cleanup of any kind."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> tuple[int, str]:
        """Send `sig` (a graceful stop); return the exit status and what the server printed since its start."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        self.process.wait(timeout=30)
        self.read_all()
        return self.process.returncode, "".join(self.printed)

    def read_all(self) -> None:
        """Wait until everything the (stopped) server printed is read."""
        if self._reader is not None:
            self._reader.join(timeout=30)


@contextmanager
def serve_app(
    tmp_path: Path, app_source: str, module: str, *extra: str, token: str | None, data_dir: Path | None = None
) -> Iterator[Server]:
    """Write `app_source` as `module.py`, serve `module:make_agent`; stop the server after (SIGINT).

    `token=None` starts it without a token option (nor `TOOLWIRE_TOKEN`): it uses the one it keeps.
    """
    (tmp_path / f"{module}.py").write_text(app_source)
    with serve_command(tmp_path, "--app", f"{module}:make_agent", *extra, token=token, data_dir=data_dir) as server:
        yield server


@contextmanager
def serve_command(
    tmp_path: Path,
    *arguments: str,
    token: str | None,
    data_dir: Path | None = None,
    program: Sequence[str] = (sys.executable, "-m", "toolwire.cli"),
    env: Mapping[str, str] | None = None,
) -> Iterator[Server]:
    """Run `toolwire serve ARGUMENTS` in `tmp_path` on a free port; stop it after (SIGINT).

    `token=None` passes no token option: the server uses the one it keeps (`Server.token`).
    `program` is the `toolwire` to run (default: this interpreter's), `env` its environment
    (default: this process's, without `TOOLWIRE_TOKEN`).
    """
    data = data_dir or tmp_path / "data"
    command = [*program, "serve", "--port", "0", "--data-dir", str(data)]
    command += [*(["--token", token] if token is not None else []), *arguments]
    if env is None:
        env = {key: value for key, value in os.environ.items() if key != "TOOLWIRE_TOKEN"}
    env = {**env, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line)
        if token is None and line.startswith("token: "):
            token = line.removeprefix("token: ").strip()
        if match := re.search(r"serving (ws://\S+)", line):
            break
    else:
        process.wait(timeout=10)
        raise AssertionError("the server did not start:\n" + "".join(lines))
    if token is None:
        process.kill()
        process.wait(timeout=10)
        process.stdout.close()
        raise AssertionError("the server printed no token:\n" + "".join(lines))
    server = Server(process, match.group(1), data, token, lines)
    try:
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        server.read_all()
        process.stdout.close()


def transcript_of(data_dir: Path, thread_id: str) -> list[Message]:
    """The transcript a server stored for a thread, read from its SQLite file."""
    with closing(sqlite3.connect(data_dir / "toolwire.sqlite3")) as db:
        rows = db.execute("SELECT body FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,)).fetchall()
    return [message_from_dict(json.loads(body)) for (body,) in rows]


def transcript_reaching(data_dir: Path, thread_id: str, length: int, timeout: float = 30) -> list[Message]:
    """Wait until the thread's stored transcript has `length` messages (a run ending on its own); return it."""
    give_up = time.monotonic() + timeout
    while (transcript := transcript_of(data_dir, thread_id)) and len(transcript) < length:
        if time.monotonic() > give_up:
            raise AssertionError(f"the transcript of {thread_id} stayed at {len(transcript)} messages: {transcript}")
        time.sleep(0.05)
    return transcript


FRONT_END_TOKENS = "alice alice-token-0123456789abcdef\nbob bob-token-0123456789abcdef0\n"
"""Two principals, for the front-end endpoint tests (tests/agui/, tests/aisdk/)."""
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef0"


@contextmanager
def serve_front_end(tmp_path: Path, app_file: Path, factory: str, flag: str, client: Path) -> Iterator[Server]:
    """Serve `app_file`'s `factory` with the front-end endpoint `flag` (`--agui`, `--ai-sdk`) and two principals.

    Skips the test without node or without the npm client package `client` (`npm ci --prefix ...`).
    """
    if shutil.which("node") is None or not client.is_dir():
        pytest.skip(f"needs node and `npm ci --prefix {client.parent.parent.name}/{client.parent.name}`")
    shutil.copy(app_file, tmp_path / app_file.name)
    (tmp_path / "tokens.txt").write_text(FRONT_END_TOKENS)
    arguments = ("--app", f"{app_file.stem}:{factory}", flag, "--tokens", str(tmp_path / "tokens.txt"))
    with serve_command(tmp_path, *arguments, token="unused-token-0123456789") as running:
        yield running


def run_node(script: Path, given: dict[str, Any]) -> dict[str, Any]:
    """Run a node script in its folder with `given` as JSON on stdin; its stdout, parsed."""
    done = subprocess.run(
        ["node", str(script)], input=json.dumps(given), capture_output=True, text=True, cwd=script.parent, timeout=60
    )
    assert done.returncode == 0, done.stderr
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def wait_gone(pid: int, timeout: float) -> bool:
    """Wait until `pid` has exited (any process: a pidfd becomes readable); return whether it has."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)
