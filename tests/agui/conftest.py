"""A live `toolwire serve --agui` (the test app, two principals) and the AG-UI client pointed at it.

Beside it, the reference the tests compare it with: pydantic-ai's AG-UI adapter on the same script
(reference_app.py), served by uvicorn.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
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


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """The client pointed at pydantic-ai's adapter (reference_app.py) under uvicorn, on a free loopback port.

    Skips without pydantic-ai (`pip install -e '.[dev]'`), node or the npm client package.
    """
    pytest.importorskip("pydantic_ai.ui.ag_ui", reason="the reference runs need pydantic-ai-slim[ag-ui] (dev extra)")
    if shutil.which("node") is None or not CLIENT.is_dir():
        pytest.skip("needs node and `npm ci --prefix tests/agui`")
    tmp_path = tmp_path_factory.mktemp("agui-reference")
    shutil.copy(HERE / "reference_app.py", tmp_path / "reference_app.py")
    command = [sys.executable, "-m", "uvicorn", "reference_app:app", "--host", "127.0.0.1", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--no-access-log"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line)
        if match := re.search(r"Uvicorn running on (http://\S+)", line):
            break
    else:
        process.wait(timeout=10)
        raise AssertionError("the reference server did not start:\n" + "".join(lines))
    # What it prints after (a request's traceback) is read on, so that a full pipe never blocks it.
    drain = threading.Thread(target=lines.extend, args=(process.stdout,), daemon=True)
    drain.start()
    try:
        yield Client(match.group(1) + "/agui")
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        drain.join(timeout=10)
        process.stdout.close()
