"""The Python client: talk to `toolwire serve`, run the client's tools, answer consent prompts.

```python
from toolwire.client import connect

async with connect("ws://127.0.0.1:8765/ws", token=token, groups=[ide], handlers={"OpenFile": open_file}) as client:
    async for event in client.send("Open the config file"):
        ...
```

| module | what |
|---|---|
| `session` | `connect()`, `Client`: handlers, dispatch of what arrives, `send()` / `ask()` / `stop()` |
| `link` | `Link`: the socket, the handshake, acknowledgements, reconnect and resume (`Reconnect`) |
| `tools` | `Handlers` (a request → its ToolUseResult), `ExecutionLedger` (at most one run per request id) |
| `consent` | consent handlers and their answers |
| `events` | what `send()` yields; `ConnectionClosed`, `RunFailed` |

docs/client.md is the guide. Needs the `server` extra (websockets).
"""

from ..errors import RegistrationError as RegistrationError
from .consent import ConsentHandler as ConsentHandler
from .events import AnswerText as AnswerText
from .events import ClientToolCall as ClientToolCall
from .events import ClientToolCanceled as ClientToolCanceled
from .events import ConnectionClosed as ConnectionClosed
from .events import ConsentPrompt as ConsentPrompt
from .events import Event as Event
from .events import ResultRefused as ResultRefused
from .events import RunFailed as RunFailed
from .events import RunFinished as RunFinished
from .events import RunStarted as RunStarted
from .events import ServerToolCall as ServerToolCall
from .events import ServerToolResult as ServerToolResult
from .link import Link as Link
from .link import Reconnect as Reconnect
from .session import Client as Client
from .session import connect as connect
from .tools import Execution as Execution
from .tools import ExecutionLedger as ExecutionLedger
from .tools import Handler as Handler
from .tools import Handlers as Handlers

__all__ = [
    "AnswerText",
    "Client",
    "ClientToolCall",
    "ClientToolCanceled",
    "ConnectionClosed",
    "ConsentHandler",
    "ConsentPrompt",
    "Event",
    "Execution",
    "ExecutionLedger",
    "Handler",
    "Handlers",
    "Link",
    "Reconnect",
    "RegistrationError",
    "ResultRefused",
    "RunFailed",
    "RunFinished",
    "RunStarted",
    "ServerToolCall",
    "ServerToolResult",
    "connect",
]
