"""Run a page's Python blocks in order, in one namespace, as a reader would paste them (`python docs_runner.py`).

Input (stdin, JSON): `[[name, source], ...]`, the page's blocks (a hidden set-up first, when the test
gives one). A block without a top-level `await` runs as a script does (it may call `anyio.run`
itself); a block with one runs on an event loop that lives in a thread of its own for the whole
page, so what one block opened (a client, a server) is still usable in the next.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import sys
import threading
from typing import Any


def main() -> None:
    blocks: list[tuple[str, str]] = json.load(sys.stdin)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for name, source in blocks:
        code = compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        if code.co_flags & inspect.CO_COROUTINE:
            asyncio.run_coroutine_threadsafe(_awaited(code, namespace), loop).result(timeout=120)
        else:
            exec(code, namespace)
        sys.stdout.flush()
    loop.call_soon_threadsafe(loop.stop)


async def _awaited(code: Any, namespace: dict[str, Any]) -> None:
    await eval(code, namespace)


if __name__ == "__main__":
    main()
