"""Another implementation of the protocol talks to a real `toolwire serve`, in its own dialect.

The peer here is written the way a client built on msgpackr writes its frames: by hand, with
`undefined` fields (`d4 00 00`), a ToolUseResult that names the request `requestId` and its
failure `error`, and Acknowledgements that are empty or say `lastSeenStanzaId`. The server must
answer it as it answers toolwire's own clients, and must not send a streamed answer twice.
"""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgpack
import pytest
from server_support import TOKEN
from websockets.asyncio.client import ClientConnection, connect

from serving import Server, serve_app
from toolwire.protocol import (
    AssistantMessageBody,
    Configuration,
    Envelope,
    ErrorMessage,
    MessageType,
    RunStatus,
    ToolUseRequest,
    decode,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "protocol"
UNDEFINED = msgpack.ExtType(0, b"\x00")
"""What msgpackr writes for a field whose value is `undefined`."""

APP_SOURCE = textwrap.dedent(
    '''
    from toolwire import Agent, ToolCall, ToolResult, tool
    from toolwire.messages import ToolResultMessage, UserMessage
    from toolwire.models import ModelResponse
    from toolwire.testing import FunctionModel

    @tool
    async def finish(summary: str) -> ToolResult:
        """End the conversation's task."""
        return ToolResult.ok(None, {"summary": summary}, message=summary, terminal=True)

    PLAN = [
        ToolCall(id="c_expand", name="Calendar", arguments={}),
        ToolCall(id="c_read", name="ReadCalendar", arguments={}),
    ]
    FINISH = ToolCall(id="c_fin", name="finish", arguments={"summary": "All done."})

    def script(request):
        turn = 0
        for message in request.messages:
            turn = 0 if isinstance(message, UserMessage) else turn + isinstance(message, ToolResultMessage)
        prompt = [m for m in request.messages if isinstance(m, UserMessage)][-1].content
        if prompt == "read my calendar":
            if turn < len(PLAN):
                return [PLAN[turn]]
            return "Saw: " + request.messages[-1].result.error
        if prompt == "finish":
            return ModelResponse(text="Wrapping up. ", tool_calls=(FINISH,))
        return "Hello there."

    class Model:
        """Streams its answers, except the answer to "answer whole", which comes in one piece."""

        name = "dialects"

        def __init__(self):
            self.streaming = FunctionModel(script)

        async def stream(self, request):
            if getattr(request.messages[-1], "content", None) == "answer whole":
                yield ModelResponse(text="One whole answer.", finish_reason="stop")
                return
            async for event in self.streaming.stream(request):
                yield event

    def make_agent(store):
        return Agent(Model(), tools=[finish], store=store)
    '''
)

CALENDAR = {
    "name": "Calendar",
    "description": "The user's calendar",
    "tools": [{"name": "ReadCalendar", "description": "Today's events", "parametersSchema": {"type": "object"}}],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve_app(tmp_path_factory.mktemp("dialects"), APP_SOURCE, "dialectapp", token=TOKEN) as running:
        yield running


class Dialect:
    """A client of another implementation: every frame built by hand, as msgpackr writes it."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.conversation = ""
        self.stanza = 0
        self.seen: list[Envelope] = []

    async def send_raw(self, data: bytes) -> None:
        await self.socket.send(data)

    async def send(self, type: MessageType, body: dict[str, Any], *, numbered: bool = True) -> None:
        """Send a frame: numbered 1, 2, 3… unless `numbered` is false."""
        self.stanza += numbered
        wire = {"stanzaId": self.stanza if numbered else 0, "conversationId": self.conversation, "type": int(type)}
        await self.send_raw(pack({**wire, "body": body}))

    async def receive(self) -> Envelope:
        data = await self.socket.recv()
        assert isinstance(data, bytes)
        envelope = decode(data)  # the server writes toolwire's own form: toolwire's decoder reads it
        self.seen.append(envelope)
        return envelope

    async def until(self, message_type: MessageType, **fields: Any) -> Envelope:
        """Read until a message of `message_type` whose fields match."""
        with anyio.fail_after(30):
            while True:
                envelope = await self.receive()
                message = envelope.message
                if message.type == message_type and all(getattr(message, k) == v for k, v in fields.items()):
                    return envelope

    def types(self) -> list[MessageType]:
        return [envelope.type for envelope in self.seen]

    def errors(self) -> list[ErrorMessage]:
        return [envelope.message for envelope in self.seen if isinstance(envelope.message, ErrorMessage)]


@asynccontextmanager
async def dialect(
    server: Server, hello: bytes | None = None, *, features: tuple[str, ...] = ()
) -> AsyncIterator[Dialect]:
    """Connect and open a new conversation with `hello` (by default a Configuration without `undefined`)."""
    if hello is None:
        body = {"conversationId": "", "lastSequenceSeen": 0, "clientVersion": "alicia-web/0.9.0", "features": features}
        hello = pack({"stanzaId": 0, "conversationId": "", "type": 12, "body": body})
    async with connect(server.url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as socket:
        client = Dialect(socket)
        await client.send_raw(hello)
        answer = await client.receive()
        assert isinstance(answer.message, Configuration), answer
        client.conversation = answer.conversation_id
        yield client


async def ask(client: Dialect, content: str, **extra: Any) -> RunStatus:
    """Send a UserMessage and read until its run finished."""
    message_id = f"msg_{client.stanza + 1}"
    await client.send(MessageType.USER_MESSAGE, {"id": message_id, "content": content, **extra})
    finished = await client.until(MessageType.RUN_STATUS, status="finished", message_id=message_id)
    assert isinstance(finished.message, RunStatus)
    return finished.message


def pack(value: Any) -> bytes:
    packed = msgpack.packb(value)
    assert isinstance(packed, bytes)
    return packed


def fixture(name: str) -> bytes:
    return bytes.fromhex((FIXTURES / f"{name}.msgpack.hex").read_text(encoding="utf-8"))


# -- undefined (d4 00 00) --------------------------------------------------------------------------


async def test_a_msgpackr_configuration_with_undefined_fields_completes_the_handshake(server: Server) -> None:
    async with dialect(server, fixture("dialect_configuration_undefined")) as client:
        assert client.conversation.startswith("conv_")
        assert client.errors() == []


async def test_a_user_message_with_an_undefined_previous_id_is_answered(server: Server) -> None:
    async with dialect(server) as client:
        finished = await ask(client, "hi", previousId=UNDEFINED)
    assert finished.output == "Hello there."


# -- the dialect's ToolUseResult and Acknowledgements ---------------------------------------------


async def test_the_error_text_of_a_failed_result_reaches_the_model(server: Server) -> None:
    async with dialect(server) as client:
        await client.send(MessageType.REGISTER_TOOLS, {"groups": [CALENDAR]})
        await client.until(MessageType.REGISTER_TOOLS_RESULT, ok=True)
        await client.send(MessageType.USER_MESSAGE, {"id": "msg_read", "content": "read my calendar"})
        request = (await client.until(MessageType.TOOL_USE_REQUEST, execution="client")).message
        assert isinstance(request, ToolUseRequest)
        failure = {"id": "res_1", "requestId": request.id, "success": False, "error": "Locked"}
        await client.send(MessageType.TOOL_USE_RESULT, failure)
        finished = await client.until(MessageType.RUN_STATUS, status="finished")
    assert isinstance(finished.message, RunStatus)
    assert finished.message.output == "Saw: Locked"


async def test_empty_and_last_seen_acknowledgements_are_not_refused(server: Server) -> None:
    async with dialect(server) as client:
        await ask(client, "hi")
        await client.send(MessageType.ACKNOWLEDGEMENT, {"lastSeenStanzaId": client.seen[-1].stanza_id}, numbered=False)
        await client.send(MessageType.ACKNOWLEDGEMENT, {}, numbered=False)
        await ask(client, "hi again")
        assert client.errors() == []


# -- streamed answers are not sent twice -----------------------------------------------------------


async def test_the_server_lists_whole_answers_among_its_features(server: Server) -> None:
    async with dialect(server) as client:
        configuration = client.seen[0].message
    assert isinstance(configuration, Configuration) and "wholeAnswers" in configuration.features


async def test_a_streamed_answer_is_not_sent_again_as_an_assistant_message(server: Server) -> None:
    async with dialect(server) as client:
        await ask(client, "hi")
    assert MessageType.ASSISTANT_SENTENCE in client.types()
    assert MessageType.ASSISTANT_MESSAGE not in client.types()


async def test_a_client_asking_for_whole_answers_also_gets_the_assistant_message(server: Server) -> None:
    async with dialect(server, features=("wholeAnswers",)) as client:
        await ask(client, "hi")
    [whole] = [envelope.message for envelope in client.seen if isinstance(envelope.message, AssistantMessageBody)]
    assert whole.content == "Hello there."


async def test_an_answer_that_was_not_streamed_arrives_as_one_assistant_message(server: Server) -> None:
    async with dialect(server) as client:
        await ask(client, "answer whole")
    [whole] = [envelope.message for envelope in client.seen if isinstance(envelope.message, AssistantMessageBody)]
    assert whole.content == "One whole answer."
    assert MessageType.START_ANSWER not in client.types()


async def test_a_terminal_results_message_after_a_streamed_preamble_is_sent_whole(server: Server) -> None:
    async with dialect(server) as client:
        finished = await ask(client, "finish")
    assert finished.reason == "terminal_result"
    [whole] = [envelope.message for envelope in client.seen if isinstance(envelope.message, AssistantMessageBody)]
    assert whole.content == "All done."
