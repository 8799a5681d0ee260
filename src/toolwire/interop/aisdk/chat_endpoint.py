"""`POST /ai-sdk/chat`: the Vercel AI SDK's `useChat` (its request body in, the UI message stream out) beside `/ws`.

```
toolwire serve --app myapp:make_agent --ai-sdk
POST /ai-sdk/chat   Authorization: Bearer <token>
     body: {id, messages: UIMessage[], tools?: [{name, description, inputSchema}], ...}
     → text/event-stream, x-vercel-ai-ui-message-stream: v1
GET  /ai-sdk/chat/{id}/stream   (the transport's reconnectToStream, `resume: true`)
     → the thread's last assistant message replayed from its start and followed live, or 204
```

`id` (the chat id) is the thread: created for the principal when new, another principal's refused
(403). `messages` are reconciled with the stored transcript (`ui_messages.reconcile`): trailing user
messages are the prompt; the last assistant message's tool outputs for the thread's waiting
front-end calls are their answers. `tools` (toolwire's field: the AI SDK's front-end tools have no
server-side declaration, so the front end sends them in the body, e.g. the transport's `body`) become
the thread's client tools (group `ai-sdk`, expanded). A call of one ends the response after its
`tool-input-available` and `finish` (`finishReason: "tool-calls"`); the run waits, the call DISPATCHED,
until a request brings its output (`addToolOutput`), or its deadline gives it a Timeout. A call the
policy asks about ends the response after its `tool-approval-request`, likewise; the request that
brings the part `approval-responded` (`addToolApprovalResponse`) answers the question.

Every response's parts also go to the thread's `streams.PartLog`, which outlives the request: a
client that lost the stream gets the message again from `GET {path}/{id}/stream` (same tokens;
another principal's thread: 403; nothing to replay: 204).

Refusals before the stream starts are HTTP errors with a JSON body `{"error", "code"}`, as for
`/agui` (`..frontends.endpoint_base`). A run that fails once the stream started ends with an `error` part.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Final, cast

from anyio.streams.memory import MemoryObjectReceiveStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from ...messages import Message, ToolResultMessage
from ...server.app import ToolwireServer
from ..frontends.answers import Reconciled
from ..frontends.endpoint_base import FrontEndEndpoint, Plan, Refused, mount
from ..frontends.live_runs import LiveRun
from . import parts
from .parts import Part, PartMapper
from .streams import PartLog, PartLogs
from .ui_messages import reconcile

__all__ = ["GROUP", "PATH", "AiSdkEndpoint", "ChatRequest", "mount_ai_sdk"]

PATH: Final = "/ai-sdk/chat"
"""Where the endpoint answers."""
GROUP: Final = "ai-sdk"
"""The client tool group a request's `tools` are registered as (expanded, replaced by each request)."""

ChatRequest = dict[str, Any]
"""A `useChat` request body, as JSON (checked by `AiSdkEndpoint.read`)."""


