"""One home per name (issue 14): a name says one thing wherever it is read.

- A public class or type alias is defined in one toolwire module only; the others re-export it
  (`from .x import Name as Name`) or import it. A transcript type and a wire type, say, have
  distinct names (`UserMessage`, `UserMessageBody`).
- `src/` imports a toolwire name under its own name (or made private, `name as _name`), never
  renamed to dodge another one.
- A module's name is used by one package only (`protocol/error_codes.py`, not a second
  `errors.py`).

Read from the source (ast), like tests/test_layers.py.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "toolwire"
TYPE_NAME = re.compile(r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*")
"""CapWords with a lower-case letter: `Message`, not `T` or `DEFAULT_LIMITS`."""


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def defined_types(tree: ast.Module) -> Iterator[str]:
    """The public classes and type aliases a module defines at its top level (not what it imports)."""
    for node in tree.body:
        match node:
            case ast.ClassDef(name=name):
                yield name
            case ast.AnnAssign(target=ast.Name(id=name), annotation=annotation) if "TypeAlias" in ast.unparse(
                annotation
            ):
                yield name
            case ast.Assign(targets=[ast.Name(id=name)], value=ast.Subscript() | ast.BinOp() | ast.Name()):
                if TYPE_NAME.fullmatch(name):
                    yield name
            case _:
                pass


def renamed_imports(tree: ast.Module, module: str) -> Iterator[str]:
    """`from <toolwire module> import X as Y` (anywhere in the module) where Y is neither X nor _X."""
    package = module.split(".")
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            source = ".".join([*package[: len(package) - node.level], *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        if source != "toolwire" and not source.startswith("toolwire."):
            continue
        for alias in node.names:
            if alias.asname not in (None, alias.name, f"_{alias.name}"):
                yield f"{module}: from {source} import {alias.name} as {alias.asname}"


def module_homes(paths: list[Path]) -> dict[str, list[str]]:
    """Module file name -> the packages holding a module of that name (`__init__` aside)."""
    homes: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        if path.stem != "__init__":
            homes[path.stem].append(".".join(path.parent.relative_to(SRC).parts))
    return homes


def _is_package(path: Path) -> bool:
    return path.stem == "__init__"


def test_a_type_name_is_defined_once():
    homes: dict[str, list[str]] = defaultdict(list)
    for module, path in _modules():
        for name in defined_types(_tree(path)):
            if not name.startswith("_"):
                homes[name].append(module)
    assert {name: modules for name, modules in homes.items() if len(modules) > 1} == {}


def test_src_imports_toolwire_names_under_their_own_names():
    found = [line for module, path in _modules() for line in renamed_imports(_tree(path), _package_of(module, path))]
    assert found == []


def _package_of(module: str, path: Path) -> str:
    """The name relative imports resolve against, plus a last part that `level` drops."""
    return f"{module}.__init__" if _is_package(path) else module


def test_a_module_name_lives_in_one_package():
    homes = module_homes(sorted(PACKAGE.rglob("*.py")))
    assert {name: packages for name, packages in homes.items() if len(packages) > 1} == {}


def test_the_checks_see_what_they_look_for():
    # Each rule against a small source, so a refactoring of the helpers cannot make them blind.
    source = ast.parse(
        "from typing import TypeAlias\n"
        "from .messages import Message as TranscriptMessage\n"
        "from .patterns import preview as _preview\n"
        "from ..policy import ConsentAnswer as ConsentAnswer\n"
        "from websockets import connect as open_websocket\n"
        "class UserMessage: ...\n"
        "Handler: TypeAlias = int\n"
        "Message = UserMessage | int\n"
        "T = int\n"
        "DEFAULT_LIMITS = Message\n"
        "def f():\n"
        "    from ..client import RunFinished as RemoteRunFinished\n"
    )
    assert list(defined_types(source)) == ["UserMessage", "Handler", "Message"]
    assert list(renamed_imports(source, "toolwire.client.consent")) == [
        "toolwire.client.consent: from toolwire.client.messages import Message as TranscriptMessage",
        "toolwire.client.consent: from toolwire.client import RunFinished as RemoteRunFinished",
    ]
    paths = [PACKAGE / "errors.py", PACKAGE / "protocol" / "errors.py", PACKAGE / "protocol" / "__init__.py"]
    assert module_homes(paths) == {"errors": ["toolwire", "toolwire.protocol"]}
