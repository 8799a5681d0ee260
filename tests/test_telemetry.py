"""OpenTelemetry spans and metrics of a run (`toolwire.telemetry`), read from the SDK's in-memory exporter.

Each test gives its agent its own providers (`Telemetry(tracer_provider=..., meter_provider=...)`):
nothing is set globally, so the tests leave the API's default (no-op) providers as they were.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolwire import Agent, PermissionPolicy, Telemetry, ToolCall, tool
from toolwire.messages import Usage
from toolwire.models import ModelResponse
from toolwire.telemetry import CAPTURE_CONTENT, SPAN_ID, TRACE_ID, remote_parent, trace_meta
from toolwire.testing import FakeClient, ScriptedModel

LOOKUP_SERVER = Path(__file__).resolve().parent / "toolsets" / "mcp_lookup_server.py"
"""A one-tool Python MCP server (`lookup`), shared with the toolset contract suite."""


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(timeout=0.05)
async def slow() -> str:
    """Wait longer than its deadline."""
    await anyio.sleep(5)
    return "late"


@tool(requires_permission=True)
async def transfer(amount: int) -> str:
    """Move money (asks first)."""
    return f"moved {amount}"


@dataclass
class Recorded:
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    telemetry: Telemetry

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def named(self, name: str) -> ReadableSpan:
        [span] = [span for span in self.finished() if span.name == name]
        return span

    def points(self, metric: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for item in scope.metrics
            if item.name == metric
            for point in item.data.data_points
        ]


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider, agent_name="helper")
    yield Recorded(spans, reader, telemetry)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def calls(*names: str, **arguments: Any) -> list[ToolCall]:
    return [ToolCall(id=f"c_{name}", name=name, arguments=arguments) for name in names]


def answer(text: str = "done", *, tokens: tuple[int, int] = (0, 0)) -> ModelResponse:
    return ModelResponse(text=text, usage=Usage(1, *tokens), finish_reason="stop", model_name="scripted:mini")


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def trace_ids(spans: list[ReadableSpan]) -> set[int]:
    return {span.context.trace_id for span in spans if span.context is not None}


async def test_a_run_is_an_invoke_agent_span_with_chat_and_tool_spans_under_it(recorded: Recorded) -> None:
    model = ScriptedModel([calls("add", a=1, b=2), answer()], name="openai:gpt-test")
    result = await Agent(model, tools=[add], telemetry=recorded.telemetry).run("add", thread="t1")
    assert result.reason == "answer"

    run = recorded.named("invoke_agent helper")
    chats = [span for span in recorded.finished() if span.name == "chat gpt-test"]
    tool_span = recorded.named("execute_tool add")
    assert len(chats) == 2
    assert run.parent is None and run.kind is trace.SpanKind.INTERNAL
    assert {parent_of(span) for span in [*chats, tool_span]} == {span_id(run)}
    assert trace_ids(recorded.finished()) == trace_ids([run])
    assert chats[0].kind is trace.SpanKind.CLIENT and tool_span.kind is trace.SpanKind.INTERNAL
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-test",
        "gen_ai.conversation.id": "t1",
        "gen_ai.agent.name": "helper",
        "toolwire.run.end_reason": "answer",
        "toolwire.run.requests": 2,
        "gen_ai.usage.input_tokens": 0,
        "gen_ai.usage.output_tokens": 0,
    }


async def test_a_server_tool_call_has_its_outcome_mode_decision_and_where_it_ran(recorded: Recorded) -> None:
    model = ScriptedModel([calls("add", a=1, b=2), "done"])
    await Agent(model, tools=[add], telemetry=recorded.telemetry).run("add", thread="t1")

    span = recorded.named("execute_tool add")
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "c_add",
        "gen_ai.tool.type": "extension",
        "gen_ai.tool.description": "Add two integers.",
        "gen_ai.conversation.id": "t1",
        "toolwire.request_index": 0,
        "toolwire.tool.mode": "external",
        "toolwire.tool.mode_reason": add.mode_decision.reason,
        "toolwire.tool.runs_on": "server",
        "toolwire.policy.decision": "allow",
        "toolwire.policy.source": "preset",
        "toolwire.outcome": "success",
    }
    assert span.status.status_code is trace.StatusCode.UNSET


async def test_a_denied_call_says_so_and_is_not_an_error(recorded: Recorded) -> None:
    async def refuse(request: Any) -> bool:
        return False

    model = ScriptedModel([calls("transfer", amount=5), "ok"])
    policy = PermissionPolicy(consent=refuse)
    await Agent(model, tools=[transfer], policy=policy, telemetry=recorded.telemetry).run("pay")

    span = recorded.named("execute_tool transfer")
    attributes = dict(span.attributes or {})
    assert attributes["toolwire.outcome"] == "denied"
    assert attributes["toolwire.policy.decision"] == "deny"
    assert attributes["toolwire.error.code"] == "denied"
    assert "error.type" not in attributes and span.status.status_code is trace.StatusCode.UNSET


async def test_a_consent_wait_is_a_span_under_the_call(recorded: Recorded) -> None:
    async def allow(request: Any) -> bool:
        return True

    model = ScriptedModel([calls("transfer", amount=5), "ok"])
    policy = PermissionPolicy(consent=allow)
    await Agent(model, tools=[transfer], policy=policy, telemetry=recorded.telemetry).run("pay")

    call = recorded.named("execute_tool transfer")
    wait = recorded.named("toolwire.consent transfer")
    assert parent_of(wait) == span_id(call)
    assert dict(wait.attributes or {}) == {
        "gen_ai.tool.name": "transfer",
        "gen_ai.tool.call.id": "c_transfer",
        "toolwire.consent.asked": True,
        "toolwire.policy.decision": "allow",
        "toolwire.policy.source": "consent",
    }
    assert [event.name for event in wait.events] == ["toolwire.consent.requested"]
    assert (call.attributes or {})["toolwire.outcome"] == "success"
    assert (call.attributes or {})["toolwire.policy.source"] == "consent"


async def test_a_timeout_is_an_error_with_its_code(recorded: Recorded) -> None:
    model = ScriptedModel([calls("slow"), "ok"])
    await Agent(model, tools=[slow], telemetry=recorded.telemetry).run("wait")

    span = recorded.named("execute_tool slow")
    attributes = dict(span.attributes or {})
    assert attributes["toolwire.outcome"] == "timeout"
    assert attributes["error.type"] == "timeout"
    assert span.status.status_code is trace.StatusCode.ERROR
    assert "toolwire.effect_unknown" not in attributes  # an async tool is stopped at its deadline


async def test_a_client_tool_call_ran_at_the_client(recorded: Recorded) -> None:
    group = {
        "name": "IDE",
        "description": "Editor tools",
        "tools": [{"name": "OpenFile", "description": "Open a file", "parametersSchema": {"type": "object"}}],
    }
    agent = Agent(ScriptedModel([calls("OpenFile"), "Opened."]), telemetry=recorded.telemetry)
    async with FakeClient(agent, handlers={"OpenFile": lambda arguments: "opened"}, consent=True) as client:
        result = await agent.run(
            "open", thread="t1", client_tool_groups=[group], expanded_containers=["IDE"], client=client
        )
    assert result.reason == "answer"

    span = recorded.named("execute_tool OpenFile")
    attributes = dict(span.attributes or {})
    assert attributes["toolwire.tool.runs_on"] == "client"
    assert attributes["gen_ai.tool.type"] == "function"
    assert attributes["toolwire.outcome"] == "success"


async def test_the_chat_span_has_the_usage_finish_reason_and_response_model(recorded: Recorded) -> None:
    model = ScriptedModel([answer("hi", tokens=(12, 3))], name="scripted:mini")
    await Agent(model, telemetry=recorded.telemetry).run("hello")

    chat = recorded.named("chat mini")
    attributes = dict(chat.attributes or {})
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.request.model"] == "mini"
    assert attributes["gen_ai.provider.name"] == "scripted"
    assert attributes["gen_ai.usage.input_tokens"] == 12
    assert attributes["gen_ai.usage.output_tokens"] == 3
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert attributes["gen_ai.response.model"] == "mini"
    run = dict(recorded.named("invoke_agent helper").attributes or {})
    assert (run["gen_ai.usage.input_tokens"], run["gen_ai.usage.output_tokens"]) == (12, 3)


CONTENT = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)


async def test_no_content_is_recorded_by_default(recorded: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CAPTURE_CONTENT, raising=False)
    model = ScriptedModel([calls("add", a=1, b=2), "the sum is 3"])
    await Agent(model, tools=[add], instructions="Be brief.", telemetry=recorded.telemetry).run("secret prompt")

    for span in recorded.finished():
        assert not set(span.attributes or {}) & set(CONTENT), span.name
        assert "secret prompt" not in str(dict(span.attributes or {}))


async def test_content_is_recorded_when_the_application_opts_in(recorded: Recorded) -> None:
    recorded.telemetry.record_content = True
    model = ScriptedModel([calls("add", a=1, b=2), "the sum is 3"])
    await Agent(model, tools=[add], instructions="Be brief.", telemetry=recorded.telemetry).run("what is 1+2?")

    first, second = [span for span in recorded.finished() if span.name.startswith("chat ")]
    assert json.loads(str((first.attributes or {})["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "what is 1+2?"}]}
    ]
    assert json.loads(str((first.attributes or {})["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "Be brief."}
    ]
    assert json.loads(str((first.attributes or {})["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c_add", "name": "add", "arguments": {"a": 1, "b": 2}}],
            "finish_reason": "tool_calls",
        }
    ]
    assert [message["role"] for message in json.loads(str((second.attributes or {})["gen_ai.input.messages"]))] == [
        "user",
        "assistant",
        "tool",
    ]
    call = dict(recorded.named("execute_tool add").attributes or {})
    assert json.loads(str(call["gen_ai.tool.call.arguments"])) == {"a": 1, "b": 2}
    assert json.loads(str(call["gen_ai.tool.call.result"])) == 3


async def test_the_environment_variable_opts_in_too(recorded: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT, "true")
    await Agent(ScriptedModel(["hi"]), telemetry=recorded.telemetry).run("hello")
    assert "gen_ai.input.messages" in (recorded.named("chat scripted").attributes or {})


@tool
async def waits(index: int) -> int:
    """Wait a moment (the batch's calls then run in tasks of their own)."""
    await anyio.sleep(0.001 * (4 - index))
    return index


async def test_parallel_calls_each_have_their_span_under_the_run(
    recorded: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    batch = [ToolCall(id=f"c{index}", name="waits", arguments={"index": index}) for index in range(4)]
    await Agent(ScriptedModel([batch, "done"]), tools=[waits], telemetry=recorded.telemetry).run("wait")

    run = recorded.named("invoke_agent helper")
    tools = [span for span in recorded.finished() if span.name == "execute_tool waits"]
    assert sorted(str((span.attributes or {})["gen_ai.tool.call.id"]) for span in tools) == ["c0", "c1", "c2", "c3"]
    assert {parent_of(span) for span in tools} == {span_id(run)}
    assert not caplog.records  # e.g. the API's "Failed to detach context": each span left the context it entered


async def test_metrics_count_outcomes_and_time_requests_and_calls(recorded: Recorded) -> None:
    async def refuse(request: Any) -> bool:
        return False

    model = ScriptedModel([[*calls("add", a=1, b=2), *calls("transfer", amount=1)], answer(tokens=(7, 2))])
    agent = Agent(model, tools=[add, transfer], policy=PermissionPolicy(consent=refuse), telemetry=recorded.telemetry)
    await agent.run("go")

    outcomes = {
        (point.attributes["gen_ai.tool.name"], point.attributes["toolwire.outcome"]): point.value
        for point in recorded.points("toolwire.tool.calls")
    }
    assert outcomes == {("add", "success"): 1, ("transfer", "denied"): 1}
    assert {point.attributes["toolwire.tool.mode"] for point in recorded.points("toolwire.tool.calls")} == {"external"}
    assert sum(point.count for point in recorded.points("gen_ai.execute_tool.duration")) == 2
    [requests] = recorded.points("gen_ai.client.operation.duration")
    assert requests.count == 2 and requests.attributes["gen_ai.operation.name"] == "chat"
    tokens = {
        point.attributes["gen_ai.token.type"]: point.sum for point in recorded.points("gen_ai.client.token.usage")
    }
    assert tokens == {"input": 7, "output": 2}
    [run] = recorded.points("gen_ai.invoke_agent.duration")
    assert run.count == 1


async def test_the_global_providers_are_used_when_the_application_set_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.metrics import _internal as metrics_api

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    # What `set_tracer_provider()` and `set_meter_provider()` do, undone after the test (they are set-once).
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", tracer_provider)
    monkeypatch.setattr(metrics_api, "_METER_PROVIDER", MeterProvider(metric_readers=[reader]))

    await Agent(ScriptedModel(["hi"])).run("hello")
    assert [span.name for span in spans.get_finished_spans()] == ["chat scripted", "invoke_agent"]
    assert reader.get_metrics_data() is not None


async def test_without_a_provider_nothing_is_started() -> None:
    # The API's global providers are the defaults here (no test sets them): a run records nothing.
    assert Telemetry().start_run("t1", "scripted") is None
    result = await Agent(ScriptedModel([calls("add", a=1, b=2), "done"]), tools=[add]).run("add")
    assert result.output == "done"


def test_trace_meta_names_a_span_that_remote_parent_reads_back(recorded: Recorded) -> None:
    tracer = recorded.telemetry.tracer()
    assert tracer is not None
    assert trace_meta() == {}  # no current span
    with tracer.start_as_current_span("server call") as span:
        meta = trace_meta()
    context = span.get_span_context()
    assert meta == {TRACE_ID: f"{context.trace_id:032x}", SPAN_ID: f"{context.span_id:016x}"}
    parent = remote_parent(meta)
    assert parent is not None
    remote = trace.get_current_span(parent).get_span_context()
    assert (remote.trace_id, remote.span_id, remote.is_remote) == (context.trace_id, context.span_id, True)
    for malformed in ({}, {TRACE_ID: "xyz", SPAN_ID: "1" * 16}, {TRACE_ID: "0" * 32, SPAN_ID: "1" * 16}, {TRACE_ID: 5}):
        assert remote_parent(malformed) is None


async def test_a_python_clients_execution_is_a_child_of_the_servers_call_span(recorded: Recorded) -> None:
    from toolwire.client import Client
    from toolwire.protocol import ToolUseRequest, ToolUseResult

    client = Client("ws://127.0.0.1:1/ws", token="t", telemetry=recorded.telemetry)
    client.handlers.add("OpenFile", lambda path: f"opened {path}")
    answers: list[ToolUseResult] = []

    async def answer(message: Any) -> None:
        answers.append(message)

    client._answer = answer  # no server here: keep what would be sent
    tracer = recorded.telemetry.tracer()
    assert tracer is not None
    with tracer.start_as_current_span("execute_tool OpenFile") as server_span:
        meta = trace_meta()  # what the server sends in the ToolUseRequest's envelope
    request = ToolUseRequest(
        id="r1", tool_name="OpenFile", arguments={"path": "a.txt"}, execution="client", call_id="c1"
    )
    await client._execute(request, meta)

    assert [message.success for message in answers] == [True]
    [span] = [span for span in recorded.finished() if span is not None and span.parent is not None]
    assert span.name == "execute_tool OpenFile"
    assert span.context is not None and span.context.trace_id == server_span.get_span_context().trace_id
    assert parent_of(span) == server_span.get_span_context().span_id
    assert dict(span.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "OpenFile",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "toolwire.tool.runs_on": "client",
        "toolwire.outcome": "success",
    }


async def test_a_model_that_cannot_be_reached_fails_the_chat_and_the_run_spans(recorded: Recorded) -> None:
    from toolwire.errors import ProviderError
    from toolwire.testing import FunctionModel

    def unreachable(request: Any) -> str:
        raise ProviderError("scripted", "connection refused")

    with pytest.raises(ProviderError):
        await Agent(FunctionModel(unreachable, name="openai:gpt-test"), telemetry=recorded.telemetry).run("hi")

    chat, run = recorded.named("chat gpt-test"), recorded.named("invoke_agent helper")
    assert (chat.attributes or {})["error.type"] == "ProviderError"
    assert (run.attributes or {})["error.type"] == "ProviderError"
    assert chat.status.status_code is run.status.status_code is trace.StatusCode.ERROR
    [requests] = recorded.points("gen_ai.client.operation.duration")
    assert requests.attributes["error.type"] == "ProviderError"


async def test_an_mcp_tool_call_ran_at_the_mcp_server(recorded: Recorded, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from toolwire.interop.mcp import MCPToolset

    server = MCPToolset(sys.executable, [str(LOOKUP_SERVER)], env={"TOOLWIRE_RAN_FILE": str(tmp_path / "ran")})
    agent = Agent(ScriptedModel([calls("lookup", key="k"), "done"]), tools=[server], telemetry=recorded.telemetry)
    async with agent:
        result = await agent.run("look it up")
    assert result.reason == "answer"

    attributes = dict(recorded.named("execute_tool lookup").attributes or {})
    assert (attributes["toolwire.tool.runs_on"], attributes["gen_ai.tool.type"]) == ("mcp", "extension")
    assert attributes["toolwire.outcome"] == "success"
