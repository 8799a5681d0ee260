import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from toolwire.client_tools.definitions import ClientSkill, ClientTool, ClientToolGroup
from toolwire.client_tools.validation import (
    ArgumentValidator,
    SchemaLimits,
    SchemaProblem,
    check_parameters_schema,
    validate_groups,
)
from toolwire.errors import RegistrationError

OPEN_FILE_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
    "required": ["path"],
}
SHOW_MESSAGE_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "severity": {"type": "string", "enum": ["info", "warning", "error"]},
    },
    "required": ["message"],
}
HOSTILE_CPU_SECONDS = 0.5
"""A bound on refusing hostile input, not a speed test."""


@contextmanager
def refused_fast() -> Iterator[None]:
    start = time.process_time()
    yield
    assert time.process_time() - start < HOSTILE_CPU_SECONDS


def with_pattern(pattern: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}


def deep_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    node = schema
    for _ in range(levels):
        node["items"] = {"type": "array"}
        node = node["items"]
    return schema


def group(name: str, *tools: str, skills: tuple[ClientSkill, ...] = ()) -> ClientToolGroup:
    return ClientToolGroup(name=name, tools=tuple(ClientTool(name=tool) for tool in tools), skills=skills)


# --- check_parameters_schema: hostile schemas ---------------------------------------------


def test_3000_deep_schema_is_refused_fast():
    with refused_fast(), pytest.raises(SchemaProblem, match="nested deeper than 32 levels"):
        check_parameters_schema(deep_schema(3000))


def test_10_mib_schema_is_refused_fast():
    schema = {"type": "object", "description": "x" * (10 * 1024 * 1024)}
    with refused_fast(), pytest.raises(SchemaProblem, match="larger than 65536 bytes"):
        check_parameters_schema(schema)


def test_schema_with_400_000_properties_is_refused_fast():
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(400_000)}}
    with refused_fast(), pytest.raises(SchemaProblem, match="larger than 65536 bytes"):
        check_parameters_schema(schema)


def test_self_referencing_python_schema_is_refused_as_too_deep():
    schema: dict[str, Any] = {"type": "object"}
    schema["items"] = schema
    with refused_fast(), pytest.raises(SchemaProblem, match="nested deeper"):
        check_parameters_schema(schema)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("^(a+)+$", "can take exponential time (nested quantifier)"),
        ("(a*)*", "can take exponential time (nested quantifier)"),
        (r"(\w+\s?)*", "can take exponential time (nested quantifier)"),
        ("(a{1,200})+", "can take exponential time (nested quantifier)"),
        ("(a|a)*", "can take exponential time (ambiguous alternation)"),
        ("(a|ab)*", "can take exponential time (ambiguous alternation)"),
        (r"(?:ab|[a-c]d)+$", "can take exponential time (ambiguous alternation)"),
        (r"(a)\1", "uses a backreference"),
        (r"(?<x>a)\k<x>", "uses a backreference"),
        ("(?<=a)b", "uses a lookbehind"),
        ("a(?!b)", "uses a lookahead"),
    ],
)
def test_catastrophic_pattern_is_refused_fast(pattern: str, why: str):
    with refused_fast(), pytest.raises(SchemaProblem) as caught:
        check_parameters_schema(with_pattern(pattern))
    assert f"pattern {pattern!r}" in str(caught.value) and why in str(caught.value)


def test_nested_quantifier_message_reads_well():
    with pytest.raises(SchemaProblem) as caught:
        check_parameters_schema(with_pattern("^(a+)+$"))
    assert str(caught.value) == "pattern '^(a+)+$' can take exponential time (nested quantifier)"


def test_pattern_in_pattern_properties_is_checked():
    schema = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "string"}}}
    with pytest.raises(SchemaProblem, match="nested quantifier"):
        check_parameters_schema(schema)


def test_pattern_in_property_names_is_checked():
    schema = {"type": "object", "propertyNames": {"pattern": "(a|a)*"}}
    with pytest.raises(SchemaProblem, match="ambiguous alternation"):
        check_parameters_schema(schema)


def test_pattern_longer_than_the_limit_is_refused():
    with pytest.raises(SchemaProblem, match="longer than 1000 characters"):
        check_parameters_schema(with_pattern("a" * 1001))


def test_pattern_that_does_not_compile_is_refused():
    with pytest.raises(SchemaProblem, match="does not compile"):
        check_parameters_schema(with_pattern("(unclosed"))


def test_deeply_nested_pattern_is_refused_fast():
    with refused_fast(), pytest.raises(SchemaProblem, match="nests groups deeper than 16"):
        check_parameters_schema(with_pattern("(" * 400 + "a" + ")" * 400))


def test_pattern_with_a_huge_expansion_is_refused_fast():
    with refused_fast(), pytest.raises(SchemaProblem, match="too large once its repetitions are expanded"):
        check_parameters_schema(with_pattern(".{0,60000}"))


