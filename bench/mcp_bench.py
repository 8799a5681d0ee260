"""MCP benchmarks (issue 15): a tool call, a toolset's startup and a tool list through toolwire
against the bare official `mcp` client, in the same run.

- **call**: per-call wall time (and this process's CPU) of an `echo` call over stdio, every
  path over the same connection (the toolset's own `mcp.Client`, so one server process answers
  them all and no pair of processes is luckier in its CPU placement than another): `bare` is
  `mcp.Client.call_tool` on that client (`bare-deadline`: with `read_timeout_seconds` set to the
  toolset's timeout, the SDK's own deadline); `toolset` is `MCPToolset.call` (the SDK call plus
  toolwire's result mapping); `pipeline` is `Pipeline.invoke` over the toolset's toolbox, the
  way the loop runs a call (lookup, local argument validation, policy, deadline, `ToolResult`);
  `agent` is a whole `Agent` run with a scripted model, per call = (run(20 turns) − run(0)) ÷ 20.
  Servers: `python`, the SDK's `MCPServer` (bench/mcp_echo_server.py; no node start-up noise) and
  `everything`, @modelcontextprotocol/server-everything's `echo` (node, tests/mcp/node_modules).
- **startup**: `MCPToolset.setup()` (start server-everything, connect, list the tools, build the
  toolbox) against `mcp.Client` entered plus `list_tools` over every page; then each is closed.
- **memory**: what stays allocated (tracemalloc, and `sys.getallocatedblocks`) after a connect and
  the tool list of a server with 500 tools, through `MCPToolset.setup()` (and after its first
  `to_openai()` export, as a run does) and through the bare client holding its `ListToolsResult`;
  per tool = (500-tool figure − 1-tool figure) ÷ 499, which removes the connection's own share.

Rounds are interleaved: each round measures every unit once, in an order rotated per round;
figures (ratios, differences) are computed per round from units measured in that round, then
summarised as median and p25–p75. Gate (the issue's): `pipeline` ÷ `bare` ≤ 1.10 on the python
server's median wall time per call. The machine may be shared: compare ratios, not absolutes.

    .venv/bin/python bench/mcp_bench.py [--rounds N] [--calls N] [--startup-rounds N] [--starts N]
        [--mem-rounds N] [--tools N] [--only call,startup,memory] [--json PATH] [--markdown PATH]
        [--note TEXT] [--strict]
    .venv/bin/python bench/mcp_bench.py --profile PATH [--calls N]     # cProfile of pipeline vs bare

The docs page is only written with `--markdown PATH` (the section between the `mcp_bench` markers).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import anyio
from mcp.client.stdio import StdioServerParameters

import mcp
from toolwire import Agent, ResultType, ToolCall
from toolwire.interop.mcp import MCPToolset
from toolwire.messages import ToolResultMessage
from toolwire.models import ModelResponse
from toolwire.pipeline import Pipeline
from toolwire.testing import ScriptedModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from invoke_overhead import machine
from loop_common import summary, write_section
from mcp_report import BEGIN, END, gates, render_markdown
from ws_bench import process_cpu

ROOT: Final = Path(__file__).resolve().parent.parent
RESULTS_DIR: Final = ROOT / "bench" / "results"
ECHO_SERVER: Final = ROOT / "bench" / "mcp_echo_server.py"
NODE_MODULES: Final = ROOT / "tests" / "mcp" / "node_modules"
EVERYTHING: Final = NODE_MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
TURNS: Final = 20
PROMPT: Final = "echo"
Sample = dict[str, float]


def python_server(tools: int = 1) -> StdioServerParameters:
    """The echo fixture with `tools` tools, run by this interpreter."""
    return StdioServerParameters(command=sys.executable, args=[str(ECHO_SERVER), "--tools", str(tools)])


def everything_server() -> StdioServerParameters | None:
    """server-everything over stdio, as tests/mcp/conftest.py starts it (None when not installed)."""
    node = NODE_MODULES / ".bin" / "node"
    command = str(node) if node.exists() else "node"
    return StdioServerParameters(command=command, args=[str(EVERYTHING), "stdio"]) if EVERYTHING.exists() else None


def toolset_for(parameters: StdioServerParameters) -> MCPToolset:
    return MCPToolset(parameters.command, parameters.args, env=parameters.env)


# -- call ------------------------------------------------------------------------------------------


class Calls:
    """The open connections of one server kind: a bare client, and a toolset inside an agent."""

    def __init__(self, kind: str, parameters: StdioServerParameters, tool: str, arguments: dict[str, Any]) -> None:
        self.kind, self.parameters, self.tool, self.arguments = kind, parameters, tool, arguments
        self.toolset = toolset_for(parameters)
        self.agent = Agent(ScriptedModel([]), tools=[self.toolset], max_requests=TURNS + 1)
        self.call = ToolCall(id="c", name=tool, arguments=arguments)
        self.turns = [ModelResponse(tool_calls=(self.call,), finish_reason="tool_calls")] * TURNS
        self.answer = ModelResponse(text="done", finish_reason="stop")
        self.client: mcp.Client | None = None
        self.pipeline: Pipeline | None = None
        self.server_pid = 0

    async def open(self, stack: AsyncExitStack) -> None:
        before = children()
        await stack.enter_async_context(self.agent)
        [self.server_pid] = children() - before
        self.client = await self.toolset._client()  # the very session toolwire's calls go through
        self.pipeline = self.agent.pipeline.with_tools(self.toolset.toolbox)

    def units(self) -> dict[str, Callable[[int], Awaitable[Sample]]]:
        return {
            f"call/{self.kind}/bare": self.bare,
            f"call/{self.kind}/bare-deadline": self.bare_deadline,
            f"call/{self.kind}/toolset": self.direct,
            f"call/{self.kind}/pipeline": self.invoke,
            f"call/{self.kind}/agent": self.run_agent,
        }

    async def bare(self, n: int) -> Sample:
        assert self.client is not None
        call_tool, tool, arguments = self.client.call_tool, self.tool, self.arguments
        return await timed(n, lambda: call_tool(tool, arguments), self.server_pid)

    async def bare_deadline(self, n: int) -> Sample:
        assert self.client is not None
        call_tool, tool, arguments, seconds = self.client.call_tool, self.tool, self.arguments, self.toolset.timeout
        return await timed(n, lambda: call_tool(tool, arguments, read_timeout_seconds=seconds), self.server_pid)

    async def direct(self, n: int) -> Sample:
        call, tool, arguments = self.toolset.call, self.tool, self.arguments
        return await timed(n, lambda: call(tool, dict(arguments)), self.server_pid)

    async def invoke(self, n: int) -> Sample:
        assert self.pipeline is not None
        invoke, call = self.pipeline.invoke, self.call
        return await timed(n, lambda: invoke(call), self.server_pid)

    async def run_agent(self, n: int) -> Sample:
        runs = max(1, n // TURNS)
        long, short = [*self.turns, self.answer], [self.answer]
        t20 = await timed(runs, lambda: self._run(long), self.server_pid)
        t0 = await timed(runs, lambda: self._run(short), self.server_pid)
        return {key: (t20[key] - t0[key]) / TURNS for key in t20}

    async def _run(self, script: list[ModelResponse]) -> Any:
        self.agent.model = ScriptedModel(script)
        return await self.agent.run(PROMPT)

    async def check(self) -> None:
        """One call per path; raise unless all four answer the same successful text."""
        assert self.client is not None and self.pipeline is not None
        bare = self.client.call_tool(self.tool, self.arguments)
        texts = [block.text for block in (await bare).content if block.type == "text"]
        direct = await self.toolset.call(self.tool, dict(self.arguments))
        invoked = await self.pipeline.invoke(self.call)
        self.agent.model = ScriptedModel([*self.turns[:1], self.answer])
        run = await self.agent.run(PROMPT)
        ran = [m.result for m in run.transcript if isinstance(m, ToolResultMessage)]
        if not (len(texts) == 1 and direct.data == invoked.data == texts[0] and invoked.type is ResultType.SUCCESS):
            raise RuntimeError(f"{self.kind}: bare {texts!r}, toolset {direct!r}, pipeline {invoked!r}")
        if [r.data for r in ran] != texts or run.output != "done":
            raise RuntimeError(f"{self.kind}: the agent's run ended {run.reason!r} with {ran!r}")


def children() -> set[int]:
    """The pids of this process's children."""
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        pids.update(int(pid) for pid in (task / "children").read_text().split())
    return pids


