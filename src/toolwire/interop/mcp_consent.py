"""How toolwire's MCP server puts an Ask to the person at the MCP client, on each generation.

- **Handshake generation** (up to 2025-11-25): an elicitation request (`elicitation/create`,
  form mode, one boolean `approve`) in the middle of the call (`elicitation`).
- **2026-07-28**: no request can go to the client, so the call answers `resultType:
  "input_required"` with the same elicitation in `inputRequests["toolwire/approve"]` and an
  opaque `requestState`; the client asks its user and sends the call again with the answer and
  the state (`InputRequired`). The retry runs the call once: the answer approves exactly that
  call (its server-made id, the tool, the arguments), and its state is refused if it comes back.

The state is sealed by the SDK's `RequestStateBoundary` (AES-256-GCM under a key from
`request_state_security`): a client can neither read nor alter it, and it is bound to the
method, the tool, a digest of the arguments, an expiry (10 minutes), the server's name and, when
requests are authenticated, the principal. Processes that share the key
(`TOOLWIRE_MCP_STATE_KEY`) accept each other's state; without a key each process makes its own.
A state is used once per process: another process with the key would accept it again within
its expiry (the approval is not in a store they share).
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

import anyio

from .._extras import import_extra
from ..cancellation import Cancellation
from ..envelopes import ToolCall, ToolResult
from ..errors import UsageError
from ..invocation import Observer
from ..pipeline import Pipeline
from ..policy import ConsentAnswer, ConsentHandler, ConsentRequest

import_extra("mcp", "mcp")  # a missing SDK fails here, naming the extra to install

import mcp.types as types  # noqa: E402
from mcp.server import ServerRequestContext  # noqa: E402
from mcp.server.request_state import RequestStateSecurity  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp.types.version import MODERN_PROTOCOL_VERSIONS  # noqa: E402

__all__ = ["APPROVAL_KEY", "STATE_KEY_ENV", "InputRequired", "elicitation", "request_state_security"]

APPROVAL_KEY: Final = "toolwire/approve"
"""The key of the approval question in an `input_required` result's `inputRequests`."""
STATE_KEY_ENV: Final = "TOOLWIRE_MCP_STATE_KEY"
"""The environment variable holding the `requestState` key(s): 32+ characters, comma-separated
for a rotation (the first seals, all open)."""
APPROVAL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Allow this call", "default": False}},
    "required": ["approve"],
}
_ELICITATION: Final = types.ClientCapabilities(elicitation=types.ElicitationCapability())


def request_state_security(
    keys: Sequence[str | bytes] | None = None,
    *,
    ttl: float = 600.0,
    environment: Mapping[str, str] = os.environ,
) -> RequestStateSecurity:
    """How `requestState` is sealed: under `keys`, else `TOOLWIRE_MCP_STATE_KEY`'s, else a key of this process.

    Args:
        keys: Secrets of 32 or more bytes; the first seals, every one opens (rotation).
        ttl: Seconds a state stays valid.
        environment: Where `TOOLWIRE_MCP_STATE_KEY` is read.

    Raises:
        UsageError: A key shorter than 32 bytes (the message says how to make one).
    """
    if keys is None and (configured := environment.get(STATE_KEY_ENV, "").strip()):
        keys = [key.strip() for key in configured.split(",") if key.strip()]
    if not keys:
        return RequestStateSecurity.ephemeral(ttl=ttl)
    try:
        return RequestStateSecurity(keys=list(keys), ttl=ttl)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{STATE_KEY_ENV} (or keys=): {exc}") from None


def elicitation(ctx: ServerRequestContext[Any]) -> ConsentHandler | None:
    """Asks the MCP client's user with an elicitation request; None when the client cannot be asked.

    For the handshake generation only: a 2026-07-28 client is asked by `InputRequired`.
    """
    session = ctx.session
    if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    if not session.can_send_request or not session.check_client_capability(_ELICITATION):
        return None  # the policy denies: no one is available to approve it

    async def ask(request: ConsentRequest) -> ConsentAnswer:
        answer = await session.elicit_form(question(request), APPROVAL_SCHEMA, related_request_id=ctx.request_id)
        return consent_of(answer)

    return ask


def question(request: ConsentRequest) -> str:
    """What the person is asked: the tool, its mode, the arguments, and why consent is needed."""
    arguments = json.dumps(request.call.arguments, ensure_ascii=False)
    return f"Allow '{request.tool}' ({request.mode}) with {arguments}? {request.reason}."


