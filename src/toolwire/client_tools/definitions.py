"""What a client sends: tool groups, tools, skills, augmentations, and the replies to tool calls.

Every model builds from Python keywords or from the camelCase JSON (or MessagePack) a client
sends, and enforces the basic shape limits below; unknown fields are refused, so a typo such as
`requiresPermision` never goes unnoticed, and flags must be booleans (`"yes"`, `"false"` or 1
are refused rather than read as true or false).

```python
group = ClientToolGroup.from_dict({"name": "IDE", "tools": [{"name": "OpenFile"}]})
group.to_dict()  # camelCase again
```

Shape only: names unique across groups, skill references and parameter schemas are checked by
`validation.validate_groups`, which a registration passes before anything is applied.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Final, Literal, Self, TypeAlias, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_serializer,
)
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from ..errors import EnvelopeError, RegistrationError
from ..protocol.results import content_value
from ..protocol.tool_use import ToolUseResult

__all__ = [
    "MAX_CONTEXT_ITEMS",
    "MAX_CONTEXT_KEY_LENGTH",
    "MAX_CONTEXT_VALUE_LENGTH",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_INJECTED_GROUPS",
    "MAX_INSTRUCTIONS_LENGTH",
    "MAX_NAMES_PER_LIST",
    "MAX_REFERENCES_PER_SKILL",
    "MAX_SKILLS_PER_GROUP",
    "MAX_TOOLS_PER_GROUP",
    "NAME_PATTERN",
    "Augmentation",
    "BinaryContent",
    "BinaryEncoding",
    "ClientSkill",
    "ClientTool",
    "ClientToolGroup",
    "ClientToolRequest",
    "ClientToolResponse",
    "Content",
    "ContextItem",
    "JsonContent",
    "TextContent",
    "container_name",
    "content_to_data",
]

NAME_PATTERN: Final = r"^[A-Za-z0-9_-]{1,64}$"
"""Tool and group names: OpenAI's rule for function names, which every provider accepts."""
MAX_SKILL_NAME_LENGTH: Final = 64
"""Skill names are any printable text of 1-64 characters ("Complete Checkout")."""
MAX_DESCRIPTION_LENGTH: Final = 4_096
"""Characters in a tool, group or skill description (shown to the model on every turn)."""
MAX_INSTRUCTIONS_LENGTH: Final = 16_384
"""Characters in a `function_result` or `system_prompt`."""
MAX_TOOLS_PER_GROUP: Final = 128
"""Tools in one group (OpenAI accepts 128 functions per request)."""
MAX_SKILLS_PER_GROUP: Final = 64
"""Skills in one group."""
MAX_REFERENCES_PER_SKILL: Final = 128
"""Tool references in one skill (at most every tool of its group)."""
MAX_CONTEXT_KEY_LENGTH: Final = 128
"""Characters in a `ContextItem` key."""
MAX_CONTEXT_VALUE_LENGTH: Final = 16_384
"""Characters in a `ContextItem` value."""
MAX_INJECTED_GROUPS: Final = 64
"""Groups one augmentation may inject (the default limit of groups per thread)."""
MAX_CONTEXT_ITEMS: Final = 64
"""Context items one augmentation may add."""
MAX_NAMES_PER_LIST: Final = 1_024
"""Names in each of an augmentation's remove / expand / collapse / hide / show lists."""

_NAME: Final = re.compile(NAME_PATTERN)
_NOT_NAME_CHARACTERS: Final = re.compile(r"[^A-Za-z0-9_-]+")
_ROLE_OF_FIELD: Final = {"tools": "tool", "skills": "tool", "injectToolGroups": "group", "inject_tool_groups": "group"}
_MAX_LISTED_PROBLEMS: Final = 3

BinaryEncoding: TypeAlias = Literal["base64", "bytes"]
"""How `to_dict()` writes binary data: a base64 string (JSON) or raw bytes (MessagePack)."""


def container_name(name: str) -> str:
    """Return the tool name a collapsed group or a skill is offered to the model under.

    Runs of characters a tool name may not contain become `_`, and the result is cut to 64
    characters: "Complete Checkout" is offered as "Complete_Checkout".
    """
    return _NOT_NAME_CHARACTERS.sub("_", name)[:64]


def _check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"{_preview(name)} is not a valid name: use 1-64 letters, digits, '_' or '-'")
    return name


def _check_skill_name(name: str) -> str:
    if not 1 <= len(name) <= MAX_SKILL_NAME_LENGTH or not name.isprintable():
        raise ValueError(f"{_preview(name)} is not a valid skill name: use 1-64 printable characters")
    return name


def _empty_if_none(value: Any) -> Any:
    # The seed's descriptions are nullable; null and "" mean the same.
    return "" if value is None else value


