"""The TypeScript client through haproxy: it reconnects to another replica and its run finishes (issue 17, point 3).

The Python client's reconnects are what every scenario of test_cluster.py exercises; here the
client is the TypeScript one, as the server ships it (`/static/toolwire-client.js`, the bundle the
chat page runs), in Node (tests/cluster/ts_job_client.mjs). Its first client tool call is held
while the replica that sent it is killed: the client reconnects through haproxy (its URL names the
conversation), another replica takes the conversation over once the lease expires, takes the
held call's result and finishes the run; the call ran once, and every call has one result.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from cluster_checks import check_one_result_per_call, lease_owner
from cluster_harness import TOKEN, Cluster

import toolwire

SCRIPT = Path(__file__).with_name("ts_job_client.mjs")
BUNDLE = Path(toolwire.__file__).parent / "server" / "static" / "toolwire-client.js"


class NodeClient:
    """ts_job_client.mjs as a child process: its JSON lines, and a line on stdin to go on."""

    def __init__(self, url: str, jobs: int, rounds: int) -> None:
        command = ["node", "--experimental-websocket", str(SCRIPT), BUNDLE.as_uri(), url, TOKEN, str(jobs), str(rounds)]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.printed: list[str] = []

    def next_line(self) -> dict[str, Any]:
        """The next JSON object it prints (its other output is kept for the failure's message)."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.printed.append(line)
            if line.startswith("{") and '"event"' not in line:
                return json.loads(line)
        raise AssertionError("the client ended:\n" + "".join(self.printed))

    async def line(self) -> dict[str, Any]:
        """`next_line()` in a worker thread (abandoned if the test gives up waiting)."""
        return await anyio.to_thread.run_sync(self.next_line, abandon_on_cancel=True)

    def go_on(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


@pytest.fixture
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("needs Node.js 20 or later")
    return found


async def test_the_typescript_client_reconnects_to_another_replica_when_its_own_dies(
    cluster: Cluster, node: str
) -> None:
    client = NodeClient(cluster.url, jobs=2, rounds=2)
    step = "connecting"
    try:
        with anyio.fail_after(60):
            conversation = (await client.line())["conversation"]
            step = "waiting for its first Work call"
            held = (await client.line())["held"]
            owner = lease_owner(cluster, conversation)
            await cluster.kill(owner)
            client.go_on()  # its answer goes out on the socket it opens next, to another replica
            step = f"finishing after {owner} was killed"
            finished = await client.line()
    except TimeoutError:
        client.end()
        raise AssertionError(f"stuck {step}:\n" + "".join(client.printed) + cluster.report()) from None
    finally:
        client.end()
    assert finished["answers"] == ["done ts-0", "done ts-1"], "".join(client.printed) + cluster.report()
    assert finished["executions"][held] == 1
    assert set(finished["executions"].values()) == {1}  # each request ran once
    assert lease_owner(cluster, conversation) != owner  # another replica finished it
    check_one_result_per_call(cluster.pg.dsn)
