"""`create_app`: the ASGI app of a toolwire server (Starlette), mountable in an existing app.

```
GET /healthz    200 while the process serves
GET /readyz     200 once the store answers
GET /           the chat page (the browser client), GET /static/… its files
WS  /ws         the MessagePack protocol (docs/protocol.md); authenticate first:
                `Authorization: Bearer <token>`, or `?token=` for browsers
GET /ws         (no upgrade) 204 when the token would be accepted, 401 when not, 403 for a
                refused Origin: why an upgrade failed, which browsers do not tell a page
```

One WebSocket connection serves one conversation. Before anything else the connection must present
a valid token and, from a browser, an allowed `Origin`; otherwise the upgrade is refused (HTTP 403)
and no state is created. The first frame is the client's Configuration: a new conversation (unless
its principal owns `max_conversations` already: ErrorMessage 203), or one the same principal
created (to resume it; what the client missed is replayed).

Runs go through the server's admission (`admission.py`): at most `max_runs` at once, then up to
`run_queue` waiting in arrival order (their clients told their place, RunStatus `queued`); a
UserMessage beyond is refused with ErrorMessage 503.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

import anyio
from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket

from ..errors import Fenced, StoreUnavailable, UsageError
from ..loop import Agent
from ..protocol import (
    DEFAULT_LIMITS,
    RUN_QUEUE,
    WHOLE_ANSWERS,
    Configuration,
    Connection,
    ErrorCode,
    Limits,
    Sequencing,
)
from ..store import CallState, LeaseStore, Store
from .admission import DEFAULT_RUN_QUEUE, MAX_RUNS, Admission
from .auth import TokenAuth, redact
from .conversations_http import ConversationBusy, conversation_routes
from .frames import Acknowledger, close, receive_bytes, serve_frames
from .refusals import DEFAULT_REFUSAL_LIMIT, RefusalLimit, Refusals
from .replica import LeaseSettings, Replica
from .server_conversation import ServerConversation, run_ended_of

__all__ = ["ToolwireApp", "ToolwireServer", "create_app"]

_log = logging.getLogger("toolwire.server")

STATIC = Path(__file__).resolve().parent / "static"
"""The browser client: the chat page and the TypeScript client bundle (built from web/)."""
HANDSHAKE_TIMEOUT = 10.0
"""Seconds a connection may take to send its Configuration."""
FEATURES = ("clientTools", "consent", "runStatus", "resume", WHOLE_ANSWERS, RUN_QUEUE)
MAX_CONVERSATIONS = 1_000
"""Conversations one principal may own, by default (`create_app(max_conversations=...)`)."""
DELETE_GRACE = 10.0
"""Seconds a forced deletion waits for the canceled run to end."""


def create_app(
    agent: Agent,
    *,
    auth: TokenAuth,
    store: Store | None = None,
    allowed_origins: Sequence[str] = (),
    limits: Limits = DEFAULT_LIMITS,
    max_conversations: int | None = MAX_CONVERSATIONS,
    refusal_limit: RefusalLimit = DEFAULT_REFUSAL_LIMIT,
    leases: LeaseSettings | None = None,
    max_runs: int | None = MAX_RUNS,
    run_queue: int = DEFAULT_RUN_QUEUE,
) -> Starlette:
    """Build the ASGI app serving `agent` over the WebSocket protocol.

    Args:
        agent: The agent that answers; its store keeps conversations (create it with
            `store=SqliteStore.in_directory(...)` to survive restarts).
        auth: Who may connect (`TokenAuth`).
        store: The agent's store, if given at all (one store serves both).
        allowed_origins: Browser origins allowed to connect (e.g. `http://127.0.0.1:8765`);
            connections without an `Origin` header (not browsers) are not affected.
        limits: What a frame may contain.
        max_conversations: Conversations one principal may own; a handshake asking for a new one
            beyond it is refused (ErrorMessage 203). None: no cap.
        refusal_limit: How many refused frames a principal's connections may cause (a token
            bucket they share); past it the connection is closed, and new ones are refused, with
            ErrorMessage 108 and close code 1008.
        leases: Serve as one of several replicas sharing the agent's store (a `PostgresStore`):
            a conversation is served only under its lease (`LeaseSettings`). Enter
            `app.state.toolwire.replicating()` (an async context) for the server's life: it
            renews the leases, answers hand-off requests and sweeps abandoned conversations.
            None (the default): one process serves every conversation of its store.
        max_runs: Runs in progress at once, over all conversations; more wait in a queue (their
            clients get RunStatus `queued` with their place). None (the default): no limit (a run
            holds its slot also while it waits for a client or a person: `admission.py`).
        run_queue: Runs that may wait for a slot; a UserMessage beyond is refused with
            ErrorMessage 503 (nothing stored). Runs resumed after a restart are never refused.
            Applies only with `max_runs`.

    Raises:
        UsageError: `store` is not the agent's store, `max_conversations` or `max_runs` is not
            positive, or `run_queue` is negative.
    """
    if store is not None and store is not agent.store:
        raise UsageError("create the Agent with store=...: the server and the agent must share one store")
    server = ToolwireServer(
        agent,
        auth=auth,
        allowed_origins=allowed_origins,
        limits=limits,
        max_conversations=max_conversations,
        refusal_limit=refusal_limit,
        leases=leases,
        admission=Admission(max_runs, run_queue),
    )
    websocket = WebSocketRoute("/ws", server.websocket)
    routes = [
        Route("/healthz", server.health),
        Route("/readyz", server.ready),
        websocket,
        Route("/ws", server.check, methods=["GET", "OPTIONS"]),
        *conversation_routes(server),
        Route("/", server.page),
        Mount("/static", app=StaticFiles(directory=STATIC)),
    ]
    app = ToolwireApp(routes, websocket)
    app.state.toolwire = server
    return app


class ToolwireApp(Starlette):
    """The server's Starlette app, whose `/ws` connections go to the endpoint directly.

    Through Starlette's middleware and routing, each WebSocket would keep about ten more coroutine
    frames for its whole life (≈ 5 KiB per idle connection, docs/benchmarks.md). The route stays
    in `routes`, and serves `/ws` as usual once middleware is added (`add_middleware`), which
    must see every connection.
    """

    def __init__(self, routes: Sequence[BaseRoute], websocket: WebSocketRoute) -> None:
        super().__init__(routes=routes)
        self._websocket = websocket

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection: a `/ws` WebSocket by the endpoint, anything else by Starlette."""
        route = self._websocket
        if scope["type"] == "websocket" and not self.user_middleware and route.matches(scope)[0] is Match.FULL:
            scope["app"] = self
            await route.endpoint(WebSocket(scope, receive, send))
            return
        await super().__call__(scope, receive, send)


