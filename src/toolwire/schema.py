"""From a Python function to the JSON Schema a model sees and the validator its arguments pass.

`Signature.of(function)` reads the parameters, their type hints and the docstring once, when a
tool is defined (a parameter that is unannotated, variadic or positional-only, or a hint that
cannot be resolved, fails there), and makes a `TypedDict` of the parameters. The pydantic
`TypeAdapter` over it and its JSON Schema, which cost most of a definition (≈ 0.2 ms each), are
built when first needed: the schema when the tool is first exported (a model request, `to_openai()`),
the adapter when a call is first validated. A type pydantic cannot validate or describe fails
there, with the same `UsageError` naming the tool. On the call path only the adapter runs:
arguments are never validated against the JSON Schema itself.

pydantic's `TypeAdapter` and JSON Schema machinery load when the first schema or validator is
built, not when toolwire is imported nor a tool defined: they cost about as much as the rest of
toolwire's import.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Generator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Final, NotRequired, cast

from pydantic_core import PydanticSerializationError, ValidationError, to_jsonable_python

from .errors import InvalidArguments, UsageError

if TYPE_CHECKING:
    from pydantic import TypeAdapter
    from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

__all__ = ["INVALID_JSON_KEY", "Signature", "describe_validation_error"]

_FORBID_EXTRA: Final = {"extra": "forbid"}  # a pydantic `ConfigDict`

INVALID_JSON_KEY: Final = "_invalid_json"
"""The one argument model adapters give a call whose arguments were not a JSON object (the raw text).

