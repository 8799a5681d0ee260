"""Registration checks for client tools: hostile-proof schema checks, names, skills and limits.

A client's parameters schema is untrusted input that the runtime compiles and runs on every call.
`check_parameters_schema` refuses, cheapest check first, anything that could cost unbounded time
or memory or reach the network, then compiles the rest into an `ArgumentValidator`:

1. an iterative walk with early exit: depth, an estimate of the JSON size, JSON types only;
2. the root must be `{"type": "object", ...}`, as model providers require;
3. references stay inside the document (`$ref`, `$dynamicRef`, `$recursiveRef`, `$id`, `$schema`);
4. every regular expression passes a small analyzer (no backreference, lookaround, nested
   quantifier or ambiguous alternation under a quantifier, and a bounded compiled size);
5. meta-schema validation, then 6. compilation with linear-time regexes and no retrieval.

`validate_groups` checks a whole registration (or augmentation) before any of it is applied.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn, cast

import jsonschema_rs

from ..errors import InvalidArguments, RegistrationError
from ..modes import normalize_tool_name
from .definitions import ClientToolGroup, container_name
from .patterns import SchemaProblem, check_pattern
from .patterns import preview as _preview

__all__ = [
    "SchemaParameters",
    "ArgumentValidator",
    "SchemaLimits",
    "SchemaProblem",
    "check_parameters_schema",
    "validate_groups",
]

_REF_KEYWORDS: Final = frozenset({"$ref", "$dynamicRef", "$recursiveRef"})
_KNOWN_DRAFTS: Final = frozenset(
    [f"http://json-schema.org/draft-0{n}/schema" for n in (4, 6, 7)]
    + [f"https://json-schema.org/draft/{year}/schema" for year in ("2019-09", "2020-12")]
)
_SCHEME: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_LOCAL_SCHEMES: Final = frozenset({"urn", "tag"})
_UNDERSCORES: Final = re.compile(r"_+")


@dataclass(frozen=True, slots=True)
class SchemaLimits:
    """Bounds on a client's parameters schema; the defaults are the ones RELIABILITY.md sets."""

    max_bytes: int = 64 * 1024
    """Estimated size of the schema as JSON."""
    max_depth: int = 32
    """Nesting of objects and arrays, the root counting as 1."""
    max_pattern_length: int = 1_000
    """Characters in one regular expression."""
    max_pattern_nesting: int = 16
    """Nesting of groups in one regular expression (keeps the regex parser's recursion shallow)."""
    max_regex_size: int = 50_000
    """Estimated compiled size of all the schema's regexes together, repetitions expanded.

    A literal or an ASCII class counts 1, `.`, a negated or non-ASCII class 10, a Unicode
    property such as `\\p{L}` 600; 50,000 keeps compilation of a whole schema near 25 ms.
    """
    max_problems: int = 20
    """Problems `ArgumentValidator.problems` reports at most, so work per call stays bounded."""


class ArgumentValidator:
    """Checks a call's arguments against a client tool's compiled parameters schema.

    Get one from `check_parameters_schema` or `validate_groups`, then call `problems()` for each
    call before it is sent to the client.
    """

    __slots__ = ("_max_problems", "_validator")

    def __init__(self, validator: jsonschema_rs.Validator | None, *, max_problems: int = 20) -> None:
        self._validator = validator
        self._max_problems = max_problems

    @classmethod
    def permissive(cls) -> ArgumentValidator:
        """Return a validator that accepts any arguments (for schemas registered unchecked)."""
        return cls(None)

    def problems(self, arguments: Mapping[str, Any]) -> list[str]:
        """Return what is wrong with `arguments`, one sentence per problem; empty when they are valid.

        Each problem reads "at '/json/pointer': message", or just the message at the root. At
        most `SchemaLimits.max_problems` are reported, each cut to a readable length.
        """
        if self._validator is None:
            return []
        instance = arguments if isinstance(arguments, dict) else dict(arguments)
        if self._validator.is_valid(instance):
            return []
        problems: list[str] = []
        for error in self._validator.iter_errors(instance):
            message = _shorten(error.message)
            path = "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in error.instance_path)
            problems.append(f"at '{path}': {message}" if path else message)
            if len(problems) >= self._max_problems:
                break
        return problems