def _reference_names(value: Any) -> Any:
    """Accept `"ValidateCart"`, `{"name": "ValidateCart"}` or `{"toolName": "ValidateCart"}` per item."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        return cast(Any, value)  # pydantic refuses it with its own message
    names: list[Any] = []
    for item in cast("Iterable[Any]", value):
        if isinstance(item, Mapping):
            reference = cast("Mapping[str, Any]", item)
            keys = [key for key in ("name", "toolName", "tool_name") if key in reference]
            if len(keys) != 1 or len(reference) != 1:
                raise ValueError('a reference is a tool name or an object {"name": <tool name>}')
            item = reference[keys[0]]
        names.append(item)
    return names


def _sorted_if_set(value: Any) -> Any:
    # A set has no order of its own; sorting keeps transcripts and replays deterministic.
    if isinstance(value, set | frozenset):
        return sorted(cast("set[Any]", value), key=str)
    return value


def _unique(names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))


def _bytes_or_base64(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("data must be base64 text (JSON) or raw bytes (MessagePack)") from None
    if isinstance(value, bytearray | memoryview):
        return bytes(cast("bytearray | memoryview[int]", value))
    return value


ToolName = Annotated[str, AfterValidator(_check_name)]
SkillName = Annotated[str, AfterValidator(_check_skill_name)]
# Constraints come before validators in each `Annotated`, so pydantic checks them natively.
Description = Annotated[str, Field(max_length=MAX_DESCRIPTION_LENGTH), BeforeValidator(_empty_if_none)]
Instructions = Annotated[str | None, Field(max_length=MAX_INSTRUCTIONS_LENGTH)]
NameList = Annotated[
    tuple[Annotated[str, Field(min_length=1, max_length=MAX_SKILL_NAME_LENGTH)], ...],
    Field(max_length=MAX_NAMES_PER_LIST),
    BeforeValidator(_sorted_if_set),
    AfterValidator(_unique),
]


class _WireModel(BaseModel):
    """Shared configuration and the `from_dict` / `to_dict` pair of every model in this module."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True, extra="forbid")

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Build from a camelCase (or snake_case) mapping, as decoded from JSON or MessagePack.

        Raises:
            EnvelopeError: For content and responses, naming every field that is wrong.
            RegistrationError: For groups, tools, skills, context items and augmentations, naming
                the group and tool (or skill) when the input says which.
        """
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise cls._refusal(data, exc) from None

    @classmethod
    def _refusal(cls, data: Any, exc: ValidationError) -> Exception:
        return EnvelopeError(f"invalid {cls.__name__}: {_describe(exc)}")

    def to_dict(self, *, binary: BinaryEncoding = "base64") -> dict[str, Any]:
        """Return the camelCase JSON shape; `binary="bytes"` keeps binary data raw for MessagePack."""
        return self.model_dump(mode="json", by_alias=True)


class _Definition(_WireModel):
    """A model a registration or augmentation carries: its errors are `RegistrationError`s."""

    _role: ClassVar[str | None] = None

    @classmethod
    def _refusal(cls, data: Any, exc: ValidationError) -> Exception:
        errors = exc.errors(include_url=False, include_input=False)
        where = _locate(data, errors[0]["loc"], cls._role)
        return RegistrationError(_describe(exc), group=where.get("group"), tool=where.get("tool"))


class ClientTool(_Definition):
    """A tool the client executes; the model calls it like any other tool."""

    _role = "tool"

    name: ToolName
    """Unique among every tool the model sees, server tools included."""
    description: Description = ""
    """What the tool does, for the model."""
    parameters_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """JSON Schema of the arguments; checked by `check_parameters_schema` when registered."""
    requires_permission: StrictBool = False
    """Every call asks the user for consent first (a JSON boolean: `"yes"` or 1 is refused)."""


class ClientSkill(_Definition):
    """A workflow over tools of its group, offered to the model as one container."""

    _role = "tool"

    name: SkillName
    """Any printable text; the model sees it as `container_name(name)`."""
    description: Description = ""
    function_result: Instructions = None
    """Appended once to the generated "<skill> activated" message."""
    system_prompt: Instructions = None
    """Added to the system prompt on every turn while the skill is active."""
    references: Annotated[
        tuple[ToolName, ...], BeforeValidator(_reference_names), Field(max_length=MAX_REFERENCES_PER_SKILL)
    ] = ()
    """Names of tools of the same group; objects `{"name": ...}` are accepted and stored as names."""


class ClientToolGroup(_Definition):
    """A named set of client tools and skills, collapsed behind one container by default."""

    _role = "group"

    name: ToolName
    description: Description = ""
    """Shown to the model while the group is collapsed."""
    tools: Annotated[tuple[ClientTool, ...], Field(max_length=MAX_TOOLS_PER_GROUP)] = ()
    skills: Annotated[tuple[ClientSkill, ...], Field(max_length=MAX_SKILLS_PER_GROUP)] = ()
    function_result: Instructions = None
    """Appended once to the generated "<group> expanded" message."""
    system_prompt: Instructions = None
    """Added to the system prompt on every turn while the group is expanded."""
    start_collapsed: StrictBool = True
    """Offer the group as one container until the model expands it."""


class ContextItem(_Definition):
    """A piece of context an augmentation adds for the model, such as `("user", "Admin user logged in")`."""

    key: Annotated[str, Field(min_length=1, max_length=MAX_CONTEXT_KEY_LENGTH)]
    value: Annotated[str, Field(max_length=MAX_CONTEXT_VALUE_LENGTH)]


class Augmentation(_Definition):
    """Changes a tool response makes to the thread's client tools; name lists keep order, without repeats."""

    inject_tool_groups: Annotated[tuple[ClientToolGroup, ...], Field(max_length=MAX_INJECTED_GROUPS)] = ()
    """Groups to register (replacing groups of the same name)."""
    remove_tool_groups: NameList = ()
    expand_tool_groups: NameList = ()
    collapse_tool_groups: NameList = ()
    hide_tools: NameList = ()
    show_tools: NameList = ()
    add_context: Annotated[tuple[ContextItem, ...], Field(max_length=MAX_CONTEXT_ITEMS)] = ()

    @property
    def is_empty(self) -> bool:
        """True when applying the augmentation would change nothing."""
        return not any(getattr(self, name) for name in type(self).model_fields)


