"""`FrontEndEndpoint`: what the front-end endpoints (`POST /agui`, `POST /ai-sdk/chat`) share.

Each request: authenticate (the tokens and origins of `/ws`), read the body (the protocol's own
shape: `read`), take the thread it names (created for the principal when new; another's is
refused), reconcile what it sends with the stored transcript (`reconciled`: a new prompt, the
answers of the thread's waiting front-end calls, or the answers to its consent questions), then
stream the run's events in the protocol's encoding (`stream`) until the run ends or waits for the
front end only (`live_runs.LiveRun`).

Refusals before the stream starts are HTTP errors with a JSON body `{"error", "code"}`: 401 no or a
wrong token, 403 a refused `Origin` or another principal's thread, 400 a bad body, a history the
thread does not have, or an answer to a question never asked, 409 a run of the thread in progress,
a call's second result, or a new message while a front-end call or a question waits, 413 a body too
large, 429 too many threads.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...errors import UsageError
from ...events import RunResult
from ...messages import AssistantMessage, Message, ToolResultMessage
from ...server.app import ToolwireServer
from ...server.auth import TokenAuth
from ...server.lifespans import join_lifespan
from ...store import CallState, ThreadStore
from .answers import Answer, Approval, HistoryConflict, Reconciled
from .live_runs import LiveRun, Mapper

__all__ = ["MAX_BODY_BYTES", "MAX_THREAD_ID", "FrontEndEndpoint", "Plan", "Refused", "decided", "mount"]

E = TypeVar("E")
G = TypeVar("G")

MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest body accepted (a client sends its whole history every time)."""
MAX_THREAD_ID = 200
"""The longest thread id accepted."""


class Refused(Exception):
    """A request refused before its stream started: an HTTP error with a JSON body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True, slots=True)
class Plan:
    """What one request does to its thread."""

    thread_id: str
    run_id: str
    prompt: str | None
    answers: tuple[Answer, ...]
    approvals: tuple[Approval, ...]
    """Answers to the run's consent questions (a repeated one is left out)."""
    tools: list[dict[str, Any]]
    """The front end's tools, as client tool definitions (`name`, `description`, `parametersSchema`)."""
    made: frozenset[str] = frozenset()
    """The ids of the calls in the thread's transcript (a front end following the protocol has them)."""
    version: str | None = None
    """The protocol version the request declares, if any (AG-UI: `RunAgentInput.protocolVersion`)."""


