"""The agent that web/test/live.test.ts runs `toolwire serve --app live_app:make_agent` with.

A function model follows the transcript: for each user message it expands the browser's "Page"
group, calls a server tool (mirrored to the client), the client's GetSelection, then DeleteNote
(which needs the user's consent), and answers with the outcomes it got.
"""

from toolwire import Agent, ToolCall, tool
from toolwire.client_tools import ClientToolsConfig, RetryWithBackoff
from toolwire.messages import ToolResultMessage, UserMessage
from toolwire.models import ModelRequest
from toolwire.store import Store
from toolwire.testing import FunctionModel, Turn


@tool
async def get_weather(city: str) -> dict[str, object]:
    """The weather in a city."""
    return {"city": city, "celsius": 21}


def script(request: ModelRequest) -> Turn:
    """The model's next turn: the next call of the plan, or the answer once every call has a result."""
    asked = [i for i, m in enumerate(request.messages) if isinstance(m, UserMessage)]
    turn = len(asked)
    done = [m for m in request.messages[asked[-1] :] if isinstance(m, ToolResultMessage)]
    plan = [
        ToolCall(id=f"c{turn}_expand", name="Page", arguments={}),
        ToolCall(id=f"c{turn}_weather", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id=f"c{turn}_select", name="GetSelection", arguments={}),
        ToolCall(id=f"c{turn}_delete", name="DeleteNote", arguments={"id": "n1"}),
    ]
    if turn > 1:  # later messages skip the expansion: the group stays expanded
        plan = plan[1:]
    if len(done) < len(plan):
        return [plan[len(done)]]
    outcomes = [
        f"{m.tool_name}={m.result.type.name}:{m.result.data if m.result.success else m.result.error}" for m in done
    ]
    return "Done. " + " | ".join(outcomes)


def make_agent(store: Store) -> Agent:
    """The agent, on the server's store; a client that drops mid-call gets the same request again."""
    config = ClientToolsConfig(invoke_timeout=20, disconnection=RetryWithBackoff(max_retries=20, max_delay=1.0))
    return Agent(FunctionModel(script), tools=[get_weather], store=store, client_tools=config)
