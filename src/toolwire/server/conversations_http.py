"""The authenticated principal's conversations over HTTP: the chat page's list, `toolwire conversations --url`.

```
GET    /conversations[?limit=N]         {"conversations": [summary, ...], "more": bool}, the latest activity first
GET    /conversations/{id}              its summary, with "messages" (the transcript) and "pending"
DELETE /conversations/{id}              200 {"id", "deleted": true}; 409 run_active while a run is in progress
DELETE /conversations/{id}?force=true   cancel the run first (its open calls end Canceled by `system`)
```

A summary: `{"id", "title", "createdAt", "updatedAt", "messageCount", "run", "openCalls"}`, where
`title` is the first prompt on one line, shortened (null before it), the times are ISO 8601 in
UTC, `messageCount` and `openCalls` are counts, and `run` is `running` (a run is in progress on this
server), `unfinished` (it stopped with a process: it is resumed when a client comes back),
`answered`, `closed` (ended without an answer) or `empty`. A transcript's messages are the
store's JSON form (docs/protocol.md, "Conversations over HTTP"); `pending` lists its open calls
as `{"callId", "toolName", "state", "execution"}`. A list has at most `limit` conversations
(`DEFAULT_LIMIT`, at most `MAX_LIMIT`; each costs its transcript's reading), `more` says whether
there are others.

Authenticated as `/ws` is (`Authorization: Bearer <token>`, or `?token=`), with the same Origin
rule for browsers. A principal sees only its own conversations: another's is 404, exactly like
an unknown id, so an answer never tells that it exists. Deleting goes through the live
conversation: its run is canceled and waited for, its client is told (ErrorMessage 201) and
disconnected, and only then are its rows deleted (transcript, ledger, run record, approvals,
grants, denials, client tool state, protocol state). Refusals are JSON, `{"error", "code"}`,
as the front-end endpoints' are: 401 `unauthorized`, 403 `origin_refused`, 404 `not_found`,
409 `run_active` or `busy` (another replica serves it; a forced run did not stop in time), and 400
`bad_request` for a `limit` that is not a number from 1 to `MAX_LIMIT`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..conversations import last_run, title_of
from ..messages import Message
from ..store import ThreadInfo
from .auth import TokenAuth

if TYPE_CHECKING:
    from .app import ToolwireServer

__all__ = ["ConversationBusy", "conversation_routes"]

_log = logging.getLogger("toolwire.server")

DEFAULT_LIMIT = 100
"""Conversations `GET /conversations` lists without `?limit=`."""
MAX_LIMIT = 1000
"""The most it lists at once (each costs reading its transcript)."""


class ConversationBusy(Exception):
    """A conversation cannot be deleted now: another replica serves it, or its run would not stop."""


_Handler = Callable[[Request, str], Awaitable[dict[str, Any]]]
"""Answers a request of an authenticated principal with a JSON body (or raises `_Refused`)."""


class _Refused(Exception):
    """A request refused with an HTTP status and a JSON body `{"error", "code"}`."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def conversation_routes(server: ToolwireServer) -> list[Route]:
    """The routes of `/conversations` for `create_app`."""
    endpoint = _Conversations(server)
    return [
        Route("/conversations", endpoint.collection, methods=["GET", "OPTIONS"]),
        Route("/conversations/{conversation_id}", endpoint.item, methods=["GET", "DELETE", "OPTIONS"]),
    ]


