"""The floor of the loop benchmarks, and the harness helpers that the loop benchmarks share.

The floor is a hand-written tool-calling loop with pydantic validation.

BENCHMARKS.md's `floor-validated`: per turn, a scripted "model" step of the same shape as
toolwire's (an async stream of events that ends with the response), one history append for the
assistant message, then per call a `TypeAdapter.validate_python` of the arguments, a direct call
of the tool and one history append for its result. One call is awaited directly; several run in
one `asyncio.TaskGroup` (BENCHMARKS.md: "for N calls use one TaskGroup/gather"; an anyio task
group, which toolwire uses, is offered as a variant because it costs several times more).
Nothing else: no policy, ids, ledger, deadlines or result envelopes.

This module imports neither toolwire nor any peer, so `bench/loop_bench.py` (project venv) and
`bench/peers/run.py` (the peers' venv) measure the very same floor, in their own process and
rounds, and summarise, time child interpreters and render sections the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal

import anyio
from anyio import create_task_group, to_thread
from pydantic import TypeAdapter
from typing_extensions import TypedDict

__all__ = [
    "ADAPTER",
    "ARGUMENTS",
    "FloorCall",
    "FloorModel",
    "FloorResponse",
    "FLOOR_FIRST_USE",
    "TOOLWIRE_FIRST_USE",
    "FloorTool",
    "add",
    "add_sync",
    "check_floor",
    "child_env",
    "floor_run",
    "floor_script",
    "floor_tools",
    "import_rounds",
    "spawn",
    "summary",
    "write_section",
]


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def add_sync(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class AddArguments(TypedDict):
    a: int
    b: int


ARGUMENTS: Final = {"a": 1, "b": 2}
FLOOR_FIRST_USE: Final = (
    "from pydantic import TypeAdapter\nfrom typing_extensions import TypedDict\n"
    "class Add(TypedDict):\n    a: int\n    b: int\nTypeAdapter(Add)"
)
"""TW-10's floor (BENCHMARKS.md, revisions): `from pydantic import TypeAdapter` plus one `TypeAdapter(...)` build."""
TOOLWIRE_FIRST_USE: Final = (
    "from toolwire import Agent, Toolbox, tool\n@tool\nasync def add(a: int, b: int) -> int: ...\nadd.parameters_schema"
)
"""TW-10 as a program pays it: toolwire's names plus one `@tool` (what the gate measures), with the
schema a first run needs: `@tool` builds the TypeAdapter and the JSON Schema when first needed,
so without it the first model request would pay what the floor's `TypeAdapter(...)` pays here."""
ADAPTER: Final = TypeAdapter(AddArguments)
Kind = Literal["async", "thread", "inline"]
Group = Literal["asyncio", "anyio"]


@dataclass(frozen=True, slots=True)
class FloorCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class FloorResponse:
    text: str
    calls: tuple[FloorCall, ...]


@dataclass(frozen=True, slots=True)
class FloorTool:
    function: Callable[..., Any]
    adapter: TypeAdapter[Any]
    kind: Kind = "async"


def floor_tools(kind: Kind = "async", **extra: Callable[..., Awaitable[Any]]) -> dict[str, FloorTool]:
    """`add` run as `kind` (`add_sync` for thread and inline), plus extra async tools taking `a, b`."""
    function: Callable[..., Any] = add if kind == "async" else add_sync
    tools = {"add": FloorTool(function, ADAPTER, kind)}
    tools.update({name: FloorTool(fn, ADAPTER) for name, fn in extra.items()})
    return tools


def floor_script(turns: int, width: int = 1, names: Mapping[int, str] | None = None) -> tuple[FloorResponse, ...]:
    """`turns` responses of `width` calls of `add` (or of `names[turn]`), then the answer."""
    names = names or {}
    script = [
        FloorResponse(
            "",
            tuple(FloorCall(f"c{turn}_{k}", names.get(turn, "add"), dict(ARGUMENTS)) for k in range(width)),
        )
        for turn in range(turns)
    ]
    return (*script, FloorResponse("done", ()))


async def _events(response: FloorResponse) -> AsyncIterator[FloorResponse]:
    yield response


class FloorModel:
    """The scripted model step: `stream(history, index)` yields the script's response `index`."""

    __slots__ = ("_script",)

    def __init__(self, script: Sequence[FloorResponse]) -> None:
        self._script = script

    def stream(self, history: Sequence[Any], index: int) -> AsyncIterator[FloorResponse]:
        return _events(self._script[index])


async def _call(tools: Mapping[str, FloorTool], call: FloorCall) -> tuple[str, str, Any]:
    tool = tools[call.name]
    arguments = tool.adapter.validate_python(call.arguments)
    if tool.kind == "async":
        value = await tool.function(**arguments)
    elif tool.kind == "inline":
        value = tool.function(**arguments)
    else:
        value = await to_thread.run_sync(partial(tool.function, **arguments))
    return ("tool", call.id, value)


async def _call_into(
    results: list[tuple[str, str, Any]], index: int, tools: Mapping[str, FloorTool], call: FloorCall
) -> None:
    results[index] = await _call(tools, call)