class TextContent(_WireModel):
    """Text a client tool returns."""

    type: Literal["text"] = "text"
    text: str


class JsonContent(_WireModel):
    """A JSON value a client tool returns."""

    type: Literal["json"] = "json"
    value: Any


class BinaryContent(_WireModel):
    """A file or image a client tool returns; `data` is raw bytes, written as base64 in JSON."""

    type: Literal["binary"] = "binary"
    mime_type: str
    data: Annotated[bytes, BeforeValidator(_bytes_or_base64)]
    """Accepts bytes (MessagePack) or a base64 string (JSON)."""
    filename: str | None = None

    @field_serializer("data")
    def _data_as_base64(self, data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    def to_dict(self, *, binary: BinaryEncoding = "base64") -> dict[str, Any]:
        """Return the camelCase JSON shape; `binary="bytes"` keeps `data` raw for MessagePack."""
        if binary == "base64":
            return super().to_dict()
        return {**self.model_dump(mode="json", by_alias=True, exclude={"data"}), "data": self.data}


Content = Annotated[TextContent | JsonContent | BinaryContent, Field(discriminator="type")]
"""One item of a client tool's result, told apart by its `type`."""


def content_to_data(items: Sequence[TextContent | JsonContent | BinaryContent]) -> Any:
    """Return the JSON value a Success `ToolResult` carries for a client tool's content.

    No items give `None`, one text item its string, one JSON item its value and one binary item
    its `{"type": "binary", ...}` object; several items give a list of such objects, with
    binary data as base64 (`toolwire.protocol.results.content_value`).
    """
    return content_value(item.to_dict(binary="bytes") for item in items)


class ClientToolResponse(_WireModel):
    """A client's reply to a `ClientToolRequest`."""

    request_id: str
    """The `request_id` of the request this answers."""
    content: tuple[Content, ...] = ()
    success: StrictBool = True
    error_message: str | None = None
    """Why the tool failed, for the model; used when `success` is false."""
    terminal: StrictBool = False
    """The run ends after this call's batch (a client tool can finish the task)."""
    needs_followup: StrictBool | None = None
    """Whether the model should react to this result (default: on failures)."""
    message: str | None = None
    """Text for the user, kept with the result."""
    error_code: str | None = None
    """The failure's wire code (`unknown_tool`, `invalid_parameters`, `timeout`, `execution_error`
    or the tool's own); `execution_error` when a failure names none."""
    result_type: int | None = Field(default=None, ge=0, le=4)
    """The failure's outcome type (`ResultType`, 1-4) when `error_code` does not imply it, e.g. 4
    (Denied) with a tool's own code; the code's type when None."""
    payload: dict[str, Any] | None = None
    """The failure's seed 000 payload, when the client sent one (a ToolUseResult's `result` on a
    failure), e.g. `{"timeout": {"durationMs": 5000, "effectUnknown": true}}`; what it says wins
    over `error_message` (see `toolwire.protocol.results.failure_result`)."""
    augmentation: Augmentation | None = None
    """Changes to the thread's client tools, applied only if they pass registration checks."""

    def to_dict(self, *, binary: BinaryEncoding = "base64") -> dict[str, Any]:
        """Return the camelCase JSON shape; `binary="bytes"` keeps binary content raw for MessagePack."""
        data = self.model_dump(mode="json", by_alias=True, exclude={"content"})
        return {**data, "content": [item.to_dict(binary=binary) for item in self.content]}

    def to_message(self, request_id: str | None = None) -> ToolUseResult:
        """Return the ToolUseResult this response stands for (what a wire client sends).

        Content items travel in `content` (binary data raw), a failure's payload in `result`; a
        failure without a code gets its outcome type's default code (`execution_error` without
        a `result_type`) from `toolwire.protocol.results.tool_result`.

        Args:
            request_id: The request answered; defaults to this response's `request_id`.
        """
        return ToolUseResult(
            id=self.request_id if request_id is None else request_id,
            success=self.success,
            result=None if self.success else self.payload,
            error_code=None if self.success else self.error_code,
            error_message=None if self.success else self.error_message,
            result_type=None if self.success else self.result_type,
            needs_followup=self.needs_followup,
            terminal=self.terminal,
            message=self.message,
            content=tuple(item.to_dict(binary="bytes") for item in self.content),
            augmentation=None if self.augmentation is None else self.augmentation.to_dict(),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientToolRequest:
    """The runtime's request that a client run one of its tools."""

    request_id: str
    """Correlates the client's `ClientToolResponse` with this request."""
    thread_id: str
    """The conversation the call belongs to."""
    call_id: str
    """The model's id for the call."""
    tool_name: str
    arguments: dict[str, Any]
    """Already validated against the tool's parameters schema."""
    description: str
    """The tool's description, so a client can show the user what is about to happen."""
    mode: str
    """The call's `ToolMode` value (read, write, ...)."""

    def to_dict(self) -> dict[str, Any]:
        """Return the camelCase JSON shape."""
        return {to_camel(name): getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClientToolRequest:
        """Build from the camelCase (or snake_case) mapping `to_dict()` gives.

        Raises:
            EnvelopeError: A field is missing or has the wrong type.
        """
        values: dict[str, Any] = {}
        for name in cls.__dataclass_fields__:
            value = data.get(to_camel(name), data.get(name))
            expected = dict if name == "arguments" else str
            if not isinstance(value, expected):
                got = "missing" if value is None else type(value).__name__
                raise EnvelopeError(
                    f"invalid ClientToolRequest: '{to_camel(name)}' must be a {expected.__name__} ({got})"
                )
            values[name] = value
        return cls(**values)


def _describe(exc: ValidationError) -> str:
    """Turn a pydantic error into "where: what" sentences; the first few of them."""
    errors = exc.errors(include_url=False, include_input=False)
    problems = [_sentence(error) for error in errors[:_MAX_LISTED_PROBLEMS]]
    if len(errors) > _MAX_LISTED_PROBLEMS:
        problems.append(f"and {len(errors) - _MAX_LISTED_PROBLEMS} more")
    return "; ".join(problems)


def _sentence(error: ErrorDetails) -> str:
    loc = error["loc"]
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
    if error["type"] == "extra_forbidden" and loc:
        field = str(loc[-1])
        close = difflib.get_close_matches(field, _field_names(), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return f"unknown field {_preview(field)}{hint}"
    # Speak JSON to clients: an array, not a tuple; an object, not a dictionary.
    message = error["msg"].removeprefix("Value error, ").replace("a valid tuple", "an array")
    message = message.replace("a valid dictionary", "an object")
    return f"{where}: {message}" if where else message


@functools.cache
def _field_names() -> frozenset[str]:
    models: tuple[type[BaseModel], ...] = (
        ClientTool,
        ClientSkill,
        ClientToolGroup,
        ContextItem,
        Augmentation,
        TextContent,
        JsonContent,
        BinaryContent,
        ClientToolResponse,
    )
    return frozenset(field.alias or name for model in models for name, field in model.model_fields.items())


def _locate(data: Any, loc: tuple[int | str, ...], role: str | None) -> dict[str, str]:
    """Follow an error's location through the input, noting the names of the group and tool on the way."""
    found: dict[str, str] = {}
    node = data

    def note(role: str | None, node: Any) -> None:
        name = cast("Mapping[str, Any]", node).get("name") if isinstance(node, Mapping) else None
        if role is not None and isinstance(name, str):
            found[role] = name if len(name) <= 80 else name[:77] + "..."

    note(role, node)
    for part in loc:
        if isinstance(part, str) and isinstance(node, Mapping):
            role = _ROLE_OF_FIELD.get(part)
            node = cast("Mapping[str, Any]", node).get(part)
        elif isinstance(part, int) and isinstance(node, Sequence) and not isinstance(node, str):
            items = cast("Sequence[Any]", node)
            if part >= len(items):
                break
            node = items[part]
            note(role, node)
        else:
            break
    return found


def _preview(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:77] + "...")
