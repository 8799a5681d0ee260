"""`/agui` next to the reference: pydantic-ai's AG-UI adapter (reference_app.py) on the same script.

The same node script (run_agent.mjs, `@ag-ui/client`'s HttpAgent) runs the same conversations
against both servers: text only, a server tool, a front-end tool (a pending run, then the run that
its result completes), a batch of both, and a call that needs approval (an interrupt, then the
run that its `resume` completes). What is meant to match is compared as a whole (the
events modulo the differences below, the client's messages); each difference has its own test,
which says which behaviour is toolwire's and why (docs/frontends.md, "Compared with pydantic-ai's
AG-UI adapter").

Both runs of a front-end tool send the whole history, the client's `messages` after run 1 and the
tool message. The reference keeps nothing between requests (the client's messages are the
conversation); toolwire checks them against its store, which must agree with them.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from agui_client import PICK_COLOR, Client, Run, tool_message, user

from serving import Server, transcript_of
from toolwire.interop.agui.event_map import render_result
from toolwire.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from toolwire.testing import validate_transcript

Shape = list[dict[str, Any]]


def new_thread() -> str:
    return "thread-" + uuid.uuid4().hex


@dataclass
class Pair:
    """One conversation's run on each server, on the same thread id."""

    thread: str
    toolwire: Run
    reference: Run


@pytest.fixture(scope="module")
def toolwire(server: Server) -> Client:
    return Client(server.url.replace("ws://", "http://").removesuffix("/ws") + "/agui")