async def timed(n: int, step: Callable[[], Awaitable[Any]], server: int) -> Sample:
    """Await `step()` `n` times; µs per step: wall, this process's CPU, the server process's CPU, both."""
    gc.collect()
    wall, cpu, server_cpu = time.perf_counter(), time.process_time(), process_cpu(server)
    for _ in range(n):
        await step()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    server_cpu = process_cpu(server) - server_cpu
    per = 1e6 / n
    return {
        "wall_us": wall * per,
        "cpu_us": cpu * per,
        "server_cpu_us": server_cpu * per,
        "total_cpu_us": (cpu + server_cpu) * per,
    }


async def interleave(
    units: dict[str, Callable[[int], Awaitable[Sample]]], rounds: int, n: int, label: str
) -> dict[str, list[Sample]]:
    """A warm-up pass, then `rounds` rounds of every unit, in an order rotated per round."""
    names = list(units)
    for name in names:
        await units[name](max(1, n // 10))
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    for index in range(rounds):
        started = time.perf_counter()
        for k in range(len(names)):
            name = names[(index + k) % len(names)]
            samples[name].append(await units[name](n))
        print(f"{label} round {index + 1}/{rounds}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return samples


async def call_scenario(rounds: int, calls: int) -> dict[str, list[Sample]]:
    kinds = [Calls("python", python_server(), "echo", {"text": "hello"})]
    if (everything := everything_server()) is not None:
        kinds.append(Calls("everything", everything, "echo", {"message": "hello"}))
    async with AsyncExitStack() as stack:
        units: dict[str, Callable[[int], Awaitable[Sample]]] = {}
        for kind in kinds:
            await kind.open(stack)
            await kind.check()
            units.update(kind.units())
        return await interleave(units, rounds, calls, "call")


# -- startup -----------------------------------------------------------------------------------------


async def start_bare(parameters: StdioServerParameters) -> tuple[float, float]:
    """Seconds until the tools are listed, and until the client is closed again."""
    started = time.perf_counter()
    async with mcp.Client(parameters) as client:
        cursor: str | None = None
        while True:
            cursor = (await client.list_tools(cursor=cursor)).next_cursor
            if cursor is None:
                break
        ready = time.perf_counter()
    return ready - started, time.perf_counter() - started


async def start_toolset(parameters: StdioServerParameters) -> tuple[float, float]:
    started = time.perf_counter()
    toolset = toolset_for(parameters)
    await toolset.setup()
    ready = time.perf_counter()
    await toolset.teardown()
    return ready - started, time.perf_counter() - started


def startup_unit(start: Callable[[StdioServerParameters], Awaitable[tuple[float, float]]], parameters: Any) -> Any:
    async def unit(n: int) -> Sample:
        cpu, ready, total = time.process_time(), 0.0, 0.0
        for _ in range(n):
            up, down = await start(parameters)
            ready, total = ready + up, total + down
        return {
            "ready_ms": ready / n * 1e3,
            "total_ms": total / n * 1e3,
            "cpu_ms": (time.process_time() - cpu) / n * 1e3,
        }

    return unit


async def startup_scenario(rounds: int, starts: int) -> dict[str, list[Sample]]:
    everything = everything_server()
    if everything is None:
        return {}
    units = {
        "startup/everything/bare": startup_unit(start_bare, everything),
        "startup/everything/toolset": startup_unit(start_toolset, everything),
    }
    return await interleave(units, rounds, starts, "startup")


# -- memory ------------------------------------------------------------------------------------------


async def retained(how: str, tools: int) -> Sample:
    """KiB and blocks still allocated after connecting and listing `tools` tools `how` (then closed)."""
    parameters = python_server(tools)
    async with AsyncExitStack() as stack:
        gc.collect()
        blocks = sys.getallocatedblocks()
        tracemalloc.start()
        kept: Any
        if how == "bare":
            client = await stack.enter_async_context(mcp.Client(parameters))
            kept, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor)
                kept.append(page)
                if (cursor := page.next_cursor) is None:
                    break
            if sum(len(page.tools) for page in kept) != tools:
                raise RuntimeError(f"the bare client listed {sum(len(page.tools) for page in kept)} tools")
        else:
            kept = toolset_for(parameters)
            await kept.setup()
            stack.push_async_callback(kept.teardown)
            if len(kept.toolbox) != tools:
                raise RuntimeError(f"the toolset offers {len(kept.toolbox)} tools")
            if how == "toolset+export":
                kept.toolbox.to_openai()
        gc.collect()
        current = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        return {"kib": current / 1024, "blocks": float(sys.getallocatedblocks() - blocks)}


async def memory_scenario(rounds: int, tools: int) -> dict[str, list[Sample]]:
    units: dict[str, Callable[[int], Awaitable[Sample]]] = {}
    for how in ("bare", "toolset", "toolset+export"):
        for count in (1, tools):
            units[f"memory/{how}/{count}"] = _memory_unit(how, count)
    return await interleave(units, rounds, 1, "memory")


def _memory_unit(how: str, tools: int) -> Callable[[int], Awaitable[Sample]]:
    async def unit(n: int) -> Sample:
        return await retained(how, tools)

    return unit


# -- profile -----------------------------------------------------------------------------------------


async def profile(path: Path, calls: int) -> None:
    """cProfile `calls` calls of each path (python server); print the top functions, and toolwire's."""
    kind = Calls("python", python_server(), "echo", {"text": "hello"})
    async with AsyncExitStack() as stack:
        await kind.open(stack)
        await kind.check()
        for name, unit in (("bare", kind.bare), ("toolset", kind.direct), ("pipeline", kind.invoke)):
            await unit(calls // 10)
            profiler = cProfile.Profile()
            profiler.enable()
            sample = await unit(calls)
            profiler.disable()
            profiler.dump_stats(f"{path}.{name}")
            print(f"\n== {name}: {sample['wall_us']:.0f} µs wall, {sample['cpu_us']:.0f} µs CPU per call (profiled)")
            stats = pstats.Stats(profiler)
            stats.sort_stats("tottime").print_stats(15)
            if name != "bare":  # toolwire's own functions, by cumulative time
                stats.sort_stats("cumulative").print_stats("toolwire", 25)


# -- main --------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=41, help="call: interleaved rounds (short, many)")
    parser.add_argument("--calls", type=int, default=60, help="call: calls per unit and round")
    parser.add_argument("--startup-rounds", type=int, default=7, help="startup: interleaved rounds")
    parser.add_argument("--starts", type=int, default=2, help="startup: starts per unit and round")
    parser.add_argument("--mem-rounds", type=int, default=5, help="memory: interleaved rounds")
    parser.add_argument("--tools", type=int, default=500, help="memory: tools of the large server")
    parser.add_argument("--only", default="call,startup,memory", help="scenarios to run")
    parser.add_argument("--json", type=Path, default=None, help="results file (bench/results/mcp-DATE.json)")
    parser.add_argument("--markdown", type=Path, default=None, help="render into this page (docs/benchmarks.md)")
    parser.add_argument("--note", default="", help="a remark kept with the results (e.g. the machine's load)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the gate fails")
    parser.add_argument("--profile", type=Path, default=None, help="cProfile pipeline and bare calls instead")
    options = parser.parse_args(argv)
    if options.profile is not None:
        anyio.run(profile, options.profile, options.calls, backend="asyncio")
        return 0
    only = set(options.only.split(","))
    started, now = time.perf_counter(), datetime.now(UTC)
    result: dict[str, Any] = {"measured": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "machine": machine()}
    result["machine"]["mcp"] = _version("mcp")
    result["config"] = {key: getattr(options, key) for key in ("rounds", "calls", "startup_rounds", "starts")}
    result["config"] |= {"mem_rounds": options.mem_rounds, "tools": options.tools, "only": sorted(only)}
    result["note"] = options.note
    units: dict[str, list[Sample]] = {}
    if "call" in only:
        units |= anyio.run(call_scenario, options.rounds, options.calls, backend="asyncio")
    if "startup" in only:
        units |= anyio.run(startup_scenario, options.startup_rounds, options.starts, backend="asyncio")
    if "memory" in only:
        units |= anyio.run(memory_scenario, options.mem_rounds, options.tools, backend="asyncio")
    result["units"] = units
    result["figures"] = figures(units, options.tools)
    result["gates"] = gates(result["figures"])
    result["machine"]["loadavg_end"] = list(os.getloadavg())
    result["seconds"] = round(time.perf_counter() - started, 1)
    out = options.json or RESULTS_DIR / f"mcp-{now:%Y-%m-%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    section = render_markdown(result)
    print(section)
    if options.markdown is not None:
        write_section(options.markdown, section, BEGIN, END)
    failed = any(gate["status"] == "FAIL" for gate in result["gates"])
    return 1 if failed and options.strict else 0


def figures(units: dict[str, list[Sample]], tools: int) -> dict[str, dict[str, float]]:
    """Per-round ratios and differences, summarised (median, p25, p75)."""
    per_round: dict[str, list[float]] = {}

    def add(name: str, values: list[float]) -> None:
        per_round[name] = values

    for kind in ("python", "everything"):
        bare = units.get(f"call/{kind}/bare")
        if bare is None:
            continue
        for path in ("bare-deadline", "toolset", "pipeline", "agent"):
            mine = units[f"call/{kind}/{path}"]
            for clock in ("wall_us", "cpu_us", "total_cpu_us"):
                add(f"call/{kind}/{path}/{clock}/ratio", [m[clock] / b[clock] for m, b in zip(mine, bare, strict=True)])
                add(f"call/{kind}/{path}/{clock}/added", [m[clock] - b[clock] for m, b in zip(mine, bare, strict=True)])
        timed_bare, piped = units[f"call/{kind}/bare-deadline"], units[f"call/{kind}/pipeline"]
        for clock in ("wall_us", "cpu_us", "total_cpu_us"):
            ratios = [m[clock] / b[clock] for m, b in zip(piped, timed_bare, strict=True)]
            add(f"call/{kind}/pipeline/{clock}/ratio_deadline", ratios)
    if bare_start := units.get("startup/everything/bare"):
        tool_start = units["startup/everything/toolset"]
        for key in ("ready_ms", "total_ms", "cpu_ms"):
            add(f"startup/{key}/ratio", [t[key] / b[key] for t, b in zip(tool_start, bare_start, strict=True)])
            add(f"startup/{key}/added", [t[key] - b[key] for t, b in zip(tool_start, bare_start, strict=True)])
    if "memory/bare/1" in units:
        for how in ("bare", "toolset", "toolset+export"):
            for key in ("kib", "blocks"):
                big, small = units[f"memory/{how}/{tools}"], units[f"memory/{how}/1"]
                add(
                    f"memory/{how}/{key}/per_tool",
                    [(b[key] - s[key]) / (tools - 1) for b, s in zip(big, small, strict=True)],
                )
        for how in ("toolset", "toolset+export"):
            mine, bare = per_round[f"memory/{how}/kib/per_tool"], per_round["memory/bare/kib/per_tool"]
            add(f"memory/{how}/kib/per_tool/ratio", [m / b for m, b in zip(mine, bare, strict=True)])
    return {name: summary(values) for name, values in per_round.items()} | {
        f"{name}/{key}": summary([sample[key] for sample in samples])
        for name, samples in units.items()
        for key in samples[0]
    }


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    sys.exit(main())
