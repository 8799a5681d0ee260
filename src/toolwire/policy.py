"""`PermissionPolicy`: may this call run? Allow, Deny, or Ask a person first.

Rules are checked in this order, and the first that applies decides:

1. a `deny` rule matches the tool (by name glob or by `ToolMode`): Deny;
2. an `ask` rule matches, or the tool declares `requires_permission`: Ask;
3. an `allow` rule matches: Allow;
4. the preset decides by mode. `default` (the tools spec's table): read, safe_write, destructive and
   external run, local asks. `strict`: destructive and local ask every time, external and
   client-registered tools ask once per thread, read and safe_write run.

An Ask is then resolved: a call identical to one denied earlier in the thread is denied again
without asking; an "always" grant for the thread and tool allows it; a one-time approval bound to
this very call allows it once; otherwise the consent handler is asked, and with no handler the
call is denied.
"""

from __future__ import annotations

import fnmatch
import inspect
import logging
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar

from .envelopes import ToolCall, arguments_hash
from .errors import CallCanceled, UsageError
from .modes import ToolMode

if TYPE_CHECKING:
    from .cancellation import Cancellation

__all__ = [
    "ApprovalStore",
    "ConsentAnswer",
    "ConsentHandler",
    "ConsentRequest",
    "Decision",
    "Grant",
    "MemoryApprovalStore",
    "Permission",
    "PermissionPolicy",
    "Rule",
]

_audit = logging.getLogger("toolwire.audit")

Rule = str | ToolMode
"""A policy rule: a `ToolMode`, or a glob over tool names (`"fs_*"`)."""

Scope = Literal["once", "thread"]


class Decision(StrEnum):
    """The three answers of a permission policy."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True, slots=True)
class Permission:
    """The policy's answer for one call and how it was reached (`InvocationContext.permission`)."""

    decision: Decision
    reason: str
    """A sentence for logs and for the model when the call is denied."""
    source: str
    """What decided: `rule`, `preset`, `grant`, `approval`, `consent`, `denial_memory`, `no_approver`."""
    remember: bool = False
    """For an Ask: an approval counts for the rest of the thread (the strict preset's "once per thread")."""
    allow_always: bool = True
    """For an Ask: the person may grant "always for this thread"."""
    arguments: Mapping[str, Any] | None = None
    """For an approval with edited arguments: what the call runs with instead of the model's."""

    @property
    def allowed(self) -> bool:
        """True when the call may run."""
        return self.decision is Decision.ALLOW