def run_both(
    toolwire: Client, reference: Client, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> Pair:
    thread = new_thread()
    return Pair(thread, toolwire.run(thread, messages, tools=tools), reference.run(thread, messages, tools=tools))


def answer_both(
    toolwire: Client, reference: Client, first: Pair, content: str, call_ids: tuple[str, str] | None = None
) -> Pair:
    """Run 2 of a front-end call (by default the last one): each server's own history (what its client
    keeps) and the tool message with `content`."""
    toolwire_call, reference_call = call_ids or (first.toolwire.last_call_id(), first.reference.last_call_id())

    def answer(client: Client, run: Run, call_id: str) -> Run:
        return client.run(first.thread, [*run.messages, tool_message(call_id, content)], tools=[PICK_COLOR])

    return Pair(
        first.thread,
        answer(toolwire, first.toolwire, toolwire_call),
        answer(reference, first.reference, reference_call),
    )


@pytest.fixture(scope="module")
def hi(toolwire: Client, reference: Client) -> Pair:
    return run_both(toolwire, reference, [user("hi")])


@pytest.fixture(scope="module")
def weather(toolwire: Client, reference: Client) -> Pair:
    return run_both(toolwire, reference, [user("weather")])


@pytest.fixture(scope="module")
def pick(toolwire: Client, reference: Client) -> Pair:
    return run_both(toolwire, reference, [user("pick")], tools=[PICK_COLOR])


@pytest.fixture(scope="module")
def picked(toolwire: Client, reference: Client, pick: Pair) -> Pair:
    return answer_both(toolwire, reference, pick, "blue")


@pytest.fixture(scope="module")
def batch(toolwire: Client, reference: Client) -> Pair:
    return run_both(toolwire, reference, [user("both")], tools=[PICK_COLOR])


def empty_text_messages(events: list[dict[str, Any]]) -> set[str]:
    """The ids of the text messages that were started and ended with no content."""
    started = {event["messageId"] for event in events if event["type"] == "TEXT_MESSAGE_START"}
    return started - {event["messageId"] for event in events if event["type"] == "TEXT_MESSAGE_CONTENT"}


ID_KINDS = {"messageId": "message", "parentMessageId": "message", "toolCallId": "call"}
LEFT_OUT = {"timestamp", "metadata", "threadId", "runId", "result"}
"""Fields not compared: the differences tested below (`timestamp`, `metadata`, `result`) and the ids
the client chose (`threadId`, `runId`: each run has its own)."""


def essentials(run: Run) -> Shape:
    """The run's events as they are meant to match: the documented differences taken out.

    Without the empty text messages (the reference's, for a tool call's parent) and toolwire's
    `STATE_SNAPSHOT`, the fields of `LEFT_OUT`; ids named by their order of appearance; an absent
    `RUN_FINISHED.outcome` as the success it means (AG-UI 1.0: absent means success); interrupts
    by their reason and call (their ids are each server's own).
    """
    events = run.output["events"]
    empty = empty_text_messages(events)
    names: dict[str, str] = {}
    counts: Counter[str] = Counter()

    def name(kind: str, value: str) -> str:
        if value not in names:
            names[value] = f"{kind}-{counts[kind]}"
            counts[kind] += 1
        return names[value]

    kept: Shape = []
    for event in events:
        if event["type"] in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_END") and event["messageId"] in empty:
            continue
        if event["type"] == "STATE_SNAPSHOT":
            continue
        item = {key: value for key, value in event.items() if key not in LEFT_OUT}
        for key, kind in ID_KINDS.items():
            if key in item:
                item[key] = name(kind, item[key])
        if event["type"] == "RUN_FINISHED":
            outcome: dict[str, Any] = dict(event.get("outcome") or {"type": "success"})
            if "pendingToolCallIds" in outcome:
                outcome["pendingToolCallIds"] = [name("call", call) for call in outcome["pendingToolCallIds"]]
            if "interrupts" in outcome:
                outcome["interrupts"] = [
                    {"reason": interrupt["reason"], "toolCallId": name("call", interrupt["toolCallId"])}
                    for interrupt in outcome["interrupts"]
                ]
            item["outcome"] = outcome
        kept.append(item)
    return kept


def shape(messages: list[dict[str, Any]]) -> Shape:
    """A client's message list without ids: roles, text, calls (name, arguments), which call a tool message answers."""
    calls: dict[str, int] = {}
    shaped: Shape = []
    for message in messages:
        item: dict[str, Any] = {"role": message["role"]}
        if message.get("content"):
            item["content"] = message["content"]
        for call in message.get("toolCalls", []):
            calls[call["id"]] = len(calls)
            item.setdefault("calls", []).append([call["function"]["name"], json.loads(call["function"]["arguments"])])
        if message["role"] == "tool":
            item["answers"] = calls[message["toolCallId"]]
        shaped.append(item)
    return shaped


def transcript_shape(transcript: list[Message]) -> Shape:
    """`shape` of a toolwire transcript: what a client's messages would be."""
    calls: dict[str, int] = {}
    shaped: Shape = []
    for message in transcript:
        match message:
            case UserMessage():
                shaped.append({"role": "user", "content": message.content})
            case AssistantMessage():
                item: dict[str, Any] = {"role": "assistant"}
                if message.text:
                    item["content"] = message.text
                for call in message.tool_calls:
                    calls[call.id] = len(calls)
                    item.setdefault("calls", []).append([call.name, dict(call.arguments)])
                shaped.append(item)
            case ToolResultMessage():
                content = render_result(message.result)
                shaped.append({"role": "tool", "content": content, "answers": calls[message.call_id]})
    return shaped


def events_of(run: Run, event_type: str) -> list[dict[str, Any]]:
    return [event for event in run.output["events"] if event["type"] == event_type]


# What matches: the same events (modulo the differences below) and the same messages in the client.


def test_text_answer_streams_alike(hi: Pair) -> None:
    assert essentials(hi.toolwire) == essentials(hi.reference)
    assert [kind for kind in hi.toolwire.types if kind != "STATE_SNAPSHOT"] == hi.reference.types


def test_text_answer_leaves_the_same_messages(hi: Pair) -> None:
    assert shape(hi.toolwire.messages) == shape(hi.reference.messages)
    assert hi.toolwire.messages[-1]["content"] == "Hello!"


def test_run_started_declares_the_same_protocol_version(hi: Pair) -> None:
    versions = {run.output["events"][0].get("protocolVersion") for run in (hi.toolwire, hi.reference)}
    assert versions == {"1.0"}


def test_server_tool_call_streams_alike(weather: Pair) -> None:
    assert essentials(weather.toolwire) == essentials(weather.reference)


def test_server_tool_call_leaves_the_same_messages(weather: Pair) -> None:
    assert shape(weather.toolwire.messages) == shape(weather.reference.messages)
    assert weather.toolwire.messages[-1]["content"] == 'Got {"get_weather": "sunny in Paris"}'


def test_front_end_call_ends_the_run_pending_alike(pick: Pair) -> None:
    assert essentials(pick.toolwire) == essentials(pick.reference)
    assert essentials(pick.toolwire)[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["call-0"]}


def test_front_end_call_is_pending_in_both_clients(pick: Pair) -> None:
    for run in (pick.toolwire, pick.reference):
        assert run.pending == [run.last_call_id()]
    assert shape(pick.toolwire.messages) == shape(pick.reference.messages)


def test_front_end_result_completes_the_run_alike(picked: Pair) -> None:
    assert essentials(picked.toolwire) == essentials(picked.reference)


def test_front_end_result_leaves_the_same_messages(picked: Pair) -> None:
    assert shape(picked.toolwire.messages) == shape(picked.reference.messages)
    assert picked.toolwire.messages[-1]["content"] == 'Got {"pick_color": "blue"}'


def test_toolwire_store_agrees_with_the_client(server: Server, picked: Pair) -> None:
    """The reference has no store; toolwire's transcript is what its client holds."""
    transcript = transcript_of(server.data_dir, picked.thread)
    validate_transcript(transcript)
    assert transcript_shape(transcript) == shape(picked.toolwire.messages)


def test_batch_of_server_and_front_end_calls_alike(toolwire: Client, reference: Client, batch: Pair) -> None:
    assert essentials(batch.toolwire) == essentials(batch.reference)
    done = answer_both(toolwire, reference, batch, "green", (batch.toolwire.pending[0], batch.reference.pending[0]))
    assert shape(done.toolwire.messages) == shape(done.reference.messages)
    assert done.toolwire.messages[-1]["content"] == 'Got {"get_weather": "sunny in Oslo", "pick_color": "green"}'


def resume_both(toolwire: Client, reference: Client, first: Pair, payload: dict[str, Any]) -> Pair:
    """Run 2 of an approval: each client's messages, and `payload` for the interrupt its server sent."""

    def answer(client: Client, run: Run) -> Run:
        [interrupt] = run.interrupts
        resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}]
        return client.run(first.thread, run.messages, resume=resume)

    return Pair(first.thread, answer(toolwire, first.toolwire), answer(reference, first.reference))


