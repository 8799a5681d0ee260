"""`POST /agui`: the AG-UI protocol (`RunAgentInput` in, SSE events out) beside `/ws`.

```
toolwire serve --app myapp:make_agent --agui
POST /agui   Authorization: Bearer <token>   body: RunAgentInput (JSON)   → text/event-stream
```

The served agent answers on the thread `threadId` names, in the store `/ws` uses: a thread the
principal does not have yet is created for it; another principal's thread is refused (403). The
request's `messages` are reconciled with the stored transcript (`reconcile.reconcile`: the new user
message(s) at the end are the prompt; results for the thread's waiting front-end calls are their
answers; anything else must be in the transcript, or the request is refused, 400/409, before any
event). `tools` become the thread's client tools for the run (one group, `agui`, expanded): a
call of one ends the response with `RUN_FINISHED` naming it pending, and the run waits for the
result in the next request (`live_runs.LiveRun`).

Refusals before the stream starts are HTTP errors with a JSON body `{"error", "code"}`: 401 no
or a wrong token, 403 a refused `Origin` or another principal's thread, 400 a bad body or a history
the thread does not have, 409 a run of the thread in progress, a call's second result, or a new
message while a front-end call waits, 429 too many threads. A run that fails once the stream
started ends with `RUN_ERROR`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..._extras import import_extra
from ...errors import UsageError
from ...events import RunResult
from ...messages import AssistantMessage, Message, ToolResultMessage
from ...store import ThreadStore

import_extra("ag_ui", "agui")  # a missing package fails here, naming the extra to install

from ag_ui.core import BaseEvent, RunAgentInput  # noqa: E402
from ag_ui.encoder import EventEncoder  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from ...server.app import ToolwireServer  # noqa: E402
from ...server.auth import TokenAuth  # noqa: E402
from .event_map import EventMapper, run_error, run_finished, run_started  # noqa: E402
from .live_runs import LiveRun  # noqa: E402
from .reconcile import Answer, HistoryConflict, reconcile  # noqa: E402

__all__ = ["GROUP", "MAX_BODY_BYTES", "PATH", "AguiEndpoint", "mount_agui"]

_log = logging.getLogger("toolwire.agui")

PATH: Final = "/agui"
"""Where the endpoint answers."""
GROUP: Final = "agui"
"""The client tool group a request's `tools` are registered as (expanded, replaced by each request)."""
MAX_BODY_BYTES: Final = 4 * 1024 * 1024
"""The largest `RunAgentInput` accepted (a client sends its whole history every time)."""
MAX_THREAD_ID: Final = 200
"""The longest `threadId` accepted."""


class _Refused(Exception):
    """A request refused before its stream started: an HTTP error with a JSON body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one request does to its thread."""

    thread_id: str
    run_id: str
    prompt: str | None
    answers: tuple[Answer, ...]
    tools: list[dict[str, Any]]


