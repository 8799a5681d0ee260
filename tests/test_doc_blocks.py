"""Every Python block of README.md and docs/ runs, as a reader would paste the page's blocks in order.

Each page runs in a child interpreter (tests/docs_runner.py) in a folder of its own, its blocks in
one namespace; what a page leaves to the reader's application (a model, the application's own
services, a running server) is set up before the block that needs it (`BEFORE`), in plain sight
here. A block that cannot run on this machine says why in `NOT_RUN`; the test fails when a page
gains a block nobody decided about, or when a block listed here is gone. A page whose first block
is a module to serve (the tutorial's `notes_app.py`) has it served by a live `toolwire serve`, and
a page that shows what its blocks print (the tutorial) must print exactly its `text` blocks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from serving import Server, serve_app

ROOT = Path(__file__).resolve().parent.parent
RUNNER = Path(__file__).resolve().parent / "docs_runner.py"
TOKEN = "docs-token-0123456789abcdef"
BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.S | re.M)
PRINTED = re.compile(r"^```text\n(.*?)^```", re.S | re.M)

SCRIPTED = "from toolwire.testing import ScriptedModel\nmodel = ScriptedModel(['Done.'])\n"


@dataclass(frozen=True)
class Page:
    """How a page's blocks run: what is set up before which block, which do not run and why."""

    before: dict[int, str] = field(default_factory=dict[int, str])
    not_run: dict[int, str] = field(default_factory=dict[int, str])
    server: bool = False
    """A live `toolwire serve` (TOOLWIRE_URL, TOOLWIRE_TOKEN) whose model calls the client's OpenFile."""
    postgres: bool = False
    """DATABASE_URL: the session's PostgreSQL cluster."""
    node_modules: Path | None = None
    """Linked into the page's folder (npx finds its packages there, offline)."""
    serves: str | None = None
    """The page's first block is this module: `toolwire serve --app MODULE:make_agent` serves it
    live (TOOLWIRE_URL, TOOLWIRE_TOKEN) while the blocks run."""
    shows_output: bool = False
    """The page's `text` blocks, in order, are everything its blocks print."""
    marks: tuple[pytest.MarkDecorator, ...] = ()


PAGES: dict[str, Page] = {
    "README.md": Page(
        not_run={
            3: "starts @modelcontextprotocol/server-filesystem from npm and a remote server at mcp.example; "
            "docs/mcp.md's blocks run the same calls against server-everything"
        },
    ),
    "docs/agent.md": Page(marks=(pytest.mark.llama,)),
    "docs/browser.md": Page(
        before={
            0: """\
from toolwire import tool


class DocumentService:  # the application's own service the example's tools call
    async def title(self, doc_id: str) -> str:
        return "Draft"

    async def set_title(self, doc_id: str, title: str) -> None:
        pass

    async def move_to_trash(self, doc_id: str) -> str:
        return "trash-1"


docs = DocumentService()
"""
        }
    ),
    "docs/client-tools.md": Page(
        before={
            0: """\
from toolwire import Agent, ConsentAnswer, ConsentRequest, PermissionPolicy, ToolCall
from toolwire.store.memory import MemoryStore
from toolwire.testing import FakeClient, ScriptedModel

ide_group = {
    "name": "IDE",
    "description": "Editor tools",
    "tools": [{"name": "OpenFile", "description": "Open a file", "parametersSchema": {"type": "object"}}],
}
agent = Agent(ScriptedModel([[ToolCall(id="c1", name="OpenFile", arguments={})], "Opened."]))
channel = await FakeClient(agent, handlers={"OpenFile": lambda arguments: "opened"}).__aenter__()
""",
            1: SCRIPTED + "store = MemoryStore()\n",
        }
    ),
    "docs/client.md": Page(
        server=True,
        before={1: "url, token = os.environ['TOOLWIRE_URL'], os.environ['TOOLWIRE_TOKEN']\n"},
    ),
    "docs/configuration.md": Page(
        before={
            0: "import pathlib\n\npathlib.Path('tokens.txt').write_text('alice alice-token-0123456789abcdef\\n')\n",
            2: SCRIPTED,
        }
    ),
    "docs/mcp-serve.md": Page(
        before={
            0: f"""\
from toolwire import Agent, Toolbox, ToolContext
from toolwire.testing import ScriptedModel

toolbox = Toolbox()
agent = Agent(ScriptedModel(["Done."]), tools=toolbox)
token = "{TOKEN}"


async def count_pages(table: str) -> int:  # the application's own export
    return 2


async def export_page(table: str, page: int) -> None:
    pass
""",
            2: """\
from mcp import Client

from toolwire import Pipeline
from toolwire.interop.mcp_serve import build_server

client = await Client(build_server(Pipeline(toolbox))).__aenter__()  # an MCP client of the served tools
""",
        }
    ),
    "docs/mcp.md": Page(
        node_modules=ROOT / "tests" / "mcp" / "node_modules",
        before={
            0: SCRIPTED,
            1: f'token = "{TOKEN}"\n',
            2: """\
import json
import pathlib

from toolwire import Toolbox

toolbox = Toolbox()
servers = {"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}}
pathlib.Path("mcp.json").write_text(json.dumps({"mcpServers": servers}))
""",
        },
    ),
    "docs/tutorial/governed-agent.md": Page(
        shows_output=True,
        not_run={7: "starts the local model; examples/local_model.py runs it (tests/models/test_model_examples.py)"},
    ),
    "docs/tutorial/client-tool.md": Page(serves="notes_app", shows_output=True),
    "docs/store.md": Page(
        postgres=True,
        before={
            0: """\
from contract_support import Backend

from toolwire.store import ThreadStore
from toolwire.store.memory import MemoryStore
from toolwire.store.sqlite import SqliteStore


def open_empty_store(directory):  # your backend's constructor
    return MemoryStore()
""",
            1: SCRIPTED + "from toolwire import Agent, PermissionPolicy, Toolbox\n\ntoolbox = Toolbox()\n",
        },
    ),
}

