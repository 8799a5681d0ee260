"""`toolwire mcp serve`'s loading of the application and of the SDK, in process."""

from __future__ import annotations

import sys

import pytest

from toolwire import Agent, Pipeline, Toolbox, ToolResult, UsageError
from toolwire.cli import main
from toolwire.testing import ScriptedModel

pytest.importorskip("mcp")

from toolwire.interop.mcp_serve import load_pipeline, to_call_result

toolbox = Toolbox()
agent = Agent(ScriptedModel([]), tools=toolbox)
pipeline = Pipeline(toolbox)


def make_agent() -> Agent:
    return agent


def make_pipeline() -> Pipeline:
    return pipeline


def make_toolbox() -> Toolbox:
    return toolbox


def make_number() -> int:
    return 7


def test_an_agent_is_served_with_its_pipeline():
    assert load_pipeline(f"{__name__}:make_agent") is agent.pipeline


def test_a_pipeline_is_served_as_it_is():
    assert load_pipeline(f"{__name__}:make_pipeline") is pipeline


def test_a_toolbox_is_served_with_the_default_policy():
    assert load_pipeline(f"{__name__}:make_toolbox").toolbox is toolbox


def test_a_factory_returning_something_else_is_refused():
    with pytest.raises(UsageError, match="returned int, not an Agent, Pipeline or Toolbox"):
        load_pipeline(f"{__name__}:make_number")


def test_a_spec_without_a_factory_is_refused():
    with pytest.raises(UsageError, match="module:factory"):
        load_pipeline("mcp_app")


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` raises ImportError
    monkeypatch.delitem(sys.modules, "toolwire.interop.mcp_serve")
    assert main(["mcp", "serve", "--app", "mcp_app:factory"]) == 2
    assert "pip install 'toolwire[mcp]'" in capsys.readouterr().err


def test_a_canceled_call_is_an_error_with_the_canceled_outcome():
    result = to_call_result(ToolResult.canceled("c1", "Stopped", "user"))
    assert (result.is_error, result.meta) == (
        True,
        {
            "dev.toolwire/outcome": "canceled",
            "dev.toolwire/code": "canceled",
            "dev.toolwire/payload": {"canceled": {"reason": "Stopped", "by": "user"}},
        },
    )


def test_a_value_that_is_not_an_object_is_json_text_without_structured_content():
    result = to_call_result(ToolResult.ok("c1", [1, 2]))
    assert (result.is_error, result.structured_content) == (False, None)
    assert result.content[0].model_dump()["text"] == "[1, 2]"