No tool has this parameter, so validation fails and the model is told to send a JSON object.
"""


def _read_docstring(text: str) -> tuple[str, dict[str, str]]:
    """A docstring's description (without its sections) and its parameters' descriptions.

    docstring_parser loads only for a docstring that can hold sections: a one-line summary with no
    colon has none (Google's `Args:`, reST's `:param`, epydoc's `@param a:` and numpydoc's underlined
    headings all need a colon or a second line), so the first `@tool` of a typical program skips it.
    """
    if "\n" not in text and ":" not in text:
        return text.lstrip(), {}  # as docstring_parser (inspect.cleandoc) reads one line
    import docstring_parser

    doc = docstring_parser.parse(text)
    description = "\n\n".join(part for part in (doc.short_description, doc.long_description) if part)
    return description, {param.arg_name: param.description for param in doc.params if param.description}


@functools.cache
def _tool_json_schema() -> type[GenerateJsonSchema]:
    """JSON Schema without the titles pydantic derives from field names (noise for a model)."""
    from pydantic.json_schema import GenerateJsonSchema

    class ToolJsonSchema(GenerateJsonSchema):
        def field_title_should_be_set(self, schema: Any) -> bool:
            return False

    return ToolJsonSchema


class Signature:
    """What toolwire knows about a tool function's parameters (the schema and validator built when first used)."""

    __slots__ = ("_adapter", "_arguments", "_defaults", "_json_schema", "_name", "description", "injected")

    def __init__(
        self,
        name: str,
        arguments: type[Any],
        defaults: Mapping[str, Any],
        description: str,
        injected: Mapping[str, type],
    ) -> None:
        self._name = name
        self._arguments = arguments
        """The `TypedDict` of the parameters the model gives."""
        self._defaults = defaults
        self._adapter: TypeAdapter[dict[str, Any]] | None = None
        self._json_schema: dict[str, Any] | None = None
        self.description = description
        """The docstring's text without its `Args:` / `Returns:` sections."""
        self.injected = injected
        """Parameters the runtime fills in (e.g. a `ToolContext`), by name; not in the schema."""

    @classmethod
    def of(cls, function: Callable[..., Any], *, name: str, injected_types: tuple[type, ...] = ()) -> Signature:
        """Read `function`'s signature, type hints and docstring.

        Args:
            function: The tool function.
            name: The tool's name, used in error messages and the schema's title.
            injected_types: Parameter types the runtime provides instead of the model.

        Raises:
            UsageError: A parameter is variadic, positional-only or unannotated, or a type hint
                cannot be resolved.
        """
        import typing_extensions
        from pydantic import Field

        try:
            signature = inspect.signature(function)
            hints = typing.get_type_hints(function, include_extras=True)
        except (TypeError, ValueError, NameError) as exc:
            raise UsageError(f"cannot read the signature of tool '{name}': {exc}") from exc
        summary, param_docs = _read_docstring(inspect.getdoc(function) or "")
        fields: dict[str, Any] = {}
        defaults: dict[str, Any] = {}
        injected: dict[str, type] = {}
        for param in signature.parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
                raise UsageError(
                    f"tool '{name}': parameter '{param.name}' is {param.kind.description}; "
                    "tool parameters must be passable by keyword, one per argument"
                )
            if param.name not in hints:
                raise UsageError(
                    f"tool '{name}': parameter '{param.name}' has no type annotation; "
                    f"annotate it (e.g. `{param.name}: str`) so the model gets a schema"
                )
            hint = hints[param.name]
            if isinstance(hint, type) and issubclass(hint, injected_types):
                injected[param.name] = hint
                continue
            if description := param_docs.get(param.name):
                hint = Annotated[hint, Field(description=description)]
            if param.default is not param.empty:
                defaults[param.name] = param.default
                hint = NotRequired[hint]
            fields[param.name] = hint
        arguments = typing_extensions.TypedDict(f"{name}_arguments", fields)  # type: ignore[misc]
        arguments.__pydantic_config__ = _FORBID_EXTRA  # type: ignore[attr-defined]
        return cls(name, arguments, defaults, summary, injected)

    @property
    def adapter(self) -> TypeAdapter[dict[str, Any]]:
        """Validates a call's arguments into keyword arguments for the function (built on first use).

        Raises:
            UsageError: pydantic cannot validate a parameter's type.
        """
        adapter = self._adapter
        if adapter is None:
            from pydantic import TypeAdapter

            with self._building():
                adapter = self._adapter = cast("TypeAdapter[dict[str, Any]]", TypeAdapter(self._arguments))
        return adapter

    @property
    def json_schema(self) -> dict[str, Any]:
        """The parameters as a JSON Schema object, with descriptions from the docstring (built on first use).

        Raises:
            UsageError: pydantic cannot validate or describe a parameter's type.
        """
        schema = self._json_schema
        if schema is None:
            adapter = self.adapter
            with self._building():
                schema = adapter.json_schema(schema_generator=_tool_json_schema())
            schema.pop("title", None)
            _add_defaults(schema, self._defaults)
            self._json_schema = schema
        return schema

    @contextmanager
    def _building(self) -> Generator[None]:
        from pydantic import PydanticUserError

        try:
            yield
        except (PydanticUserError, TypeError, ValueError) as exc:
            raise UsageError(f"tool '{self._name}': cannot build a schema for its parameters: {exc}") from exc

    def validate(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Return `arguments` validated and coerced into keyword arguments for the function.

        Raises:
            InvalidArguments: With one problem per bad, missing or unexpected argument.
            UsageError: The validator could not be built (see `adapter`).
        """
        adapter = self._adapter or self.adapter
        try:
            return adapter.validator.validate_python(arguments)  # the validator: no wrapper in between
        except ValidationError as exc:
            raise InvalidArguments(tool, describe_validation_error(exc, self.json_schema)) from None


def describe_validation_error(exc: ValidationError, schema: JsonSchemaValue) -> list[str]:
    """Turn a pydantic error into one sentence per problem, in words a model can act on."""
    known = ", ".join(schema.get("properties", {})) or "none"
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        match error["type"]:
            case "missing":
                problems.append(f"'{where}' is required but missing")
            case "extra_forbidden" if where == INVALID_JSON_KEY:
                got = _preview(error.get("input"))
                problems.append(f"the arguments are not a JSON object (got {got}); send one JSON object")
            case "extra_forbidden":
                problems.append(f"'{where}' is not a parameter of this tool (parameters: {known})")
            case "dict_type" if not where:
                problems.append("the arguments must be a JSON object")
            case _:
                got = _preview(error.get("input"))
                label = f"'{where}'" if where else "the arguments"
                problems.append(f"{label}: {error['msg']} (got {got})")
    return problems


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _add_defaults(json_schema: dict[str, Any], defaults: Mapping[str, Any]) -> None:
    properties = json_schema.get("properties", {})
    for key, value in defaults.items():
        if key in properties:
            try:
                properties[key].setdefault("default", to_jsonable_python(value))
            except PydanticSerializationError:
                continue
