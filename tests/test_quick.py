"""`quick_init` keeps a frozen dataclass's constructor: same parameters, defaults, factories, immutability."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field

import pytest

from toolwire._fast import quick_init
from toolwire.messages import Usage
from toolwire.models import ModelResponse
from toolwire.store import LedgerEntry


@quick_init
@dataclass(frozen=True, slots=True)
class Sample:
    name: str
    count: int = 1
    tags: list[str] = field(default_factory=list)
    kind: str = field(default="sample", init=False)
    label: str = field(default="", kw_only=True)


def test_defaults_factories_and_fixed_fields_are_applied():
    sample = Sample("a")
    assert (sample.name, sample.count, sample.tags, sample.kind, sample.label) == ("a", 1, [], "sample", "")


def test_each_instance_gets_its_own_factory_value():
    assert Sample("a").tags is not Sample("b").tags


def test_arguments_are_taken_as_declared():
    assert Sample("a", 2, ["x"], label="l") == Sample(name="a", count=2, tags=["x"], label="l")


def test_a_keyword_only_field_refuses_a_positional_argument():
    with pytest.raises(TypeError):
        Sample("a", 2, ["x"], "l")  # type: ignore[misc]


def test_an_init_false_field_is_not_a_parameter():
    with pytest.raises(TypeError):
        Sample("a", kind="other")  # type: ignore[call-arg]


def test_instances_stay_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Sample("a").count = 3  # type: ignore[misc]


def test_the_parameters_match_the_fields():
    parameters = inspect.signature(Sample).parameters
    assert [(name, parameter.kind.name) for name, parameter in parameters.items()] == [
        ("name", "POSITIONAL_OR_KEYWORD"),
        ("count", "POSITIONAL_OR_KEYWORD"),
        ("tags", "POSITIONAL_OR_KEYWORD"),
        ("label", "KEYWORD_ONLY"),
    ]


def test_hot_path_types_use_it():
    assert LedgerEntry.__init__.__qualname__ == "LedgerEntry.__init__"
    assert ModelResponse().usage == Usage(requests=1)


def test_a_mutable_dataclass_is_refused():
    @dataclass(slots=True)
    class Mutable:
        value: int

    with pytest.raises(TypeError, match="frozen, slotted"):
        quick_init(Mutable)
