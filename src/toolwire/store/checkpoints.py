"""`Checkpointer`: copies a SQLite file's WAL into the database from a thread of its own.

A checkpoint (copying the WAL's pages into the database file, with its `fsync`s) takes
milliseconds; a store pokes this thread every so many commits, so that no commit on the event
loop waits for one. SQLite's own automatic checkpoint stays on, in case the thread falls behind.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

__all__ = ["Checkpointer"]

_log = logging.getLogger("toolwire.store")


class Checkpointer:
    """A thread that checkpoints the WAL (PASSIVE) when poked, on a connection of its own.

    PASSIVE never waits for the event loop's connection and never blocks its writes; the thread
    spends its time in SQLite's C code (the GIL released), copying pages and in `fsync`.
    """

    def __init__(self, path: Path, busy_timeout: float) -> None:
        self._path = path
        self._busy_timeout = busy_timeout
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="toolwire-sqlite-checkpoint", daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """Checkpoint soon."""
        self._wake.set()

    def stop(self, *, join: bool = True) -> None:
        """End the thread (after the checkpoint in progress, if any); wait for it unless `join` is false."""
        self._stopping = True
        self._wake.set()
        if join and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            _log.warning("the background checkpoints of %s are off: %s", self._path, exc)
            return
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:  # e.g. another process checkpoints: SQLite's own ones still run
                    _log.debug("a background checkpoint of %s failed: %s", self._path, exc)
        finally:
            db.close()
