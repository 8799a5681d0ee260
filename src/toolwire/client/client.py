"""`Client`: one conversation with a toolwire server, and `connect()` to open it.

The `Link` carries the frames; the client acts on what arrives and turns it into events:

```
ToolUseRequest(client) ──► ledger ──► handler task ──► ToolUseResult   (a known id: the stored result)
ToolUseCancel ──► the handler task cancelled, no result sent, ClientToolCanceled
ErrorMessage 302 for a result sent ──► ResultRefused
ToolUseRequest(server), ToolUseResult ──► ServerToolCall, ServerToolResult (mirrored, never run here)
ConsentRequest ──► consent task ──► ConsentAnswer, ConsentPrompt
AssistantSentence, RunStatus ──► AnswerText, RunQueued, RunStarted, RemoteRunFinished | RunFailed
RegisterToolsResult ──► the waiting register(); ErrorMessage ──► logged, or RunFailed for our message
```
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any, Final, TypeVar, overload

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from .._extras import import_extra
from ..client_tools.definitions import ClientToolGroup
from ..client_tools.validation import validate_groups
from ..envelopes import ResultType
from ..errors import RegistrationError, ToolwireError, UsageError
from ..protocol import (
    DEFAULT_LIMITS,
    AssistantSentence,
    ConsentAnswerBody,
    ConsentRequestBody,
    ControlStop,
    Envelope,
    ErrorCode,
    ErrorMessage,
    Limits,
    RegisterTools,
    RegisterToolsResult,
    RunStatus,
    ToolUseCancel,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
    tool_result,
)
from ..telemetry import Telemetry, client_execution
from . import consent
from .handlers import ExecutionLedger, Handler, Handlers, elapsed_ms, failure
from .link import Link, Reconnect
from .run_events import (
    AnswerText,
    ClientToolCall,
    ClientToolCanceled,
    ConnectionClosed,
    ConsentPrompt,
    Event,
    RemoteRunFinished,
    ResultRefused,
    RunFailed,
    RunQueued,
    RunStarted,
    ServerToolCall,
    ServerToolResult,
)

__all__ = ["Client", "connect"]

_log = logging.getLogger("toolwire.client")

H = TypeVar("H", bound=Handler)
_MAX_REMEMBERED: Final = 1_000


class _Waiter:
    """One RegisterTools waiting for its RegisterToolsResult."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: RegisterToolsResult | ToolwireError | None = None

    def set(self, result: RegisterToolsResult | ToolwireError) -> None:
        self.result = result
        self.done.set()


