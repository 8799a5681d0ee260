"""`LiveRun`: an agent run behind front-end requests, which lives on while a front-end tool call waits.

A request (`POST /agui`, `POST /ai-sdk/chat`) ends when the run needs the front end (a front-end
tool call): its response ends with the call pending (AG-UI: `RUN_FINISHED` naming it; the AI SDK:
after `tool-input-available`), and the front end runs the tool and sends the result
in its next request. toolwire's run does not end there: it waits for the result, in this process,
exactly as for a client tool of `/ws`, with the call DISPATCHED in the ledger and its deadline
running. The next request hands the result to the waiting call (`LiveRun.answer`), and the run's
events from then on go to that request's stream. A front end that never comes back leaves a
Timeout at the call's deadline, and the run goes on to its end with no one listening (what it
did is in the transcript).

```
request 1: prompt ──► run ──► TOOL_CALL_* (front-end call) ──► quiet: only front-end calls wait
           ◄── RUN_FINISHED (pendingToolCallIds)          the run waits, the call is DISPATCHED
request 2: tool message ──► LiveRun.answer ──► the call's result ──► the run goes on ──► RUN_FINISHED
```

A consent question (the policy's Ask) goes the same way: the channel answers consent prompts
(`ConsentChannel`), so the question waits in the run (`LiveRun.asking`), the response ends with it
(AG-UI: an `interrupt` outcome), and the next request's answer (`LiveRun.approve`) resolves it,
within the policy's `consent_timeout` (past it, the call is Denied).

After a restart (the run was parked: the ledger keeps the DISPATCHED call and its deadline), the
next request resumes the run (`Agent.resume`) with its answers ready on the channel: the resumed
call takes its answer when it asks for it, or its Timeout when its deadline passed meanwhile; a
question asked again takes the answer the request brought.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream

from ...client_tools.channel import ClientHub
from ...client_tools.definitions import ClientToolRequest
from ...errors import ClientDisconnected, ProviderError, RegistrationError
from ...events import RunEvent, RunFinished, RunResult
from ...pipeline import ConsentRequested, ToolCallFinished, ToolCallStarted
from ...policy import ConsentAnswer, ConsentRequest
from ...store import CallState, ThreadStore
from .answers import Answer

__all__ = ["Asking", "FrontEndChannel", "LiveRun", "Mapper"]

_log = logging.getLogger("toolwire.frontends")

E = TypeVar("E")


class Mapper(Protocol[E]):
    """Turns a run's events into a protocol's events (one per request; `agui.event_map`, `aisdk.parts`)."""

    def events(self, event: RunEvent) -> list[E]:
        """The protocol events `event` stands for (often none)."""
        ...

    def close(self) -> list[E]:
        """End what is open (a text message) before the response ends."""
        ...


@dataclass(slots=True)
class Asking:
    """A consent question the run waits on, put to the front end."""

    request: ConsentRequest
    asked_at: float
    """When it was asked (`time.time()`): it expires `consent_timeout` seconds later."""
    answer: ConsentAnswer | None = None
    answered: anyio.Event = field(default_factory=anyio.Event)


class FrontEndChannel:
    """Where a run's front-end tool calls and consent questions go (`ClientChannel`, `ConsentChannel`).

    A request is answered at once when the request that (re)started the run brought its answer
    (after a restart); otherwise its call is marked DISPATCHED and waits for `LiveRun.answer`.
    A question likewise: the answer brought, else it waits for `LiveRun.approve`.
    """

    records_dispatch = True
    """The channel marks a call DISPATCHED itself, before the run can be seen waiting for it."""

    def __init__(
        self, run: LiveRun[Any], answers: Mapping[str, Answer], approvals: Mapping[str, ConsentAnswer]
    ) -> None:
        self._run = run
        self._answers = dict(answers)
        self._approvals = dict(approvals)

    async def consent(self, request: ConsentRequest) -> ConsentAnswer:
        """Ask the front end whether the call may run: the answer brought, or the next request's."""
        if request.running:  # a question while a call runs has no place in the front ends' protocols
            return ConsentAnswer(False, "the front end cannot be asked a question while a call runs")
        if not self._run.asks:
            return ConsentAnswer(False, "the front end cannot answer consent questions")
        if (answer := self._approvals.pop(request.call.id, None)) is not None:
            return answer
        return await self._run.ask(request)

    async def send(self, request: ClientToolRequest) -> None:
        """Answer the request from what was brought, or mark it DISPATCHED and let the run wait."""
        run = self._run
        if (answer := self._answers.pop(request.call_id, None)) is not None:
            run.answered.add(request.call_id)
            run.hub.deliver(run.thread_id, answer.response(request.request_id))
            return
        await run.store.set_call_state(run.thread_id, request.call_id, CallState.DISPATCHED)
        run.waiting[request.call_id] = request
        run.changed()