def test_many_patterns_together_are_bounded():
    properties = {f"p{i}": {"type": "string", "pattern": r"^\p{L}{1,40}$"} for i in range(10)}
    with refused_fast(), pytest.raises(SchemaProblem, match="too large together"):
        check_parameters_schema({"type": "object", "properties": properties})


def test_remote_ref_is_refused():
    schema = {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}
    with (
        refused_fast(),
        pytest.raises(SchemaProblem, match=r"remote \$ref 'https://example.com/a.json' is not allowed"),
    ):
        check_parameters_schema(schema)


def test_relative_ref_to_another_document_is_refused():
    with pytest.raises(SchemaProblem, match=r"remote \$ref 'other.json#/a'"):
        check_parameters_schema({"type": "object", "properties": {"a": {"$ref": "other.json#/a"}}})


def test_remote_dynamic_ref_is_refused():
    with pytest.raises(SchemaProblem, match=r"remote \$dynamicRef"):
        check_parameters_schema({"type": "object", "properties": {"a": {"$dynamicRef": "http://x/y#meta"}}})


def test_absolute_http_id_is_refused():
    with pytest.raises(SchemaProblem, match=r"\$id 'https://example.com/s' is not allowed"):
        check_parameters_schema({"type": "object", "$id": "https://example.com/s"})


def test_urn_id_is_accepted():
    check_parameters_schema({"type": "object", "$id": "urn:example:open-file"})


def test_unknown_meta_schema_is_refused_without_fetching_it():
    with pytest.raises(SchemaProblem, match=r"unknown \$schema 'https://example.com/meta'"):
        check_parameters_schema({"type": "object", "$schema": "https://example.com/meta"})


def test_draft_7_schema_is_accepted():
    validator = check_parameters_schema({"$schema": "http://json-schema.org/draft-07/schema#", **OPEN_FILE_SCHEMA})
    assert validator.problems({"path": "a"}) == []


def test_local_ref_is_accepted():
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/name"}},
        "$defs": {"name": {"type": "string"}},
    }
    assert check_parameters_schema(schema).problems({"a": 1}) == ["at '/a': 1 is not of type \"string\""]


def test_local_ref_to_nothing_is_refused():
    with pytest.raises(SchemaProblem, match="does not compile"):
        check_parameters_schema({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}})


def test_unknown_type_at_the_root_is_refused():
    with (
        refused_fast(),
        pytest.raises(SchemaProblem, match=r'must have "type": "object" at its root \(got \'objectx\'\)'),
    ):
        check_parameters_schema({"type": "objectx"})


def test_schema_without_type_is_refused():
    with pytest.raises(SchemaProblem, match=r'"type": "object".*\(got no type\)'):
        check_parameters_schema({"properties": {}})


def test_non_object_root_is_refused():
    with refused_fast(), pytest.raises(SchemaProblem, match="must be a JSON object, not an array"):
        check_parameters_schema([{"type": "object"}])


def test_invalid_keyword_value_fails_meta_validation():
    schema = {"type": "object", "properties": {"a": {"type": "strin"}}}
    with (
        refused_fast(),
        pytest.raises(SchemaProblem, match=r"not a valid JSON Schema: at '/properties/a/type': \"strin\""),
    ):
        check_parameters_schema(schema)


def test_non_json_values_are_refused():
    with pytest.raises(SchemaProblem, match="not a JSON value: a Python tuple"):
        check_parameters_schema({"type": "object", "required": ("a",)})


def test_non_string_keys_are_refused():
    with pytest.raises(SchemaProblem, match="keys must be strings"):
        check_parameters_schema({"type": "object", "properties": {1: {"type": "string"}}})


def test_nan_is_refused():
    with pytest.raises(SchemaProblem, match="nan is not a JSON number"):
        check_parameters_schema({"type": "object", "properties": {"a": {"maximum": float("nan")}}})


def test_limits_are_configurable():
    with pytest.raises(SchemaProblem, match="nested deeper than 3 levels"):
        check_parameters_schema(deep_schema(3), SchemaLimits(max_depth=3))


# --- check_parameters_schema: what is accepted ----------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        "^[a-z0-9_-]{1,64}$",
        r"^\d{4}-\d{2}-\d{2}$",
        "(ab)+",
        "(ab|cd)*",
        r"^[\w.+-]+@[\w-]+\.[\w.]+$",
        r"^\p{L}{1,30}$",
        "[[:alpha:]]+",
        "(?<year>[0-9]{4})",
    ],
)
def test_safe_pattern_is_accepted(pattern: str):
    check_parameters_schema(with_pattern(pattern))


