"""Admission control (issue 19, point 6): turns/s and run wall time at 200 conversations, with and without a limit.

Each scenario starts a fresh `toolwire serve` (SQLite store, a function model: every run is
`--turns` model turns, each but the last calling a server tool) and connects N bare protocol
clients (the sans-I/O `Connection` over `websockets`, listing the `runQueue` feature), each
sending a message as soon as its last run finished (a closed loop). Measured over a window after a
warm-up: model turns per second, and per run the time from the UserMessage to RunStatus `started`
(queued) and from `started` to `finished` (running). The peak is the best turns per second of the
unlimited server at any number of conversations (200 included); the gate is turns per second at 200 conversations with
the limit ≥ 90 % of that peak, with the time a run spends running bounded (its queue wait is what
its client is told, RunStatus `queued`).

By Little's law a closed loop of N clients waits N / throughput per run on average whatever the
server does; what the limit changes is where that time goes: in the queue, known to the client, in
arrival order, instead of inside every run at once.

    python bench/admission_bench.py [--seconds 8] [--rounds 2] [--limits 8] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from websockets.asyncio.client import ClientConnection, connect

from toolwire.protocol import RUN_QUEUE, Connection, ErrorCode, ErrorMessage, RunStatus, UserMessageBody

TOKEN = "bench-token-0123456789abcdef"

APP = textwrap.dedent(
    '''
    from toolwire import Agent, ToolCall, tool
    from toolwire.messages import ToolResultMessage, UserMessage
    from toolwire.testing import FunctionModel


    class Unrecorded(list):
        """`FunctionModel.requests` that keeps nothing."""

        def append(self, item, /):
            pass


    @tool
    async def step(n: int) -> dict:
        """One step of the work."""
        return {"n": n}


    def script(request):
        done, turns = 0, 1
        for message in reversed(request.messages):
            if isinstance(message, ToolResultMessage):
                done += 1
            elif isinstance(message, UserMessage):
                turns = int(message.content.split()[1])
                break
        if done < turns - 1:
            return [ToolCall(id=f"c{done}", name="step", arguments={"n": done})]
        return "done"


    def make_agent(store):
        model = FunctionModel(script)
        model.requests = Unrecorded()
        return Agent(model, tools=[step], store=store)
    '''
)


@dataclass
class Run:
    sent: float
    started: float
    finished: float
    position: int
    """The highest queue position the client was told (0: never queued)."""


@dataclass
class Tally:
    runs: list[Run] = field(default_factory=list[Run])
    refused: int = 0


class Served:
    """A `toolwire serve` subprocess on a free loopback port."""

    def __init__(self, workdir: Path, max_runs: int, gc_threshold: int | None = None) -> None:
        (workdir / "benchapp.py").write_text(APP)
        command = [sys.executable, "-m", "toolwire.cli", "serve", "--port", "0", "--data-dir", str(workdir / "data")]
        command += ["--token", TOKEN, "--app", "benchapp:make_agent", "--max-runs", str(max_runs)]
        if gc_threshold is not None:
            command += ["--gc-threshold", str(gc_threshold)]
        command += ["--max-conversations", "100000", "--run-queue", "1000"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            command, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if match := re.search(r"serving (ws://\S+)", line):
                self.url = match.group(1)
                break
        else:
            raise RuntimeError("the server did not start")

    def cpu(self) -> float:
        """CPU seconds the server used so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


async def open_conversation(url: str) -> tuple[ClientConnection, Connection]:
    connection = Connection("client")
    socket = await connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}, max_queue=None)
    await socket.send(connection.hello(None, features=(RUN_QUEUE,)))
    while not connection.is_open:
        data = await socket.recv()
        assert isinstance(data, bytes)
        for reply in connection.receive(data).replies:
            await socket.send(reply)
    return socket, connection


async def converse(socket: ClientConnection, connection: Connection, turns: int, until: float, tally: Tally) -> None:
    """Send a message as soon as the last run finished, until `until`."""
    number = 0
    while (sent := time.perf_counter()) < until:
        number += 1
        message_id = f"m{number}"
        await socket.send(connection.send(UserMessageBody(id=message_id, content=f"turns {turns}")))
        started, position, finished = 0.0, 0, 0.0
        while not finished:
            data = await socket.recv()
            assert isinstance(data, bytes)
            received = connection.receive(data)
            for reply in received.replies:
                await socket.send(reply)
            for envelope in received.messages:
                match envelope.message:
                    case RunStatus(status="queued", position=at, message_id=mid) if mid == message_id:
                        position = max(position, at or 0)
                    case RunStatus(status="started", message_id=mid) if mid == message_id:
                        started = time.perf_counter()
                    case RunStatus(status="finished" | "failed", message_id=mid) if mid == message_id:
                        finished = time.perf_counter()
                    case ErrorMessage(code=ErrorCode.SERVER_BUSY):
                        tally.refused += 1
                        finished = -1.0
                    case _:
                        pass
            if connection.unacknowledged >= 8 and (ack := connection.ack()) is not None:
                await socket.send(ack)
        if finished > 0:
            tally.runs.append(Run(sent, started or finished, finished, position))
        if (ack := connection.ack()) is not None:
            await socket.send(ack)


