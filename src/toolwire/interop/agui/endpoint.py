"""`POST /agui`: the AG-UI protocol (`RunAgentInput` in, SSE events out) beside `/ws`.

```
toolwire serve --app myapp:make_agent --agui
POST /agui   Authorization: Bearer <token>   body: RunAgentInput (JSON)   → text/event-stream
```

The served agent answers on the thread `threadId` names, in the store `/ws` uses: a thread the
principal does not have yet is created for it; another principal's thread is refused (403). The
request's `messages` are reconciled with the stored transcript (`reconcile.reconcile`: the new user
message(s) at the end are the prompt; results for the thread's waiting front-end calls are their
answers; anything else must be in the transcript, or the request is refused, 400/409, before any
event). `tools` become the thread's client tools for the run (one group, `agui`, expanded): a
call of one ends the response with `RUN_FINISHED` naming it pending, and the run waits for the
result in the next request (`live_runs.LiveRun`). A call the policy asks about ends the response
with an `interrupt` outcome, answered by the next request's `resume` (`interrupts`).

Refusals before the stream starts are HTTP errors with a JSON body `{"error", "code"}`: 401 no
or a wrong token, 403 a refused `Origin` or another principal's thread, 400 a bad body or a history
the thread does not have, 409 a run of the thread in progress, a call's second result, or a new
message while a front-end call waits, 429 too many threads. A run that fails once the stream
started ends with `RUN_ERROR`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any, Final

from anyio.streams.memory import MemoryObjectReceiveStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..._extras import import_extra
from ...messages import Message, ToolResultMessage

import_extra("ag_ui", "agui")  # a missing package fails here, naming the extra to install

from ag_ui.core import BaseEvent, RunAgentInput  # noqa: E402
from ag_ui.encoder import EventEncoder  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from ..frontends.answers import Reconciled  # noqa: E402
from ..frontends.endpoint_base import MAX_BODY_BYTES, FrontEndEndpoint, Plan, Refused, mount  # noqa: E402
from ..frontends.live_runs import LiveRun  # noqa: E402
from .event_map import (  # noqa: E402
    EventMapper,
    run_error,
    run_finished,
    run_interrupted,
    run_started,
    state_snapshot,
)
from .interrupts import approvals, interrupt  # noqa: E402
from .reconcile import reconcile  # noqa: E402

__all__ = ["GROUP", "MAX_BODY_BYTES", "PATH", "AguiEndpoint", "mount_agui"]

_log = logging.getLogger("toolwire.agui")

PATH: Final = "/agui"
"""Where the endpoint answers."""
GROUP: Final = "agui"
"""The client tool group a request's `tools` are registered as (expanded, replaced by each request)."""


class AguiEndpoint(FrontEndEndpoint[BaseEvent, RunAgentInput]):
    """The AG-UI endpoint of a toolwire server; `run()` must be entered while it serves.

    Args:
        server: The `ToolwireServer` of the app (`app.state.toolwire`): its agent, tokens, origins.
    """

    group = GROUP

    async def read(self, request: Request, body: bytes) -> RunAgentInput:
        """The body as a `RunAgentInput` (400 when it is not one)."""
        try:
            return RunAgentInput.model_validate_json(body)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, error['loc']))}: {error['msg']}" for error in exc.errors()[:5])
            raise Refused(400, "invalid_input", f"the body is not a RunAgentInput: {problems}") from None

    def thread_of(self, given: RunAgentInput) -> tuple[str, str]:
        """`threadId` and `runId`."""
        return given.thread_id, given.run_id

    def reconciled(
        self,
        given: RunAgentInput,
        stored: Sequence[Message],
        waiting: set[str],
        decided: dict[str, ToolResultMessage],
    ) -> Reconciled:
        """`messages` against the transcript (`reconcile.reconcile`); `resume` answers consent questions."""
        new = reconcile(stored, waiting, given.messages, decided)
        if not given.resume:
            return new
        return replace(new, approvals=approvals(given.resume), resumed=True)

    def version(self, given: RunAgentInput) -> str | None:
        """`protocolVersion`: a client before AG-UI 1.0 declares none."""
        return given.protocol_version

    def answers_questions(self, plan: Plan) -> bool:
        """A client of AG-UI 1.0 or later: interrupts and `resume` came with 1.0."""
        return declares_1_0(plan.version)

    def tools(self, given: RunAgentInput) -> list[dict[str, Any]]:
        """`tools` as client tool definitions."""
        return [
            {
                "name": tool.name,
                "description": tool.description,
                "parametersSchema": tool.parameters or {"type": "object"},
            }
            for tool in given.tools or ()
        ]

    def mapper(self, plan: Plan) -> EventMapper:
        """A new `EventMapper`, knowing the front end's tools."""
        return EventMapper({str(tool["name"]) for tool in plan.tools})

    def opening(self, plan: Plan, live: LiveRun[BaseEvent]) -> list[BaseEvent]:
        """`RUN_STARTED`."""
        return [run_started(plan.thread_id, plan.run_id)]

    async def state(self, plan: Plan, live: LiveRun[BaseEvent]) -> list[BaseEvent]:
        """`STATE_SNAPSHOT` of the thread's client tools (the store's, after what the run did)."""
        agent = self.server.agent
        saved = await agent.store.load_client_state(plan.thread_id)
        return [state_snapshot(saved, collapse=agent.client_tools.collapse_client_tools)]

    def closing(self, plan: Plan, live: LiveRun[BaseEvent]) -> list[BaseEvent]:
        """`RUN_ERROR`, or `RUN_FINISHED`: the run's end, its consent questions, or the front-end calls left pending."""
        if live.error is not None:
            return [run_error(*live.error)]
        if live.done:
            return [run_finished(plan.thread_id, plan.run_id, live.result)]
        if not declares_1_0(plan.version):  # its schema has no outcome: it finds the calls pending itself
            return [run_finished(plan.thread_id, plan.run_id, None)]
        if live.asking:
            timeout = self.server.agent.policy.consent_timeout
            questions = [interrupt(asking, timeout) for asking in live.asking.values()]
            return [run_interrupted(plan.thread_id, plan.run_id, questions)]
        return [run_finished(plan.thread_id, plan.run_id, None, list(live.waiting))]

    def respond(
        self, request: Request, plan: Plan, events: MemoryObjectReceiveStream[BaseEvent], headers: dict[str, str]
    ) -> Response:
        """SSE (or the encoding the `Accept` header asks for)."""
        encoder = EventEncoder(accept=request.headers.get("accept", ""))
        return StreamingResponse(_encoded(events, encoder), media_type=encoder.get_content_type(), headers=headers)


def declares_1_0(version: str | None) -> bool:
    """True when a client's `protocolVersion` is 1.0 or later (one that is not `MAJOR.MINOR` counts as later)."""
    if version is None:
        return False
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return True
    return (major, minor) >= (1, 0)


def mount_agui(app: Starlette, *, path: str = PATH) -> AguiEndpoint:
    """Serve the agent of a toolwire server's app over AG-UI at `path` (`POST`), next to `/ws`.

    The endpoint accepts the tokens and browser origins `/ws` accepts, and shares its store. Its
    lifespan joins the app's: run the app with its lifespan on (uvicorn's `lifespan="on"`).

    Raises:
        UsageError: `app` is not a toolwire server's app.
    """
    endpoint: AguiEndpoint = mount(app, AguiEndpoint, path, "mount_agui")
    return endpoint


async def _encoded(events: MemoryObjectReceiveStream[BaseEvent], encoder: EventEncoder) -> AsyncIterator[str]:
    async with events:
        async for event in events:
            yield encoder.encode(event)
