"""`Handlers.run`: the answer a client sends reports what happened, as the server should read it."""

from __future__ import annotations

import threading

import anyio

from toolwire.client import Handlers
from toolwire.client_tools.definitions import ClientToolResponse
from toolwire.protocol import ToolUseRequest, tool_result

REQUEST = ToolUseRequest(id="req_1", tool_name="Slow", arguments={}, execution="client")


async def test_a_sync_handler_past_its_deadline_says_its_effect_is_unknown() -> None:
    release = threading.Event()  # the handler's thread cannot be stopped: it is released after
    handlers = Handlers()
    handlers.add("Slow", lambda: release.wait(10), timeout=0.05)
    try:
        answer = await handlers.run(REQUEST)
    finally:
        release.set()
    assert tool_result(answer).payload() == {"timeout": {"durationMs": 50, "effectUnknown": True}}


async def test_an_async_handler_past_its_deadline_was_stopped() -> None:
    handlers = Handlers()
    handlers.add("Slow", anyio.sleep_forever, timeout=0.05)
    answer = await handlers.run(REQUEST)
    assert tool_result(answer).payload() == {"timeout": {"durationMs": 50}}


async def test_a_failure_the_handler_reports_keeps_its_outcome_type() -> None:
    response = ClientToolResponse(request_id="", success=False, error_code="policy_x", result_type=4)
    handlers = Handlers()
    handlers.add("Slow", lambda: response)
    answer = await handlers.run(REQUEST)
    assert (answer.error_code, answer.result_type) == ("policy_x", 4)