def _percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def scenario(
    conversations: int, max_runs: int, *, turns: int, warmup: float, seconds: float, gc_threshold: int | None = None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="admission-bench-") as workdir:
        server = Served(Path(workdir), max_runs, gc_threshold)
        try:
            opened = [await open_conversation(server.url) for _ in range(conversations)]
            tally = Tally()
            begin = time.perf_counter()
            window = (begin + warmup, begin + warmup + seconds)
            cpu_at_window: list[float] = []
            client_cpu: list[float] = []

            async def mark_cpu() -> None:
                await anyio.sleep(warmup)
                cpu_at_window.append(server.cpu())
                client_cpu.append(time.process_time())
                await anyio.sleep(seconds)
                cpu_at_window.append(server.cpu())
                client_cpu.append(time.process_time())

            async with anyio.create_task_group() as group:
                group.start_soon(mark_cpu)
                for socket, connection in opened:
                    group.start_soon(converse, socket, connection, turns, window[1], tally)
            for socket, _ in opened:
                await socket.close()
        finally:
            server.stop()
    inside = [run for run in tally.runs if window[0] <= run.finished <= window[1]]
    queued = [run.started - run.sent for run in inside]
    running = [run.finished - run.started for run in inside]
    total = [run.finished - run.sent for run in inside]
    server_cpu = cpu_at_window[1] - cpu_at_window[0] if len(cpu_at_window) == 2 else float("nan")
    return {
        "conversations": conversations,
        "max_runs": max_runs or None,
        "gc_threshold": gc_threshold,
        "turns_per_run": turns,
        "turns_per_s": len(inside) * turns / seconds,
        "runs": len(inside),
        "refused": tally.refused,
        "told_queued": sum(1 for run in inside if run.position),
        "max_position": max((run.position for run in inside), default=0),
        "queued_s": {"p50": _percentile(queued, 0.5), "p99": _percentile(queued, 0.99)},
        "running_s": {"p50": _percentile(running, 0.5), "p99": _percentile(running, 0.99)},
        "total_s": {"p50": _percentile(total, 0.5), "p99": _percentile(total, 0.99)},
        "server_cpu_share": server_cpu / seconds,
        "client_cpu_share": (client_cpu[1] - client_cpu[0]) / seconds if len(client_cpu) == 2 else float("nan"),
        "turns_per_server_cpu_s": len(inside) * turns / server_cpu,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument(
        "--peak-at", default="1,4,16,64", help="conversations of the unlimited runs the peak is taken from"
    )
    parser.add_argument("--limits", default="8", help="--max-runs values to measure at --conversations")
    parser.add_argument("--turns", type=int, default=4, help="model turns per run")
    parser.add_argument("--seconds", type=float, default=8.0, help="measured window per scenario")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of every scenario")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--gc-ab",
        default="",
        metavar="NxM,...",
        help="instead: pairs of the scenarios N conversations × --max-runs M, `toolwire serve --gc-threshold 0`"
        " against its default, in an order alternated per pair (turns per server CPU second)",
    )
    parser.add_argument("--pairs", type=int, default=6, help="--gc-ab: pairs per scenario")
    args = parser.parse_args(argv)
    if args.gc_ab:
        return gc_ab(args)
    plan = [(int(n), 0) for n in args.peak_at.split(",") if n]
    plan += [(args.conversations, 0)] + [(args.conversations, int(m)) for m in args.limits.split(",") if m]
    load_before = os.getloadavg()
    results: list[dict[str, Any]] = []
    for round_index in range(args.rounds):
        for conversations, max_runs in plan:
            result = anyio.run(
                lambda c=conversations, m=max_runs: scenario(
                    c, m, turns=args.turns, warmup=args.warmup, seconds=args.seconds
                )
            )
            result["round"] = round_index
            results.append(result)
            print(
                f"round {round_index} conversations {conversations:>4} max_runs {max_runs or '-':>4}: "
                f"{result['turns_per_s']:8.0f} turns/s, running p50 {result['running_s']['p50'] * 1000:7.1f} ms "
                f"p99 {result['running_s']['p99'] * 1000:7.1f} ms, "
                f"queued p50 {result['queued_s']['p50'] * 1000:7.1f} ms, "
                f"total p99 {result['total_s']['p99'] * 1000:7.1f} ms, told queued {result['told_queued']}, "
                f"server CPU {result['server_cpu_share']:.2f} (client {result['client_cpu_share']:.2f}), "
                f"{result['turns_per_server_cpu_s']:.0f} turns per server CPU s",
                flush=True,
            )
    summary = summarize(results, args.conversations)
    print(json.dumps(summary, indent=2))
    if args.json is not None:
        write_json(args, load_before=load_before, results=results, summary=summary)
    return 0


