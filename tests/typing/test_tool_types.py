"""Checked by pyright: decorated tools keep the wrapped function's signature."""

from __future__ import annotations

from typing import assert_type

from toolwire import Tool, Toolbox, ToolResult, tool


@tool
def join(a: int, b: str = "x") -> str:
    return f"{a}{b}"


@tool(mode="read", timeout=5)
async def fetch(url: str) -> bytes:
    return url.encode()


toolbox = Toolbox()


@toolbox.tool
def registered(n: int) -> list[int]:
    return [n]


@toolbox.tool(idempotent=True)
async def registered_async(n: int) -> float:
    return n / 2


def test_bare_decorator_keeps_the_signature() -> None:
    decorated: Tool[..., str] = join
    assert_type(join(1, b="y"), str)
    assert decorated is join


async def test_decorator_with_options_keeps_the_signature() -> None:
    assert_type(await fetch("u"), bytes)


async def test_toolbox_decorators_keep_the_signature() -> None:
    assert_type(registered(1), list[int])
    assert_type(await registered_async(1), float)


def test_error_is_the_constructor_on_the_class_and_a_string_on_a_result() -> None:
    result = ToolResult.failed("c1", "boom", code="x")
    assert_type(result, ToolResult)
    assert_type(result.error, str | None)
    assert result.error == "boom"