class Client:
    """A conversation with a toolwire server; get one from `connect()`.

    Attributes:
        handlers: The functions that run this client's tools (see `tool()`).
        ledger: Every client tool request answered, by request id.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str,
        on_consent: consent.ConsentPromptHandler | None = None,
        on_refused: Callable[[ResultRefused], object] | None = None,
        reconnect: Reconnect | None = None,
        limits: Limits = DEFAULT_LIMITS,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.handlers = Handlers(limits)
        self.telemetry = telemetry if telemetry is not None else Telemetry()
        """Where the spans of this client's executions go (see `toolwire.telemetry`)."""
        self.ledger = ExecutionLedger()
        self.on_consent = on_consent
        self.on_refused = on_refused
        """Told of every result the server refused, also outside a `send()` (its run may have ended)."""
        self.link = Link(url, token=token, receive=self._act, failed=self._fail, reconnect=reconnect, limits=limits)
        """The connection across sockets (see `toolwire.client.link`)."""
        self._tasks: TaskGroup | None = None
        self._consents: dict[str, ConsentAnswerBody | None] = {}
        self._mirrored: dict[str, str] = {}
        self._registrations: deque[_Waiter] = deque()
        self._listener: MemoryObjectSendStream[Event | ToolwireError] | None = None
        self._message_stanza: int | None = None
        self._run_id: str | None = None
        self._running: dict[str, anyio.CancelScope] = {}
        """Request id → the scope of its handler while it runs (a ToolUseCancel cancels it)."""
        self._withdrawn: set[str] = set()
        """Requests the server settled without this client's result: none is sent for them."""
        self._results: dict[int, str] = {}
        """Stanza id → the request id of a ToolUseResult this client sent (a 302 names the stanza)."""

    def __repr__(self) -> str:
        return f"<Client {self.link.url.split('?', 1)[0]} conversation={self.conversation_id}>"

    @property
    def conversation_id(self) -> str:
        """The conversation's id; pass it as `connect(conversation=...)` to continue it later."""
        return self.link.conversation_id

    @property
    def connected(self) -> bool:
        """True while a socket is open and its handshake done (False while reconnecting)."""
        return self.link.connected

    # -- tools -----------------------------------------------------------------------------------

    @overload
    def tool(self, name: H, /) -> H: ...
    @overload
    def tool(self, name: str | None = None, /, *, timeout: float | None = None) -> Callable[[H], H]: ...

    def tool(self, name: str | Handler | None = None, /, *, timeout: float | None = None) -> Any:
        """Register a handler: `@client.tool`, `@client.tool("OpenFile")` or `@client.tool("X", timeout=5)`.

        The function gets the request's arguments as keyword arguments and is returned unchanged.
        `timeout` (seconds) applies when it is shorter than the request's `timeoutMs`.
        """
        if callable(name):
            self.handlers.add(_name_of(name), name)
            return name

        def decorate(function: Handler) -> Handler:
            self.handlers.add(name or _name_of(function), function, timeout=timeout)
            return function

        return decorate

    async def register(
        self,
        groups: Iterable[ClientToolGroup | Mapping[str, Any]],
        *,
        expanded_containers: Iterable[str] = (),
        reset_client_state: bool = False,
    ) -> None:
        """Register tool groups for the conversation and wait until the server applied them.

        `connect(groups=...)` calls it; call it again to change the groups (same-named groups are
        replaced). The server keeps them across reconnects and restarts.

        Raises:
            RegistrationError: The groups were refused, here or by the server; names the group and tool.
            ConnectionClosed: The connection ended for good first.
        """
        parsed = [group if isinstance(group, ClientToolGroup) else ClientToolGroup.from_dict(group) for group in groups]
        validators = validate_groups(parsed)  # the server's own checks, before anything is sent
        waiter = _Waiter()
        self._registrations.append(waiter)
        message = RegisterTools(
            groups=tuple(group.to_dict() for group in parsed),
            expanded_containers=tuple(expanded_containers),
            reset_client_state=reset_client_state,
        )
        await self.link.post(message)
        await waiter.done.wait()
        match waiter.result:
            case RegisterToolsResult(ok=True):
                self.handlers.validators.update(validators)
            case RegisterToolsResult(error=error, group=group, tool=tool):
                # The server sends the whole exception text; keep only the problem after its prefix.
                problem = error or "refused"
                if problem.startswith("client tool registration refused"):
                    problem = problem.partition(": ")[2] or problem
                raise RegistrationError(problem, group=group, tool=tool)
            case error:
                assert isinstance(error, ToolwireError)
                raise error

    # -- chatting ------------------------------------------------------------------------------

    async def send(self, text: str) -> AsyncIterator[Event]:
        """Send a user message and stream what happens until its run ends.

        Yields `RunQueued` while the server makes the run wait for a slot (its place),
        `RunStarted`, `AnswerText` pieces, `ServerToolCall` / `ServerToolResult`
        (mirrored, never executed here), `ClientToolCall` (what this client answered),
        `ClientToolCanceled` (a call the server settled without this client's result),
        `ResultRefused`, `ConsentPrompt`, and last `RemoteRunFinished`. Client tools and consent prompts are answered
        whether or not you iterate. Iterate to the end (or `stop()` the run) before sending the
        next message: a new `send()` ends the iteration of an earlier one.

        Raises:
            RunFailed: The server refused the message (`code` 503: it is busy, try again later) or
                the run failed.
            ConnectionClosed: The connection ended for good.
        """
        if self._listener is not None:  # an earlier send() left before its end: it ends now
            self._listener.close()
        sender, receiver = anyio.create_memory_object_stream[Event | ToolwireError](math.inf)
        self._listener = sender
        try:
            async with receiver:
                message_id = _new_id("msg")
                await self.link.post(UserMessageBody(id=message_id, content=text), numbered=self._numbered)
                run_id: str | None = None
                async for item in receiver:
                    if isinstance(item, ToolwireError):
                        if not isinstance(item, RunFailed) or item.run_id in (None, run_id):
                            raise item
                        continue  # an earlier run's failure, replayed on a resume
                    if run_id is None:
                        if not isinstance(item, RunQueued | RunStarted) or item.message_id not in (None, message_id):
                            continue  # an earlier run, replayed on a resume
                        run_id = item.run_id
                    elif isinstance(item, RunQueued | RunStarted) and item.message_id is None:
                        run_id = item.run_id  # this run, resumed by a restarted server or another replica
                    yield item
                    if isinstance(item, RemoteRunFinished):
                        return
        finally:
            if self._listener is sender:
                self._listener = self._message_stanza = None
            sender.close()

    async def ask(self, text: str) -> str:
        """Send a user message and return the final answer ("" when the run ended without one).

        Raises:
            RunFailed: The server refused the message or the run failed.
            ConnectionClosed: The connection ended for good.
        """
        output = ""
        async for event in self.send(text):
            if isinstance(event, RemoteRunFinished):
                output = event.output or ""
        return output

    async def stop(self, reason: str | None = None) -> None:
        """Ask the server to stop the run in progress (ControlStop); it then finishes as `canceled`."""
        await self.link.post(ControlStop(run_id=self._run_id, reason=reason))

    # -- lifetime ------------------------------------------------------------------------------

    async def start(self, tasks: TaskGroup, conversation: str | None) -> None:
        """Connect, complete the handshake and start reading in `tasks`; `connect()` calls it.

        Raises:
            ConnectionClosed: The server cannot be reached or refused the connection.
        """
        self._tasks = tasks
        socket = await self.link.open(conversation)
        tasks.start_soon(self.link.run, socket)

    async def aclose(self) -> None:
        """Close the connection (`connect()` then cancels the handlers still running)."""
        await self.link.aclose()

    # -- what arrives --------------------------------------------------------------------------

    def _act(self, envelope: Envelope) -> None:
        match envelope.message:
            case ToolUseRequest(execution="server") as request:
                self._remember(self._mirrored, request.id, request.tool_name)
                self._emit(
                    ServerToolCall(
                        id=request.id, tool_name=request.tool_name, arguments=request.arguments, mode=request.mode
                    )
                )
            case ToolUseRequest() as request:  # "client", and "either" (it came to us: run it here)
                self._requested(request, envelope.meta)
            case ToolUseResult() as result:
                tool = self._mirrored.pop(result.id, "")
                self._emit(ServerToolResult(id=result.id, tool_name=tool, result=tool_result(result, tool=tool)))
            case ToolUseCancel(id=request_id, code=code, reason=reason):
                self._withdraw(request_id, code, reason)
            case ConsentRequestBody() as request:
                self._consent_requested(request)
            case AssistantSentence(text=text, message_id=message_id) if text:
                self._emit(AnswerText(text=text, message_id=message_id))
            case RunStatus(status="queued", run_id=run_id, message_id=message_id, position=position):
                self._run_id = run_id  # (a ControlStop names it: it leaves the queue)
                self._emit(RunQueued(run_id=run_id, position=position or 1, message_id=message_id))
            case RunStatus(status="started", run_id=run_id, message_id=message_id):
                self._run_id = run_id
                self._emit(RunStarted(run_id=run_id, message_id=message_id))
            case RunStatus(status="finished") as status:
                self._run_id = None
                self._emit(
                    RemoteRunFinished(
                        run_id=status.run_id, reason=status.reason, detail=status.detail, output=status.output
                    )
                )
            case RunStatus(run_id=run_id, detail=detail):
                self._run_id = None
                self._emit(RunFailed(f"the run failed: {detail or 'no reason given'}", run_id=run_id))
            case RegisterToolsResult() as result:
                if self._registrations:
                    self._registrations.popleft().set(result)
            case ErrorMessage() as error:
                self._error(error)
            case other:  # StartAnswer, AssistantMessage: the sentences and RunFinished carry them
                _log.debug("ignored %s", type(other).__name__)

    def _numbered(self, stanza: int) -> None:
        self._message_stanza = stanza  # a refusal names it as its originatingId

    def _error(self, error: ErrorMessage) -> None:
        if not error.recoverable:  # the reader closes and reports it
            return
        if self._message_stanza is not None and error.originating_id == self._message_stanza:
            self._emit(RunFailed(f"the server refused the message: {error.message}", code=error.code))
        elif error.code == ErrorCode.RESULT_REFUSED:  # the call was settled without it, or answered already
            origin = error.originating_id
            request_id = self._results.get(origin) if isinstance(origin, int) else None
            _log.info("the server refused an answer (%s): %.200s", error.code, error.message)
            if request_id is not None:
                refused = ResultRefused(request_id=request_id, message=error.message)
                self._emit(refused)
                if self.on_refused is not None:
                    self.on_refused(refused)
        else:
            _log.warning("the server reported error %s: %.200s", error.code, error.message)

    def _requested(self, request: ToolUseRequest, meta: Mapping[str, Any]) -> None:
        assert self._tasks is not None
        entry = self.ledger.get(request.id)
        if entry is None:
            self.ledger.start(request)
            self._tasks.start_soon(self._execute, request, meta)
        elif entry.result is not None:  # delivered again: answer from the ledger, run nothing
            self._tasks.start_soon(self._answer, entry.result)
            self._emit(ClientToolCall(request=request, result=entry.result, replayed=True))
        # else: it is running now, and its answer will go out when it ends

    async def _execute(self, request: ToolUseRequest, meta: Mapping[str, Any]) -> None:
        started = time.monotonic()
        result: ToolUseResult | None = None
        tracer = self.telemetry.tracer()
        with anyio.CancelScope() as scope:
            self._running[request.id] = scope
            try:
                answer = self.handlers.run(request)
                if tracer is not None:  # a child of the server's call span, when the request names it
                    call_id = request.call_id or request.id
                    answer = client_execution(tracer, request.tool_name, call_id, meta, answer, _outcome)
                result = await answer
            except Exception as exc:  # a bug here must still answer the request, and not end the client
                _log.exception("answering request %s failed", request.id)
                result = failure(request.id, "execution_error", f"the client failed: {exc}")
            finally:
                del self._running[request.id]
        if result is None or request.id in self._withdrawn:  # the server settled it: send nothing
            result = failure(request.id, "canceled", "the server settled the call first")
            entry = self.ledger.get(request.id)
            if entry is not None:
                entry.result, entry.duration_ms = result, elapsed_ms(started)
            return
        entry = self.ledger.get(request.id)
        if entry is not None:
            entry.result, entry.duration_ms = result, elapsed_ms(started)
        await self._answer(result)
        self._emit(ClientToolCall(request=request, result=result, duration_ms=elapsed_ms(started)))

    def _withdraw(self, request_id: str, code: str, reason: str | None) -> None:
        """The server settled a call without this client's result: stop its handler, send nothing."""
        self._remember_id(self._withdrawn, request_id)
        scope = self._running.get(request_id)
        if scope is not None:
            scope.cancel()
        self._emit(ClientToolCanceled(request_id=request_id, code=code, reason=reason, running=scope is not None))

    def _consent_requested(self, request: ConsentRequestBody) -> None:
        assert self._tasks is not None
        if request.id not in self._consents:
            self._remember(self._consents, request.id, None)
            self._tasks.start_soon(self._answer_consent, request)
        elif (answer := self._consents[request.id]) is not None:  # asked again: the same answer
            self._tasks.start_soon(self._answer, answer)

    async def _answer_consent(self, request: ConsentRequestBody) -> None:
        answer = await consent.ask(self.on_consent, request)
        self._consents[request.id] = answer
        await self._answer(answer)
        self._emit(ConsentPrompt(request=request, answer=answer))

    def _emit(self, item: Event | ToolwireError) -> None:
        if self._listener is not None:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._listener.send_nowait(item)

    async def _answer(self, message: ToolUseResult | ConsentAnswerBody) -> None:
        request_id = message.id if isinstance(message, ToolUseResult) else None

        def numbered(stanza: int) -> None:  # a 302 refusing a result names its stanza
            if request_id is not None:
                self._remember(self._results, stanza, request_id)

        with suppress(ConnectionClosed):  # gone for good: whoever waits has learnt it already
            await self.link.post(message, numbered=numbered)

    def _fail(self, error: ConnectionClosed) -> None:
        """The link gave up: wake whoever waits."""
        self._emit(error)
        while self._registrations:
            self._registrations.popleft().set(error)

    @staticmethod
    def _remember(table: dict[Any, Any], key: Any, value: Any) -> None:
        table[key] = value
        if len(table) > _MAX_REMEMBERED:
            del table[next(iter(table))]

    @staticmethod
    def _remember_id(ids: set[str], request_id: str) -> None:
        if len(ids) >= _MAX_REMEMBERED:
            ids.clear()  # old withdrawals: their handlers ended long ago
        ids.add(request_id)


