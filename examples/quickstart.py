"""Quick start: define tools, govern them with a policy and filters, and see every outcome type.

Run it with `make run` (or `python examples/quickstart.py` inside the virtual environment).
"""

from __future__ import annotations

import anyio

from toolwire import (
    Cancellation,
    ConsentAnswer,
    ConsentRequest,
    PermissionPolicy,
    Pipeline,
    Toolbox,
    ToolCall,
    ToolError,
    tool,
)

toolbox = Toolbox()


@toolbox.tool
async def get_weather(city: str, unit: str = "celsius") -> dict[str, object]:
    """Current weather of a city.

    Args:
        city: City name, e.g. "Paris".
        unit: "celsius" or "fahrenheit".
    """
    if city.lower() == "atlantis":
        raise ToolError(f"No weather station in {city}", code="not_found")
    return {"city": city, "temperature": 21.5, "unit": unit}


@toolbox.tool(timeout=0.2)
async def search_archive(query: str) -> list[str]:
    """Search a slow archive (it never answers in time)."""
    await anyio.sleep_forever()
    return []


@toolbox.tool
def shell_exec(command: str) -> str:
    """Run a shell command on the user's machine (local: asks for consent)."""
    return f"(pretend we ran {command!r})"


@tool
def delete_file(path: str) -> str:
    """Delete a file (destructive)."""
    return f"deleted {path}"


toolbox.add(delete_file)


async def ask_user(request: ConsentRequest) -> ConsentAnswer:
    """A consent handler: a real application would show a dialog here."""
    allow = "rm " not in request.call.arguments.get("command", "")
    print(f"  consent? {request.tool}({request.call.arguments}) because {request.reason} -> {allow}")
    return ConsentAnswer(allow=allow, reason=None if allow else "I don't delete things from a shell")


async def main() -> None:
    policy = PermissionPolicy(deny=["delete_*"], consent=ask_user)
    pipeline = Pipeline(toolbox, policy=policy)
    calls = [
        ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="c2", name="get_weather", arguments={"city": "Atlantis"}),
        ToolCall(id="c3", name="get_wether", arguments={"city": "Paris"}),
        ToolCall(id="c4", name="get_weather", arguments={"town": "Paris"}),
        ToolCall(id="c5", name="search_archive", arguments={"query": "toolwire"}),
        ToolCall(id="c6", name="shell_exec", arguments={"command": "ls"}),
        ToolCall(id="c7", name="shell_exec", arguments={"command": "rm -rf /"}),
        ToolCall(id="c8", name="delete_file", arguments={"path": "notes.txt"}),
    ]
    for tool_ in toolbox:
        print(f"{tool_.name:15} mode={tool_.mode:12} ({tool_.mode_decision.reason})")
    print()
    for call in calls:
        await show(pipeline, call)

    # The caller can cancel a call that is running: it ends as Canceled by the user.
    cancellation = Cancellation()
    slow = ToolCall(id="c9", name="search_archive", arguments={"query": "slow"})
    async with anyio.create_task_group() as group:
        group.start_soon(show, pipeline, slow, cancellation)
        await anyio.sleep(0.05)  # the user waits a little, then presses stop
        cancellation.cancel("The user pressed stop")


async def show(pipeline: Pipeline, call: ToolCall, cancellation: Cancellation | None = None) -> None:
    result = await pipeline.invoke(call, thread_id="demo", cancellation=cancellation)
    print(f"{call.name}({call.arguments}) -> {result.type.name}: {result.payload()}")


if __name__ == "__main__":
    anyio.run(main)
