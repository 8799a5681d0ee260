"""The exceptions toolwire raises, and the one a tool raises to report a failure.

Failures the model should see never propagate as exceptions: `invoke()` turns them into a
`ToolResult` of the right `ResultType`. What propagates is a developer mistake (`UsageError`,
raised when a tool or a policy is defined) or input that cannot be decoded (`EnvelopeError`).

```
ToolwireError                        every exception toolwire defines derives from it
├── UsageError                       a tool, toolbox, policy, filter or option is defined wrongly
├── EnvelopeError (ValueError)       a ToolCall / ToolResult / message has the wrong shape
├── InvalidArguments (ValueError)    a call's arguments do not match the tool's parameters
├── RegistrationError (ValueError)   client tool groups (or an augmentation) were refused
├── ToolError                        raised inside a tool: becomes an Error result with its code and message
├── CallCanceled                     raised by `ToolContext.check_cancelled()` once the call was canceled
├── ProviderError                    a model provider could not be reached or refused a request
├── ClientDisconnected               a client tool's client was gone (`FailFast`)
│   └── ConnectionClosed             toolwire.client: the connection ended for good
├── Fenced                           another replica took a conversation's lease: this one's write was refused
├── StoreUnavailable                 a networked store's connection was lost or refused (PostgreSQL restarting)
├── RunFailed                        toolwire.client: the server refused the message, or the run failed
├── ProtocolError                    toolwire.protocol: a frame refused (answered with an ErrorMessage)
├── HistoryConflict                  toolwire.interop.agui: a front end's messages do not fit the thread
└── TranscriptError (AssertionError) toolwire.testing: a transcript breaks a provider's rule
```

`ProtocolError`, `ConnectionClosed`, `RunFailed`, `HistoryConflict` and `TranscriptError` are defined
beside what raises them (the protocol, the client, the AG-UI endpoint, the test helpers) and
re-exported there.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CallCanceled",
    "ClientDisconnected",
    "EnvelopeError",
    "Fenced",
    "InvalidArguments",
    "ProviderError",
    "RegistrationError",
    "StoreUnavailable",
    "ToolError",
    "ToolwireError",
    "UsageError",
]


class ToolwireError(Exception):
    """Root of every exception toolwire defines."""


class UsageError(ToolwireError):
    """A tool, toolbox, policy or filter was defined or configured wrongly; fix the code."""


class EnvelopeError(ToolwireError, ValueError):
    """A `ToolCall` or `ToolResult` in JSON or wire form does not have the shape the spec requires."""


class ToolError(ToolwireError):
    """Raise inside a tool to fail the call with a chosen code and message.

    The model sees `message`; `invoke()` never shows it a traceback. By default the failure asks
    the model to follow up (try other arguments or another tool); pass `terminal=True` to end the
    run instead, or `retryable=True` to let a retry filter try the call again.

    Args:
        message: What went wrong, written for the model and the user.
        code: A machine-readable code; custom codes are fine and map to `ResultType.ERROR`.
        error_type: A short type name shown in the error payload (defaults to none).
        terminal: End the run after this call's batch.
        needs_followup: Ask the model to correct itself; ignored when `terminal` is true.
        retryable: The failure is transient; `Retry` filters may try again.
        data: Structured details that travel with the result.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "execution_error",
        error_type: str | None = None,
        terminal: bool = False,
        needs_followup: bool = True,
        retryable: bool = False,
        data: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.error_type = error_type
        self.terminal = terminal
        self.needs_followup = needs_followup and not terminal
        self.retryable = retryable
        self.data = data


class CallCanceled(ToolwireError):
    """The call this tool runs for was canceled or timed out; stop and return."""


class InvalidArguments(ToolwireError, ValueError):
    """A call's arguments do not match the tool's parameters; `problems` lists each one."""

    def __init__(self, tool: str, problems: list[str]) -> None:
        self.tool = tool
        self.problems = problems
        super().__init__(f"Invalid arguments for tool '{tool}': " + "; ".join(problems))


class ProviderError(ToolwireError):
    """A model provider could not be reached or refused a request; the message says what to check."""

    def __init__(self, provider: str, message: str, *, status: int | None = None) -> None:
        self.provider = provider
        self.status = status
        prefix = f"{provider} returned HTTP {status}" if status is not None else provider
        super().__init__(f"{prefix}: {message}")


class RegistrationError(ToolwireError, ValueError):
    """A client tool registration or augmentation was refused; nothing of it was applied.

    The message names the group, the tool (or skill) and the problem.
    """

    def __init__(self, problem: str, *, group: str | None = None, tool: str | None = None) -> None:
        self.group = group
        self.tool = tool
        self.problem = problem
        where: list[str] = []
        if group is not None:
            where.append(f"group '{group}'")
        if tool is not None:
            where.append(f"tool '{tool}'")
        prefix = "client tool registration refused" + (f" ({', '.join(where)})" if where else "")
        super().__init__(f"{prefix}: {problem}")


class ClientDisconnected(ToolwireError):
    """The client that executes a thread's client tools is gone (and the strategy is `FailFast`)."""


class StoreUnavailable(ToolwireError):
    """The store could not be reached: its connection was lost or refused (a database restarting, a network cut).

    Raised by a networked store (`PostgresStore`) in place of its driver's error. Whether a write in
    flight was kept is unknown, as after a crash: a server stops the conversation's run where it
    stands, closes its socket, and resumes the run from the store once the store answers again.
    """


class Fenced(ToolwireError):
    """Another replica took the conversation's lease (a newer epoch): this replica's write was refused.

    Raised by a shared store (`PostgresStore`) for a write that depends on owning the conversation
    (its transcript, its ledger entries, its protocol state) once the lease this store held moved
    on. Nothing of the write was kept. Stop the conversation's run at once: its new owner goes on.
    """

    def __init__(self, conversation: str, epoch: int) -> None:
        self.conversation = conversation
        self.epoch = epoch
        super().__init__(
            f"conversation {conversation}: its lease moved past epoch {epoch} (another replica owns it now);"
            " the write was refused, stop this conversation's run"
        )
