"""`DataDirLock`: one `toolwire serve` per data directory, and operator commands only beside none.

Two servers on one data directory would both resume the same unfinished runs and send the same
requests; an operator's `toolwire conversations cancel` beside a live server would write results
its runs are about to write. `toolwire serve` holds an exclusive lock on `DATA_DIR/serve.lock`
(`flock`, released by the kernel when the process ends, kill -9 included); commands that change
conversations take the same lock, and fail at once when it is held.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import Final, Self

from ..errors import UsageError

__all__ = ["LOCK_FILENAME", "DataDirLock"]

LOCK_FILENAME: Final = "serve.lock"


class DataDirLock:
    """An exclusive lock on a data directory, held from `acquire()` (or `with`) to `release()`.

    Args:
        data_dir: The data directory (created if missing).
        holder: What takes the lock, for the message when another process holds it.
    """

    def __init__(self, data_dir: str | os.PathLike[str], *, holder: str = "toolwire serve") -> None:
        self.path = Path(data_dir) / LOCK_FILENAME
        self.holder = holder
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock.

        Raises:
            UsageError: Another process holds it (a `toolwire serve` on this data directory).
        """
        if os.name != "posix":  # pragma: no cover (no flock; Windows keeps the file open instead)
            return
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UsageError(
                f"another toolwire serve is using {self.path.parent} ({self.holder} needs it alone): "
                "stop it first, or use another --data-dir"
            ) from None
        self._fd = fd

    def release(self) -> None:
        """Let the lock go (closing the file releases it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
