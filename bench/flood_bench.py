"""Floods: what a client flooding the server with refused results does to a neighbour and to memory.

Three processes on loopback: a `toolwire serve` (this module's `make_agent`, a `FunctionModel` that
answers every prompt at once, and a `SqliteStore`), a flooder (this script with `--flood URL`; the
principal `mallory`), and the neighbour (this process; the principal `alice`). The flooder connects
and sends ToolUseResults for random request ids as fast as its socket takes them, reading the
answers without acknowledging them; when the server gives up on the connection it reconnects (to
the same conversation) and goes on, and when the handshake is refused it tries again at once,
until stopped (`--no-reconnect`: one connection, as in issue 13). The neighbour, on its own
connection, sends a UserMessage and waits for its RunStatus "finished" (a whole run: saved,
answered, saved), one after the other.

Per round: `--count` neighbour runs alone (the baseline), then, `--flood-first` seconds after the
flooder started, `--count` runs while it floods; latency p50 and p99 of each, and their ratio.
After the last round the flooder is stopped, the server left idle for 2 s, and its RSS read
(`/proc/PID/status`) against the RSS before the first flood; the server's log lines that mention
a refusal are counted.

    .venv/bin/python bench/flood_bench.py [--rounds N] [--count N] [--flood-first S] [--no-reconnect]
        [--source SRC_DIR] [--json PATH] [--note TEXT]

`--source` runs the server from another checkout's `src` (e.g. the code before the refusal limit,
extracted with `git archive COMMIT src | tar -x -C DIR`), for a before/after comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from toolwire import Agent
from toolwire.protocol import Configuration, Connection, ErrorMessage, RunStatus, ToolUseResult, UserMessageBody
from toolwire.store import Store
from toolwire.testing import FunctionModel

TOKEN = "flood-bench-token-0123456789abcdef"
"""The neighbour's (principal `alice`)."""
FLOODER_TOKEN = "flood-bench-mallory-0123456789abcdef"
"""The flooder's (principal `mallory`)."""
RESULTS = Path(__file__).resolve().parent / "results"


class _Forgetful(list[Any]):
    """`FunctionModel` keeps every request it was sent; a server under load must not."""

    def append(self, item: Any) -> None:
        pass


def make_agent(store: Store) -> Agent:
    """The served agent (`--app flood_bench:make_agent`): every prompt is answered at once."""
    model = FunctionModel(lambda request: "pong")
    model.requests = _Forgetful()
    return Agent(model, store=store)


@contextmanager
def served(source: Path | None) -> Iterator[tuple[subprocess.Popen[str], str, list[str]]]:
    """`toolwire serve` on a free port, its stdout read as it comes; stopped (SIGINT) after."""
    with tempfile.TemporaryDirectory() as data:
        paths = [str(Path(__file__).resolve().parent)]
        if source is not None:
            paths.insert(0, str(source))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}
        command = [sys.executable, "-m", "toolwire.cli", "serve", "--app", "flood_bench:make_agent"]
        tokens = Path(data) / "tokens"
        tokens.write_text(f"alice {TOKEN}\nmallory {FLOODER_TOKEN}\n")
        command += ["--port", "0", "--data-dir", data, "--tokens", str(tokens)]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        assert process.stdout is not None
        printed: list[str] = []
        for line in process.stdout:
            printed.append(line)
            if match := re.search(r"serving (ws://\S+)", line):
                break
        else:
            raise SystemExit("the server did not start:\n" + "".join(printed))
        reader = threading.Thread(target=printed.extend, args=(process.stdout,), daemon=True)
        reader.start()
        try:
            yield process, match.group(1), printed
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
            reader.join(timeout=30)
            process.stdout.close()


async def _open(
    url: str, conversation: str | None = None, token: str = TOKEN
) -> tuple[ClientConnection, Connection | None]:
    """A handshaken connection; `None` for the protocol end when the server refused the handshake."""
    connection = Connection("client")
    socket = await connect(
        url, additional_headers={"Authorization": f"Bearer {token}"}, compression=None, open_timeout=60
    )
    await socket.send(connection.hello(conversation))
    data = await socket.recv()
    assert isinstance(data, bytes)
    received = connection.receive(data)
    if not any(isinstance(e.message, Configuration) for e in received.messages):
        return socket, None
    return socket, connection


async def neighbour_runs(url: str, count: int) -> list[float]:
    """`count` runs one after the other on one connection: ms from the UserMessage to "finished"."""
    socket, connection = await _open(url)
    assert connection is not None
    took: list[float] = []
    try:
        for n in range(count):
            started = time.perf_counter()
            await socket.send(connection.send(UserMessageBody(id=f"u{n}", content="ping")))
            while True:
                data = await socket.recv()
                assert isinstance(data, bytes)
                received = connection.receive(data)
                for reply in received.replies:
                    await socket.send(reply)
                if any(isinstance(e.message, RunStatus) and e.message.status == "finished" for e in received.messages):
                    break
            took.append((time.perf_counter() - started) * 1000)
            if (ack := connection.ack()) is not None:
                await socket.send(ack)
    finally:
        await socket.close()
    return took


