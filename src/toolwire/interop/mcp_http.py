"""toolwire's tools over MCP's Streamable HTTP: standalone, or at `/mcp` next to `/ws`.

```
toolwire mcp serve --app myapp:make_agent --http             # http://127.0.0.1:8766/mcp
toolwire serve --app myapp:make_agent --mcp                  # /mcp beside /ws, same tokens
```

The endpoint is the MCP SDK's own Streamable HTTP transport (`StreamableHTTPSessionManager`)
in front of `build_server`: both generations of the protocol (a session per client on the
handshake generation, one self-contained request at a time on 2026-07-28). The manager's task
group must run for as long as the endpoint serves: `MCPEndpoint.run()` is its lifespan, which
`http_app` and `mount_mcp` enter in the Starlette app's lifespan.

Security by default:

- `mount_mcp` authenticates every request with the tokens of `/ws` (`TokenAuth`), as
  `Authorization: Bearer <token>` only (MCP forbids tokens in the query string): no token, no
  access (401). A session belongs to the principal that opened it (the SDK answers 404 to
  another). A browser's request is refused (403) unless its `Origin` is one `/ws` accepts.
- Standalone, the endpoint listens on loopback and checks `Host` and `Origin` against DNS
  rebinding (the SDK's protection), and every request presents a token too: the one given, or
  one made for the run and printed (`tokens_for`). `--no-token` serves without on loopback only
  (any process of this machine can then call the tools); binding another address needs tokens.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Final, TextIO

from .._extras import import_extra
from ..errors import UsageError
from ..pipeline import Pipeline
from ..server.auth import TokenAuth, new_token
from ..server.lifespans import join_lifespan

import_extra("mcp", "mcp")  # a missing SDK fails here, naming the extra to install

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware  # noqa: E402
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware  # noqa: E402
from mcp.server.auth.provider import AccessToken  # noqa: E402
from mcp.server.request_state import RequestStateSecurity  # noqa: E402
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager  # noqa: E402
from mcp.server.transport_security import TransportSecuritySettings  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.middleware.authentication import AuthenticationMiddleware  # noqa: E402
from starlette.requests import HTTPConnection  # noqa: E402
from starlette.responses import PlainTextResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402
from starlette.types import ASGIApp, Receive, Scope, Send  # noqa: E402

from .mcp_serve import build_server  # noqa: E402

__all__ = ["DEFAULT_PORT", "LOOPBACK", "PATH", "MCPEndpoint", "http_app", "mount_mcp", "serve_http", "tokens_for"]

PATH: Final = "/mcp"
"""Where the endpoint answers, standalone and mounted."""
DEFAULT_PORT: Final = 8766
"""`toolwire mcp serve --http`'s port (`toolwire serve` takes 8765)."""
LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")
"""The addresses that reach this machine only: tokens are optional there."""

OriginCheck = Callable[[str, HTTPConnection], bool]
"""Whether a browser origin may call the endpoint (`ToolwireServer.origin_allowed`)."""


