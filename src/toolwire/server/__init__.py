"""The toolwire server: the WebSocket protocol over Starlette, served by uvicorn (`toolwire serve`).

Needs the `server` extra: `pip install 'toolwire[server]'`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import import_extra

if TYPE_CHECKING:
    from .app import ToolwireServer as ToolwireServer
    from .app import create_app as create_app
    from .auth import TokenAuth as TokenAuth
    from .refusals import RefusalLimit as RefusalLimit

__all__ = ["RefusalLimit", "TokenAuth", "ToolwireServer", "create_app"]


def __getattr__(name: str) -> Any:
    if name == "TokenAuth":
        from .auth import TokenAuth

        return TokenAuth
    if name == "RefusalLimit":
        from .refusals import RefusalLimit

        return RefusalLimit
    if name in ("create_app", "ToolwireServer"):
        import_extra("starlette", "server")
        from . import app

        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
