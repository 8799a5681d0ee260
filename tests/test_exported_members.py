import ast
import subprocess
import sys
from inspect import ismodule
from pathlib import Path

import pytest

import toolwire


def test_all_is_sorted():
    assert toolwire.__all__ == sorted(toolwire.__all__)


def test_all_names_every_public_member():
    for name in toolwire.__all__:  # they load on first use
        getattr(toolwire, name)
    public = {name for name, value in vars(toolwire).items() if not name.startswith("_") and not ismodule(value)}
    assert public == set(toolwire.__all__)


def test_type_checkers_see_every_lazy_name_where_it_loads_from():
    tree = ast.parse(Path(toolwire.__file__).read_text())
    imported = {
        alias.asname: (node.module or "")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname is not None
    }
    assert imported == vars(toolwire)["_SOURCES"]


def imported_by(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"{code}; import sys; print(*sys.modules)"], capture_output=True, text=True, check=True
    )
    return set(done.stdout.split())


def test_a_name_loads_its_module_on_first_use():
    assert "toolwire.loop" not in imported_by("import toolwire")
    assert "toolwire.loop" in imported_by("import toolwire; toolwire.Agent")


def test_import_loads_no_pydantic_anyio_vendor_sdk_server_or_store():
    heavy = {"pydantic", "pydantic_core", "anyio", "asyncio", "openai", "anthropic", "websockets"}
    loaded = imported_by("import toolwire")
    assert not loaded & heavy
    assert not {name for name in loaded if name.startswith(("toolwire.store", "toolwire.server"))}


def test_pydantic_type_adapters_load_when_a_tools_schema_is_first_needed():
    assert "pydantic.type_adapter" not in imported_by("from toolwire import tool; tool(lambda: 0, name='zero')")
    needed = "from toolwire import tool; tool(lambda: 0, name='zero').parameters_schema"
    assert "pydantic.type_adapter" in imported_by(needed)


def test_the_first_tool_loads_neither_docstring_parser_for_a_one_line_docstring_nor_difflib():
    first_use = (
        "from toolwire import Agent, Toolbox, tool\n@tool\nasync def add(a: int, b: int) -> int:\n    'Add.'\nadd"
    )
    loaded = imported_by(first_use)  # TW-10's first use
    assert "toolwire.loop" in loaded and not loaded & {"docstring_parser", "difflib"}
    sections = first_use.replace("'Add.'", '"""Add.\n\n    Args:\n        a: The first.\n    """')
    assert "docstring_parser" in imported_by(sections)


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        getattr(toolwire, "nope")  # noqa: B009


def test_dir_lists_names_not_loaded_yet():
    assert set(toolwire.__all__) <= set(dir(toolwire))


def test_every_exception_toolwire_defines_is_in_the_drawn_tree() -> None:
    import importlib
    import inspect
    import pkgutil
    import re

    import toolwire
    from toolwire import errors

    defined: set[str] = set()
    for info in pkgutil.walk_packages(toolwire.__path__, "toolwire."):
        if info.name.endswith(("__main__", "examples")):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, toolwire.ToolwireError)
                and value.__module__ == info.name
                and not name.startswith("_")
            ):
                defined.add(name)
    drawn = errors.__doc__ or ""
    assert sorted(name for name in defined if not re.search(rf"\b{name}\b", drawn)) == []


def test_the_package_says_it_is_typed() -> None:
    from importlib.resources import files

    assert files("toolwire").joinpath("py.typed").is_file()  # PEP 561: type checkers read our hints