@pytest.fixture(scope="module")
def asked(toolwire: Client, reference: Client) -> Pair:
    return run_both(toolwire, reference, [user("run")])


def test_a_call_needing_approval_ends_the_run_with_an_interrupt_alike(asked: Pair) -> None:
    assert essentials(asked.toolwire) == essentials(asked.reference)
    assert essentials(asked.toolwire)[-1]["outcome"] == {
        "type": "interrupt",
        "interrupts": [{"reason": "tool_call", "toolCallId": "call-0"}],
    }


def test_the_interrupts_ask_for_the_same_answer(asked: Pair) -> None:
    """Both advertise `approved` (required), `editedArgs` and `reason`; toolwire adds `scope`."""
    [toolwire_interrupt] = asked.toolwire.interrupts
    [reference_interrupt] = asked.reference.interrupts
    toolwire_schema, reference_schema = toolwire_interrupt["responseSchema"], reference_interrupt["responseSchema"]
    assert toolwire_schema["required"] == reference_schema["required"] == ["approved"]
    assert set(toolwire_schema["properties"]) == {*reference_schema["properties"], "scope"}


def test_an_approval_completes_the_run_alike(toolwire: Client, reference: Client) -> None:
    first = run_both(toolwire, reference, [user("run")])
    done = resume_both(toolwire, reference, first, {"approved": True})
    assert essentials(done.toolwire) == essentials(done.reference)
    assert shape(done.toolwire.messages) == shape(done.reference.messages)
    assert done.toolwire.messages[-1]["content"] == 'Got {"run_command": "ran ls"}'


def test_an_approval_with_edited_arguments_runs_them_alike(toolwire: Client, reference: Client) -> None:
    first = run_both(toolwire, reference, [user("run")])
    done = resume_both(toolwire, reference, first, {"approved": True, "editedArgs": {"command": "pwd"}})
    assert done.toolwire.messages[-1]["content"] == done.reference.messages[-1]["content"]
    assert done.toolwire.messages[-1]["content"] == 'Got {"run_command": "ran pwd"}'


