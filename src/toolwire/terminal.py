"""The terminal side of `toolwire chat`: Ctrl-C, and reading a line without holding the process.

```
Ctrl-C (SIGINT)      ──► CtrlC: the first press calls the `stopping()` action (stop the run in
                         progress), or leaves when none is set (at a prompt); a second press leaves
read_in_background() ──► the line, read in a daemon thread: a prompt that Ctrl-C left is abandoned
input_line()         ──► a line of standard input, read unbuffered: an abandoned read holds no lock
```

`toolwire.cli` uses them for the local and the `--url` chat.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from anyio import to_thread
from anyio.abc import TaskGroup, TaskStatus

__all__ = ["CtrlC", "ctrl_c", "input_line", "read_in_background"]


class CtrlC:
    """What Ctrl-C does in a terminal chat; `ctrl_c()` makes one and listens for the presses.

    Run the session inside `scope`: a press with nothing to stop, or a second press, cancels it.
    """

    def __init__(self, group: TaskGroup | None = None) -> None:
        self.pressed = 0
        """How many times Ctrl-C was pressed (the session ends after the first, one way or another)."""
        self.scope = anyio.CancelScope()
        """The session's scope: canceled to leave at once."""
        self._group = group
        self._stop: Callable[[], Coroutine[Any, Any, None]] | None = None

    @contextmanager
    def stopping(self, stop: Callable[[], Coroutine[Any, Any, None]]) -> Generator[None]:
        """While the block runs, the first press starts `stop` (in the background) instead of leaving."""
        self._stop = stop
        try:
            yield
        finally:
            self._stop = None

    def press(self) -> None:
        """Ctrl-C: stop what is under way, or leave."""
        self.pressed += 1
        if self.pressed == 1 and self._stop is not None and self._group is not None:
            self._group.start_soon(self._stop)  # the listener stays free for a second press
        else:
            self.scope.cancel()


@asynccontextmanager
async def ctrl_c() -> AsyncGenerator[CtrlC]:
    """Listen for Ctrl-C (SIGINT) while the block runs.

    Only in the main thread of a POSIX process: elsewhere (an application running the chat in a
    worker thread, Windows) Ctrl-C stays what it was, and the `CtrlC` never hears a press.
    """
    if os.name != "posix" or threading.current_thread() is not threading.main_thread():
        yield CtrlC()
        return
    failure: BaseException | None = None
    async with anyio.create_task_group() as group:
        presses = CtrlC(group)
        await group.start(_listen, presses)
        try:
            yield presses
        except BaseException as exc:  # re-raised below as it is, not wrapped in an exception group
            failure = exc
        finally:
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure


async def _listen(presses: CtrlC, *, task_status: TaskStatus[None]) -> None:
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            presses.press()


async def read_in_background(read: Callable[[str], str | None], prompt: str) -> str | None:
    """`read(prompt)`, called in a daemon thread of its own; cancel the wait to abandon the read.

    A read from a terminal cannot be interrupted. In one of anyio's worker threads it would keep
    the process alive after Ctrl-C left the chat (the interpreter waits for those threads at exit),
    so the read runs in a daemon thread, and the worker that waits for its answer is released when
    the wait is canceled.

    Raises:
        Exception: Whatever `read` raised.
    """
    answers: queue.SimpleQueue[str | Exception | None] = queue.SimpleQueue()

    def work() -> None:
        try:
            answers.put(read(prompt))
        except Exception as exc:  # handed to the caller
            answers.put(exc)

    threading.Thread(target=work, name="toolwire chat input", daemon=True).start()
    try:
        answer = await to_thread.run_sync(answers.get, abandon_on_cancel=True)
    finally:
        answers.put(None)  # releases the worker when the wait was canceled (else nobody reads it)
    if isinstance(answer, Exception):
        raise answer
    return answer


def input_line(prompt: str) -> str | None:
    """Write `prompt`, then read a line of standard input; None at the end of input.

    Unlike `input()`, it reads the file descriptor itself, a byte at a time (what a person types
    is short): a read that Ctrl-C abandoned holds no lock of `sys.stdin`'s buffer, which the
    interpreter would need at exit (it aborts when a daemon thread holds it), and no byte after the
    line is taken from whatever reads standard input next.
    """
    sys.stdout.write(prompt)
    sys.stdout.flush()
    try:
        descriptor = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # no standard input, or one in memory (a test's)
        line = sys.stdin.readline() if sys.stdin is not None else ""
        return line.removesuffix("\n").removesuffix("\r") if line else None
    data = bytearray()
    while not data.endswith(b"\n"):
        try:
            byte = os.read(descriptor, 1)
        except OSError:
            byte = b""
        if not byte:  # the end of input (Ctrl-D)
            if not data:
                return None
            break
        data += byte
    encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
    return data.decode(encoding, errors="replace").removesuffix("\n").removesuffix("\r")
