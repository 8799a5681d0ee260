"""The layers import one way (docs/architecture.md): a module must not reach what its layer must not.

Imports are read from the source (ast), not by importing: a module *reaches* what its own
module-level imports load, transitively, with the packages they sit in (importing
`toolwire.protocol.codec` runs `toolwire/protocol/__init__.py`), but not `toolwire/__init__.py`,
which gathers the public names of every layer. Imports under `if TYPE_CHECKING:` load nothing.
Imports inside functions load lazily; the rules that forbid naming a module at all (an
implementation where an interface exists) count them too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "toolwire"
ASYNC = frozenset({"anyio", "asyncio", "sniffio", "trio", "websockets", "starlette", "uvicorn", "httpx"})


@dataclass
class Module:
    name: str
    is_package: bool
    eager: set[str] = field(default_factory=set[str])
    """Modules (toolwire's, or an external top-level package) imported when this one loads."""
    lazy: set[str] = field(default_factory=set[str])
    """Imported inside functions (or under TYPE_CHECKING): named, not loaded at import."""


@cache
def modules() -> dict[str, Module]:
    found: dict[str, Module] = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = Module(".".join(parts), is_package)
    for module in found.values():
        _read(module, found)
    return found


def _path(module: Module) -> Path:
    base = SRC.joinpath(*module.name.split("."))
    return base / "__init__.py" if module.is_package else base.with_suffix(".py")


def _read(module: Module, known: dict[str, Module]) -> None:
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    for node, eager in _imports(tree.body, eager=True):
        for target in _targets(node, package, known):
            (module.eager if eager else module.lazy).add(target)


def _imports(body: list[ast.stmt], *, eager: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, eager
        elif isinstance(node, ast.If) and _type_checking(node.test):
            yield from _imports(node.body, eager=False)
            yield from _imports(node.orelse, eager=eager)
        else:  # the statements nested in it: a function's run later, the rest at once
            later = eager and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ExceptHandler):
                    yield from _imports(child.body, eager=later)
                elif isinstance(child, ast.stmt):
                    yield from _imports([child], eager=later)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, package: str, known: dict[str, Module]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield _resolve(alias.name, known)
        return
    base = node.module or ""
    if node.level:
        anchor = package.split(".")
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    yield _resolve(base, known)
    for alias in node.names:
        if f"{base}.{alias.name}" in known:  # `from . import consent`: a submodule
            yield f"{base}.{alias.name}"


def _resolve(name: str, known: dict[str, Module]) -> str:
    if name.split(".")[0] != PACKAGE:
        return name.split(".")[0]
    while name not in known:
        name = name.rpartition(".")[0]
    return name


def reach(name: str) -> set[str]:
    """What loading module `name` loads (toolwire modules and external top-level packages)."""
    known = modules()
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        module = known.get(current)
        if module is None:
            continue  # external
        todo.extend(module.eager)
        parent = current.rpartition(".")[0]
        if parent and parent != PACKAGE:  # its package's __init__ runs first
            todo.append(parent)
    seen.discard(name)
    return seen


def names(name: str) -> set[str]:
    """Every module `name` imports, at load or lazily (not transitively)."""
    module = modules()[name]
    return module.eager | module.lazy


def under(prefix: str) -> list[str]:
    return sorted(name for name in modules() if name == prefix or name.startswith(prefix + "."))


# -- the rules -----------------------------------------------------------------------------------

PURE = ["toolwire.envelopes", "toolwire.errors", "toolwire.modes", "toolwire.schema", "toolwire.policy"]
"""The pure core: data, decisions and checks; sync, and nothing async loads with them."""

LEAKS = "issue 14, point 5: the layering pass removes this leak"


@pytest.mark.parametrize("name", under("toolwire.protocol"))
def test_the_protocol_loads_nothing_async(name: str) -> None:
    assert reach(name) & ASYNC == set()


@pytest.mark.parametrize("name", [*PURE, "toolwire.cancellation"])
def test_the_pure_core_loads_nothing_async(name: str) -> None:
    assert reach(name) & ASYNC == set()


def test_the_python_client_loads_neither_the_server_runtime_nor_the_models() -> None:
    forbidden = {"toolwire.server", "toolwire.models", "toolwire.loop", "toolwire.client_tools.session"}
    reached = set().union(*(reach(name) for name in under("toolwire.client")))
    assert {name for name in reached if any(name == f or name.startswith(f + ".") for f in forbidden)} == set()


def test_the_guard_does_not_import_tools() -> None:
    assert "toolwire.tools" not in names("toolwire.guard")


def test_the_ledger_does_not_import_client_tools() -> None:
    assert not {name for name in names("toolwire.ledger") if name.startswith("toolwire.client_tools")}


def test_the_loop_knows_client_tools_only_as_a_toolset() -> None:
    # The loop runs every toolset's calls the same way: it names no part of the client toolset
    # (its hub only routes consent to the person at the thread's client, for any tool).
    parts = {"toolwire.client_tools.session", "toolwire.client_tools.toolset", "toolwire.client_tools.state"}
    assert names("toolwire.runs") & parts == set()


def test_nothing_outside_the_store_names_a_store_implementation() -> None:
    implementations = {"toolwire.store.memory", "toolwire.store.sqlite"}
    users = [
        name
        for name in modules()
        if not name.startswith("toolwire.store")
        and name not in ("toolwire.cli", "toolwire.server.serve", "toolwire.conversations", "toolwire.testing")
        and names(name) & implementations
    ]
    assert users == []


def test_the_reader_sees_what_a_leak_looks_like() -> None:
    # The rules above stand on `reach`: it must see through packages, relative imports and
    # submodules imported by name (a rule that can never fail protects nothing).
    assert "anyio" in reach("toolwire.loop")
    assert "toolwire.protocol.codec" in reach("toolwire.protocol.connection")
    assert "toolwire.client.consent" in names("toolwire.client.client")
    assert "anyio" not in reach("toolwire.envelopes")


def test_nothing_outside_interop_imports_it_or_the_mcp_sdk() -> None:
    # `import toolwire` stays light: the MCP SDK and the AG-UI package are loaded by `toolwire.interop`
    # only, and only the entry points name interop, lazily: the CLI (`toolwire mcp serve`) and
    # `toolwire serve --mcp` / `--agui`.
    forbidden = {"mcp", "ag_ui", *under("toolwire.interop")}
    users = [name for name in modules() if not name.startswith("toolwire.interop") and names(name) & forbidden]
    assert users == ["toolwire.cli", "toolwire.server.serve"]
    assert not (reach("toolwire.cli") | reach("toolwire.server.serve")) & forbidden
