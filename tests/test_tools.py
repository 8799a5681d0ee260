from __future__ import annotations

import enum
from typing import Literal

import anyio
import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict

from toolwire import Cancellation, Tool, Toolbox, ToolContext, ToolMode, UsageError, tool
from toolwire.errors import CallCanceled, InvalidArguments
from toolwire.modes import ModeSource


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int


class Window(TypedDict):
    width: int
    height: int


@tool
def plain(a: int, b: str = "x") -> str:
    """Join a number and a string.

    Longer explanation.

    Args:
        a: The number.
        b: The string.
    """
    return f"{a}{b}"


@tool
async def sum_async(a: int, b: int) -> int:
    return a + b


def test_tool_stays_callable_like_the_function():
    assert plain(1, b="y") == "1y"


async def test_async_tool_stays_awaitable():
    assert await sum_async(1, 2) == 3


def test_tool_keeps_the_function_metadata():
    assert plain.__name__ == "plain"
    assert plain.__doc__ is not None and plain.__doc__.startswith("Join")


def test_description_comes_from_docstring_without_sections():
    assert plain.description == "Join a number and a string.\n\nLonger explanation."


def test_parameter_descriptions_come_from_docstring():
    assert plain.parameters_schema["properties"]["a"]["description"] == "The number."


def test_schema_lists_required_and_defaults():
    schema = plain.parameters_schema
    assert schema["required"] == ["a"]
    assert schema["properties"]["b"]["default"] == "x"


def test_schema_forbids_extra_arguments():
    assert plain.parameters_schema["additionalProperties"] is False


def test_schema_has_no_titles():
    assert "title" not in plain.parameters_schema
    assert "title" not in plain.parameters_schema["properties"]["a"]