class MCPEndpoint:
    """The ASGI app of an MCP server over Streamable HTTP; `run()` must be entered while it serves.

    Args:
        pipeline: The tools with their policy and filters (see `build_server`).
        name: The server's name in the MCP handshake.
        auth: The tokens every request must present (Bearer); None: no authentication.
        origin_allowed: Refuses (403) a request whose `Origin` it does not allow; None: the
            SDK's DNS rebinding protection for a loopback `host` checks origins instead.
        host: The address the server listens on: on loopback, the SDK checks `Host` and
            `Origin` (DNS rebinding); None when mounted (the app that mounts it checks).
        request_state: How the 2026-07-28 generation's `requestState` is sealed (see
            `build_server`); None: the keys of `TOOLWIRE_MCP_STATE_KEY`, else a key of this process.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        name: str = "toolwire",
        auth: TokenAuth | None = None,
        origin_allowed: OriginCheck | None = None,
        host: str | None = None,
        request_state: RequestStateSecurity | None = None,
    ) -> None:
        server = build_server(pipeline, name=name, request_state=request_state)
        security = _loopback_only() if host in LOOPBACK else None
        self.manager = StreamableHTTPSessionManager(app=server, security_settings=security)
        """The SDK's session manager: sessions of the handshake generation, and the task group they run in."""
        app: ASGIApp = StreamableHTTPASGIApp(self.manager)
        if origin_allowed is not None:
            app = _OriginGate(app, origin_allowed)
        if auth is not None:
            # The SDK's bearer chain: the user in the scope, its token in the context (the
            # principal that `requestState` and sessions are bound to), 401 without one.
            app = RequireAuthMiddleware(app, required_scopes=[])
            app = AuthContextMiddleware(app)
            app = AuthenticationMiddleware(app, backend=BearerAuthBackend(_Tokens(auth)))
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one HTTP request (ASGI)."""
        await self._app(scope, receive, send)

    def run(self) -> AbstractAsyncContextManager[None]:
        """The endpoint's lifespan: enter it before the first request, leave it after the last.

        It runs the task group of the MCP sessions; leaving it ends every session. It can be
        entered once.
        """
        return self.manager.run()


def http_app(
    pipeline: Pipeline,
    *,
    name: str = "toolwire",
    auth: TokenAuth | None = None,
    host: str = "127.0.0.1",
    request_state: RequestStateSecurity | None = None,
) -> Starlette:
    """A Starlette app serving the pipeline's tools at `/mcp`, its lifespan running the endpoint.

    Args:
        pipeline: The tools with their policy and filters.
        name: The server's name in the MCP handshake.
        auth: The tokens every request must present; None: none (loopback only).
        host: The address it will listen on (on loopback, DNS rebinding protection is on).
        request_state: How `requestState` is sealed (see `MCPEndpoint`).

    Raises:
        UsageError: `host` is not a loopback address and there are no tokens.
    """
    if auth is None and host not in LOOPBACK:
        raise UsageError(
            f"serving MCP on {host} lets anyone who reaches it call your tools: give a token "
            "(--token, TOOLWIRE_TOKEN or --tokens), or listen on 127.0.0.1"
        )
    endpoint = MCPEndpoint(pipeline, name=name, auth=auth, host=host, request_state=request_state)
    return Starlette(routes=[Route(PATH, endpoint=endpoint)], lifespan=lambda _app: endpoint.run())


def mount_mcp(
    app: Starlette, *, path: str = PATH, name: str = "toolwire", request_state: RequestStateSecurity | None = None
) -> MCPEndpoint:
    """Serve the function tools of a toolwire server's agent over MCP at `path`, next to `/ws`.

    `app` is what `toolwire.server.create_app` returned: the endpoint serves `agent.pipeline`
    (its policy and filters) and accepts the tokens and browser origins that `/ws` accepts. Its
    lifespan joins the app's: run the app with its lifespan on (uvicorn's `lifespan="on"`), or,
    when you mount the app in another, enter `app.router.lifespan_context(app)` in that one's.
    Several server processes answer each other's `input_required` rounds when they share
    `TOOLWIRE_MCP_STATE_KEY` (or the same `request_state`).

    Returns:
        The endpoint (its `manager` is the SDK's session manager).

    Raises:
        UsageError: `app` is not a toolwire server's app.
    """
    from ..server.app import ToolwireServer

    server: object = getattr(app.state, "toolwire", None)
    if not isinstance(server, ToolwireServer):
        raise UsageError("mount_mcp needs the app that toolwire.server.create_app returned")
    endpoint = MCPEndpoint(
        server.agent.pipeline,
        name=name,
        auth=server.auth,
        origin_allowed=server.origin_allowed,
        request_state=request_state,
    )
    app.router.routes.append(Route(path, endpoint=endpoint))
    join_lifespan(app, endpoint.run)
    return endpoint


def serve_http(
    pipeline: Pipeline,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    auth: TokenAuth | None = None,
    name: str = "toolwire",
    out: TextIO = sys.stdout,
) -> None:
    """Serve the pipeline's tools over Streamable HTTP with uvicorn, until SIGINT or SIGTERM.

    Once it listens it prints `toolwire mcp serving http://HOST:PORT/mcp` (port 0 picks a free
    port: the line tells which).

    Raises:
        UsageError: The `server` extra is missing, or `host` is not loopback and there are no
            tokens (see `http_app`).
    """
    import_extra("uvicorn", "server")
    import uvicorn

    from ..server.serve import listen

    app = http_app(pipeline, name=name, auth=auth, host=host)
    listener = listen(host, port)
    bound_host, bound_port = listener.getsockname()[:2]

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[Any] | None = None) -> None:
            await super().startup(sockets)
            if not self.should_exit:
                print(f"toolwire mcp serving http://{bound_host}:{bound_port}{PATH}", file=out, flush=True)

    config = uvicorn.Config(app, lifespan="on", log_level="warning", timeout_graceful_shutdown=3)
    try:
        Announcing(config).run(sockets=[listener])
    finally:
        listener.close()


def _loopback_only() -> TransportSecuritySettings:
    """The SDK's DNS rebinding protection for a server on loopback (what its own apps use)."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


class _Tokens:
    """The SDK's `TokenVerifier` over toolwire's `TokenAuth`: a token's principal is its client id."""

    def __init__(self, auth: TokenAuth) -> None:
        self._auth = auth

    async def verify_token(self, token: str) -> AccessToken | None:
        principal = self._auth.authenticate(token)
        if principal is None:
            return None
        return AccessToken(token="", client_id=principal, scopes=[])  # the token itself is not kept


class _OriginGate:
    """Refuses (403) a browser request from an origin that `/ws` would refuse."""

    def __init__(self, app: ASGIApp, allowed: OriginCheck) -> None:
        self._app = app
        self._allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        connection = HTTPConnection(scope)
        origin = connection.headers.get("origin")
        if origin is not None and not self._allowed(origin.rstrip("/"), connection):
            await PlainTextResponse("This origin may not call the MCP endpoint.", 403)(scope, receive, send)
            return
        await self._app(scope, receive, send)


def tokens_for(
    token: str | None, tokens_file: str | None, environment: Mapping[str, str], *, anonymous: bool = False
) -> tuple[TokenAuth | None, str | None]:
    """The tokens `toolwire mcp serve --http` checks, and the token it made (to print), if it made one.

    `--tokens`, else `--token`, else `TOOLWIRE_TOKEN`; with none of them a new token for this run
    (every request authenticates, also on loopback), unless `anonymous` (`--no-token`): none.

    Raises:
        UsageError: The tokens file cannot be read or is malformed, a token is too short, or
            `anonymous` beside a token.
    """
    given = token or environment.get("TOOLWIRE_TOKEN")
    if anonymous:
        if tokens_file is not None or given:
            raise UsageError("--no-token serves without authentication: give no token with it")
        return None, None
    if tokens_file is not None:
        return TokenAuth.from_file(tokens_file), None
    if given:
        return TokenAuth.single(given), None
    made = new_token()
    return TokenAuth.single(made), made