class LiveRun(Generic[E]):
    """One agent run of a thread served to a front end, and the request whose stream gets its events.

    Args:
        thread_id: The thread.
        hub: The agent's `ClientHub` (answers are delivered through it).
        store: The agent's store (the ledger).
        answers: Results brought for calls the run will ask for (a resume after a restart).
        mapper: The mapper of the first request (each request brings its own to `listen`).
        approvals: Answers brought for questions the run will ask again (a resume after a restart).
        known: Calls the front end has already (in the transcript): a resumed run does not
            announce them again (a client would take a second `TOOL_CALL_START` as more arguments).
    """

    def __init__(
        self,
        thread_id: str,
        hub: ClientHub,
        store: ThreadStore,
        answers: Mapping[str, Answer],
        mapper: Mapper[E],
        approvals: Mapping[str, ConsentAnswer] | None = None,
        known: frozenset[str] = frozenset(),
    ) -> None:
        self.thread_id = thread_id
        self.hub = hub
        self.store = store
        self.channel = FrontEndChannel(self, answers, approvals or {})
        self.waiting: dict[str, ClientToolRequest] = {}
        """Front-end calls sent and not answered: call id → request."""
        self.asking: dict[str, Asking] = {}
        """Consent questions put to the front end and not answered: call id → question."""
        self.asks = True
        """The last request's front end can answer consent questions (else they are answered no)."""
        self.answered: set[str] = set()
        """Front-end calls whose results came from the front end (it has them: no result event)."""
        self.done = False
        self.result: RunResult | None = None
        self.error: tuple[str, str] | None = None
        """(message, code) when the run failed."""
        self._running: set[str] = set()
        """Calls started and not finished."""
        self._announced: set[str] = set(known)
        """Calls the front end knows: its own (from the transcript), those whose consent question
        was mapped (with the call). Their start is not mapped (again)."""
        self._listener: MemoryObjectSendStream[E] | None = None
        self._mapper: Mapper[E] = mapper
        self._changed = anyio.Event()

    # -- who listens ---------------------------------------------------------------------------

    def listen(self, listener: MemoryObjectSendStream[E], mapper: Mapper[E]) -> None:
        """Send the run's events from now on to `listener` (one request's stream)."""
        self._listener, self._mapper = listener, mapper

    def release(self) -> None:
        """The request stops listening; events until the next one are dropped (they are in the transcript)."""
        self._listener = None

    @property
    def listened(self) -> bool:
        """True while a request streams the run's events."""
        return self._listener is not None

    # -- the run -------------------------------------------------------------------------------

    async def drive(self, run: Callable[[], Awaitable[RunResult | None]]) -> None:
        """Run the agent (`run`) to its end; its failure becomes `error`. Call in a task of its own."""
        try:
            self.result = await run()
        except ProviderError as exc:
            self.error = (str(exc), "model_error")
        except RegistrationError as exc:
            self.error = (f"the front end's tools were refused: {exc}", "invalid_tools")
        except ClientDisconnected as exc:
            self.error = (str(exc), "client_disconnected")
        except Exception:
            _log.exception("thread %s: the run failed", self.thread_id)
            self.error = ("the server failed; see its logs", "internal_error")
        finally:
            self.done = True
            self.changed()

    def on_event(self, event: RunEvent) -> None:
        """Told each event of the run, in its task: mapped and sent to the listening request."""
        match event:
            case ConsentRequested(request=request) if not request.running:
                if request.call.id in self._announced:  # a question asked again after a restart
                    self.changed()
                    return
                self._announced.add(request.call.id)
            case ToolCallStarted(call=call):
                self._running.add(call.id)
                if call.id in self._announced:  # its call went out with its question
                    self._announced.discard(call.id)
                    self.changed()
                    return
            case ToolCallFinished(call=call):
                self._running.discard(call.id)
                self.waiting.pop(call.id, None)
                if call.id in self.answered:  # the front end sent this result: it has it
                    self.answered.discard(call.id)
                    self.changed()
                    return
            case RunFinished(result=result):
                self.result = result
            case _:
                pass
        events = self._mapper.events(event)
        if events and (listener := self._listener) is not None:
            try:
                for mapped in events:
                    listener.send_nowait(mapped)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._listener = None  # the request went away; the run goes on
        self.changed()

    def answer(self, answer: Answer) -> bool:
        """Hand a front end's result to the call waiting for it; False when it waits no more."""
        request = self.waiting.get(answer.call_id)
        if request is None:
            return False
        self.answered.add(answer.call_id)
        if not self.hub.deliver(self.thread_id, answer.response(request.request_id)):
            self.answered.discard(answer.call_id)
            return False
        return True

    async def ask(self, request: ConsentRequest) -> ConsentAnswer:
        """Wait for the front end's answer to a consent question (the policy bounds the wait)."""
        asking = self.asking[request.call.id] = Asking(request, time.time())
        self.changed()
        try:
            await asking.answered.wait()
        finally:
            if self.asking.get(request.call.id) is asking:
                del self.asking[request.call.id]
            self.changed()
        assert asking.answer is not None
        return asking.answer

    def approve(self, call_id: str, answer: ConsentAnswer) -> bool:
        """Answer the consent question about `call_id`; False when none waits."""
        asking = self.asking.get(call_id)
        if asking is None or asking.answer is not None:
            return False
        asking.answer = answer
        asking.answered.set()
        return True

    @property
    def quiet(self) -> bool:
        """True when the run waits for the front end only: its calls' results, its answers to questions."""
        return bool(self.waiting or self.asking) and self._running <= self.waiting.keys()

    async def wait_quiet_or_done(self) -> None:
        """Wait until the run ended, or waits for the front end only."""
        while True:
            if self.done:
                return
            if self.quiet:
                # Calls of the batch started after this one's request was sent announce themselves
                # at their first step: let them take it before the run is called quiet.
                await anyio.lowlevel.checkpoint()
                await anyio.lowlevel.checkpoint()
                if self.quiet or self.done:
                    return
            await self._changed.wait()
            self._changed = anyio.Event()

    def changed(self) -> None:
        """Wake `wait_quiet_or_done`."""
        self._changed.set()