def test_schema_covers_supported_types():
    @tool
    def every(
        s: str,
        i: int,
        f: float,
        b: bool,
        items: list[int],
        mapping: dict[str, float],
        maybe: str | None,
        choice: Literal["a", "b"],
        color: Color,
        point: Point,
        window: Window,
    ) -> None:
        pass

    props = every.parameters_schema["properties"]
    assert props["s"]["type"] == "string"
    assert props["i"]["type"] == "integer"
    assert props["f"]["type"] == "number"
    assert props["b"]["type"] == "boolean"
    assert props["items"] == {"type": "array", "items": {"type": "integer"}}
    assert props["mapping"]["additionalProperties"] == {"type": "number"}
    assert props["maybe"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert props["choice"]["enum"] == ["a", "b"]
    defs = every.parameters_schema["$defs"]
    assert defs["Color"]["enum"] == ["red", "blue"]
    assert set(defs["Point"]["properties"]) == {"x", "y"}
    assert set(defs["Window"]["properties"]) == {"width", "height"}


def test_validation_coerces_into_declared_types():
    @tool
    def move(point: Point, color: Color = Color.RED) -> None:
        pass

    kwargs = move.validate({"point": {"x": 1, "y": "2"}, "color": "blue"})
    assert kwargs == {"point": Point(x=1, y=2), "color": Color.BLUE}


def test_validation_leaves_defaults_to_the_function():
    assert plain.validate({"a": 1}) == {"a": 1}


def test_validation_failure_names_each_bad_field():
    with pytest.raises(InvalidArguments) as raised:
        plain.validate({"a": "one", "c": 3})
    assert raised.value.problems == [
        "'a': Input should be a valid integer, unable to parse string as an integer (got 'one')",
        "'c' is not a parameter of this tool (parameters: a, b)",
    ]


def test_validation_failure_reports_missing_fields():
    with pytest.raises(InvalidArguments) as raised:
        plain.validate({})
    assert raised.value.problems == ["'a' is required but missing"]


def test_validation_failure_reports_nested_location():
    @tool
    def move(point: Point) -> None:
        pass

    with pytest.raises(InvalidArguments) as raised:
        move.validate({"point": {"x": 1}})
    assert raised.value.problems == ["'point.y' is required but missing"]


def test_tool_context_is_injected_and_hidden_from_schema():
    @tool
    def with_context(ctx: ToolContext, a: int) -> str:
        return ctx.call_id

    assert with_context.context_parameter == "ctx"
    assert list(with_context.parameters_schema["properties"]) == ["a"]


def test_idempotency_key_is_stable_per_call_and_differs_between_calls():
    first = ToolContext("call-1", "t", "thread")
    assert first.idempotency_key == ToolContext("call-1", "t", "thread").idempotency_key
    assert first.idempotency_key != ToolContext("call-2", "t", "thread").idempotency_key


def test_options_are_recorded():
    @tool(name="renamed", description="Custom.", mode="read", timeout=2, requires_permission=True)
    def original(a: int) -> int:
        return a

    assert (original.name, original.description, original.mode) == ("renamed", "Custom.", ToolMode.READ)
    assert original.mode_decision.source is ModeSource.EXPLICIT
    assert original.timeout == 2.0
    assert original.requires_permission is True


def test_default_timeout_is_thirty_seconds():
    assert plain.timeout == 30.0


def test_mode_comes_from_name_pattern_with_reason():
    @tool
    def delete_note(note_id: str) -> None:
        pass

    assert delete_note.mode is ToolMode.DESTRUCTIVE
    assert delete_note.mode_decision.reason == "name matches ^delete_"


def takes_args(*args: int) -> None:
    pass


def takes_kwargs(**kwargs: int) -> None:
    pass


def unannotated(a) -> None:
    pass


def takes_opaque(thing: Opaque) -> None:
    pass


class Opaque:
    pass


@pytest.mark.parametrize(
    ("define", "message"),
    [
        (lambda: tool(takes_args), "variadic positional"),
        (lambda: tool(takes_kwargs), "variadic keyword"),
        (lambda: tool(unannotated), "has no type annotation"),
        (lambda: tool(name="has space")(plain.function), "is not valid"),
        (lambda: tool(mode="dangerous")(plain.function), "not one of"),
        (lambda: tool(timeout=0)(plain.function), "timeout must be a positive number"),
        (lambda: tool(inline=True)(sum_async.function), "inline=True applies to sync"),
        (lambda: tool(int), "needs a function"),
    ],
    ids=[
        "args",
        "kwargs",
        "unannotated",
        "bad-name",
        "bad-mode",
        "bad-timeout",
        "inline-async",
        "class",
    ],
)
def test_undecoratable_callables_raise_usage_error(define, message):
    with pytest.raises(UsageError, match=message):
        define()


def test_a_type_pydantic_cannot_handle_fails_when_the_schema_is_first_needed():
    opaque = tool(takes_opaque)  # the schema and validator are built on first use
    with pytest.raises(UsageError, match="tool 'takes_opaque': cannot build a schema"):
        Toolbox([opaque]).to_openai()


def test_a_type_pydantic_cannot_handle_fails_a_validation_as_usage_error():
    with pytest.raises(UsageError, match="tool 'takes_opaque': cannot build a schema"):
        tool(takes_opaque).validate({"thing": 1})


def test_a_schema_is_built_once():
    built = tool(plain.function)
    assert built.parameters_schema is built.parameters_schema


def test_unresolvable_annotation_is_a_usage_error():
    class Local:
        pass

    def takes_local(thing: Local) -> None:
        pass

    with pytest.raises(UsageError, match="name 'Local' is not defined"):
        tool(takes_local)


def test_positional_only_parameters_are_refused():
    def positional(a: int, /) -> int:
        return a

    with pytest.raises(UsageError, match="positional-only"):
        tool(positional)


def test_toolbox_refuses_duplicate_names():
    toolbox = Toolbox([plain])
    with pytest.raises(UsageError, match="already registered"):
        toolbox.add(plain)


def test_toolbox_decorator_bare_and_with_options():
    toolbox = Toolbox()

    @toolbox.tool
    def one(a: int) -> int:
        return a

    @toolbox.tool(mode=ToolMode.LOCAL)
    def two(a: int) -> int:
        return a

    assert toolbox.names == ["one", "two"]
    assert isinstance(one, Tool) and one(1) == 1
    assert toolbox["two"].mode is ToolMode.LOCAL


def test_toolbox_accepts_plain_functions():
    def list_items(prefix: str) -> list[str]:
        return [prefix]

    toolbox = Toolbox([list_items])
    assert toolbox["list_items"].mode is ToolMode.READ


def test_toolbox_mode_fallback_applies_to_unmatched_names():
    toolbox = Toolbox([plain, sum_async], mode_fallback=ToolMode.LOCAL)
    assert toolbox["plain"].mode is ToolMode.LOCAL
    assert plain.mode is ToolMode.EXTERNAL  # the decorated tool itself is unchanged


def test_toolbox_mode_fallback_keeps_pattern_decisions():
    @tool
    def get_thing(a: int) -> int:
        return a

    assert Toolbox([get_thing], mode_fallback=ToolMode.LOCAL)["get_thing"].mode is ToolMode.READ


def test_openai_format():
    assert Toolbox([plain]).to_openai() == [
        {
            "type": "function",
            "function": {
                "name": "plain",
                "description": plain.description,
                "parameters": plain.parameters_schema,
            },
        }
    ]


def test_anthropic_format():
    assert Toolbox([plain]).to_anthropic() == [
        {"name": "plain", "description": plain.description, "input_schema": plain.parameters_schema}
    ]


def test_tool_list_cache_is_refreshed_when_a_tool_is_added():
    toolbox = Toolbox([plain])
    assert len(toolbox.to_openai()) == 1
    toolbox.add(sum_async)
    assert [item["name"] for item in toolbox.to_anthropic()] == ["plain", "sum_async"]
    assert len(toolbox.to_openai()) == 2


def test_suggest_puts_close_names_first():
    toolbox = Toolbox([plain, sum_async])
    assert toolbox.suggest("sum_asinc") == ["sum_async", "plain"]


def test_check_cancelled_raises_once_the_call_is_stopped():
    ctx = ToolContext("c1", "t")
    ctx.check_cancelled()
    ctx.stop()
    with pytest.raises(CallCanceled, match="call c1 of tool 't' was canceled"):
        ctx.check_cancelled()


def test_tool_context_says_whether_progress_reaches_anyone():
    heard: list[tuple[float, float | None, str | None]] = []
    assert not ToolContext("c1", "t").reports_progress
    ctx = ToolContext("c1", "t", progress=lambda *report: heard.append(report))
    assert ctx.reports_progress
    ctx.report_progress(1, 2)
    assert heard == [(1, 2, None)]


def test_tool_context_sees_the_callers_cancellation():
    cancellation = Cancellation()
    ctx = ToolContext("c1", "t", cancellation=cancellation)
    cancellation.cancel("stop", by="system")
    assert ctx.cancelled
    assert (cancellation.reason, cancellation.by) == ("stop", "system")


def test_first_cancel_wins():
    cancellation = Cancellation()
    cancellation.cancel("first")
    cancellation.cancel("second", by="policy")
    assert (cancellation.reason, cancellation.by) == ("first", "user")


def test_arguments_that_were_not_json_get_a_clear_problem():
    with pytest.raises(InvalidArguments) as raised:
        plain.validate({"_invalid_json": '{"a": 1'})
    assert raised.value.problems == [
        "'a' is required but missing",
        "the arguments are not a JSON object (got '{\"a\": 1'); send one JSON object",
    ]


async def test_cancel_reaches_every_attached_scope_and_no_detached_one():
    cancellation = Cancellation()
    first, second, third, gone = anyio.CancelScope(), anyio.CancelScope(), anyio.CancelScope(), anyio.CancelScope()
    for scope in (first, second, gone, third):
        cancellation.attach(scope)
    cancellation.detach(gone)
    cancellation.detach(first)
    cancellation.attach(first)
    cancellation.cancel()
    assert (first.cancel_called, second.cancel_called, third.cancel_called, gone.cancel_called) == (
        True,
        True,
        True,
        False,
    )


async def test_a_scope_attached_after_cancel_is_cancelled_at_once():
    cancellation = Cancellation()
    cancellation.cancel()
    scope = anyio.CancelScope()
    cancellation.attach(scope)
    assert scope.cancel_called
