"""Client tools in process: an "editor" registers the IDE group of the client tools spec and runs its tools.

A scripted model expands the collapsed group, opens a file and answers; the editor is a minimal
`ClientChannel` that executes requests and delivers responses through `agent.clients`. A real
client (a web page, an IDE extension) does the same over the WebSocket protocol.

    python examples/client_tools.py
"""

from __future__ import annotations

import anyio

from toolwire import Agent, ToolCall
from toolwire.client_tools import ClientToolRequest, ClientToolResponse, TextContent
from toolwire.messages import ToolResultMessage
from toolwire.testing import ScriptedModel, validate_transcript

IDE = {
    "name": "IDE",
    "description": "VS Code interaction tools",
    "systemPrompt": "Use ShowMessage for important notifications to the user.",
    "tools": [
        {
            "name": "OpenFile",
            "description": "Open a file in the editor",
            "parametersSchema": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
                "required": ["path"],
            },
        },
        {"name": "GetSelection", "description": "Get the user's current text selection"},
    ],
}


class Editor:
    """The client side: runs each request it is sent and hands the response back to the agent."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    async def send(self, request: ClientToolRequest) -> None:
        if request.tool_name == "OpenFile":
            text = f"Opened {request.arguments['path']} at line {request.arguments.get('line', 1)}"
            response = ClientToolResponse(request_id=request.request_id, content=(TextContent(text=text),))
        else:
            response = ClientToolResponse(request_id=request.request_id, success=False, error_message="No selection")
        self.agent.clients.deliver(request.thread_id, response)


async def main() -> None:
    model = ScriptedModel(
        [
            [ToolCall(id="c1", name="IDE", arguments={})],
            [ToolCall(id="c2", name="OpenFile", arguments={"path": "config.toml", "line": 3})],
            "The config file is open at line 3.",
        ]
    )
    agent = Agent(model)
    result = await agent.run("Open the config file", client_tool_groups=[IDE], client=Editor(agent))
    validate_transcript(result.transcript)
    print("offered first:", [tool.name for tool in model.requests[0].tools])
    for message in result.transcript:
        if isinstance(message, ToolResultMessage):
            print(f"{message.tool_name} -> {message.result.type.name}: {message.result.data}")
    print("offered then:", [tool.name for tool in model.requests[1].tools])
    print("answer:", result.output)


if __name__ == "__main__":
    anyio.run(main)
