"""Load a script of bench/ as a module for a smoke test, and forget it (and what it imported of bench/) after."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


@contextmanager
def bench_script(name: str) -> Iterator[ModuleType]:
    """`bench/<name>.py` as the module `name`; `sys.path` and bench/'s modules as they were, after."""
    path, modules = list(sys.path), set(sys.modules)
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path[:] = path
        scripts = {script.stem for script in BENCH.glob("*.py")} | {name}
        for loaded in scripts & (set(sys.modules) - modules):
            sys.modules.pop(loaded, None)