class FrontEndEndpoint(ABC, Generic[E, G]):
    """A front-end protocol endpoint of a toolwire server (events `E`, request bodies `G`).

    Args:
        server: The `ToolwireServer` of the app (`app.state.toolwire`): its agent, tokens, origins.
    """

    group: str = "frontend"
    """The client tool group a request's tools are registered as (expanded, replaced by each request)."""

    def __init__(self, server: ToolwireServer) -> None:
        self.server = server
        self.live: dict[str, LiveRun[E]] = {}
        """The runs that live on between requests (waiting for a front-end call), by thread."""
        self._lock = anyio.Lock()
        self._group: TaskGroup | None = None

    # -- the protocol ---------------------------------------------------------------------------

    @abstractmethod
    async def read(self, request: Request, body: bytes) -> G:
        """The request's body, parsed (raise `Refused` 400 when it is not the protocol's)."""

    @abstractmethod
    def thread_of(self, given: G) -> tuple[str, str]:
        """The thread id and run id a request names."""

    @abstractmethod
    def reconciled(
        self, given: G, stored: Sequence[Message], waiting: set[str], decided: dict[str, ToolResultMessage]
    ) -> Reconciled:
        """What the request adds: its prompt or answers (raise `HistoryConflict` when it does not fit)."""

    def version(self, given: G) -> str | None:
        """The protocol version the request declares (none by default)."""
        return None

    def answers_questions(self, plan: Plan) -> bool:
        """True when the request's front end can answer consent questions (else each is answered no)."""
        return True

    @abstractmethod
    def tools(self, given: G) -> list[dict[str, Any]]:
        """The front end's tools, as client tool definitions."""

    @abstractmethod
    def mapper(self, plan: Plan) -> Mapper[E]:
        """A new mapper of run events to protocol events (one per request)."""

    @abstractmethod
    def opening(self, plan: Plan, live: LiveRun[E]) -> list[E]:
        """The events a response starts with."""

    @abstractmethod
    def closing(self, plan: Plan, live: LiveRun[E]) -> list[E]:
        """The events a response ends with: the run's end, its failure, or the calls left waiting."""

    async def state(self, plan: Plan, live: LiveRun[E]) -> list[E]:
        """Events that tell the front end the thread's state as the response ends (none by default)."""
        return []

    @abstractmethod
    def respond(
        self, request: Request, plan: Plan, events: MemoryObjectReceiveStream[E], headers: dict[str, str]
    ) -> Response:
        """The streaming response that encodes `events` (the response's opening events are in it already)."""

    # -- serving ------------------------------------------------------------------------------

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
        """Serve one request: a refusal (JSON), or the run's events (a stream)."""
        cors, answered = self.admit(request, "POST")
        if answered is not None:
            return answered
        send, receive = anyio.create_memory_object_stream[E](float("inf"))
        try:
            plan, live, mapper = await self._accept(request, send)
        except Refused as refused:
            send.close()
            receive.close()
            return self.refusal(refused, cors)
        assert self._group is not None
        self._group.start_soon(self._follow, plan, live, send, mapper)
        return self.respond(request, plan, receive, {**cors, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    def admit(self, request: Request, methods: str) -> tuple[dict[str, str], Response | None]:
        """The CORS headers of a response to `request`, and the response when it is one already.

        That is a refused `Origin` (403) or the answer to a CORS preflight (`OPTIONS`, allowing `methods`).
        """
        origin = request.headers.get("origin")
        cors = {"Access-Control-Allow-Origin": origin, "Vary": "Origin"} if origin is not None else {}
        if origin is not None and not self.server.origin_allowed(origin.rstrip("/"), request):
            return cors, error(403, "origin_refused", f"origin {origin:.200} may not call this endpoint", {})
        if request.method == "OPTIONS":
            allow = {
                "Access-Control-Allow-Methods": methods,
                "Access-Control-Allow-Headers": "Authorization, Content-Type",
            }
            return cors, Response(status_code=204, headers={**cors, **allow, "Access-Control-Max-Age": "600"})
        return cors, None

    def principal(self, request: Request) -> str:
        """Who sends `request` (the tokens of `/ws`). Raises `Refused` (401) without a valid token."""
        principal = self.server.auth.authenticate(TokenAuth.token_from(request.headers, {}))
        if principal is None:
            raise Refused(401, "unauthorized", "send a valid token: Authorization: Bearer <token>")
        return principal

    @staticmethod
    def refusal(refused: Refused, cors: dict[str, str]) -> JSONResponse:
        """The JSON response of a refusal (with `WWW-Authenticate` for a 401)."""
        headers = {**cors, "WWW-Authenticate": "Bearer"} if refused.status == 401 else cors
        return error(refused.status, refused.code, refused.message, headers)

    def spawn(self, task: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run `task` in the endpoint's task group (it outlives the request; leaving the lifespan cancels it)."""
        assert self._group is not None
        self._group.start_soon(task)

    async def _accept(self, request: Request, send: MemoryObjectSendStream[E]) -> tuple[Plan, LiveRun[E], Mapper[E]]:
        """Authenticate, read and check the request; the run that answers it (found or started), streaming to `send`."""
        if self._group is None:
            raise Refused(503, "not_serving", "the endpoint is not serving (its lifespan did not start)")
        principal = self.principal(request)
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            raise Refused(413, "too_large", f"the request is larger than {MAX_BODY_BYTES} bytes")
        given = await self.read(request, body)
        thread_id, _ = self.thread_of(given)
        if not thread_id or len(thread_id) > MAX_THREAD_ID or not thread_id.isprintable():
            raise Refused(400, "invalid_thread", f"the thread id must be 1 to {MAX_THREAD_ID} printable characters")
        agent = self.server.agent
        async with self._lock:
            await self._own(thread_id, principal)
            live = self.live.get(thread_id)
            if live is not None and (live.listened or not live.quiet):
                raise Refused(409, "run_in_progress", f"a run of thread {thread_id!r} is in progress: wait for its end")
            plan = await self._plan(given, live)
            mapper = self.mapper(plan)
            if live is None:
                answers = {answer.call_id: answer for answer in plan.answers}
                approvals = {approval.call_id: approval.answer for approval in plan.approvals}
                live = LiveRun(thread_id, agent.clients, agent.store, answers, mapper, approvals, known=plan.made)
                self.live[thread_id] = live
                assert self._group is not None
                self._group.start_soon(self._drive, live, self._runner(plan, live))
            for event in self.opening(plan, live):
                send.send_nowait(event)
            live.asks = self.answers_questions(plan)
            live.listen(send, mapper)  # under the lock: a second request finds the run listened to
            return plan, live, mapper

    async def _own(self, thread_id: str, principal: str) -> None:
        """The thread is the principal's: created for it when new; refused when another's."""
        store = self.server.agent.store
        if await store.thread_exists(thread_id):
            if await store.thread_principal(thread_id) != principal:
                raise Refused(403, "thread_forbidden", f"thread {thread_id!r} belongs to someone else")
            return
        cap = self.server.max_conversations
        if cap is not None and await store.count_threads(principal) >= cap:
            raise Refused(429, "too_many_threads", f"you have {cap} threads, the most this server allows")
        await store.create_thread(thread_id, principal=principal)

    async def _plan(self, given: G, live: LiveRun[E] | None) -> Plan:
        """What the request adds: checked against the stored transcript and the calls that wait."""
        store = self.server.agent.store
        thread_id, run_id = self.thread_of(given)
        stored = await store.load_messages(thread_id)
        entries = await store.open_calls(thread_id)
        asking: set[str] = set(live.asking) if live is not None else set()
        open_calls = [entry for entry in entries if entry.execution == "client" and entry.call.id not in asking]
        try:
            new = self.reconciled(
                given, stored, {entry.call.id for entry in open_calls}, await decided(store, thread_id, stored)
            )
        except HistoryConflict as exc:
            raise Refused(exc.status, exc.code, str(exc)) from None
        # A question waits in the live run; after a restart, a call not started yet will be asked again.
        # After a restart, a call that waited for consent (or had not started) will be asked again.
        again = (CallState.PENDING, CallState.AWAITING_APPROVAL)
        asked = asking if live is not None else {entry.call.id for entry in entries if entry.state in again}
        made = frozenset(
            call.id for message in stored if isinstance(message, AssistantMessage) for call in message.tool_calls
        )
        approvals = _approvals(new, asked, made)
        if new.resumed and (unanswered := asking - {approval.call_id for approval in approvals}):
            raise Refused(
                400,
                "interrupts_unanswered",
                f"the consent question(s) about call(s) {', '.join(sorted(unanswered))} are not answered: "
                "a resume answers every open question",
            )
        if new.answers and new.prompt is not None:
            raise Refused(
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
            raise Refused(
                409,
                "tool_calls_waiting",
                f"front-end tool call(s) {', '.join(unanswered)} wait for their results: send them first",
            )
        if live is not None and live.asking and new.prompt is not None:
            raise Refused(
                409,
                "approvals_waiting",
                f"call(s) {', '.join(live.asking)} wait for your consent: answer them first",
            )
        return Plan(thread_id, run_id, new.prompt, new.answers, approvals, self.tools(given), made, self.version(given))

    def _runner(self, plan: Plan, live: LiveRun[E]) -> Callable[[], Awaitable[RunResult | None]]:
        """The agent call that starts `live`: the new prompt, or a resume of the thread's unfinished run."""
        agent = self.server.agent
        if plan.prompt is None:
            return lambda: agent.resume(plan.thread_id, client=live.channel, on_event=live.on_event)
        groups = [{"name": self.group, "tools": plan.tools, "startCollapsed": False}] if plan.tools else []
        prompt = plan.prompt
        return lambda: agent.run(
            prompt,
            thread=plan.thread_id,
            client_tool_groups=groups,
            reset_client_state=True,
            client=live.channel,
            on_event=live.on_event,
        )

    async def _drive(self, live: LiveRun[E], run: Callable[[], Awaitable[RunResult | None]]) -> None:
        try:
            await live.drive(run)
        finally:
            if self.live.get(live.thread_id) is live:
                del self.live[live.thread_id]

    async def _follow(self, plan: Plan, live: LiveRun[E], send: MemoryObjectSendStream[E], mapper: Mapper[E]) -> None:
        """Stream the run for one request: hand over its answers, wait until the run is quiet or done."""
        with send:
            try:
                for approval in plan.approvals:
                    live.approve(approval.call_id, approval.answer)  # past the consent timeout: Denied already
                for answer in plan.answers:
                    live.answer(answer)  # a call whose deadline just passed: its Timeout is streamed
                await live.wait_quiet_or_done()
            finally:
                live.release()
            state = await self.state(plan, live) if live.error is None else []
            try:
                for event in [*mapper.close(), *state, *self.closing(plan, live)]:
                    send.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the client went away: what the run did is in the transcript


def mount(app: Starlette, make: Callable[[ToolwireServer], FrontEndEndpoint[Any, Any]], path: str, name: str) -> Any:
    """Mount the endpoint `make` builds for the app's toolwire server at `path` (`POST`); its lifespan joins the app's.

    Raises:
        UsageError: `app` is not a toolwire server's app.
    """
    server: object = getattr(app.state, "toolwire", None)
    if not isinstance(server, ToolwireServer):
        raise UsageError(f"{name} needs the app that toolwire.server.create_app returned")
    endpoint = make(server)
    app.router.routes.append(Route(path, endpoint=endpoint.handle, methods=["POST", "OPTIONS"]))
    join_lifespan(app, endpoint.run)
    return endpoint


async def decided(store: ThreadStore, thread_id: str, stored: Sequence[Message]) -> dict[str, ToolResultMessage]:
    """The results of the last batch's calls that are in the ledger but not in the transcript yet."""
    last = next((message for message in reversed(stored) if isinstance(message, AssistantMessage)), None)
    if last is None or not last.tool_calls:
        return {}
    have = {message.call_id for message in stored if isinstance(message, ToolResultMessage)}
    found: dict[str, ToolResultMessage] = {}
    for call in last.tool_calls:
        if call.id in have:
            continue
        entry = await store.get_call(thread_id, call.id)
        if entry is not None and entry.result is not None:
            found[call.id] = ToolResultMessage(call.name, entry.result)
    return found


def _approvals(new: Reconciled, asked: set[str], made: frozenset[str]) -> tuple[Approval, ...]:
    """The request's answers to questions that wait; an answer to a question answered before is dropped.

    Raises:
        Refused: An answer names a call the thread never made (400 `unknown_interrupt`).
    """
    kept: list[Approval] = []
    for approval in new.approvals:
        if approval.call_id in asked:
            kept.append(approval)
        elif approval.call_id not in made:
            raise Refused(
                400,
                "unknown_interrupt",
                f"no consent question about call {approval.call_id!r} was asked in this thread",
            )
        # else: answered before (a repeated resume is idempotent): the call went on with the first answer
    return tuple(kept)


def error(status: int, code: str, message: str, headers: dict[str, str]) -> JSONResponse:
    """A refusal: `{"error", "code"}`."""
    return JSONResponse(
        {"error": message, "code": code}, status_code=status, headers={**headers, "Cache-Control": "no-store"}
    )