class AguiEndpoint:
    """The AG-UI endpoint of a toolwire server; `run()` must be entered while it serves.

    Args:
        server: The `ToolwireServer` of the app (`app.state.toolwire`): its agent, tokens, origins.
    """

    def __init__(self, server: ToolwireServer) -> None:
        self.server = server
        self.live: dict[str, LiveRun] = {}
        """The runs that live on between requests (waiting for a front-end call), by thread."""
        self._lock = anyio.Lock()
        self._group: TaskGroup | None = None

    @asynccontextmanager
    async def run(self) -> AsyncGenerator[None]:
        """The endpoint's lifespan: its runs live in a task group; leaving parks them (as a stop does)."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()  # parked: the ledger keeps their calls for the next start

    async def handle(self, request: Request) -> Response:
        """Serve one request: a refusal (JSON), or the run's events (SSE)."""
        origin = request.headers.get("origin")
        cors = {"Access-Control-Allow-Origin": origin, "Vary": "Origin"} if origin is not None else {}
        if origin is not None and not self.server.origin_allowed(origin.rstrip("/"), request):
            return _error(403, "origin_refused", f"origin {origin:.200} may not call this endpoint", {})
        if request.method == "OPTIONS":
            allow = {
                "Access-Control-Allow-Methods": "POST",
                "Access-Control-Allow-Headers": "Authorization, Content-Type",
            }
            return Response(status_code=204, headers={**cors, **allow, "Access-Control-Max-Age": "600"})
        send, receive = anyio.create_memory_object_stream[BaseEvent](float("inf"))
        try:
            plan, live, mapper = await self._accept(request, send)
        except _Refused as refused:
            send.close()
            receive.close()
            headers = {**cors, "WWW-Authenticate": "Bearer"} if refused.status == 401 else cors
            return _error(refused.status, refused.code, refused.message, headers)
        assert self._group is not None
        self._group.start_soon(self._follow, plan, live, send, mapper)
        headers = {**cors, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        encoder = EventEncoder(accept=request.headers.get("accept", ""))
        return StreamingResponse(_encoded(receive, encoder), media_type=encoder.get_content_type(), headers=headers)

    # -- before the stream -------------------------------------------------------------------

    async def _accept(
        self, request: Request, send: MemoryObjectSendStream[BaseEvent]
    ) -> tuple[_Plan, LiveRun, EventMapper]:
        """Authenticate, read and check the request; the run that answers it (found or started), streaming to `send`."""
        if self._group is None:
            raise _Refused(503, "not_serving", "the endpoint is not serving (its lifespan did not start)")
        principal = self.server.auth.authenticate(TokenAuth.token_from(request.headers, {}))
        if principal is None:
            raise _Refused(401, "unauthorized", "send a valid token: Authorization: Bearer <token>")
        given = await _input(request)
        thread_id = given.thread_id
        if not thread_id or len(thread_id) > MAX_THREAD_ID or not thread_id.isprintable():
            raise _Refused(400, "invalid_thread", f"threadId must be 1 to {MAX_THREAD_ID} printable characters")
        agent = self.server.agent
        async with self._lock:
            await self._own(thread_id, principal)
            live = self.live.get(thread_id)
            if live is not None and (live.listened or not live.quiet):
                raise _Refused(
                    409, "run_in_progress", f"a run of thread {thread_id!r} is in progress: wait for its end"
                )
            plan = await self._plan(given)
            if live is None:
                answers = {answer.call_id: answer for answer in plan.answers}
                live = self.live[thread_id] = LiveRun(thread_id, agent.clients, agent.store, answers)
                assert self._group is not None
                self._group.start_soon(self._drive, live, self._runner(plan, live))
            mapper = EventMapper()
            send.send_nowait(run_started(plan.thread_id, plan.run_id))
            live.listen(send, mapper)  # under the lock: a second request finds the run listened to
            return plan, live, mapper

    async def _own(self, thread_id: str, principal: str) -> None:
        """The thread is the principal's: created for it when new; refused when another's."""
        store = self.server.agent.store
        if await store.thread_exists(thread_id):
            if await store.thread_principal(thread_id) != principal:
                raise _Refused(403, "thread_forbidden", f"thread {thread_id!r} belongs to someone else")
            return
        cap = self.server.max_conversations
        if cap is not None and await store.count_threads(principal) >= cap:
            raise _Refused(429, "too_many_threads", f"you have {cap} threads, the most this server allows")
        await store.create_thread(thread_id, principal=principal)

    async def _plan(self, given: RunAgentInput) -> _Plan:
        """What the request adds: checked against the stored transcript and the calls that wait."""
        store = self.server.agent.store
        thread_id = given.thread_id
        stored = await store.load_messages(thread_id)
        open_calls = [entry for entry in await store.open_calls(thread_id) if entry.execution == "client"]
        try:
            new = reconcile(
                stored,
                {entry.call.id for entry in open_calls},
                given.messages,
                await _decided(store, thread_id, stored),
            )
        except HistoryConflict as exc:
            raise _Refused(exc.status, exc.code, str(exc)) from None
        if new.answers and new.prompt is not None:
            raise _Refused(
                400,
                "answers_with_prompt",
                "this request answers front-end tool calls and sends a new user message: send the results "
                "first (the run goes on with them), then the new message",
            )
        now = time.time()
        answered = {answer.call_id for answer in new.answers}
        unanswered = [
            entry.call.id
            for entry in open_calls
            if entry.call.id not in answered and (entry.deadline is None or entry.deadline > now)
        ]
        if unanswered and new.prompt is not None:
            raise _Refused(
                409,
                "tool_calls_waiting",
                f"front-end tool call(s) {', '.join(unanswered)} wait for their results: send them as tool messages",
            )
        tools = [
            {
                "name": tool.name,
                "description": tool.description,
                "parametersSchema": tool.parameters or {"type": "object"},
            }
            for tool in given.tools or ()
        ]
        return _Plan(thread_id, given.run_id, new.prompt, new.answers, tools)

    def _runner(self, plan: _Plan, live: LiveRun) -> Callable[[], Awaitable[RunResult | None]]:
        """The agent call that starts `live`: the new prompt, or a resume of the thread's unfinished run."""
        agent = self.server.agent
        if plan.prompt is None:
            return lambda: agent.resume(plan.thread_id, client=live.channel, on_event=live.on_event)
        groups = [{"name": GROUP, "tools": plan.tools, "startCollapsed": False}] if plan.tools else []
        prompt = plan.prompt
        return lambda: agent.run(
            prompt,
            thread=plan.thread_id,
            client_tool_groups=groups,
            reset_client_state=True,
            client=live.channel,
            on_event=live.on_event,
        )

    # -- the runs ------------------------------------------------------------------------------

    async def _drive(self, live: LiveRun, run: Callable[[], Awaitable[RunResult | None]]) -> None:
        try:
            await live.drive(run)
        finally:
            if self.live.get(live.thread_id) is live:
                del self.live[live.thread_id]

    async def _follow(
        self, plan: _Plan, live: LiveRun, send: MemoryObjectSendStream[BaseEvent], mapper: EventMapper
    ) -> None:
        """Stream the run for one request: hand over its answers, wait until the run is quiet or done."""
        with send:
            try:
                for answer in plan.answers:
                    live.answer(answer)  # a call whose deadline just passed: its Timeout is streamed
                await live.wait_quiet_or_done()
            finally:
                live.release()
            for event in mapper.close():
                send.send_nowait(event)
            if live.error is not None:
                send.send_nowait(run_error(*live.error))
            elif live.done:
                send.send_nowait(run_finished(plan.thread_id, plan.run_id, live.result))
            else:
                send.send_nowait(run_finished(plan.thread_id, plan.run_id, None, list(live.waiting)))


def mount_agui(app: Starlette, *, path: str = PATH) -> AguiEndpoint:
    """Serve the agent of a toolwire server's app over AG-UI at `path` (`POST`), next to `/ws`.

    The endpoint accepts the tokens and browser origins `/ws` accepts, and shares its store. Its
    lifespan joins the app's: run the app with its lifespan on (uvicorn's `lifespan="on"`).

    Raises:
        UsageError: `app` is not a toolwire server's app.
    """
    server: object = getattr(app.state, "toolwire", None)
    if not isinstance(server, ToolwireServer):
        raise UsageError("mount_agui needs the app that toolwire.server.create_app returned")
    endpoint = AguiEndpoint(server)
    app.router.routes.append(Route(path, endpoint=endpoint.handle, methods=["POST", "OPTIONS"]))
    previous: Callable[[Starlette], AbstractAsyncContextManager[Any]] = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(served: Starlette) -> AsyncGenerator[Any]:
        async with previous(served) as state, endpoint.run():
            yield state

    app.router.lifespan_context = lifespan
    return endpoint


async def _decided(store: ThreadStore, thread_id: str, stored: Sequence[Message]) -> dict[str, ToolResultMessage]:
    """The results of the last batch's calls that are in the ledger but not in the transcript yet."""
    last = next((message for message in reversed(stored) if isinstance(message, AssistantMessage)), None)
    if last is None or not last.tool_calls:
        return {}
    have = {message.call_id for message in stored if isinstance(message, ToolResultMessage)}
    decided: dict[str, ToolResultMessage] = {}
    for call in last.tool_calls:
        if call.id in have:
            continue
        entry = await store.get_call(thread_id, call.id)
        if entry is not None and entry.result is not None:
            decided[call.id] = ToolResultMessage(call.name, entry.result)
    return decided


async def _input(request: Request) -> RunAgentInput:
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise _Refused(413, "too_large", f"the request is larger than {MAX_BODY_BYTES} bytes")
    try:
        return RunAgentInput.model_validate_json(body)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in exc.errors()[:5])
        raise _Refused(400, "invalid_input", f"the body is not a RunAgentInput: {problems}") from None


async def _encoded(events: MemoryObjectReceiveStream[BaseEvent], encoder: EventEncoder) -> AsyncIterator[str]:
    async with events:
        async for event in events:
            yield encoder.encode(event)


def _error(status: int, code: str, message: str, headers: dict[str, str]) -> JSONResponse:
    return JSONResponse(
        {"error": message, "code": code}, status_code=status, headers={**headers, "Cache-Control": "no-store"}
    )
