"""Policy and consent: an agent whose tools run, ask a person first, or are refused, by rule and by mode.

A scripted model (no network, no weights) asks for five calls; the policy decides each one:

- `list_files` is a read tool: it runs without asking;
- `delete_file` matches the `ask` rule: the consent handler is asked, and refuses;
- `shell_exec` is a local tool: the default preset asks, and the handler allows it for the whole
  thread, so its second call runs without asking again;
- `drop_database` matches the `deny` rule: refused without asking anyone.

    python examples/policy_consent.py
"""

from __future__ import annotations

import itertools

import anyio

from toolwire import Agent, ConsentAnswer, ConsentRequest, PermissionPolicy, Toolbox, ToolCall
from toolwire.messages import ToolResultMessage
from toolwire.testing import ScriptedModel

toolbox = Toolbox()


@toolbox.tool
def list_files(folder: str) -> list[str]:
    """List the files of a folder (read: the `list_` prefix)."""
    return ["notes.txt", "report.pdf"]


@toolbox.tool
def delete_file(path: str) -> str:
    """Delete a file (destructive: the `delete_` prefix)."""
    return f"deleted {path}"


@toolbox.tool
def shell_exec(command: str) -> str:
    """Run a command on this machine (local: the `shell_` prefix)."""
    return f"ran {command!r}"


@toolbox.tool
def drop_database(name: str) -> str:
    """Drop a whole database (destructive: the `drop_` prefix)."""
    return f"dropped {name}"


async def ask_the_user(request: ConsentRequest) -> ConsentAnswer:
    """The consent handler: a real application shows a dialog; this one answers by tool."""
    print(f"  asked: may {request.tool} {dict(request.call.arguments)} run? ({request.reason})")
    if request.tool == "shell_exec":
        return ConsentAnswer(allow=True, scope="thread")  # "always allow in this conversation"
    return ConsentAnswer(allow=False, reason="keep my files")


_ids = itertools.count(1)


def turn(tool: str, /, **arguments: object) -> list[ToolCall]:
    """One model turn that asks for one call."""
    return [ToolCall(id=f"c{next(_ids)}", name=tool, arguments=arguments)]


async def main() -> None:
    policy = PermissionPolicy(ask=["delete_*"], deny=["drop_*"], consent=ask_the_user)
    # What the policy decides for each tool before any call, from the rules, the preset and the mode.
    for tool in toolbox:
        permission = policy.decide(tool)
        print(f"{tool.name:14} {tool.mode:12} -> {permission.decision} ({permission.reason})")

    model = ScriptedModel(
        [
            turn("list_files", folder="."),
            turn("delete_file", path="notes.txt"),
            turn("shell_exec", command="ls"),
            turn("shell_exec", command="pwd"),
            turn("drop_database", name="prod"),
            "I listed the files and ran two commands; deleting and dropping were refused.",
        ]
    )
    agent = Agent(model, tools=toolbox, policy=policy)
    print()
    result = await agent.run("Tidy up, please.", thread="demo")
    for message in result.transcript:
        if isinstance(message, ToolResultMessage):
            print(f"{message.tool_name:14} -> {message.result.type.name}: {message.result.payload()}")
    print("grants:", [grant.tool for grant in await policy.grants("demo")])
    print("answer:", result.output)


if __name__ == "__main__":
    anyio.run(main)