@asynccontextmanager
async def connect(
    url: str,
    *,
    token: str,
    groups: Iterable[ClientToolGroup | Mapping[str, Any]] = (),
    handlers: Mapping[str, Handler] | None = None,
    on_consent: consent.ConsentPromptHandler | None = None,
    on_refused: Callable[[ResultRefused], object] | None = None,
    conversation: str | None = None,
    expanded_containers: Iterable[str] = (),
    reconnect: bool | Reconnect = True,
    limits: Limits = DEFAULT_LIMITS,
    telemetry: Telemetry | None = None,
) -> AsyncGenerator[Client]:
    """Connect to a toolwire server, open (or resume) a conversation and register tool groups.

    ```python
    async with connect("ws://127.0.0.1:8765/ws", token=token, groups=[ide], handlers={"OpenFile": open_file}) as client:
        print(await client.ask("Open the config file"))
    ```

    Args:
        url: The server's WebSocket endpoint, e.g. `ws://127.0.0.1:8765/ws`.
        token: Sent as `Authorization: Bearer <token>`; never logged.
        groups: `ClientToolGroup`s or their camelCase dicts, registered before this returns.
        handlers: Tool name → function (more with `@client.tool`).
        on_consent: Answers the server's consent prompts (see `toolwire.client.consent`).
        on_refused: Told when the server refuses a result this client sent (`ResultRefused`: the
            call was settled without it, so the tool ran but the model was not told); a
            `send()` in progress also yields it.
        conversation: The conversation to continue (`client.conversation_id` of an earlier one).
        expanded_containers: Groups or skills to offer expanded from the start.
        reconnect: Reconnect and resume when the socket drops (`Reconnect(...)` to tune it).
        limits: What a frame from the server may contain.
        telemetry: Where the spans of this client's tool executions go (the global OpenTelemetry
            provider by default; nothing without one): each is an `execute_tool` span, a child of
            the server's call span when the request's `meta` names it (see `toolwire.telemetry`).

    Raises:
        ConnectionClosed: The server cannot be reached or refused (token, unknown conversation).
        RegistrationError: The groups were refused.
        UsageError: The `server` extra (websockets) is not installed.
    """
    import_extra("websockets", "server")
    policy = Reconnect() if reconnect is True else reconnect or None
    client = Client(
        url,
        token=token,
        on_consent=on_consent,
        on_refused=on_refused,
        reconnect=policy,
        limits=limits,
        telemetry=telemetry,
    )
    for name, function in (handlers or {}).items():
        client.handlers.add(name, function)
    failure: BaseException | None = None
    async with anyio.create_task_group() as tasks:
        try:
            await client.start(tasks, conversation)
            groups = list(groups)
            if groups:
                await client.register(groups, expanded_containers=expanded_containers)
            yield client
        except BaseException as exc:  # re-raised below as it is, not wrapped in an exception group
            failure = exc
        finally:
            await client.aclose()
            tasks.cancel_scope.cancel()
    if failure is not None:
        raise failure


def _outcome(result: ToolUseResult) -> tuple[str, str | None]:
    """A result's outcome type and error code, for its span."""
    kind = "success" if result.success else "error"
    if result.result_type is not None:
        with suppress(ValueError):
            kind = ResultType(result.result_type).name.lower()
    return kind, None if result.success else result.error_code


def _name_of(function: Handler) -> str:
    name = getattr(function, "__name__", None)
    if not isinstance(name, str):
        raise UsageError(f'name the tool: @client.tool("ToolName") (a {type(function).__name__} has no __name__)')
    return name


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"