class ToolwireServer:
    """The conversations a server process holds, and the WebSocket endpoint that serves them."""

    def __init__(
        self,
        agent: Agent,
        *,
        auth: TokenAuth,
        allowed_origins: Sequence[str] = (),
        limits: Limits = DEFAULT_LIMITS,
        max_conversations: int | None = MAX_CONVERSATIONS,
        refusal_limit: RefusalLimit = DEFAULT_REFUSAL_LIMIT,
        leases: LeaseSettings | None = None,
        admission: Admission | None = None,
    ) -> None:
        if max_conversations is not None and max_conversations < 1:
            raise UsageError(f"max_conversations must be a positive number (or None: no cap), not {max_conversations}")
        self.agent = agent
        self.auth = auth
        self.allowed_origins = frozenset(origin.rstrip("/") for origin in allowed_origins)
        self.limits = limits
        self.max_conversations = max_conversations
        """Conversations one principal may own (None: no cap)."""
        self.admission = admission if admission is not None else Admission(MAX_RUNS)
        """The server's run slots and the queue of runs waiting for one."""
        self.refusals = Refusals(refusal_limit)
        """Each principal's allowance of refused frames, and their log."""
        self.conversations: dict[str, ServerConversation] = {}
        self._opening = anyio.Lock()
        self.stopping = False
        """The server is stopping (`stop`): no frame is read, no run started."""
        self.replica: Replica | None = None
        """The leases this server holds, when it is one of several replicas of a shared store."""
        if leases is not None:
            self.replica = Replica(cast(LeaseStore, agent.store), leases)
            self.replica.on_lost = self._lost
            self.replica.on_handover = self._hand_over
            self.replica.on_claimed = self._adopt
        self._handing_over: set[str] = set()

    @asynccontextmanager
    async def replicating(self) -> AsyncGenerator[None]:
        """Renew this server's leases and answer hand-off requests while inside; release every lease after.

        Enter it for the server's life when it was created with `leases=` (`toolwire serve` does).
        """
        replica = self.replica
        if replica is None:
            yield
            return
        async with anyio.create_task_group() as group:
            group.start_soon(replica.run)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            for thread_id in list(replica.held):  # the runs were parked and saved (`stop`)
                await replica.give_up(thread_id)

    def _lost(self, thread_id: str) -> None:
        """The lease of a conversation held here was lost: stop its run now, close its socket."""
        conversation = self.conversations.get(thread_id)
        if conversation is not None:
            conversation.fence_out()
            self._forget(conversation)

    async def _adopt(self, thread_id: str) -> None:
        """Resume the run of a conversation the sweeper took over (its replica died), with no client attached.

        A client that connects meanwhile joins it here. The lease is released when the run ended
        and no client is connected.
        """
        try:
            async with self._opening:
                known = self.conversations.get(thread_id)
                principal = await self.agent.store.thread_principal(thread_id)
                conversation = None
                if known is None and principal is not None and not self.stopping:
                    conversation = await self._conversation(thread_id, principal)
        except StoreUnavailable as exc:  # its lease expires: a sweeper takes it again
            _log.warning("conversation %s: could not take it over (%s)", thread_id, exc)
            return
        if conversation is None:
            if known is None and self.replica is not None:
                await self.replica.give_up(thread_id)  # (an unknown thread: nothing to serve)
            return
        try:
            async with anyio.create_task_group() as runs:
                if await conversation.needs_run() and not self.stopping:
                    _log.info("conversation %s: resuming the run of a replica that died", thread_id)
                    conversation.start(runs, None)
        except Fenced:
            conversation.fence_out()
        except StoreUnavailable as exc:
            conversation.fence_out(failed=exc)
        await self._release(conversation)

    async def _hand_over(self, thread_id: str) -> None:
        """Another replica asks for a conversation held here: drain (bounded), persist, close, release."""
        replica = self.replica
        if replica is None or thread_id in self._handing_over or thread_id not in replica.held:
            return
        self._handing_over.add(thread_id)
        try:
            conversation = self.conversations.get(thread_id)
            if conversation is not None:
                _log.info("conversation %s: handing it over to the replica that asked", thread_id)
                conversation.park()
                with anyio.move_on_after(replica.settings.drain):
                    await conversation.wait_idle()
                try:
                    await conversation.save()
                except (Fenced, StoreUnavailable):
                    pass  # (its socket closes: the client's unsaved stanzas are sent again)
                conversation.fence_out(handed_over=True)  # writes nothing more; its socket closes
                self._forget(conversation)
            await replica.give_up(thread_id)
        finally:
            self._handing_over.discard(thread_id)

    async def stop(self, grace: float) -> None:
        """Stop serving: park every run in progress and wait (up to `grace` s) until they ended.

        Parked runs write nothing more: the ledger keeps their open calls exactly as after
        kill -9, and the next start of the server resumes them. Frames that arrive from now on
        are not read (not acknowledged either): the clients send them again to the next process.
        """
        self.stopping = True
        self.refusals.flush()
        conversations = list(self.conversations.values())
        for conversation in conversations:
            conversation.park()
        with anyio.move_on_after(grace):
            for conversation in conversations:
                await conversation.wait_idle()

    async def delete(self, thread_id: str, *, force: bool) -> bool:
        """Delete a conversation and everything its store keeps of it; False while a run is active and not `force`.

        Forced, the run in progress is canceled first (its open calls end Canceled by `system`,
        as the transcript, soon deleted, says) and waited for (`DELETE_GRACE`). A connected client
        gets ErrorMessage 201 and its socket closes (1008). Check the principal first.

        Raises:
            ConversationBusy: Another replica serves it, or its forced run (or a registration of
                client tools) did not end in time.
        """
        async with self._opening:  # no connection opens it meanwhile
            conversation = self.conversations.get(thread_id)
            replica = self.replica
            leased = conversation is None and replica is not None and thread_id not in replica.held
            if leased and replica is not None and not await replica.take(thread_id):
                raise ConversationBusy("another replica serves this conversation: try again in a moment")
            if conversation is not None:
                if conversation.busy or conversation.registering:
                    if not force:
                        return False
                    conversation.cancel("Canceled by the server: the conversation was deleted")
                    with anyio.move_on_after(DELETE_GRACE):
                        await conversation.wait_idle()
                    if conversation.busy or conversation.registering:
                        raise ConversationBusy("its run did not stop in time: try again")
                await conversation.retire()
                self._forget(conversation)
            await self.agent.store.delete_thread(thread_id)
            if replica is not None and thread_id in replica.held:
                await replica.give_up(thread_id)
        return True

    async def page(self, request: Request) -> Response:
        """The chat page (the browser client), when the package ships it."""
        index = STATIC / "index.html"
        if not index.is_file():
            return PlainTextResponse("The chat page is not part of this build; connect a client to /ws.", 404)
        return FileResponse(index, headers={"Cache-Control": "no-cache"})

    async def health(self, request: Request) -> JSONResponse:
        """Liveness: the process serves requests."""
        return JSONResponse({"status": "ok"})

    async def ready(self, request: Request) -> JSONResponse:
        """Readiness: the store answers."""
        try:
            await self.agent.store.thread_exists("readiness-probe")
        except Exception as exc:
            _log.warning("readiness check failed: %s", exc)
            return JSONResponse({"status": "unavailable"}, status_code=503)
        return JSONResponse({"status": "ready"})

    async def check(self, request: Request) -> Response:
        """Would a WebSocket with these credentials be accepted? 204 yes, 401 the token, 403 the Origin.

        A browser learns nothing from a refused upgrade (its close event says 1006), so a client
        asks here after a failed attempt, and stops retrying a token the server refuses. It answers
        the CORS preflight of the allowed origins (the `Authorization` header needs one).
        """
        origin = request.headers.get("origin")
        cors = {"Access-Control-Allow-Origin": origin, "Vary": "Origin"} if origin is not None else {}
        if origin is not None and not self.origin_allowed(origin.rstrip("/"), request):
            _log.warning("refused a token check from origin %.200s", origin)
            return Response(status_code=403, headers={"Vary": "Origin"})
        if request.method == "OPTIONS":
            allow = {"Access-Control-Allow-Methods": "GET", "Access-Control-Allow-Headers": "Authorization"}
            return Response(status_code=204, headers={**cors, **allow, "Access-Control-Max-Age": "600"})
        if self.auth.authenticate(TokenAuth.token_from(request.headers, request.query_params)) is None:
            return Response(
                status_code=401, headers={**cors, "WWW-Authenticate": "Bearer", "Cache-Control": "no-store"}
            )
        return Response(status_code=204, headers={**cors, "Cache-Control": "no-store"})

    # -- the WebSocket endpoint ------------------------------------------------------------------

    async def websocket(self, websocket: WebSocket) -> None:
        """Serve one connection: authenticate, handshake, then frames until it closes."""
        principal = self._authenticate(websocket)
        if principal is None:
            await websocket.close(code=1008)  # before accept: the upgrade is refused with HTTP 403
            return
        await websocket.accept()
        if self.stopping:
            await close(websocket, 1012)  # service restart: come back to the next process
            return
        connection = Connection("server", limits=self.limits)
        try:
            conversation = await self._handshake(websocket, connection, principal)
        except StoreUnavailable as exc:
            _log.warning("refused a connection: the store failed (%s)", exc)
            await close(websocket, 1013)  # try again later
            return
        if conversation is None:
            return

        async def write(frame: bytes) -> None:
            await websocket.send_bytes(frame)

        async with anyio.create_task_group() as runs:  # runs outlive the socket; wait for them
            # (the close code is read when the conversation is kicked: 1012, or 1008 once deleted)
            conversation.on_kick(lambda: runs.start_soon(close, websocket, conversation.close_code))
            acks = Acknowledger(conversation, runs)
            refusals = self.refusals.connection(principal, conversation.thread_id)
            try:
                await conversation.attach(connection, write)
                if not self.stopping and await conversation.needs_run():
                    state = connection.state()
                    _log.info(
                        "conversation %s: resuming its unfinished run (the client's stanzas seen: up to %d)",
                        conversation.thread_id,
                        0 if state is None else state.last_seen,
                    )
                    conversation.start(runs, None)
                await serve_frames(self, websocket, connection, conversation, runs, acks, refusals)
            except Fenced:
                pass  # another replica owns the conversation now: the socket closes, the client goes there
            except StoreUnavailable as exc:  # as after a crash: the run resumes from the store once it answers
                conversation.fence_out(failed=exc)
            finally:
                conversation.on_kick(None)
                acks.stop()
                conversation.detach(write)
        try:
            await conversation.save()  # what the client acknowledged last is not replayed to the next one
        except (Fenced, StoreUnavailable):
            pass
        await self._release(conversation)

    def _authenticate(self, websocket: WebSocket) -> str | None:
        origin = websocket.headers.get("origin")
        if origin is not None and not self.origin_allowed(origin.rstrip("/"), websocket):
            _log.warning("refused a connection from origin %.200s", origin)
            return None
        principal = self.auth.authenticate(TokenAuth.token_from(websocket.headers, websocket.query_params))
        if principal is None:
            _log.warning("refused an unauthenticated connection to %s", redact(str(websocket.url)))
        return principal

    def origin_allowed(self, origin: str, connection: HTTPConnection) -> bool:
        """An allowed origin, or the server's own (its page): same scheme family and Host."""
        if origin in self.allowed_origins:
            return True
        host = connection.headers.get("host")
        scheme = "https" if connection.url.scheme in ("wss", "https") else "http"
        return host is not None and origin == f"{scheme}://{host}"

    async def _handshake(
        self, websocket: WebSocket, connection: Connection, principal: str
    ) -> ServerConversation | None:
        """Read the client's Configuration and bind its conversation; None when refused."""
        data = None
        with anyio.move_on_after(HANDSHAKE_TIMEOUT):
            data = await receive_bytes(websocket)
        if data is None:  # gone, or silent for too long
            await close(websocket, 1008)
            return None
        received = connection.receive(data)
        for reply in received.replies:
            await websocket.send_bytes(reply)
        hello = next((e.message for e in received.messages if isinstance(e.message, Configuration)), None)
        if received.close or hello is None:
            await close(websocket, 1002)
            return None
        if not self.refusals.admits(principal):  # its refusals used up its allowance: before anything is loaded
            message = f"too many refused frames ({self.refusals.limit.describe()}): try again later"
            await websocket.send_bytes(connection.refuse(ErrorCode.TOO_MANY_REFUSALS, message))
            await close(websocket, 1008)
            return None
        requested = hello.conversation_id
        waited = None if self.replica is None else anyio.current_time() + self.replica.settings.wait
        while True:
            async with self._opening:  # one conversation object per thread, even for racing connections
                if requested:
                    refusal = await self._check_owner(requested, principal)
                    if refusal is not None:
                        await websocket.send_bytes(connection.refuse(*refusal))
                        await close(websocket, 1008)
                        return None
                    conversation = await self._conversation(requested, principal)
                else:
                    if (refusal := await self._check_room(principal)) is not None:
                        await websocket.send_bytes(connection.refuse(*refusal))
                        await close(websocket, 1008)
                        return None
                    thread_id = "conv_" + secrets.token_hex(16)
                    await self.agent.store.create_thread(thread_id, principal=principal)
                    if self.replica is not None and not await self.replica.take(thread_id):
                        raise RuntimeError(f"the lease of the new conversation {thread_id} is held already")
                    conversation = self.conversations[thread_id] = ServerConversation(
                        self.agent, thread_id, principal, None, admission=self.admission
                    )
                if conversation is not None:
                    state = conversation.connection.state()
                    frames = connection.accept(conversation.thread_id, state=state, features=FEATURES)
                    _log.debug(
                        "conversation %s: a client connected, having seen %d; the server has seen %s",
                        conversation.thread_id,
                        connection.peer_seen,
                        None if state is None else state.last_seen,
                    )
                    break
            # Another replica holds the conversation: ask it to hand over, and wait (bounded).
            assert self.replica is not None and waited is not None
            if anyio.current_time() >= waited or self.stopping:
                _log.warning("conversation %s: another replica did not hand it over in time", requested)
                await close(websocket, 1013)  # try again later
                return None
            await self.replica.wait_released(requested)
        for frame in frames:
            await websocket.send_bytes(frame)
        return conversation

    async def _release(self, conversation: ServerConversation) -> None:
        """Forget a conversation nobody uses (its state is in the store); a reconnect reloads it.

        A replica releases its lease too: any replica may serve it next.
        """
        if (
            conversation.connected
            or conversation.busy
            or self.conversations.get(conversation.thread_id) is not conversation
        ):
            return
        self._forget(conversation)
        if self.replica is not None:
            await self.replica.give_up(conversation.thread_id)

    def _forget(self, conversation: ServerConversation) -> None:
        """Drop the conversation object (if it is still this thread's) and what the store keeps in memory of it."""
        thread_id = conversation.thread_id
        if self.conversations.get(thread_id) is conversation:
            del self.conversations[thread_id]
            self.agent.store.release_wire_state(thread_id)
            self.agent.clients.ended(thread_id)  # a client that left after its run ended

    async def _check_owner(self, thread_id: str, principal: str) -> tuple[int, str] | None:
        store = self.agent.store
        if not await store.thread_exists(thread_id):
            return ErrorCode.CONVERSATION_NOT_FOUND, f"no conversation {thread_id!r}"
        if await store.thread_principal(thread_id) != principal:
            return ErrorCode.CONVERSATION_FORBIDDEN, "this conversation belongs to someone else"
        return None

    async def _check_room(self, principal: str) -> tuple[int, str] | None:
        """Refuse a new conversation to a principal that owns `max_conversations` already."""
        cap = self.max_conversations
        if cap is None or await self.agent.store.count_threads(principal) < cap:
            return None
        _log.warning("refused a new conversation to principal %.80s: it has %d, the most allowed", principal, cap)
        message = f"you have {cap} conversations, the most this server allows: resume one of them (its conversationId)"
        return ErrorCode.CONVERSATION_LIMIT, message

    async def _conversation(self, thread_id: str, principal: str) -> ServerConversation | None:
        """The thread's conversation object, loaded if needed; None while another replica holds its lease.

        An object that was fenced out (its store failed, or its lease moved) is not used again:
        the conversation is loaded anew, under a new lease (epoch) if this replica still holds one,
        so that nothing the old object's run still writes can land after the reload.
        """
        replica = self.replica
        if (conversation := self.conversations.get(thread_id)) is not None:
            if not conversation.fenced:
                return conversation
            self._forget(conversation)
            if replica is not None:
                await replica.give_up(thread_id)
        if replica is not None and thread_id not in replica.held and not await replica.take(thread_id):
            return None
        store = self.agent.store
        saved = await store.load_wire_state(thread_id)
        state = Sequencing.from_dict(saved) if saved is not None else None
        # Requests of the last process that the client has (or gets from the outbox's replay).
        open_calls = await store.open_calls(thread_id)
        sent = {
            entry.call.id: entry.request_id
            for entry in open_calls
            if entry.request_id is not None and entry.state in (CallState.DISPATCHED, CallState.ANSWERED)
        }
        answered = [entry.call.id for entry in open_calls if entry.state is CallState.ANSWERED]
        conversation = ServerConversation(
            self.agent,
            thread_id,
            principal,
            state,
            sent=sent,
            answered=answered,
            run_ended=run_ended_of(saved),
            admission=self.admission,
        )
        self.conversations[thread_id] = conversation
        return conversation
