"""`find_app`: the application a command line names as `--app module:factory`."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from .errors import UsageError

__all__ = ["find_app"]


def find_app(spec: str) -> Any:
    """Return the object `module:factory` names, the module imported from the working directory too.

    Raises:
        UsageError: `spec` is not `module:factory`, or the module or the name cannot be found.
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"--app takes module:factory, e.g. myapp:make_agent (got {spec!r})")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"cannot load --app {spec}: {exc}") from None
