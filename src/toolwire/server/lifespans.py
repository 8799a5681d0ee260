"""`join_lifespan`: an endpoint mounted on a toolwire server's app (`/mcp`, `/agui`) lives in its lifespan."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from starlette.applications import Starlette

__all__ = ["join_lifespan"]


def join_lifespan(app: Starlette, run: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
    """Enter `run()` inside the app's lifespan, after what it enters already (run the app with lifespan on)."""
    previous: Callable[[Starlette], AbstractAsyncContextManager[Any]] = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(served: Starlette) -> AsyncGenerator[Any]:
        async with previous(served) as state, run():
            yield state

    app.router.lifespan_context = lifespan
