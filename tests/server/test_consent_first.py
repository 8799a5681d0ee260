"""Consent belongs to the application first: its handler decides, and may leave a call to the person at the client."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import anyio
from server_support import TOKEN, peer, stored_transcript

from serving import serve_app
from toolwire.envelopes import ResultType
from toolwire.messages import ToolResultMessage
from toolwire.protocol import (
    ConsentAnswerBody,
    ConsentRequestBody,
    MessageType,
    RegisterTools,
    RunStatus,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
)

APP_SOURCE = textwrap.dedent(
    """
    from toolwire import Agent, PermissionPolicy, ToolCall
    from toolwire.messages import ToolResultMessage
    from toolwire.testing import FunctionModel

    async def consent(request):
        if request.tool == "DeleteFile":
            return False  # the application refuses this one itself
        return await request.ask_client()  # and leaves the others to the person at the client

    def script(request):
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return [
                ToolCall(id="c_delete", name="DeleteFile", arguments={}),
                ToolCall(id="c_save", name="SaveFile", arguments={}),
            ]
        return " ".join(f"{m.call_id}={m.result.type.name}" for m in results)

    def make_agent(store):
        return Agent(FunctionModel(script), store=store, policy=PermissionPolicy(consent=consent, store=store))
    """
)
GROUP: dict[str, Any] = {
    "name": "Files",
    "description": "Files",
    "startCollapsed": False,
    "tools": [
        {"name": name, "description": name, "requiresPermission": True, "parametersSchema": {"type": "object"}}
        for name in ("DeleteFile", "SaveFile")
    ],
}


async def test_the_application_decides_first_and_the_client_decides_what_it_is_given(tmp_path: Path) -> None:
    asked: list[str] = []
    with serve_app(tmp_path, APP_SOURCE, "consentapp", token=TOKEN) as server:
        async with peer(server.url) as client:
            await client.send(RegisterTools(groups=(GROUP,)))
            await client.until(MessageType.REGISTER_TOOLS_RESULT)
            await client.send(UserMessageBody(id="u1", content="go"))
            with anyio.fail_after(30):
                while True:
                    message = (await client.receive()).message
                    if isinstance(message, ConsentRequestBody):
                        asked.append(message.tool_name)
                        await client.send(ConsentAnswerBody(id=message.id, allow=True))
                    elif isinstance(message, ToolUseRequest) and message.execution == "client":
                        await client.send(ToolUseResult(id=message.id, success=True, result={"value": "saved"}))
                    elif isinstance(message, RunStatus) and message.status == "finished":
                        break
    assert asked == ["SaveFile"]  # DeleteFile was the application's to refuse
    transcript = stored_transcript(server.data_dir, client.connection.conversation_id or "")
    results = {m.call_id: m.result.type for m in transcript if isinstance(m, ToolResultMessage)}
    assert results == {"c_delete": ResultType.DENIED, "c_save": ResultType.SUCCESS}