class ToolInfo(Protocol):
    """What the policy needs to know about a tool."""

    @property
    def name(self) -> str: ...
    @property
    def mode(self) -> ToolMode: ...
    @property
    def requires_permission(self) -> bool: ...
    @property
    def is_client(self) -> bool: ...
    @property
    def description(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ConsentRequest:
    """What a consent handler is asked: may this call run?"""

    call: ToolCall
    tool: str
    mode: ToolMode
    reason: str
    """Why consent is needed, e.g. "local tools ask for consent"."""
    thread_id: str | None
    description: str
    """The tool's description, to show the person."""
    allow_always: bool
    """Whether an "always for this thread" answer will be honoured."""
    client: ConsentHandler | None = field(default=None, repr=False, compare=False)
    """Asks the person at the thread's client (a connected page, IDE or CLI) when one can answer;
    None otherwise. An application's handler that leaves the decision to them returns
    `await request.ask_client()`."""
    running: bool = False
    """The call asks while it runs (`ToolContext.ask`), not whether it may start: `reason` is its question."""

    async def ask_client(self) -> bool | ConsentAnswer:
        """Let the person at the thread's client decide (refused when no client can answer)."""
        if self.client is None:
            return ConsentAnswer(False, "no one at the client can answer")
        return await self.client(self)


@dataclass(frozen=True, slots=True)
class ConsentAnswer:
    """A consent handler's answer, when a plain `True` / `False` says too little."""

    allow: bool
    reason: str | None = None
    """Why the person refused; shown to the model."""
    scope: Scope = "once"
    """`once` for this call only, `thread` for every call of this tool in the thread."""
    arguments: Mapping[str, Any] | None = None
    """An approval with the person's own arguments in place of the model's (an AG-UI `editedArgs`).

    They are validated against the tool's parameters like the model's, and the call runs with them:
    the approval is bound to this call with these arguments, once (`scope` is ignored)."""


T = TypeVar("T")

ConsentHandler = Callable[[ConsentRequest], Awaitable["bool | ConsentAnswer"]]


@dataclass(frozen=True, slots=True)
class Grant:
    """A standing "always allow this tool in this thread"."""

    thread_id: str | None
    tool: str
    explicit: bool
    """True when the person said "always"; false when the strict preset remembers an approval."""
    granted_at: float


class ApprovalStore(Protocol):
    """Where approvals, grants and remembered denials live (in memory, SQLite, PostgreSQL)."""

    async def approve_once(self, thread_id: str | None, call_id: str, tool: str, args_hash: str) -> None:
        """Record a one-time approval for exactly this call."""
        ...

    async def take_approval(self, thread_id: str | None, call_id: str, tool: str, args_hash: str) -> bool:
        """Consume the one-time approval of this call; False if there is none."""
        ...

    async def grant(self, thread_id: str | None, tool: str, *, explicit: bool = True) -> Grant:
        """Allow `tool` for the rest of the thread."""
        ...

    async def find_grant(self, thread_id: str | None, tool: str) -> Grant | None:
        """Return the standing grant for `tool` in the thread, if any."""
        ...

    async def grants(self, thread_id: str | None) -> list[Grant]:
        """List the thread's grants."""
        ...

    async def revoke(self, thread_id: str | None, tool: str) -> bool:
        """Remove the grant for `tool` in the thread; False if there was none."""
        ...

    async def remember_denial(self, thread_id: str | None, tool: str, args_hash: str, reason: str) -> None:
        """Remember that this tool with these arguments was refused in the thread."""
        ...

    async def find_denial(self, thread_id: str | None, tool: str, args_hash: str) -> str | None:
        """Return the reason an identical call was refused in the thread, if it was."""
        ...


class MemoryApprovalStore:
    """An `ApprovalStore` in process memory: for tests and single-process use."""

    def __init__(self) -> None:
        self._once: set[tuple[str | None, str, str, str]] = set()
        self._grants: dict[tuple[str | None, str], Grant] = {}
        self._denials: dict[tuple[str | None, str, str], str] = {}

    async def approve_once(self, thread_id: str | None, call_id: str, tool: str, args_hash: str) -> None:
        """Record a one-time approval for exactly this call."""
        self._once.add((thread_id, call_id, tool, args_hash))

    async def take_approval(self, thread_id: str | None, call_id: str, tool: str, args_hash: str) -> bool:
        """Consume the one-time approval of this call; False if there is none."""
        key = (thread_id, call_id, tool, args_hash)
        if key in self._once:
            self._once.discard(key)
            return True
        return False

    async def grant(self, thread_id: str | None, tool: str, *, explicit: bool = True) -> Grant:
        """Allow `tool` for the rest of the thread."""
        grant = Grant(thread_id, tool, explicit, time.time())
        self._grants[thread_id, tool] = grant
        return grant

    async def find_grant(self, thread_id: str | None, tool: str) -> Grant | None:
        """Return the standing grant for `tool` in the thread, if any."""
        return self._grants.get((thread_id, tool))

    async def grants(self, thread_id: str | None) -> list[Grant]:
        """List the thread's grants."""
        return [grant for (thread, _), grant in self._grants.items() if thread == thread_id]

    async def revoke(self, thread_id: str | None, tool: str) -> bool:
        """Remove the grant for `tool` in the thread; False if there was none."""
        return self._grants.pop((thread_id, tool), None) is not None

    async def remember_denial(self, thread_id: str | None, tool: str, args_hash: str, reason: str) -> None:
        """Remember that this tool with these arguments was refused in the thread."""
        self._denials[thread_id, tool, args_hash] = reason

    async def find_denial(self, thread_id: str | None, tool: str, args_hash: str) -> str | None:
        """Return the reason an identical call was refused in the thread, if it was."""
        return self._denials.get((thread_id, tool, args_hash))


_PRESETS: Final = ("default", "strict")


class PermissionPolicy:
    """Decide per call: Allow, Deny, or Ask (then resolve the Ask with a person's consent).

    Args:
        allow: Rules that let matching tools run without asking.
        deny: Rules that refuse matching tools; they win over everything.
        ask: Rules that make matching tools ask every time (unless granted for the thread).
        preset: `default` or `strict`: what happens to tools no rule matches.
        consent: The async handler asked for consent. Without one, Ask means Denied.
        store: Where approvals, grants and denials are kept (in memory by default).
        consent_timeout: Seconds to wait for an answer before the call is denied.

    Raises:
        UsageError: An unknown preset, or a rule that is neither a glob nor a `ToolMode`.
    """

    def __init__(
        self,
        *,
        allow: Iterable[Rule] = (),
        deny: Iterable[Rule] = (),
        ask: Iterable[Rule] = (),
        preset: Literal["default", "strict"] = "default",
        consent: ConsentHandler | None = None,
        store: ApprovalStore | None = None,
        consent_timeout: float = 300.0,
    ) -> None:
        if preset not in _PRESETS:
            raise UsageError(f"unknown permission preset {preset!r}; choose 'default' or 'strict'")
        self.preset = preset
        self.consent = consent
        self.store: ApprovalStore = store if store is not None else MemoryApprovalStore()
        self.consent_timeout = consent_timeout
        self._allow = _RuleSet(allow, "allow")
        self._deny = _RuleSet(deny, "deny")
        self._ask = _RuleSet(ask, "ask")
        self._decisions: dict[tuple[str, ToolMode, bool, bool], Permission] = {}

    def decide(self, tool: ToolInfo) -> Permission:
        """Apply the rules and the preset to a tool: Allow, Deny or Ask, without asking anyone."""
        key = (tool.name, tool.mode, tool.requires_permission, tool.is_client)
        permission = self._decisions.get(key)
        if permission is None:
            permission = self._decisions[key] = self._decide(tool)
        return permission

    def _decide(self, tool: ToolInfo) -> Permission:
        name, mode = tool.name, tool.mode
        if rule := self._deny.match(name, mode):
            return Permission(Decision.DENY, f"the policy denies {rule}", "rule")
        if rule := self._ask.match(name, mode):
            return Permission(Decision.ASK, f"the policy asks before {rule}", "rule")
        if tool.requires_permission:
            return Permission(Decision.ASK, f"'{name}' requires permission for every call", "rule")
        if rule := self._allow.match(name, mode):
            return Permission(Decision.ALLOW, f"the policy allows {rule}", "rule")
        if self.preset == "strict":
            if mode in (ToolMode.DESTRUCTIVE, ToolMode.LOCAL):
                reason = f"the strict preset asks before every {mode} call"
                return Permission(Decision.ASK, reason, "preset", allow_always=False)
            if mode is ToolMode.EXTERNAL or tool.is_client:
                kind = "client tools" if tool.is_client else "external tools"
                reason = f"the strict preset asks once per thread for {kind}"
                return Permission(Decision.ASK, reason, "preset", remember=True)
        elif mode is ToolMode.LOCAL:
            return Permission(Decision.ASK, "local tools ask for consent", "preset")
        return Permission(Decision.ALLOW, f"{mode} tools run under the {self.preset} preset", "preset")

    def check(
        self,
        call: ToolCall,
        tool: ToolInfo,
        thread_id: str | None = None,
        *,
        on_ask: Callable[[ConsentRequest], None] | None = None,
        consent: ConsentHandler | None = None,
        client: ConsentHandler | None = None,
        cancellation: Cancellation | None = None,
    ) -> Awaitable[Permission]:
        """Decide for one call and resolve an Ask; await it for the result, Allow or Deny.

        Call it once per call, right before the call would run: a one-time approval is used up.
        Who answers an Ask: `consent` if given, else the policy's own handler (the application's:
        it decides first, and may leave the decision to the client with `request.ask_client()`),
        else the thread's `client`; with none of them the call is denied.

        Args:
            call: The call.
            tool: The tool it would run.
            thread_id: The conversation (approvals, grants and denials are per thread).
            on_ask: Told right before the consent handler is asked (for progress events).
            consent: Asked instead of the policy's own handler.
            client: Asks the person at the thread's client, when one can answer.
            cancellation: Ends the wait for a person's answer.

        Raises:
            CallCanceled: `cancellation` fired while waiting for consent.
        """
        permission = self.decide(tool)
        if permission.decision is not Decision.ASK:
            if permission.decision is Decision.DENY:
                _record("denied", call, tool, thread_id, permission)
            return _ready(permission)
        # The coroutine that resolves the Ask, itself: no frame of this method waits with it for a
        # person (a parked run's memory; bench TW-8).
        handler = consent or self.consent or client
        return self._resolve(call, tool, thread_id, permission, on_ask, handler, client, cancellation)

    async def _resolve(
        self,
        call: ToolCall,
        tool: ToolInfo,
        thread_id: str | None,
        ask: Permission,
        on_ask: Callable[[ConsentRequest], None] | None,
        consent: ConsentHandler | None,
        client: ConsentHandler | None,
        cancellation: Cancellation | None,
    ) -> Permission:
        request = await self._question(call, tool, thread_id, ask, consent, client)
        if isinstance(request, Permission):
            return request
        assert consent is not None  # (a question has someone to answer it)
        answer = await self._put(consent, request, on_ask, cancellation)
        return await self._answered(request, ask, tool, answer)

    # Resolving an Ask is three steps, so that the one that waits for a person needs no coroutine
    # of its own (the pipeline awaits it in a frame it has anyway: a parked run's memory, bench
    # TW-8): `_question` settles it from what the thread remembers or says what to ask, the wait
    # (`_consenting`, whose outcome `_consent_answer` reads), and `_answered` remembers the answer.

    async def _question(
        self,
        call: ToolCall,
        tool: ToolInfo,
        thread_id: str | None,
        ask: Permission,
        consent: ConsentHandler | None,
        client: ConsentHandler | None,
    ) -> Permission | ConsentRequest:
        """The question to put to `consent`, or the Permission that settles the Ask without one.

        A denial of the same arguments, a grant or an approval the thread remembers settles it,
        and so does the lack of a handler (a Deny).
        """
        store, name = self.store, tool.name
        digest = arguments_hash(call.arguments)
        if (earlier := await store.find_denial(thread_id, name, digest)) is not None:
            permission = Permission(
                Decision.DENY,
                f"an identical call was denied earlier in this thread ({earlier})",
                "denial_memory",
            )
            _record("denied", call, tool, thread_id, permission)
            return permission
        if ask.allow_always and (grant := await store.find_grant(thread_id, name)) is not None:
            who = "the user" if grant.explicit else "an earlier approval"
            return Permission(Decision.ALLOW, f"'{name}' is allowed in this thread by {who}", "grant")
        if await store.take_approval(thread_id, call.id, name, digest):
            return Permission(Decision.ALLOW, "this call was approved", "approval")
        if consent is None:
            permission = Permission(
                Decision.DENY, f"{ask.reason}, and no one is available to approve it", "no_approver"
            )
            _record("denied", call, tool, thread_id, permission)
            return permission
        return ConsentRequest(
            call, name, tool.mode, ask.reason, thread_id, tool.description, ask.allow_always, client=client
        )

    async def _put(
        self,
        handler: ConsentHandler,
        request: ConsentRequest,
        on_ask: Callable[[ConsentRequest], None] | None,
        cancellation: Cancellation | None,
    ) -> ConsentAnswer:
        """Put `request` to `handler` and wait (`_consenting`); the answer (`_consent_answer`).

        Raises:
            CallCanceled: `cancellation` fired while waiting for the answer.
        """
        if on_ask is not None:
            on_ask(request)
        outcome, failure = None, None
        try:
            outcome = await self._consenting(handler, request, cancellation)
        except Exception as exc:
            failure = exc
        return self._consent_answer(outcome, failure, request, cancellation)

    async def _answered(
        self, request: ConsentRequest, ask: Permission, tool: ToolInfo, answer: ConsentAnswer
    ) -> Permission:
        """The Allow or Deny `answer` makes of the Ask `ask` for `request`, remembered as `ask` says."""
        store = self.store
        call, thread_id, name = request.call, request.thread_id, request.tool
        if not answer.allow:
            reason = answer.reason or "the user refused"
            await store.remember_denial(thread_id, name, arguments_hash(call.arguments), reason)
            permission = Permission(Decision.DENY, reason, "consent")
        elif answer.arguments is not None:
            reason = "the user approved once, with edited arguments"
            permission = Permission(Decision.ALLOW, reason, "consent", arguments=dict(answer.arguments))
        else:
            if (answer.scope == "thread" and ask.allow_always) or ask.remember:
                await store.grant(thread_id, name, explicit=answer.scope == "thread")
            scope = "for this thread" if answer.scope == "thread" and ask.allow_always else "once"
            permission = Permission(Decision.ALLOW, f"the user approved {scope}", "consent")
        _record("consent", call, tool, thread_id, permission)
        return permission

    def _consenting(
        self, consent: ConsentHandler, request: ConsentRequest, cancellation: Cancellation | None
    ) -> Awaitable[object]:
        """The wait for the handler's answer, bounded by `consent_timeout` and `cancellation`."""
        from ._fast import guarded  # (a deadline armed only if the handler waits; no anyio cancel scope)

        asking = consent(request)
        if not inspect.iscoroutine(asking):  # any awaitable will do
            asking = _awaited(asking)
        return guarded(asking, self.consent_timeout, cancellation)

    def _consent_answer(
        self, answer: object, failure: Exception | None, request: ConsentRequest, cancellation: Cancellation | None
    ) -> ConsentAnswer:
        """What the wait's outcome means: the handler's answer, or no (it failed, timed out, broke its type).

        Raises:
            CallCanceled: `cancellation` fired while waiting for the answer.
        """
        from .guard import INTERRUPTED

        if failure is not None:  # a broken handler must not let the call through
            logging.getLogger("toolwire.policy").error("consent handler failed", exc_info=failure)
            return ConsentAnswer(False, f"asking for consent failed ({type(failure).__name__})")
        if answer is INTERRUPTED:
            if cancellation is not None and cancellation.cancelled:
                raise CallCanceled(f"call {request.call.id} was canceled while waiting for consent")
            return ConsentAnswer(False, f"no answer within {self.consent_timeout:g} s")
        match answer:
            case bool():
                return ConsentAnswer(answer)
            case ConsentAnswer():
                return answer
            case _:  # a handler breaking its type
                return ConsentAnswer(False, f"the consent handler answered {answer!r}, not yes or no")

    async def ask(
        self,
        request: ConsentRequest,
        *,
        on_ask: Callable[[ConsentRequest], None] | None = None,
        consent: ConsentHandler | None = None,
        client: ConsentHandler | None = None,
        cancellation: Cancellation | None = None,
    ) -> ConsentAnswer:
        """Put a question about a call to whoever would answer its consent; nothing is remembered.

        For a question that comes up while a call runs (e.g. an MCP server's elicitation): the
        handler is chosen as in `check` (`consent`, else the policy's own, else `client`), the
        wait is bounded by `consent_timeout` and `cancellation`, and with no handler the answer
        is no. Unlike `check`, no approval, grant or denial is stored.

        Raises:
            CallCanceled: `cancellation` fired while waiting for the answer.
        """
        handler = consent or self.consent or client
        if handler is None:
            answer = ConsentAnswer(False, "no one is available to answer")
        else:
            answer = await self._put(handler, request, on_ask, cancellation)
        fields: dict[str, Any] = {
            "event": "question",
            "tool": request.tool,
            "call_id": request.call.id,
            "thread_id": request.thread_id,
            "question": request.reason,
            "answer": answer.allow,
            "reason": answer.reason,
        }
        _audit.info("question %s: %s", request.tool, "yes" if answer.allow else "no", extra={"toolwire": fields})
        return answer

    # -- approvals and grants -------------------------------------------------------------------

    async def approve(self, call: ToolCall, thread_id: str | None = None) -> None:
        """Approve exactly this call (id, tool and arguments) once, ahead of its invocation."""
        await self.store.approve_once(thread_id, call.id, call.name, arguments_hash(call.arguments))

    async def grant(self, tool: str, thread_id: str | None = None) -> Grant:
        """Allow `tool` for the rest of the thread, as if the user had answered "always"."""
        return await self.store.grant(thread_id, tool, explicit=True)

    async def grants(self, thread_id: str | None = None) -> list[Grant]:
        """List the standing grants of a thread."""
        return await self.store.grants(thread_id)

    async def revoke(self, tool: str, thread_id: str | None = None) -> bool:
        """Withdraw the grant for `tool` in the thread; False if there was none."""
        return await self.store.revoke(thread_id, tool)


class _RuleSet:
    """Compiled rules: one regex over names, one set of modes."""

    __slots__ = ("_modes", "_names", "_pattern")

    def __init__(self, rules: Iterable[Rule], kind: str) -> None:
        self._modes: set[ToolMode] = set()
        self._names: list[str] = []
        for rule in rules:
            if isinstance(rule, ToolMode):
                self._modes.add(rule)
            elif isinstance(rule, str) and rule:  # pyright: ignore[reportUnnecessaryIsInstance]
                self._names.append(rule)
            else:
                raise UsageError(f"{kind} rule {rule!r} is neither a tool-name glob nor a ToolMode")
        joined = "|".join(f"(?:{fnmatch.translate(glob)})" for glob in self._names)
        self._pattern = re.compile(joined) if joined else None

    def match(self, name: str, mode: ToolMode) -> str | None:
        """Describe the rule that matches, or None."""
        if mode in self._modes:
            return f"{mode} tools"
        if self._pattern is not None and self._pattern.fullmatch(name):
            globs = [glob for glob in self._names if fnmatch.fnmatchcase(name, glob)]
            return f"tools matching '{globs[0]}'"
        return None


def _record(event: str, call: ToolCall, tool: ToolInfo, thread_id: str | None, permission: Permission) -> None:
    fields: dict[str, Any] = {
        "event": event,
        "tool": tool.name,
        "call_id": call.id,
        "thread_id": thread_id,
        "mode": str(tool.mode),
        "decision": str(permission.decision),
        "source": permission.source,
        "reason": permission.reason,
    }
    if permission.arguments is not None:
        fields["arguments_edited"] = True
    _audit.info("%s %s: %s", event, tool.name, permission.reason, extra={"toolwire": fields})


async def _ready(permission: Permission) -> Permission:
    return permission


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable
