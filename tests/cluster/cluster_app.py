"""The agent every replica of the cluster harness serves (`toolwire serve --app cluster_app:make_agent`).

A user message `job NAME rounds R` makes the model alternate, one call a turn: the client's tool
`Work(job, round)`, then the server's tool `tally`, R times; then it answers `done NAME` (or
`failed NAME: ...` at the first failed result; a `tally` Canceled by system, in flight when its
replica stopped, counts as done). `tally` appends `THREAD CALL` to the file named by
`TOOLWIRE_CLUSTER_TALLY` (one line per execution, with O_APPEND: the replicas share the file), so
the harness counts server tool executions per call. `job NAME rounds R hold` holds the model's first
turn until the test releases it (`_hold`).
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import anyio

from toolwire import Agent, ResultType, ToolCall, ToolContext, tool
from toolwire.client_tools import ClientToolsConfig, RetryWithBackoff
from toolwire.messages import ToolResultMessage, UserMessage
from toolwire.models import ModelRequest
from toolwire.store import Store
from toolwire.testing import FunctionModel, Turn

TALLY_ENV = "TOOLWIRE_CLUSTER_TALLY"
HOLD_ENV = "TOOLWIRE_CLUSTER_HOLD"


@tool
def tally(context: ToolContext) -> str:
    """Count one execution of this call."""
    line = f"{context.thread_id} {context.call_id}\n".encode()
    descriptor = os.open(os.environ[TALLY_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line)  # one write with O_APPEND: lines of concurrent replicas never mix
    finally:
        os.close(descriptor)
    return "counted"


async def script(request: ModelRequest) -> Turn:
    index = max(i for i, message in enumerate(request.messages) if isinstance(message, UserMessage))
    prompt = request.messages[index]
    assert isinstance(prompt, UserMessage)
    match = re.fullmatch(r"job (\S+) rounds (\d+)( hold)?", prompt.content)
    if match is None:
        return "say: job NAME rounds R"
    job, rounds = match.group(1), int(match.group(2))
    if match.group(3) and index == len(request.messages) - 1:
        await _hold(job)
    results = [message for message in request.messages[index:] if isinstance(message, ToolResultMessage)]
    if failed := [result for result in results if not result.result.success and not _interrupted(result)]:
        return f"failed {job}: {failed[0].tool_name} {failed[0].result.error}"
    done = len(results)
    if done >= 2 * rounds:
        return f"done {job}"
    if done % 2 == 0:
        return [ToolCall(id="", name="Work", arguments={"job": job, "round": done // 2})]
    return [ToolCall(id="", name="tally", arguments={})]


async def _hold(job: str) -> None:
    """A model that takes its time: its first turn of a `hold` job waits until the test writes `HOLD/release`.

    It marks `HOLD/held-JOB` first, so the test waits for the state "every run is in a model turn".
    """
    hold = Path(os.environ[HOLD_ENV])
    (hold / f"held-{job}").touch()
    while not (hold / "release").exists():  # noqa: ASYNC110 (another process's file: polled)
        await anyio.sleep(0.02)


def _interrupted(result: ToolResultMessage) -> bool:
    """A server tool in flight when its replica stopped ends Canceled by system, never re-run (issue 17)."""
    return result.tool_name == "tally" and result.result.type is ResultType.CANCELED


DISCONNECTION = RetryWithBackoff(max_retries=6, initial_delay=0.05, max_delay=1.0)
"""How long a replica waits for a client that dropped before settling its call without it."""
STALE_AFTER = sum(min(DISCONNECTION.max_delay, DISCONNECTION.initial_delay * 2**n) for n in range(6)) + 1.0
"""Seconds after which a replica that lost a client has acted on it (its retries ended): ≈ 3.6 s."""


def make_agent(store: Store) -> Agent:
    # What a replica does with its conversations (takeovers, hand-offs), timed, for a failure's report.
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d %(name)s %(message)s", "%H:%M:%S"))
    logging.getLogger("toolwire").addHandler(handler)
    logging.getLogger("toolwire").setLevel(logging.INFO)
    config = ClientToolsConfig(
        invoke_timeout=60,
        disconnection=DISCONNECTION,
        validate_schema_on_registration=False,
    )
    return Agent(FunctionModel(script), tools=[tally], store=store, client_tools=config)