@pytest.mark.parametrize("schema", [OPEN_FILE_SCHEMA, SHOW_MESSAGE_SCHEMA, {"type": "object"}])
def test_seed_schemas_are_accepted(schema: dict[str, Any]):
    assert isinstance(check_parameters_schema(schema), ArgumentValidator)


# --- ArgumentValidator ------------------------------------------------------------------------


def test_valid_arguments_have_no_problems():
    assert check_parameters_schema(OPEN_FILE_SCHEMA).problems({"path": "a.py", "line": 3}) == []


def test_problems_are_reported_with_paths():
    problems = check_parameters_schema(OPEN_FILE_SCHEMA).problems({"path": 3, "line": "x"})
    assert problems == ["at '/path': 3 is not of type \"string\"", 'at \'/line\': "x" is not of type "integer"']


def test_missing_argument_is_reported_at_the_root():
    assert check_parameters_schema(OPEN_FILE_SCHEMA).problems({}) == ['"path" is a required property']


def test_nested_paths_are_json_pointers():
    schema = {"type": "object", "properties": {"a/b": {"type": "array", "items": {"type": "integer"}}}}
    assert check_parameters_schema(schema).problems({"a/b": [1, "x"]}) == [
        'at \'/a~1b/1\': "x" is not of type "integer"'
    ]


def test_enum_problem_names_the_choices():
    [problem] = check_parameters_schema(SHOW_MESSAGE_SCHEMA).problems({"message": "hi", "severity": "fatal"})
    assert problem.startswith("at '/severity':") and "info" in problem


def test_long_values_are_cut_out_of_messages():
    [problem] = check_parameters_schema(OPEN_FILE_SCHEMA).problems({"path": "a", "line": "x" * 20_000})
    assert len(problem) < 300 and problem.endswith('is not of type "integer"')


def test_problems_per_call_are_bounded():
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    validator = check_parameters_schema(schema, SchemaLimits(max_problems=5))
    assert len(validator.problems({f"k{i}": "x" for i in range(1000)})) == 5


def test_validating_a_16_kib_argument_takes_microseconds():
    validator = check_parameters_schema(OPEN_FILE_SCHEMA)
    arguments = {"path": "x" * 16 * 1024, "line": 3}
    start = time.perf_counter()
    for _ in range(1000):
        validator.problems(arguments)
    assert (time.perf_counter() - start) / 1000 < 100e-6  # measured ~0.3 µs; generous for slow CI


def test_permissive_validator_accepts_anything():
    assert ArgumentValidator.permissive().problems({"anything": object()}) == []


# --- validate_groups --------------------------------------------------------------------------


def test_validate_groups_returns_a_validator_per_tool():
    ide = ClientToolGroup(
        name="IDE",
        tools=(
            ClientTool(name="OpenFile", parameters_schema=OPEN_FILE_SCHEMA),
            ClientTool(name="GetSelection"),
            ClientTool(name="ShowMessage", parameters_schema=SHOW_MESSAGE_SCHEMA),
        ),
    )
    validators = validate_groups([ide])
    assert list(validators) == ["OpenFile", "GetSelection", "ShowMessage"]
    assert validators["OpenFile"].problems({}) == ['"path" is a required property']


def test_tool_shadowing_a_server_tool_is_refused():
    with pytest.raises(RegistrationError) as caught:
        validate_groups([group("IDE", "OpenFile", "get_weather")], server_tools={"get_weather"})
    assert (caught.value.group, caught.value.tool) == ("IDE", "get_weather")
    assert "shadows the server tool 'get_weather'" in str(caught.value)


@pytest.mark.parametrize(
    "name", ["Get_Weather", "get-weather", "GetWeather", "getWeather", "GET_WEATHER", "get__weather"]
)
def test_a_tool_whose_name_normalises_to_a_server_tools_is_refused(name: str):
    with pytest.raises(RegistrationError) as caught:
        validate_groups([group("IDE", "OpenFile", name)], server_tools={"get_weather"})
    assert (caught.value.group, caught.value.tool) == ("IDE", name)
    assert f"tool '{name}' shadows the server tool 'get_weather' (both read as 'get_weather'" in str(caught.value)


def test_two_client_tools_whose_names_normalise_alike_are_refused_naming_both():
    with pytest.raises(RegistrationError) as caught:
        validate_groups([group("IDE", "OpenFile"), group("Editor", "open-file")])
    assert (caught.value.group, caught.value.tool) == ("Editor", "open-file")
    assert "tool 'open-file' has the same name as tool 'OpenFile' of group 'IDE'" in str(caught.value)


def test_a_tool_whose_name_normalises_like_an_existing_groups_container_is_refused():
    with pytest.raises(RegistrationError, match="tool 'ide' has the same name as the container 'IDE'"):
        validate_groups([group("Editor", "ide")], existing=[group("IDE", "OpenFile")])