class AiSdkEndpoint(FrontEndEndpoint[Part, ChatRequest]):
    """The AI SDK endpoint of a toolwire server; `run()` must be entered while it serves."""

    group = GROUP

    def __init__(self, server: ToolwireServer) -> None:
        super().__init__(server)
        self.logs = PartLogs()
        """The threads' last messages, for `reconnect`."""

    async def read(self, request: Request, body: bytes) -> ChatRequest:
        """The body: an object with a string `id`, a list `messages` and an optional list `tools`."""
        try:
            given: object = json.loads(body)
        except ValueError:
            raise Refused(400, "invalid_input", "the body is not JSON") from None
        if not isinstance(given, dict):
            raise Refused(400, "invalid_input", "the body is not a JSON object")
        chat = cast(ChatRequest, given)
        if not isinstance(chat.get("id"), str):
            raise Refused(400, "invalid_input", "id (the chat id, the thread) must be a string")
        messages = chat.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in cast(list[Any], messages)):
            raise Refused(400, "invalid_input", "messages must be a list of UIMessage objects")
        tools = chat.get("tools", [])
        if not isinstance(tools, list) or not all(
            isinstance(tool, dict) and isinstance(cast(dict[str, Any], tool).get("name"), str)
            for tool in cast(list[Any], tools)
        ):
            raise Refused(400, "invalid_input", "tools must be a list of {name, description, inputSchema}")
        return chat

    def thread_of(self, given: ChatRequest) -> tuple[str, str]:
        """`id`, and `messageId` (or a new id) as the run's."""
        run_id = given.get("messageId")
        return str(given["id"]), run_id if isinstance(run_id, str) else "run_" + secrets.token_hex(8)

    def reconciled(
        self,
        given: ChatRequest,
        stored: Sequence[Message],
        waiting: set[str],
        decided: dict[str, ToolResultMessage],
    ) -> Reconciled:
        """`messages` against the transcript (`ui_messages.reconcile`)."""
        return reconcile(stored, waiting, cast(list[Mapping[str, Any]], given["messages"]), decided)

    def tools(self, given: ChatRequest) -> list[dict[str, Any]]:
        """`tools` as client tool definitions (`inputSchema`, or `parameters`, is the JSON schema)."""
        found: list[dict[str, Any]] = []
        for tool in cast(list[dict[str, Any]], given.get("tools", [])):
            schema = tool.get("inputSchema", tool.get("parameters"))
            found.append(
                {
                    "name": tool["name"],
                    "description": str(tool.get("description", "")),
                    "parametersSchema": schema if isinstance(schema, dict) else {"type": "object"},
                }
            )
        return found

    def mapper(self, plan: Plan) -> PartMapper:
        """A new `PartMapper`, knowing the front end's tools."""
        return PartMapper({str(tool["name"]) for tool in plan.tools})

    def opening(self, plan: Plan, live: LiveRun[Part]) -> list[Part]:
        """`start`: a new assistant message for a prompt; else the client's last one goes on."""
        return [parts.start("msg_" + secrets.token_hex(8) if plan.prompt is not None else None)]

    def closing(self, plan: Plan, live: LiveRun[Part]) -> list[Part]:
        """`error` when the run failed; else `finish` (`tool-calls` when front-end calls or approvals wait)."""
        if live.error is not None:
            return [parts.error(live.error[0])]
        return [parts.finish(waiting=not live.done)]

    def respond(
        self, request: Request, plan: Plan, events: MemoryObjectReceiveStream[Part], headers: dict[str, str]
    ) -> Response:
        """SSE, with the header that names the UI message stream; the parts also go to the thread's log."""
        start = events.receive_nowait()  # `opening` sent it before the response was made
        log, continued = self.logs.begin(plan.thread_id, start)
        if continued:
            log.record(_brought(plan))
        following = log.follow(replay=False)
        self.spawn(lambda: _pump(events, log))
        name, version = parts.HEADER
        body = _encoded([start], following)
        return StreamingResponse(body, media_type="text/event-stream", headers={**headers, name: version})

    async def reconnect(self, request: Request) -> Response:
        """`GET {path}/{id}/stream`: the thread's last message from its start, then live; 204 when there is none."""
        cors, answered = self.admit(request, "GET")
        if answered is not None:
            return answered
        thread_id = str(request.path_params["chat_id"])
        store = self.server.agent.store
        try:
            principal = self.principal(request)
            if await store.thread_exists(thread_id) and await store.thread_principal(thread_id) != principal:
                raise Refused(403, "thread_forbidden", f"thread {thread_id!r} belongs to someone else")
        except Refused as refused:
            return self.refusal(refused, cors)
        log = self.logs.get(thread_id)
        if log is None:
            return Response(status_code=204, headers=cors)
        name, version = parts.HEADER
        headers = {**cors, "Cache-Control": "no-cache", "X-Accel-Buffering": "no", name: version}
        return StreamingResponse(_encoded([], log.follow(replay=True)), media_type="text/event-stream", headers=headers)


def mount_ai_sdk(app: Starlette, *, path: str = PATH) -> AiSdkEndpoint:
    """Serve the agent of a toolwire server's app to AI SDK front ends (`useChat`) at `path` (`POST`).

    As `mount_agui` for AG-UI (`endpoint_base.mount`): the tokens, origins and store of `/ws`; run
    the app with its lifespan on. Raises `UsageError` when `app` is not a toolwire server's app.
    """
    mounted: AiSdkEndpoint = mount(app, AiSdkEndpoint, path, "mount_ai_sdk")
    app.router.routes.append(Route(path + "/{chat_id}/stream", endpoint=mounted.reconnect, methods=["GET", "OPTIONS"]))
    return mounted


def _brought(plan: Plan) -> list[Part]:
    """What the request told the run (its approvals, its tools' outputs), as the parts a replay rebuilds it with."""
    told = [parts.approval_response(given.call_id, given.answer.allow, given.answer.reason) for given in plan.approvals]
    for answer in plan.answers:
        if answer.error is not None:
            told.append({"type": "tool-output-error", "toolCallId": answer.call_id, "errorText": answer.error})
        else:
            told.append({"type": "tool-output-available", "toolCallId": answer.call_id, "output": answer.content})
    return told


async def _pump(events: MemoryObjectReceiveStream[Part], log: PartLog) -> None:
    """Move one response's parts into the thread's log until the response ends (its client may be gone)."""
    try:
        async with events:
            async for part in events:
                log.add(part)
    finally:
        log.close()


async def _encoded(first: list[Part], events: MemoryObjectReceiveStream[Part]) -> AsyncIterator[str]:
    async with events:
        for part in first:
            yield parts.encode(part)
        async for part in events:
            yield parts.encode(part)
    yield parts.DONE
