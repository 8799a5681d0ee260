"""toolwire's own messages (types 100 and up): client tool registration, consent, run status, cancel notices.

Bodies carry the camelCase `to_dict()` shapes of `toolwire.client_tools.definitions` as plain maps
(`ClientToolGroup`, `Augmentation`); this package checks only their wire shape, and the
registration checks run where the groups are applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, Self, cast

from .published import without_none
from .wire import Fields, MessageType

__all__ = [
    "ConsentAnswerBody",
    "ConsentRequestBody",
    "ConsentScope",
    "RegisterTools",
    "RegisterToolsResult",
    "RUN_QUEUE",
    "RunState",
    "RunStatus",
    "ToolUseCancel",
]

ConsentScope = Literal["once", "thread"]
"""How far a consent answer reaches: this call, or every call of the tool in the thread."""
RunState = Literal["queued", "started", "finished", "failed"]
"""The states a `RunStatus` reports."""
RUN_QUEUE: Final = "runQueue"
"""The feature of the Configuration by which a client asks to be told its run's place in the server's
queue (RunStatus `queued`), and the server says it may send it."""
_SCOPES: Final = ("once", "thread")
_RUN_STATES: Final = ("queued", "started", "finished", "failed")


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterTools:
    """Register the client's tool groups for the conversation (type 100, client → server)."""

    type: ClassVar[MessageType] = MessageType.REGISTER_TOOLS
    groups: tuple[dict[str, Any], ...]
    """`ClientToolGroup.to_dict()` maps; they replace the groups registered before."""
    expanded_containers: tuple[str, ...] = ()
    """Containers (groups, skills) the client wants expanded from the start."""
    reset_client_state: bool = False
    """Forget the thread's client state (expansion, hidden tools, context) first."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return {
            "groups": list(self.groups),
            "expandedContainers": list(self.expanded_containers),
            "resetClientState": self.reset_client_state,
        }

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body."""
        fields = Fields(body, "RegisterTools")
        return cls(
            groups=fields.mappings("groups"),
            expanded_containers=fields.texts("expandedContainers"),
            reset_client_state=fields.flag("resetClientState", False),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterToolsResult:
    """Whether a RegisterTools was applied (type 101, server → client); all or nothing."""

    type: ClassVar[MessageType] = MessageType.REGISTER_TOOLS_RESULT
    ok: bool
    """True when every group was registered."""
    error: str | None = None
    """Why the registration was refused."""
    group: str | None = None
    """The group the refusal is about."""
    tool: str | None = None
    """The tool or skill the refusal is about."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return without_none({"ok": self.ok, "error": self.error, "group": self.group, "tool": self.tool})

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body."""
        fields = Fields(body, "RegisterToolsResult")
        return cls(
            ok=fields.flag("ok"),
            error=fields.optional_text("error"),
            group=fields.optional_text("group"),
            tool=fields.optional_text("tool"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsentRequestBody:
    """May this call run? (type 102, server → client); answered by a ConsentAnswer with the same `id`."""

    type: ClassVar[MessageType] = MessageType.CONSENT_REQUEST
    id: str
    """The consent request's id (made by the server)."""
    call_id: str
    """The model's id for the call."""
    tool_name: str
    """The tool to run."""
    mode: str
    """The call's `ToolMode` value."""
    reason: str
    """Why consent is needed, e.g. "local tools ask for consent"."""
    arguments: dict[str, Any]
    """The call's arguments, to show the person."""
    description: str = ""
    """The tool's description."""
    allow_always: bool = True
    """Whether a `scope="thread"` answer will be honoured."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return {
            "id": self.id,
            "callId": self.call_id,
            "toolName": self.tool_name,
            "mode": self.mode,
            "reason": self.reason,
            "arguments": self.arguments,
            "description": self.description,
            "allowAlways": self.allow_always,
        }

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body."""
        fields = Fields(body, "ConsentRequest")
        return cls(
            id=fields.text("id", non_empty=True),
            call_id=fields.text("callId", non_empty=True),
            tool_name=fields.text("toolName", non_empty=True),
            mode=fields.text("mode"),
            reason=fields.text("reason", ""),
            arguments=fields.mapping("arguments", {}),
            description=fields.text("description", ""),
            allow_always=fields.flag("allowAlways", True),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsentAnswerBody:
    """The person's answer to a ConsentRequest (type 103, client → server)."""

    type: ClassVar[MessageType] = MessageType.CONSENT_ANSWER
    id: str
    """The `id` of the ConsentRequest this answers."""
    allow: bool
    """True to run the call."""
    scope: ConsentScope = "once"
    """`once`: this call only; `thread`: every call of this tool in the thread (if allowed)."""
    reason: str | None = None
    """Why the person refused; shown to the model."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return without_none({"id": self.id, "allow": self.allow, "scope": self.scope, "reason": self.reason})

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body."""
        fields = Fields(body, "ConsentAnswer")
        return cls(
            id=fields.text("id", non_empty=True),
            allow=fields.flag("allow"),
            scope=cast(ConsentScope, fields.choice("scope", _SCOPES, "once")),
            reason=fields.optional_text("reason"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStatus:
    """An agent run waits for its turn, started or ended (type 104, server → client).

    A `queued` status is not numbered (stanza id 0): it is live news of the run's place in the
    server's queue, sent only to a client that listed the `runQueue` feature, never kept or replayed.
    """

    type: ClassVar[MessageType] = MessageType.RUN_STATUS
    run_id: str
    """The run's id."""
    status: RunState
    """`queued` (it waits for one of the server's run slots), `started`, `finished` (it ended with a
    reason) or `failed` (an error stopped it)."""
    reason: str | None = None
    """How a finished run ended: `RunResult.reason` (`answer`, `terminal_result`, `limit`, ...)."""
    detail: str | None = None
    """Which limit was reached, why the run was canceled or failed."""
    output: str | None = None
    """The final answer of a finished run."""
    message_id: str | None = None
    """The id of the UserMessage the run answers (none for a run resumed after a restart)."""
    position: int | None = None
    """A queued run's place in the queue: 1 is the next run to start."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return without_none(
            {
                "runId": self.run_id,
                "status": self.status,
                "reason": self.reason,
                "detail": self.detail,
                "output": self.output,
                "messageId": self.message_id,
                "position": self.position,
            }
        )

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body."""
        fields = Fields(body, "RunStatus")
        return cls(
            run_id=fields.text("runId", non_empty=True),
            status=cast(RunState, fields.choice("status", _RUN_STATES)),
            reason=fields.optional_text("reason"),
            detail=fields.optional_text("detail"),
            output=fields.optional_text("output"),
            message_id=fields.optional_text("messageId"),
            position=fields.optional_integer("position", low=1),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseCancel:
    """The server settled a client call without the client's result (type 105, server → client).

    Sent when a call the client was sent ends another way: its deadline passed (`timeout`), the run
    was stopped or canceled (`canceled`), the client was gone past the reconnect grace period
    (`client_disconnected`). The client should stop the work if it still runs and send no result:
    one sent anyway is refused (302).
    """

    type: ClassVar[MessageType] = MessageType.TOOL_USE_CANCEL
    id: str
    """The ToolUseRequest's `id`."""
    code: str
    """How the server settled the call: a wire code (`timeout`, `canceled`, `client_disconnected`, ...)."""
    reason: str | None = None
    """Why, in words."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return without_none({"id": self.id, "code": self.code, "reason": self.reason})

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body."""
        fields = Fields(body, "ToolUseCancel")
        return cls(
            id=fields.text("id", non_empty=True), code=fields.text("code"), reason=fields.optional_text("reason")
        )