async def floor_run(
    model: FloorModel,
    prompt: str,
    tools: Mapping[str, FloorTool],
    *,
    group: Group = "asyncio",
    max_requests: int = 100,
) -> list[tuple[Any, ...]]:
    """Run the loop until the model answers; return the history.

    Several calls of one turn run in one `asyncio.TaskGroup`, or in an anyio task group when
    `group` is `anyio`.
    """
    history: list[tuple[Any, ...]] = [("user", prompt)]
    for index in range(max_requests):
        response: FloorResponse | None = None
        async for event in model.stream(history, index):
            response = event
        assert response is not None
        calls = response.calls
        history.append(("assistant", response.text, calls))
        if not calls:
            break
        if len(calls) == 1:
            history.append(await _call(tools, calls[0]))
            continue
        results: list[tuple[str, str, Any]] = [("tool", "", None)] * len(calls)
        if group == "asyncio":
            async with asyncio.TaskGroup() as tasks:
                for position, call in enumerate(calls):
                    tasks.create_task(_call_into(results, position, tools, call))
        else:
            async with create_task_group() as tasks:
                for position, call in enumerate(calls):
                    tasks.start_soon(_call_into, results, position, tools, call)
        history.extend(results)
    return history


def check_floor() -> None:
    """Run the floor once per kind and width; raise if a result is not 3."""

    async def main() -> None:
        variants: list[tuple[Kind, Group]] = [("async", "asyncio"), ("thread", "asyncio"), ("inline", "asyncio")]
        for kind, group in [*variants, ("async", "anyio")]:
            for width in (1, 3):
                model = FloorModel(floor_script(2, width))
                history = await floor_run(model, "hi", floor_tools(kind), group=group)
                values = [item[2] for item in history if item[0] == "tool"]
                if values != [3] * (2 * width) or history[-1][1] != "done":
                    raise RuntimeError(f"the floor ({kind}, {group}, width {width}) returned {history!r}")

    anyio.run(main, backend="asyncio")


# -- harness helpers -------------------------------------------------------------------------------


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median and p25-p75 (inclusive quartiles) of per-round values."""
    if len(values) == 1:
        return {"median": values[0], "p25": values[0], "p75": values[0]}
    p25, median, p75 = statistics.quantiles(values, n=4, method="inclusive")
    return {"median": median, "p25": p25, "p75": p75}


def child_env() -> dict[str, str]:
    """The environment with bytecode writing allowed, so the imports use (and refresh) .pyc files."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


RSS_PROBE: Final = "\nimport sys; sys.stdout.write(open('/proc/self/statm').read())"
"""Appended to each child's code: it prints its own pages, so the RSS is the child's after the import
(`wait4`'s `ru_maxrss` would count the parent's pages the child had before `exec`)."""


def spawn(argv: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Run a child to completion; return its CPU ms (user + system, from `wait4`) and its RSS MiB."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    output = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        error = subprocess.run(argv, env=env, capture_output=True, text=True, check=False).stderr
        raise RuntimeError(f"{' '.join(argv)} failed: {error[-2000:]}")
    pages = int(output.split()[-6])  # statm: size resident shared text lib data dt
    return (usage.ru_utime + usage.ru_stime) * 1000, pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def import_rounds(
    commands: dict[str, str],
    rounds: int,
    *,
    python: str = sys.executable,
    warm_up: bool = True,
    progress: bool = True,
) -> dict[str, dict[str, list[float]]]:
    """CPU ms and RSS MiB (after the command) of `python -c <command>` per command, interleaved rounds."""
    env = child_env()
    names = list(commands)
    for name in names if warm_up else ():  # writes missing .pyc files, fills the page cache
        spawn([python, "-c", commands[name] + RSS_PROBE], env)
    samples: dict[str, dict[str, list[float]]] = {name: {"cpu_ms": [], "rss_mib": []} for name in names}
    for index in range(rounds):
        for k in range(len(names)):
            name = names[(index + k) % len(names)]
            cpu, rss = spawn([python, "-c", commands[name] + RSS_PROBE], env)
            samples[name]["cpu_ms"].append(cpu)
            samples[name]["rss_mib"].append(rss)
    if progress:
        print(f"imports: {rounds} rounds of {len(names)} interpreters", file=sys.stderr)
    return samples


def write_section(path: Path, section: str, begin: str, end: str) -> None:
    """Replace the text between `begin` and `end` (both kept) with `section`, or append it."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def gate_parser(description: str | None, **counts: int) -> argparse.ArgumentParser:
    """The options of a small gated benchmark.

    `--NAME N` for each of `counts` (its default), then `--json`, `--markdown`/`--no-markdown`,
    `--note` and `--strict`.
    """
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in counts.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path, default=Path("docs/benchmarks.md"))
    parser.add_argument("--no-markdown", action="store_true")
    parser.add_argument("--note", default="")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a gate fails")
    return parser


def record_run(
    data: dict[str, Any], options: argparse.Namespace, stem: str, section: Callable[[dict[str, Any]], str]
) -> None:
    """Stamp `data` with the run's date, machine, load and counts; write its JSON and its section.

    The section (`section(data)`, between its own first and last lines, its markers) goes into
    the docs page unless `--no-markdown`.
    """
    date = datetime.now(UTC)
    data |= {
        "date": date.strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "load": " ".join(f"{value:.2f}" for value in os.getloadavg()),
        **{
            key: value for key, value in vars(options).items() if isinstance(value, int) and not isinstance(value, bool)
        },
        "note": options.note,
    }
    path = options.json or Path(f"bench/results/{stem}-{date:%Y-%m-%d}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    if not options.no_markdown:
        text = section(data)
        write_section(options.markdown, text, text.splitlines()[0], text.splitlines()[-1])


def cell(figure: dict[str, float], unit: str = "", digits: int = 1) -> str:
    """A `summary()` as a table cell: `median (p25–p75)`."""
    return f"{figure['median']:.{digits}f}{unit} ({figure['p25']:.{digits}f}–{figure['p75']:.{digits}f})"


def close_section(lines: list[str], data: dict[str, Any], end: str) -> str:
    """A section's lines, its run's note (if any) and its end marker, as one text."""
    if data.get("note"):
        lines += ["", f"Note: {data['note']}"]
    return "\n".join([*lines, "", end])
