"""Trace context across the wire: a server's client call, and the Python client's execution of it, in one trace.

The server (`create_app` under uvicorn on loopback, in this process) and the client share one
tracer provider with an in-memory exporter, so the spans of both ends can be compared: the
client's `execute_tool` span must be a child of the server's, which it knows only from the
ToolUseRequest's envelope `meta` (`messaging.trace_id` / `messaging.span_id`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import pytest
import uvicorn
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from server_support import TOKEN

from toolwire import Agent, ToolCall
from toolwire.client import connect
from toolwire.server import TokenAuth, create_app
from toolwire.server.serve import listen
from toolwire.store.memory import MemoryStore
from toolwire.telemetry import Telemetry
from toolwire.testing import ScriptedModel

GROUP = {
    "name": "IDE",
    "description": "Editor tools",
    "tools": [{"name": "OpenFile", "description": "Open a file", "parametersSchema": {"type": "object"}}],
}


@pytest.fixture
def spans() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter, provider
    provider.shutdown()


@asynccontextmanager
async def served(agent: Agent) -> AsyncIterator[str]:
    listener = listen("127.0.0.1", 0)
    host, port = listener.getsockname()[:2]
    config = uvicorn.Config(create_app(agent, auth=TokenAuth.single(TOKEN)), lifespan="off", log_level="warning")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve, [listener])
        with anyio.fail_after(10):
            while not server.started:  # noqa: ASYNC110 (uvicorn's own flag: no event to wait on)
                await anyio.sleep(0.01)
        try:
            yield f"ws://{host}:{port}/ws"
        finally:
            server.should_exit = True


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_a_clients_execution_is_a_child_of_the_servers_call_span_across_the_wire(
    spans: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    exporter, provider = spans
    telemetry = Telemetry(tracer_provider=provider)
    model = ScriptedModel([[ToolCall(id="c1", name="OpenFile", arguments={})], "Opened."])
    agent = Agent(model, store=MemoryStore(), telemetry=telemetry)
    async with (
        served(agent) as url,
        connect(
            url,
            token=TOKEN,
            groups=[GROUP],
            expanded_containers=["IDE"],
            handlers={"OpenFile": lambda: "opened"},
            telemetry=telemetry,
        ) as client,
    ):
        assert await client.ask("open it") == "Opened."
    finished = exporter.get_finished_spans()
    [run] = [span for span in finished if span.name == "invoke_agent"]
    [server_span, client_span] = sorted(
        (span for span in finished if span.name == "execute_tool OpenFile"),
        key=lambda span: span.parent is not None and span.parent.is_remote,  # the server's first
    )
    assert run.context is not None and server_span.context is not None and client_span.context is not None
    assert parent_of(server_span) == run.context.span_id
    assert client_span.context.trace_id == server_span.context.trace_id
    assert parent_of(client_span) == server_span.context.span_id  # known to the client only from the meta
    assert client_span.parent is not None and client_span.parent.is_remote


async def test_a_server_without_a_tracer_sends_no_trace_ids(spans: tuple[InMemorySpanExporter, TracerProvider]) -> None:
    exporter, provider = spans
    model = ScriptedModel([[ToolCall(id="c1", name="OpenFile", arguments={})], "Opened."])
    agent = Agent(model, store=MemoryStore())  # no tracer provider: nothing is recorded, nothing sent
    async with (
        served(agent) as url,
        connect(
            url,
            token=TOKEN,
            groups=[GROUP],
            expanded_containers=["IDE"],
            handlers={"OpenFile": lambda: "opened"},
            telemetry=Telemetry(tracer_provider=provider),
        ) as client,
    ):
        assert await client.ask("open it") == "Opened."
    [client_span] = exporter.get_finished_spans()
    assert client_span.name == "execute_tool OpenFile" and client_span.parent is None  # a root of its own