DOCS_APP = """
from toolwire import Agent, ToolCall
from toolwire.messages import ToolResultMessage
from toolwire.testing import FunctionModel


def script(request):
    last = request.messages[-1]
    if isinstance(last, ToolResultMessage):
        return f"Done: {last.result.data}"
    return [ToolCall(id="", name="OpenFile", arguments={"path": "config.toml"})]


def make_agent(store):
    return Agent(FunctionModel(script), store=store)
"""


def blocks_of(page: str) -> list[str]:
    """The page's Python blocks, in order, dedented (a block may sit in a list item)."""
    return [textwrap.dedent(code) for _, code in BLOCK.findall((ROOT / page).read_text())]


def pages_with_blocks() -> list[str]:
    return [
        str(path.relative_to(ROOT))
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
        if blocks_of(str(path.relative_to(ROOT)))
    ]


def test_every_page_with_python_blocks_is_run_here() -> None:
    assert sorted(pages_with_blocks()) == sorted(PAGES)


def test_every_block_named_here_is_on_its_page() -> None:
    for page, how in PAGES.items():
        count = len(blocks_of(page))
        assert all(index < count for index in [*how.before, *how.not_run]), page


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A live `toolwire serve` for docs/client.md: its model calls the client's OpenFile, then answers."""
    with serve_app(tmp_path_factory.mktemp("docs-server"), DOCS_APP, "docsapp", token=TOKEN) as server:
        yield server


@pytest.mark.parametrize("page", [pytest.param(page, marks=how.marks, id=page) for page, how in PAGES.items()])
def test_the_pages_python_blocks_run(page: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    how = PAGES[page]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests" / "store" / "contracts"), "OPENAI_API_KEY": "unused"}
    if how.server:
        server: Server = request.getfixturevalue("docs_server")
        env |= {"TOOLWIRE_URL": server.url, "TOOLWIRE_TOKEN": TOKEN}
    if how.postgres:
        env["DATABASE_URL"] = request.getfixturevalue("postgres").dsn
    if how.node_modules is not None:
        if not how.node_modules.is_dir():
            pytest.skip(f"needs `npm ci --prefix {how.node_modules.parent.relative_to(ROOT)}`")
        (tmp_path / "node_modules").symlink_to(how.node_modules)
    program: list[tuple[str, str]] = []
    for index, code in enumerate(blocks_of(page)):
        if index in how.before:
            program.append((f"{page} set-up before block {index}", how.before[index]))
        if index not in how.not_run:
            program.append((f"{page} block {index}", code))
    with ExitStack() as stack:
        if how.serves is not None:
            (served := tmp_path / "served").mkdir()
            live = stack.enter_context(serve_app(served, blocks_of(page)[0], how.serves, token=TOKEN))
            env |= {"TOOLWIRE_URL": live.url, "TOOLWIRE_TOKEN": TOKEN}
        done = subprocess.run(
            [sys.executable, str(RUNNER)],
            input=json.dumps(program),
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )
    assert done.returncode == 0, f"{page}'s blocks failed:\n{done.stdout}\n{done.stderr}"
    if how.shows_output:
        assert done.stdout == "".join(PRINTED.findall((ROOT / page).read_text())), "the page shows other output"
