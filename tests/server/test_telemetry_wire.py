"""Trace context across the wire: a server's client call, and the Python client's execution of it, in one trace.

The server (`create_app` under uvicorn on loopback, in this process) and the client share one
tracer provider with an in-memory exporter, so the spans of both ends can be compared: the
client's `execute_tool` span must be a child of the server's, which it knows only from the
ToolUseRequest's envelope `meta` (`messaging.trace_id` / `messaging.span_id`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from server_support import TOKEN, served_in_process

from toolwire import Agent, ToolCall
from toolwire.client import connect
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


async def open_it(agent: Agent, telemetry: Telemetry) -> None:
    """Serve `agent`; a Python client recording its spans with `telemetry` asks it to open a file."""
    async with (
        served_in_process(agent) as url,
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


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_a_clients_execution_is_a_child_of_the_servers_call_span_across_the_wire(
    spans: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    exporter, provider = spans
    telemetry = Telemetry(tracer_provider=provider)
    model = ScriptedModel([[ToolCall(id="c1", name="OpenFile", arguments={})], "Opened."])
    agent = Agent(model, store=MemoryStore(), telemetry=telemetry)
    await open_it(agent, telemetry)
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
    await open_it(agent, Telemetry(tracer_provider=provider))
    [client_span] = exporter.get_finished_spans()
    assert client_span.name == "execute_tool OpenFile" and client_span.parent is None  # a root of its own