class _Conversations:
    def __init__(self, server: ToolwireServer) -> None:
        self.server = server

    async def collection(self, request: Request) -> Response:
        """`GET /conversations`: the principal's conversations, the latest activity first."""
        return await self._answer(request, self._list)

    async def item(self, request: Request) -> Response:
        """`GET` or `DELETE /conversations/{id}`."""
        return await self._answer(request, self._delete if request.method == "DELETE" else self._show)

    async def _answer(self, request: Request, handle: _Handler) -> Response:
        cors: dict[str, str] = {}
        try:
            cors = self._cors(request)
            if request.method == "OPTIONS":
                allow = {"Access-Control-Allow-Methods": "GET, DELETE", "Access-Control-Allow-Headers": "Authorization"}
                return Response(status_code=204, headers={**cors, **allow, "Access-Control-Max-Age": "600"})
            principal = self.server.auth.authenticate(TokenAuth.token_from(request.headers, request.query_params))
            if principal is None:
                raise _Refused(401, "unauthorized", "send a valid token: Authorization: Bearer <token>")
            body = await handle(request, principal)
        except _Refused as refused:
            headers = {**cors, "WWW-Authenticate": "Bearer"} if refused.status == 401 else cors
            return _json({"error": refused.message, "code": refused.code}, refused.status, headers)
        return _json(body, 200, cors)

    def _cors(self, request: Request) -> dict[str, str]:
        origin = request.headers.get("origin")
        if origin is None:
            return {}
        if not self.server.origin_allowed(origin.rstrip("/"), request):
            _log.warning("refused a conversations request from origin %.200s", origin)
            raise _Refused(403, "origin_refused", f"origin {origin:.200} may not call this endpoint")
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}

    async def _list(self, request: Request, principal: str) -> dict[str, Any]:
        given = request.query_params.get("limit", str(DEFAULT_LIMIT))
        limit = int(given) if given.isdigit() else 0
        if not 1 <= limit <= MAX_LIMIT:
            raise _Refused(400, "bad_request", f"limit: a number from 1 to {MAX_LIMIT}, not {given!r:.20}")
        infos = await self.server.agent.store.list_threads(principal, limit=limit + 1)
        return {
            "conversations": [await self._summary(info) for info in infos[:limit]],
            "more": len(infos) > limit,
        }

    async def _show(self, request: Request, principal: str) -> dict[str, Any]:
        info = await self._owned(request, principal)
        store = self.server.agent.store
        history = await store.load_messages(info.thread_id)
        pending = await store.open_calls(info.thread_id)
        return {
            **await self._summary(info, history=history, open_calls=len(pending)),
            "messages": [message.to_dict() for message in history],
            "pending": [
                {"callId": e.call.id, "toolName": e.call.name, "state": e.state.value, "execution": e.execution}
                for e in pending
            ],
        }

    async def _delete(self, request: Request, principal: str) -> dict[str, Any]:
        info = await self._owned(request, principal)
        force = request.query_params.get("force", "").lower() in ("true", "1", "yes")
        try:
            deleted = await self.server.delete(info.thread_id, force=force)
        except ConversationBusy as exc:
            raise _Refused(409, "busy", str(exc)) from None
        if not deleted:
            message = "a run is in progress in this conversation: wait for it, or delete with ?force=true (cancels it)"
            raise _Refused(409, "run_active", message)
        _log.info("conversation %s: deleted by its principal %.80s%s", info.thread_id, principal, " (forced)" * force)
        return {"id": info.thread_id, "deleted": True}

    async def _owned(self, request: Request, principal: str) -> ThreadInfo:
        """The conversation of the path, if `principal` owns it; 404 otherwise (unknown or another's alike)."""
        thread_id: str = request.path_params["conversation_id"]
        info = await self.server.agent.store.thread_info(thread_id)
        if info is None or info.principal != principal:
            raise _Refused(404, "not_found", f"no conversation {thread_id!r:.100}")
        return info

    async def _summary(
        self, info: ThreadInfo, *, history: Sequence[Message] | None = None, open_calls: int | None = None
    ) -> dict[str, Any]:
        store = self.server.agent.store
        thread_id = info.thread_id
        if history is None:
            history = await store.load_messages(thread_id)
        if open_calls is None:
            open_calls = len(await store.open_calls(thread_id))
        live = self.server.conversations.get(thread_id)
        running = live is not None and live.busy
        return {
            "id": thread_id,
            "title": title_of(history),
            "createdAt": _iso(info.created_at),
            "updatedAt": _iso(info.updated_at),
            "messageCount": len(history),
            "run": "running" if running else last_run(history, await store.load_run(thread_id)),
            "openCalls": open_calls,
        }


def _iso(seconds: float) -> str:
    """Seconds since the epoch as ISO 8601 in UTC, to the millisecond (`2026-11-27T02:05:09.123Z`)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _json(body: Mapping[str, Any], status: int, headers: Mapping[str, str]) -> JSONResponse:
    return JSONResponse(dict(body), status_code=status, headers={**headers, "Cache-Control": "no-store"})
