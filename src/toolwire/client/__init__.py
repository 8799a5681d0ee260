"""The Python client: talk to `toolwire serve`, run the client's tools, answer consent prompts.

```python
from toolwire.client import connect

async with connect("ws://127.0.0.1:8765/ws", token=token, groups=[ide], handlers={"OpenFile": open_file}) as client:
    async for event in client.send("Open the config file"):
        ...
```

| module | what |
|---|---|
| `client` | `connect()`, `Client`: handlers, dispatch of what arrives, `send()` / `ask()` / `stop()` |
| `link` | `Link`: the socket, the handshake, acknowledgements, reconnect and resume (`Reconnect`) |
| `handlers` | `Handlers` (a request → its ToolUseResult), `ExecutionLedger` (at most one run per request id) |
| `consent` | consent handlers and their answers |
| `run_events` | what `send()` yields; `ConnectionClosed`, `RunFailed` |

docs/client.md is the guide. Needs the `server` extra (websockets).
"""

from ..errors import RegistrationError as RegistrationError
from .client import Client as Client
from .client import connect as connect
from .consent import ConsentPromptHandler as ConsentPromptHandler
from .handlers import ExecutionLedger as ExecutionLedger
from .handlers import ExecutionRecord as ExecutionRecord
from .handlers import Handler as Handler
from .handlers import Handlers as Handlers
from .link import Link as Link
from .link import Reconnect as Reconnect
from .run_events import AnswerText as AnswerText
from .run_events import ClientToolCall as ClientToolCall
from .run_events import ClientToolCanceled as ClientToolCanceled
from .run_events import ConnectionClosed as ConnectionClosed
from .run_events import ConsentPrompt as ConsentPrompt
from .run_events import Event as Event
from .run_events import RemoteRunFinished as RemoteRunFinished
from .run_events import ResultRefused as ResultRefused
from .run_events import RunFailed as RunFailed
from .run_events import RunQueued as RunQueued
from .run_events import RunStarted as RunStarted
from .run_events import ServerToolCall as ServerToolCall
from .run_events import ServerToolResult as ServerToolResult

__all__ = [
    "AnswerText",
    "Client",
    "ClientToolCall",
    "ClientToolCanceled",
    "ConnectionClosed",
    "ConsentPrompt",
    "ConsentPromptHandler",
    "Event",
    "ExecutionLedger",
    "ExecutionRecord",
    "Handler",
    "Handlers",
    "Link",
    "Reconnect",
    "RegistrationError",
    "RemoteRunFinished",
    "ResultRefused",
    "RunFailed",
    "RunQueued",
    "RunStarted",
    "ServerToolCall",
    "ServerToolResult",
    "connect",
]