async def flood(url: str, reconnect: bool = True) -> None:
    """Flood until killed: results for random ids, reconnecting as soon as the server gives up on
    a connection (its final ErrorMessage: the rest of that connection's closing is not waited for)."""
    connections = answered = refused = 0
    conversation: str | None = None
    while True:
        socket, connection = await _open(url, conversation, FLOODER_TOKEN)  # the same conversation again
        if connection is None:  # refused at once: try again
            refused += 1
            socket.transport.abort()
            continue
        conversation = connection.conversation_id
        connections += 1

        async def read(socket: ClientConnection, connection: Connection, group: TaskGroup) -> None:
            nonlocal answered
            try:
                while True:
                    data = await socket.recv()
                    assert isinstance(data, bytes)
                    received = connection.receive(data)
                    answered += sum(isinstance(e.message, ErrorMessage) for e in received.messages)
                    if received.close:
                        break
            except ConnectionClosed:
                pass
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(read, socket, connection, group)
            try:
                while True:
                    result = ToolUseResult(id="req_" + secrets.token_hex(16), success=True, result={"value": "x"})
                    await socket.send(connection.send(result))
                    await anyio.lowlevel.checkpoint()  # a send that does not block would starve the reader
            except ConnectionClosed:
                pass
        socket.transport.abort()
        print(f"flooder: {connections} connections, {answered} refusals answered, {refused} refused", flush=True)
        if not reconnect:
            await anyio.sleep_forever()


def rss_mib(pid: int) -> float:
    match = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    assert match is not None
    return int(match.group(1)) / 1024


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def measure(url: str, pid: int, rounds: int, count: int, flood_first: float, reconnect: bool) -> dict[str, Any]:
    await neighbour_runs(url, 50)  # warm-up
    rss_before = rss_mib(pid)
    per_round: list[dict[str, float]] = []
    flooder_output = ""
    for _ in range(rounds):
        alone = await neighbour_runs(url, count)
        with tempfile.TemporaryFile("w+") as output:
            command = [sys.executable, __file__, "--flood", url, *(() if reconnect else ("--no-reconnect",))]
            flooder = await anyio.open_process(command, stdout=output, stderr=output)
            try:
                await anyio.sleep(flood_first)  # the flood under way
                during = await neighbour_runs(url, count)
            finally:
                flooder.kill()
                await flooder.wait()
            output.seek(0)
            flooder_output = output.read()
        per_round.append(
            {
                "alone_p50_ms": statistics.median(alone),
                "alone_p99_ms": percentile(alone, 99),
                "flood_p50_ms": statistics.median(during),
                "flood_p99_ms": percentile(during, 99),
                "p99_ratio": percentile(during, 99) / percentile(alone, 99),
            }
        )
    await anyio.sleep(2.0)  # the server idle
    last = flooder_output.strip().splitlines()[-1:] or ["flooder: no connection completed"]
    return {"rounds": per_round, "rss_before_mib": rss_before, "rss_after_mib": rss_mib(pid), "flooder": last[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--count", type=int, default=300, help="neighbour runs per measurement")
    parser.add_argument("--flood-first", type=float, default=5.0, help="seconds of flood before measuring")
    parser.add_argument("--source", type=Path, help="run the server from this src directory")
    parser.add_argument("--json", type=Path, help="where to write the results (default bench/results/flood-DATE.json)")
    parser.add_argument("--note", default="")
    parser.add_argument("--no-reconnect", dest="reconnect", action="store_false", help="the flooder stops once cut off")
    parser.add_argument("--flood", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.flood:
        try:
            anyio.run(flood, args.flood, args.reconnect)
        except KeyboardInterrupt:
            pass
        return 0
    with served(args.source) as (process, url, printed):
        figures = anyio.run(measure, url, process.pid, args.rounds, args.count, args.flood_first, args.reconnect)
    figures["refusal_log_lines"] = sum("refused" in line for line in printed)
    figures |= {
        "rounds_asked": args.rounds,
        "count": args.count,
        "flood_first_s": args.flood_first,
        "reconnect": args.reconnect,
        "source": str(args.source or "this checkout"),
        "machine": f"{platform.processor() or platform.machine()} ({os.cpu_count()} CPUs)",
        "python": platform.python_version(),
        "load_average_after": os.getloadavg(),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "note": args.note,
    }
    for key in ("alone_p50_ms", "alone_p99_ms", "flood_p50_ms", "flood_p99_ms", "p99_ratio"):
        values = [row[key] for row in figures["rounds"]]
        figures[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        print(f"{key:14} median {statistics.median(values):8.2f}  ({min(values):.2f}–{max(values):.2f})")
    print(f"RSS {figures['rss_before_mib']:.1f} -> {figures['rss_after_mib']:.1f} MiB; {figures['flooder']}")
    print(f"server log lines about refusals: {figures['refusal_log_lines']}")
    out = args.json or RESULTS / f"flood-{time.strftime('%Y-%m-%d', time.gmtime())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