def consent_of(answer: types.ElicitResult) -> ConsentAnswer:
    """An elicitation's answer as consent: only an accepted `approve: true` allows, once."""
    if answer.action == "accept" and (answer.content or {}).get("approve") is True:
        return ConsentAnswer(True, scope="once")
    refused = "the user declined" if answer.action != "cancel" else "the user dismissed the request"
    return ConsentAnswer(False, refused)


class InputRequired:
    """Runs a 2026-07-28 `tools/call`: an Ask the client can answer becomes an `input_required` result.

    The first round runs the call up to its permission check. If the policy would ask the
    client, the check is interrupted (nothing ran, nothing is remembered) and the result asks the
    question, with a state naming a new call id and a thread of its own. A question the call asks
    while it runs (`ToolContext.ask`) is answered no: the round trip would end the call, and the
    retry would run it again from its start. The retry, carrying
    the answer and the state the boundary verified, runs that call with that answer; a state
    seen before is refused (`INVALID_PARAMS`, as the SDK refuses a bad one).

    Args:
        pipeline: The tools with their policy and filters.
        ttl: Seconds a state stays valid (`RequestStateSecurity.ttl`): how long a used one is
            remembered.
    """

    def __init__(self, pipeline: Pipeline, *, ttl: float) -> None:
        self._pipeline = pipeline
        self._ttl = ttl
        self._used: dict[str, float] = {}
        """Call ids of the states answered, until they expire."""

    async def call(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, *, observer: Observer | None = None
    ) -> ToolResult | types.InputRequiredResult:
        """Run the call; its `ToolResult`, or the question when the client must answer first.

        `observer` is told the call's events (its progress, for the client; see `mcp_serve.reporting`).
        """
        arguments = dict(params.arguments or {})
        answer: types.InputResponse | None = None
        if params.request_state is None:
            call_id, thread = "mcp_" + secrets.token_hex(8), "mcp_" + secrets.token_hex(16)
        else:
            call_id, thread = self._take(params.request_state)
            answer = (params.input_responses or {}).get(APPROVAL_KEY)
        cancellation = Cancellation()
        asked: list[ConsentRequest] = []

        async def ask(request: ConsentRequest) -> ConsentAnswer:
            if request.running:  # asking would end the call, and the retry would run it again from its start
                return ConsentAnswer(False, "a 2026-07-28 MCP client can be asked only before a call runs")
            if isinstance(answer, types.ElicitResult):
                return consent_of(answer)
            if answer is not None:
                return ConsentAnswer(False, "the client's answer was not an elicitation result")
            asked.append(request)
            cancellation.cancel("the client is asked first", by="system")  # ends this wait at once
            await anyio.sleep_forever()
            raise AssertionError("unreachable: the cancellation ends the wait")  # pragma: no cover

        can_ask = ctx.session.check_client_capability(_ELICITATION)
        asking = self._pipeline.with_tools(self._pipeline.toolbox, client=ask if can_ask else None)
        call = ToolCall(id=call_id, name=params.name, arguments=arguments)
        done = await asking.run(call, thread_id=thread, cancellation=cancellation, observer=observer)
        assert done.result is not None
        if not asked:
            return done.result
        form = types.ElicitRequestFormParams(message=question(asked[0]), requested_schema=APPROVAL_SCHEMA)
        # A new call id: the approval will be bound to it, and this round's state is spent.
        state = json.dumps({"call": "mcp_" + secrets.token_hex(8), "thread": thread})
        return types.InputRequiredResult(
            input_requests={APPROVAL_KEY: types.ElicitRequest(params=form)}, request_state=state
        )

    def _take(self, state: str) -> tuple[str, str]:
        """The call id and thread of a verified state, used up now; refused if seen before."""
        try:
            decoded: Any = json.loads(state)
            call_id, thread = decoded["call"], decoded["thread"]
        except (ValueError, KeyError, TypeError):
            call_id = thread = None
        if not isinstance(call_id, str) or not isinstance(thread, str):
            raise MCPError(types.INVALID_PARAMS, "Invalid or expired requestState")
        now = time.monotonic()
        self._used = {used: until for used, until in self._used.items() if until > now}
        if call_id in self._used:
            raise MCPError(types.INVALID_PARAMS, "This requestState was answered already: call the tool again")
        self._used[call_id] = now + self._ttl + 60  # the boundary's clock skew allowance
        return call_id, thread