def test_a_refusal_reaches_the_model_as_a_denial_on_both(toolwire: Client, reference: Client) -> None:
    first = run_both(toolwire, reference, [user("run")])
    done = resume_both(toolwire, reference, first, {"approved": False, "reason": "not now"})
    for run in (done.toolwire, done.reference):
        assert "not now" in run.messages[-1]["content"]


# The differences, one each: which behaviour is toolwire's, and why.


def test_only_toolwire_tells_the_client_tool_state(pick: Pair) -> None:
    """toolwire ends each response with a `STATE_SNAPSHOT` of the thread's client tools (the server
    keeps them); the reference, with no agent state, sends none."""
    [snapshot] = events_of(pick.toolwire, "STATE_SNAPSHOT")
    assert snapshot["snapshot"]["toolwire"]["clientTools"]["groups"][0]["tools"] == ["pick_color"]
    assert events_of(pick.reference, "STATE_SNAPSHOT") == []


def test_the_interrupt_ids_are_each_servers_own(asked: Pair) -> None:
    """An interrupt is answered by the id it came with: toolwire's `approval-<call>`, the reference's
    `int-<call>`; a front end that echoes the id works with both."""
    [toolwire_interrupt] = asked.toolwire.interrupts
    [reference_interrupt] = asked.reference.interrupts
    assert toolwire_interrupt["id"] == "approval-" + toolwire_interrupt["toolCallId"]
    assert reference_interrupt["id"] == "int-" + reference_interrupt["toolCallId"]


def test_only_the_reference_opens_an_empty_text_message_for_a_calls_parent(weather: Pair) -> None:
    """The reference starts and ends an empty text message so that `parentMessageId` names a message
    of the stream; toolwire does not: it never matches history by message id (a call-only turn is
    matched by its call ids), and the client makes the parent message from `TOOL_CALL_START`."""
    [reference_call] = events_of(weather.reference, "TOOL_CALL_START")
    assert empty_text_messages(weather.reference.output["events"]) == {reference_call["parentMessageId"]}
    [toolwire_call] = events_of(weather.toolwire, "TOOL_CALL_START")
    started = {event["messageId"] for event in events_of(weather.toolwire, "TEXT_MESSAGE_START")}
    assert toolwire_call["parentMessageId"] not in started
    assert empty_text_messages(weather.toolwire.output["events"]) == set()


def test_call_only_assistant_message_has_no_content_in_toolwires_client(weather: Pair) -> None:
    """The empty text message above leaves `content: ""` in the reference's client; toolwire's has none."""
    assert weather.reference.messages[1]["content"] == ""
    assert "content" not in weather.toolwire.messages[1]


def test_toolwire_run_finished_carries_the_run_result(hi: Pair) -> None:
    """toolwire's `RUN_FINISHED.result` is the run's output and why it ended (a terminal tool's message
    is only there); the reference sends no result."""
    [toolwire_finished] = events_of(hi.toolwire, "RUN_FINISHED")
    [reference_finished] = events_of(hi.reference, "RUN_FINISHED")
    assert toolwire_finished["result"] == {"output": "Hello!", "reason": "answer"}
    assert "result" not in reference_finished
    assert hi.toolwire.output["result"] == toolwire_finished["result"]  # the client's runAgent result


def test_toolwire_leaves_a_plain_success_outcome_out(hi: Pair) -> None:
    """A run with nothing pending: the reference says `outcome: {type: "success"}`, toolwire leaves it
    out (AG-UI 1.0: absent means success); the client reads a success from both."""
    [toolwire_finished] = events_of(hi.toolwire, "RUN_FINISHED")
    [reference_finished] = events_of(hi.reference, "RUN_FINISHED")
    assert "outcome" not in toolwire_finished
    assert reference_finished["outcome"] == {"type": "success"}
    assert hi.toolwire.output["finished"]["outcome"] == hi.reference.output["finished"]["outcome"] == "success"


def test_toolwire_tool_events_carry_its_metadata(weather: Pair) -> None:
    """toolwire says a call's mode and where it runs, and a result's outcome (for a front end to show
    the risk and the failure); the reference sends no metadata."""
    [start] = events_of(weather.toolwire, "TOOL_CALL_START")
    [result] = events_of(weather.toolwire, "TOOL_CALL_RESULT")
    assert start["metadata"] == {"toolwire": {"execution": "server", "mode": "read"}}
    assert result["metadata"] == {"toolwire": {"outcome": "success"}}
    assert all("metadata" not in event for event in weather.reference.output["events"])


