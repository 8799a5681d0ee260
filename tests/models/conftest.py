"""A real OpenAI-compatible server for end-to-end tests: llama-cpp-python's, on the demo weights."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

SERVER_ALIAS = "local"
STARTUP_SECONDS = 90.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _log_tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start `python -m llama_cpp.server` on a free port; yield its base URL (`.../v1`)."""
    from toolwire.models.demo import demo_model_path

    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    # One thread each for generation and prompt processing: this machine has two cores, and
    # oversubscribing them makes llama.cpp crawl. PASSIVE stops idle OpenMP threads spinning.
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(demo_model_path()),
        "--model_alias", SERVER_ALIAS, "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "4096",
    ]  # fmt: skip
    env = os.environ | {"OMP_WAIT_POLICY": "PASSIVE"}
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_ready(process, base_url, log)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(process: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            try:
                if client.get(f"{base_url}/models").status_code == 200:
                    return
            except httpx.TransportError:
                pass  # not listening yet
            try:
                code = process.wait(timeout=0.2)  # the pause between polls, and a crash detector
            except subprocess.TimeoutExpired:
                continue
            pytest.fail(f"llama_cpp.server exited with code {code}:\n{_log_tail(log)}")
    pytest.fail(f"llama_cpp.server was not ready within {STARTUP_SECONDS} s:\n{_log_tail(log)}")