def check_parameters_schema(schema: Any, limits: SchemaLimits = SchemaLimits()) -> ArgumentValidator:
    """Check a client's parameters schema and compile it; call this when a client tool is registered.

    Cheap checks run first and stop at the first problem, so hostile input (megabytes of schema,
    thousands of levels, a catastrophic pattern) is refused in milliseconds, before the schema
    reaches a JSON Schema implementation. Nothing is ever fetched over the network.

    Args:
        schema: The `parametersSchema` as decoded from JSON.
        limits: Bounds to enforce.

    Returns:
        A validator for the tool's arguments.

    Raises:
        SchemaProblem: The first problem found.
    """
    keywords = _walk(schema, limits)
    if not isinstance(schema, dict):
        raise SchemaProblem(f"the parameters schema must be a JSON object, not {_json_type(schema)}")
    schema = cast("dict[str, Any]", schema)
    if schema.get("type") != "object":
        got = _preview(schema["type"]) if "type" in schema else "no type"
        raise SchemaProblem(f'the parameters schema must have "type": "object" at its root (got {got})')
    _check_references(keywords, draft4=str(schema.get("$schema", "")).startswith("http://json-schema.org/draft-04/"))
    regex_size = 0
    for pattern in keywords.patterns:
        size = check_pattern(pattern, max_length=limits.max_pattern_length, max_nesting=limits.max_pattern_nesting)
        if size > limits.max_regex_size:
            raise SchemaProblem(
                f"pattern {_preview(pattern)} is too large once its repetitions are expanded; "
                "bound the length with maxLength instead"
            )
        regex_size += size
        if regex_size > limits.max_regex_size:
            raise SchemaProblem("the schema's regular expressions are too large together; use fewer or smaller ones")
    try:
        jsonschema_rs.meta.validate(schema)
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
        raise SchemaProblem(f"not a valid JSON Schema: {_describe_schema_error(exc)}") from None
    try:
        validator = jsonschema_rs.validator_for(
            schema, pattern_options=jsonschema_rs.RegexOptions(), retriever=_refuse_retrieval
        )
    except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
        raise SchemaProblem(f"the schema does not compile: {_describe_schema_error(exc)}") from None
    return ArgumentValidator(validator, max_problems=limits.max_problems)