def test_only_the_reference_stamps_its_events(hi: Pair) -> None:
    """`timestamp` is optional and nothing in the protocol computes with it: toolwire sends none."""
    assert all("timestamp" in event for event in hi.reference.output["events"])
    assert all("timestamp" not in event for event in hi.toolwire.output["events"])


def test_repeated_answer_runs_nothing_again_on_toolwire_only(toolwire: Client, reference: Client) -> None:
    """A retried request: the reference runs the model again on the history it is sent (a second
    answer); toolwire's call has its result already, so the request is idempotent and runs nothing."""
    pick = run_both(toolwire, reference, [user("pick")], tools=[PICK_COLOR])
    first = answer_both(toolwire, reference, pick, "blue")
    again = answer_both(toolwire, reference, pick, "blue")
    assert again.reference.types == first.reference.types
    assert again.reference.messages[-1]["content"] == 'Got {"pick_color": "blue"}'
    assert again.toolwire.types == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"]


def test_a_second_different_answer_is_refused_by_toolwire_only(toolwire: Client, reference: Client) -> None:
    """The reference answers whatever the history says; toolwire's call has one result (409)."""
    pick = run_both(toolwire, reference, [user("pick")], tools=[PICK_COLOR])
    answer_both(toolwire, reference, pick, "blue")
    other = answer_both(toolwire, reference, pick, "red")
    assert other.reference.messages[-1]["content"] == 'Got {"pick_color": "red"}'
    assert (other.toolwire.status, other.toolwire.output["payload"]["code"]) == (409, "tool_call_settled")


def test_history_the_server_never_made_is_refused_by_toolwire_only(toolwire: Client, reference: Client) -> None:
    """The reference takes the client's messages as the conversation; toolwire's store is the truth (400)."""
    thread = new_thread()
    toolwire.run(thread, [user("hi")])
    invented = [user("hi"), {"id": "a9", "role": "assistant", "content": "I never said this"}, user("and?", "u2")]
    assert reference.run(thread, invented).messages[-1]["content"] == "Hello!"
    run = toolwire.run(thread, invented)
    assert (run.status, run.output["payload"]["code"]) == (400, "history_mismatch")


def test_history_sent_to_another_thread_is_refused_by_toolwire_only(
    pick: Pair, toolwire: Client, reference: Client
) -> None:
    """The reference's `threadId` is a label; toolwire's thread is its transcript, and the new thread
    has none of that history (400)."""
    done = answer_both(toolwire, reference, Pair(new_thread(), pick.toolwire, pick.reference), "blue")
    assert done.reference.messages[-1]["content"] == 'Got {"pick_color": "blue"}'
    assert (done.toolwire.status, done.toolwire.output["payload"]["code"]) == (400, "history_mismatch")


def test_new_prompt_while_a_call_waits_is_refused_by_toolwire_only(toolwire: Client, reference: Client) -> None:
    """The reference gives the unanswered call a placeholder result ("interrupted") and runs the new
    prompt; toolwire's call waits in its ledger for its result until its deadline (then a Timeout),
    so a prompt meanwhile is refused (409)."""
    pick = run_both(toolwire, reference, [user("pick")], tools=[PICK_COLOR])
    reference_run = reference.run(pick.thread, [*pick.reference.messages, user("never mind", "u2")], tools=[PICK_COLOR])
    assert reference_run.messages[-1]["content"] == "Hello!"
    run = toolwire.run(pick.thread, [*pick.toolwire.messages, user("never mind", "u2")], tools=[PICK_COLOR])
    assert (run.status, run.output["payload"]["code"]) == (409, "tool_calls_waiting")


def test_result_for_an_unknown_call_is_a_named_refusal_on_toolwire(toolwire: Client, reference: Client) -> None:
    """A tool message for a call no one made: toolwire refuses it before any event (400, with a code);
    the reference fails the request (its adapter raises: 500)."""
    thread = new_thread()
    toolwire.run(thread, [user("hi")])
    messages = [user("hi"), tool_message("call_nope", "blue")]
    run = toolwire.run(thread, messages)
    assert (run.status, run.output["payload"]["code"]) == (400, "unknown_tool_call")
    assert reference.run(thread, messages).status == 500