def test_names_that_differ_beyond_case_and_separators_are_accepted():
    validators = validate_groups(
        [group("IDE", "get_weather_2", "get_weathers", "weather_get")], server_tools={"get_weather"}
    )
    assert list(validators) == ["get_weather_2", "get_weathers", "weather_get"]


def test_group_container_shadowing_a_server_tool_is_refused():
    with pytest.raises(RegistrationError, match="the container 'search' shadows the server tool 'search'") as caught:
        validate_groups([group("search", "Find")], server_tools={"search"})
    assert caught.value.group == "search"


def test_skill_container_shadowing_a_server_tool_is_refused():
    checkout = group("Checkout", "Pay", skills=(ClientSkill(name="Complete Checkout", references=("Pay",)),))
    with pytest.raises(RegistrationError, match="shadows the server tool 'Complete_Checkout'") as caught:
        validate_groups([checkout], server_tools={"Complete_Checkout"})
    assert (caught.value.group, caught.value.tool) == ("Checkout", "Complete Checkout")


def test_duplicate_tool_across_groups_is_refused():
    with pytest.raises(RegistrationError) as caught:
        validate_groups([group("IDE", "OpenFile"), group("Editor", "OpenFile")])
    assert (caught.value.group, caught.value.tool) == ("Editor", "OpenFile")
    assert "has the same name as tool 'OpenFile' of group 'IDE'" in str(caught.value)


def test_duplicate_tool_against_an_existing_group_is_refused():
    with pytest.raises(RegistrationError, match="of group 'IDE'") as caught:
        validate_groups([group("Editor", "OpenFile")], existing=[group("IDE", "OpenFile")])
    assert (caught.value.group, caught.value.tool) == ("Editor", "OpenFile")


def test_duplicate_tool_within_a_group_is_refused():
    with pytest.raises(RegistrationError, match="tool 'OpenFile' has the same name") as caught:
        validate_groups([group("IDE", "OpenFile", "OpenFile")])
    assert (caught.value.group, caught.value.tool) == ("IDE", "OpenFile")


def test_tool_named_like_a_group_is_refused():
    with pytest.raises(RegistrationError, match="has the same name as the container 'IDE'") as caught:
        validate_groups([group("IDE", "OpenFile"), group("Editor", "IDE")])
    assert (caught.value.group, caught.value.tool) == ("Editor", "IDE")


def test_duplicate_group_in_one_registration_is_refused():
    with pytest.raises(RegistrationError, match="registered twice") as caught:
        validate_groups([group("IDE", "OpenFile"), group("IDE", "GetSelection")])
    assert caught.value.group == "IDE"


def test_existing_group_of_the_same_name_is_replaced():
    existing = [group("IDE", "OpenFile", "GetSelection"), group("Git", "Commit")]
    validators = validate_groups([group("IDE", "OpenFile", "ShowMessage")], existing=existing)
    assert list(validators) == ["OpenFile", "ShowMessage"]


def test_unknown_skill_reference_is_refused():
    skill = ClientSkill(name="Complete Checkout", references=("ValidateCart", "Refund"))
    with pytest.raises(RegistrationError, match="skill 'Complete Checkout' references unknown tool 'Refund'") as caught:
        validate_groups([group("Checkout", "ValidateCart", skills=(skill,))])
    assert (caught.value.group, caught.value.tool) == ("Checkout", "Complete Checkout")


def test_skill_may_not_reference_a_tool_of_another_group():
    skill = ClientSkill(name="Edit", references=("OpenFile",))
    with pytest.raises(RegistrationError, match="references unknown tool 'OpenFile'"):
        validate_groups([group("IDE", "OpenFile"), group("Other", "Save", skills=(skill,))])


def test_too_many_groups_are_refused():
    existing = [group(f"g{i}", f"t{i}") for i in range(3)]
    with pytest.raises(RegistrationError, match="at most 3 client tool groups"):
        validate_groups([group("new", "x")], existing=existing, max_groups=3)


def test_hostile_schema_is_refused_naming_group_and_tool():
    tool = ClientTool(name="Evil", parameters_schema=with_pattern("^(a+)+$"))
    with refused_fast(), pytest.raises(RegistrationError, match="nested quantifier") as caught:
        validate_groups([ClientToolGroup(name="IDE", tools=(tool,))])
    assert (caught.value.group, caught.value.tool) == ("IDE", "Evil")


def test_schema_checks_can_be_turned_off():
    tool = ClientTool(name="Loose", parameters_schema={"type": "objectx"})
    validators = validate_groups([ClientToolGroup(name="IDE", tools=(tool,))], check_schemas=False)
    assert validators["Loose"].problems({"x": 1}) == []


def test_validate_groups_mutates_nothing():
    existing = [group("IDE", "OpenFile")]
    with pytest.raises(RegistrationError):
        validate_groups([group("Other", "OpenFile")], existing=existing)
    assert existing == [group("IDE", "OpenFile")]