def gc_ab(args: argparse.Namespace) -> int:
    """`--gc-ab`: the server's garbage collector tuned (its default) against Python's own settings, in pairs."""
    pairs: dict[str, dict[str, list[float]]] = {}
    for index in range(args.pairs):
        for spec in args.gc_ab.split(","):
            conversations, max_runs = (int(part) for part in spec.split("x"))
            settings = (0, None) if index % 2 == 0 else (None, 0)
            for gc_threshold in settings:
                result = anyio.run(
                    lambda c=conversations, m=max_runs, g=gc_threshold: scenario(
                        c, m, turns=args.turns, warmup=args.warmup, seconds=args.seconds, gc_threshold=g
                    )
                )
                side = "python" if gc_threshold == 0 else "tuned"
                pairs.setdefault(spec, {"python": [], "tuned": []})[side].append(result["turns_per_server_cpu_s"])
                print(f"pair {index} {spec} gc {side}: {result['turns_per_server_cpu_s']:.0f} turns per server CPU s")
    summary = {
        spec: {
            "python": statistics.median(sides["python"]),
            "tuned": statistics.median(sides["tuned"]),
            "tuned_wins": sum(t > p for t, p in zip(sides["tuned"], sides["python"], strict=True)),
            "pairs": len(sides["tuned"]),
            "median_ratio": statistics.median(t / p for t, p in zip(sides["tuned"], sides["python"], strict=True)),
        }
        for spec, sides in pairs.items()
    }
    print(json.dumps(summary, indent=2))
    if args.json is not None:
        write_json(args, pairs=pairs, summary=summary)
    return 0


def write_json(args: argparse.Namespace, **figures: Any) -> None:
    """The results file (`--json`): the date, the machine's CPUs and load, the arguments, then `figures`."""
    payload = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": os.cpu_count(),
        "load_after": os.getloadavg(),
        "args": {k: str(v) for k, v in vars(args).items()},
        **figures,
    }
    args.json.write_text(json.dumps(payload, indent=2) + "\n")


def summarize(results: list[dict[str, Any]], conversations: int) -> dict[str, Any]:
    """Medians over rounds per scenario; the peak; the gate."""
    by: dict[tuple[int, int | None], list[dict[str, Any]]] = {}
    for result in results:
        by.setdefault((result["conversations"], result["max_runs"]), []).append(result)
    table = {
        f"{c} conv, max_runs {m or '-'}": {
            "turns_per_s": statistics.median(r["turns_per_s"] for r in rs),
            "running_p50_ms": statistics.median(r["running_s"]["p50"] for r in rs) * 1000,
            "running_p99_ms": statistics.median(r["running_s"]["p99"] for r in rs) * 1000,
            "queued_p50_ms": statistics.median(r["queued_s"]["p50"] for r in rs) * 1000,
            "total_p99_ms": statistics.median(r["total_s"]["p99"] for r in rs) * 1000,
            "server_cpu_share": statistics.median(r["server_cpu_share"] for r in rs),
            "turns_per_server_cpu_s": statistics.median(r["turns_per_server_cpu_s"] for r in rs),
        }
        for (c, m), rs in sorted(by.items(), key=lambda item: (item[0][0], item[0][1] or 0))
    }
    peak = max(statistics.median(r["turns_per_s"] for r in rs) for (c, m), rs in by.items() if m is None)
    limited = {
        m: statistics.median(r["turns_per_s"] for r in rs) / peak
        for (c, m), rs in by.items()
        if c == conversations and m
    }
    unlimited = statistics.median(r["turns_per_s"] for r in by[(conversations, None)]) / peak
    return {
        "table": table,
        "peak_turns_per_s": peak,
        "unlimited_vs_peak": unlimited,
        "limited_vs_peak": limited,
        "gate_limited_within_10pct": all(ratio >= 0.9 for ratio in limited.values()),
    }


if __name__ == "__main__":
    raise SystemExit(main())