def validate_groups(
    groups: Sequence[ClientToolGroup],
    *,
    existing: Sequence[ClientToolGroup] = (),
    server_tools: Collection[str] = (),
    limits: SchemaLimits = SchemaLimits(),
    check_schemas: bool = True,
    max_groups: int = 64,
) -> dict[str, ArgumentValidator]:
    """Check a registration (or an augmentation's injected groups) against the thread's tools.

    A group of `groups` whose name is in `existing` replaces that group, as clients re-register
    their groups on every run. Every name the model could see must be unique: tool names, and
    the containers of groups and skills (`container_name`), none of them a server tool; names
    that differ only in case or separators (`Get_Weather`, `get-weather`, `getWeather` and
    `get_weather`) are the same name. Skill
    references must name tools of their own group. Nothing is mutated: apply the groups only
    when this returns.

    Args:
        groups: The groups being registered.
        existing: The thread's current client tool groups.
        server_tools: Names of the server's own tools.
        limits: Bounds for each parameters schema.
        check_schemas: Check and compile each schema (`ValidateSchemaOnRegistration`). When false
            schemas are not compiled at all (compiling unchecked input is what the checks guard
            against) and the validators accept any arguments: the client validates them itself.
        max_groups: Client tool groups a thread may hold after the registration.

    Returns:
        An `ArgumentValidator` per tool of `groups`, keyed by tool name.

    Raises:
        RegistrationError: The first problem, naming the group and tool (or skill).
    """
    incoming: dict[str, ClientToolGroup] = {}
    for group in groups:
        if group.name in incoming:
            raise RegistrationError("the group is registered twice in one registration", group=group.name)
        incoming[group.name] = group
    kept = [group for group in existing if group.name not in incoming]
    if len(kept) + len(incoming) > max_groups:
        raise RegistrationError(
            f"a thread holds at most {max_groups} client tool groups ({len(kept)} kept + {len(incoming)} new)"
        )
    # Each name the model sees, by its normalised form: (the name, what it is; "" for a server tool).
    owners: dict[str, tuple[str, str]] = {}
    for name in server_tools:
        owners.setdefault(_same_name(name), (name, ""))
    for group in kept:
        for name, what, _ in _offered_names(group):
            owners.setdefault(_same_name(name), (name, f"{what} of group '{group.name}'"))
    for group in incoming.values():
        for name, what, tool in _offered_names(group):
            key = _same_name(name)
            if (owner := owners.get(key)) is not None:
                taken, by = owner
                clash = f"has the same name as {by}" if by else f"shadows the server tool '{taken}'"
                if taken != name:
                    clash += f" (both read as '{key}': names differing only in case or separators collide)"
                raise RegistrationError(f"{what} {clash}", group=group.name, tool=tool)
            owners[key] = (name, f"{what} of group '{group.name}'")
        tools = {tool.name for tool in group.tools}
        for skill in group.skills:
            for reference in skill.references:
                if reference not in tools:
                    raise RegistrationError(
                        f"skill '{skill.name}' references unknown tool '{reference}' (tools of the group: "
                        f"{', '.join(sorted(tools)) or 'none'})",
                        group=group.name,
                        tool=skill.name,
                    )
    validators: dict[str, ArgumentValidator] = {}
    for group in incoming.values():
        for tool in group.tools:
            if not check_schemas:
                validators[tool.name] = ArgumentValidator.permissive()
                continue
            try:
                validators[tool.name] = check_parameters_schema(tool.parameters_schema, limits)
            except SchemaProblem as exc:
                raise RegistrationError(f"parametersSchema refused: {exc}", group=group.name, tool=tool.name) from None
    return validators


def _same_name(name: str) -> str:
    """The form two names share when a model could take one for the other.

    `modes.normalize_tool_name` (`GetWeather`, `get-weather`, `Get_Weather` -> `get_weather`),
    with runs of `_` made one and leading or trailing ones dropped.
    """
    return _UNDERSCORES.sub("_", normalize_tool_name(name)).strip("_")


def _offered_names(group: ClientToolGroup) -> Iterator[tuple[str, str, str | None]]:
    """Every name `group` may put in front of the model: (name, what it is, tool or skill)."""
    yield container_name(group.name), f"the container '{container_name(group.name)}'", None
    for tool in group.tools:
        yield tool.name, f"tool '{tool.name}'", tool.name
    for skill in group.skills:
        yield (
            container_name(skill.name),
            f"skill '{skill.name}' (offered as '{container_name(skill.name)}')",
            skill.name,
        )


# --- step 1: the walk ------------------------------------------------------------------------


@dataclass(slots=True)
class _Keywords:
    """String values of the keywords later steps check, gathered during the walk."""

    references: list[tuple[str, str]]
    """`$ref`, `$dynamicRef`, `$recursiveRef` and `$schema` values, with their keyword."""
    ids: list[tuple[str, str]]
    """`$id` and `id` values."""
    patterns: list[str]


