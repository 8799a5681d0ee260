"""`GracefulServer`: uvicorn's server, stopping the way `toolwire serve` promises.

On SIGTERM or SIGINT (Ctrl-C) the runs in progress are parked first (`ToolwireServer.stop`):
they stop where they stand and write nothing more, so the ledger keeps every open call exactly
as after kill -9, and the next start resumes them (a client's result is taken then, a consent
prompt is asked again). Only then does uvicorn close the connections. The process exits with
status 0: a stop asked for is the normal end of a server (uvicorn would re-raise the signal
once stopped). A second Ctrl-C stops at once.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable
from types import FrameType

import uvicorn

from .app import ToolwireServer

__all__ = ["GracefulServer"]


class GracefulServer(uvicorn.Server):
    """uvicorn's `Server` that parks toolwire's runs before it closes the connections.

    Args:
        config: uvicorn's configuration of the app.
        toolwire: The app's `ToolwireServer` (`app.state.toolwire`).
        grace: Seconds to wait for the parked runs to end.
    """

    def __init__(self, config: uvicorn.Config, toolwire: ToolwireServer, *, grace: float) -> None:
        super().__init__(config)
        self.toolwire = toolwire
        self.grace = grace
        self.on_started: Callable[[], object] | None = None
        """Called once the server listens, with its signal handlers in place."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Listen (uvicorn's startup), then tell `on_started`."""
        await super().startup(sockets)
        if self.on_started is not None and not self.should_exit:
            self.on_started()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Begin the graceful stop (a second SIGINT forces it); the signal is not raised again."""
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        else:
            self.should_exit = True

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Park the runs, then let uvicorn close the listener and the connections."""
        await self.toolwire.stop(self.grace)
        await super().shutdown(sockets)
