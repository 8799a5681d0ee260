"""The wire protocol, sans I/O: message types, the MessagePack codec with limits, the connection.

| module | what |
|---|---|
| `wire` | `MessageType` numbers and the typed reader of a body's fields |
| `error_codes` | `ProtocolError`, `ErrorCode` (the ErrorMessage code table), `Severity` |
| `published` | the published protocol's messages: errors, text, acknowledgements, the handshake |
| `tool_use` | `ToolUseRequest`, `ToolUseResult` |
| `results` | the one converter between `ToolResult` and `ToolUseResult`: `result_message`, `tool_result` |
| `extensions` | toolwire's own messages from 100: tool registration, consent, run status |
| `bodies` | `Envelope`, the `MessageBody` union, `parse_body` |
| `codec` | `encode`, `decode`, `Limits` |
| `sequencing` | `Sequencing`: the state a conversation's end keeps across connections |
| `connection` | `Connection`: handshake, stanza ids, acknowledgements, duplicates, replay |

Nothing here imports an I/O library: transports feed bytes in and write the bytes that come out.
"""

from .bodies import Acknowledgement as Acknowledgement
from .bodies import AssistantMessageBody as AssistantMessageBody
from .bodies import AssistantSentence as AssistantSentence
from .bodies import Configuration as Configuration
from .bodies import ConsentAnswerBody as ConsentAnswerBody
from .bodies import ConsentRequestBody as ConsentRequestBody
from .bodies import ControlStop as ControlStop
from .bodies import Envelope as Envelope
from .bodies import ErrorMessage as ErrorMessage
from .bodies import MessageBody as MessageBody
from .bodies import MessageType as MessageType
from .bodies import RegisterTools as RegisterTools
from .bodies import RegisterToolsResult as RegisterToolsResult
from .bodies import RunStatus as RunStatus
from .bodies import StartAnswer as StartAnswer
from .bodies import ToolUseCancel as ToolUseCancel
from .bodies import ToolUseRequest as ToolUseRequest
from .bodies import ToolUseResult as ToolUseResult
from .bodies import UserMessageBody as UserMessageBody
from .bodies import parse_body as parse_body
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
from .error_codes import ErrorCode as ErrorCode
from .error_codes import ProtocolError as ProtocolError
from .error_codes import Severity as Severity
from .extensions import RUN_QUEUE as RUN_QUEUE
from .extensions import ConsentScope as ConsentScope
from .extensions import RunState as RunState
from .results import result_message as result_message
from .results import tool_result as tool_result
from .sequencing import Role as Role
from .sequencing import Sequencing as Sequencing
from .tool_use import Execution as Execution

__all__ = [
    "ACK_IN_META",
    "DEFAULT_LIMITS",
    "META_ACK",
    "RUN_QUEUE",
    "WHOLE_ANSWERS",
    "Acknowledgement",
    "AssistantMessageBody",
    "AssistantSentence",
    "Configuration",
    "Connection",
    "ConsentAnswerBody",
    "ConsentRequestBody",
    "ConsentScope",
    "ControlStop",
    "Envelope",
    "ErrorCode",
    "ErrorMessage",
    "Execution",
    "Frame",
    "Limits",
    "MessageBody",
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
    "UserMessageBody",
    "decode",
    "encode",
    "parse_body",
    "read_frame",
    "result_message",
    "tool_result",
]