def _walk(schema: Any, limits: SchemaLimits) -> _Keywords:
    """Check depth, size and JSON types with an explicit stack, stopping at the first problem.

    The size is an estimate of the JSON length (keys and strings plus a few bytes per value),
    kept as the walk goes, so a 10 MiB schema stops after reading about `max_bytes` of it.
    """
    found = _Keywords([], [], [])
    size = 0
    stack: list[tuple[Any, int]] = [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limits.max_depth:
            raise SchemaProblem(f"the schema is nested deeper than {limits.max_depth} levels")
        if isinstance(node, dict):
            items: Iterable[tuple[Any, Any]] = cast("dict[Any, Any]", node).items()
        elif isinstance(node, list):
            items = enumerate(cast("list[Any]", node))
        else:
            raise SchemaProblem(f"not a JSON value: {_json_type(node)}")
        size += 2
        for key, value in items:
            if isinstance(key, str):
                size += len(key) + 4
                if isinstance(value, str):
                    if key in _REF_KEYWORDS or key == "$schema":
                        found.references.append((key, value))
                    elif key in ("$id", "id"):
                        found.ids.append((key, value))
                    elif key == "pattern":
                        found.patterns.append(value)
                elif key == "patternProperties" and isinstance(value, dict):
                    found.patterns.extend(k for k in cast("dict[Any, Any]", value) if isinstance(k, str))
            elif isinstance(node, dict):
                raise SchemaProblem(f"object keys must be strings, not {_json_type(key)}")
            else:
                size += 1
            size += _scalar_size(value)
            if size > limits.max_bytes:
                raise SchemaProblem(f"the schema is larger than {limits.max_bytes} bytes")
            if isinstance(value, dict | list):
                stack.append((cast(Any, value), depth + 1))
    return found


def _scalar_size(value: Any) -> int:
    """JSON length of a scalar (approximate for numbers); 0 for containers, which count when walked."""
    if isinstance(value, str):
        return len(value) + 2
    if value is None or isinstance(value, bool):
        return 5
    if isinstance(value, int):
        return value.bit_length() // 3 + 1
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SchemaProblem(f"{value} is not a JSON number")
        return 8
    if isinstance(value, dict | list):
        return 0
    raise SchemaProblem(f"not a JSON value: {_json_type(value)}")


def _json_type(value: Any) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case str():
            return "a string"
        case dict():
            return "an object"
        case list():
            return "an array"
        case _:
            return f"a Python {type(value).__name__}"


# --- step 3: references ----------------------------------------------------------------------


def _check_references(keywords: _Keywords, *, draft4: bool) -> None:
    for keyword, value in keywords.references:
        if keyword == "$schema":
            if value.rstrip("#") not in _KNOWN_DRAFTS:
                raise SchemaProblem(
                    f"unknown $schema {_preview(value)}: use a JSON Schema draft (4, 6, 7, 2019-09 or 2020-12) "
                    "or leave it out for 2020-12"
                )
        elif not value.startswith("#"):
            raise SchemaProblem(
                f"remote {keyword} {_preview(value)} is not allowed: refer inside the schema, such as '#/$defs/name'"
            )
    for keyword, value in keywords.ids:
        if keyword == "id" and not draft4:
            continue  # only draft 4 spells $id as id; elsewhere it is a property of some value
        scheme = _SCHEME.match(value)
        if scheme is not None and scheme.group(1).lower() not in _LOCAL_SCHEMES:
            raise SchemaProblem(
                f"{keyword} {_preview(value)} is not allowed: an absolute URI would resolve references remotely "
                "(use a urn: or tag: id, or none)"
            )


def _refuse_retrieval(uri: str, /) -> NoReturn:
    # Steps 1-3 leave nothing to fetch; this is the belt to their braces.
    raise ValueError(f"toolwire never fetches schemas (asked for {uri!r})")


def _describe_schema_error(exc: Exception) -> str:
    if isinstance(exc, jsonschema_rs.ValidationError):
        path = "".join("/" + str(part) for part in exc.instance_path)
        message = _shorten(exc.message)
        return f"at '{path}': {message}" if path else message
    return _shorten(str(exc).split("\n", 1)[0])


def _shorten(message: str, limit: int = 200) -> str:
    """Cut the middle out of a long message: errors quote the offending value, which can be huge."""
    if len(message) <= limit:
        return message
    return f"{message[: limit // 2 - 10]} ... {message[-limit // 2 :]}"


class SchemaParameters:
    """A tool's parameters given as a JSON Schema (a client's, an MCP server's), not a signature.

    What `Tool(parameters=...)` takes for such a tool. The arguments are checked by the schema's
    compiled validator before anything is sent.
    """

    __slots__ = ("_validator", "description", "injected", "json_schema")

    def __init__(self, schema: dict[str, Any], description: str, validator: ArgumentValidator) -> None:
        self.json_schema: dict[str, Any] = schema
        self.description: str = description
        self.injected: Mapping[str, type] = {}
        self._validator = validator

    def validate(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check the arguments against the schema; a copy of them when they pass."""
        if problems := self._validator.problems(arguments):
            raise InvalidArguments(tool, problems)
        return dict(arguments)
