"""`import_extra`: an optional dependency, or the `pip install` line that provides it.

Every layer that has an extra (models, server, client) uses it; it lives below them all, so the
client does not load the models to report a missing `websockets`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import UsageError

__all__ = ["import_extra"]


def import_extra(module: str, extra: str) -> ModuleType:
    """Import an optional dependency, or fail with the `pip install` line that provides it.

    Raises:
        UsageError: The module is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UsageError(f"this feature needs the '{extra}' extra: pip install 'toolwire[{extra}]' ({exc})") from exc
