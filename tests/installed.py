"""An installed `toolwire serve` (from a wheel, in a fresh venv) and the app it serves, for the package tests.

The app's model asks the connected client to run its `OpenFile` tool on `config.toml`, then
answers with what the tool returned: one turn is a whole round trip, client tool included.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from serving import Server, serve_command

TOKEN = "package-test-token-0123456789abcdef"

APP_SOURCE = textwrap.dedent(
    """
    from toolwire import Agent, ToolCall
    from toolwire.messages import ToolResultMessage
    from toolwire.testing import FunctionModel

    def script(request):
        last = request.messages[-1]
        if isinstance(last, ToolResultMessage):
            return f"The editor says: {last.result.data}"
        return [ToolCall(id="c1", name="OpenFile", arguments={"path": "config.toml"})]

    def make_agent(store):
        return Agent(FunctionModel(script), store=store)
    """
)

IDE_GROUP = {
    "name": "IDE",
    "description": "Editor tools",
    "tools": [
        {
            "name": "OpenFile",
            "description": "Open a file in the editor",
            "parametersSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        }
    ],
}
"""The client's tool group, as its camelCase wire map (the Python and TypeScript clients both take it)."""

ANSWER = "The editor says: opened config.toml"
"""The turn's answer when the client's `OpenFile` returns `opened <path>`."""


def outside_env() -> dict[str, str]:
    """The environment without what would make a child import the source tree or the repository's venv."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.pop("TOOLWIRE_TOKEN", None)
    return {**env, "PYTHONUNBUFFERED": "1", "PYTHONSAFEPATH": "1"}


@contextmanager
def serve_installed(toolwire: Path, folder: Path) -> Iterator[Server]:
    """Run the installed `toolwire serve` on `APP_SOURCE` in `folder`, on a free port; stop it after (SIGINT)."""
    (folder / "package_app.py").write_text(APP_SOURCE)
    arguments = ("--app", "package_app:make_agent")
    with serve_command(folder, *arguments, token=TOKEN, program=(str(toolwire),), env=outside_env()) as server:
        yield server
