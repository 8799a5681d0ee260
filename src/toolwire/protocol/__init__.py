"""The wire protocol, sans I/O: message types, the MessagePack codec with limits, the connection.

| module | what |
|---|---|
| `wire` | `MessageType` numbers and the typed reader of a body's fields |
| `errors` | `ProtocolError`, `ErrorCode` (the ErrorMessage code table), `Severity` |
| `conversation` | the published protocol's messages: errors, text, acknowledgements, the handshake |
| `tool_use` | `ToolUseRequest`, `ToolUseResult` |
| `results` | the one converter between `ToolResult` and `ToolUseResult`: `result_message`, `tool_result` |
| `extensions` | toolwire's own messages from 100: tool registration, consent, run status |
| `messages` | `Envelope`, the `Message` union, `parse_body` |
| `codec` | `encode`, `decode`, `Limits` |
| `sequencing` | `Sequencing`: the state a conversation's end keeps across connections |
| `connection` | `Connection`: handshake, stanza ids, acknowledgements, duplicates, replay |

Nothing here imports an I/O library: transports feed bytes in and write the bytes that come out.
"""

from .codec import DEFAULT_LIMITS as DEFAULT_LIMITS
from .codec import Frame as Frame
from .codec import Limits as Limits
from .codec import decode as decode
from .codec import encode as encode
from .codec import read_frame as read_frame
from .connection import ACK_IN_META as ACK_IN_META
from .connection import META_ACK as META_ACK
from .connection import WHOLE_ANSWERS as WHOLE_ANSWERS
from .connection import Connection as Connection
from .connection import Received as Received
from .errors import ErrorCode as ErrorCode
from .errors import ProtocolError as ProtocolError
from .errors import Severity as Severity
from .extensions import ConsentScope as ConsentScope
from .extensions import RunState as RunState
from .messages import Acknowledgement as Acknowledgement
from .messages import AssistantMessage as AssistantMessage
from .messages import AssistantSentence as AssistantSentence
from .messages import Configuration as Configuration
from .messages import ConsentAnswer as ConsentAnswer
from .messages import ConsentRequest as ConsentRequest
from .messages import ControlStop as ControlStop
from .messages import Envelope as Envelope
from .messages import ErrorMessage as ErrorMessage
from .messages import Message as Message
from .messages import MessageType as MessageType
from .messages import RegisterTools as RegisterTools
from .messages import RegisterToolsResult as RegisterToolsResult
from .messages import RunStatus as RunStatus
from .messages import StartAnswer as StartAnswer
from .messages import ToolUseCancel as ToolUseCancel
from .messages import ToolUseRequest as ToolUseRequest
from .messages import ToolUseResult as ToolUseResult
from .messages import UserMessage as UserMessage
from .messages import parse_body as parse_body
from .results import result_message as result_message
from .results import tool_result as tool_result
from .sequencing import Role as Role
from .sequencing import Sequencing as Sequencing
from .tool_use import Execution as Execution

__all__ = [
    "ACK_IN_META",
    "DEFAULT_LIMITS",
    "META_ACK",
    "WHOLE_ANSWERS",
    "Acknowledgement",
    "AssistantMessage",
    "AssistantSentence",
    "Configuration",
    "Connection",
    "ConsentAnswer",
    "ConsentRequest",
    "ConsentScope",
    "ControlStop",
    "Envelope",
    "ErrorCode",
    "ErrorMessage",
    "Execution",
    "Frame",
    "Limits",
    "Message",
    "MessageType",
    "ProtocolError",
    "Received",
    "RegisterTools",
    "RegisterToolsResult",
    "Role",
    "RunState",
    "RunStatus",
    "Sequencing",
    "Severity",
    "StartAnswer",
    "ToolUseCancel",
    "ToolUseRequest",
    "ToolUseResult",
    "UserMessage",
    "decode",
    "encode",
    "parse_body",
    "read_frame",
    "result_message",
    "tool_result",
]
