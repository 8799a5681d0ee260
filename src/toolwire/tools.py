"""`Tool`, the `@tool` decorator, `ToolContext` and `Toolbox`, the registry a model picks from.

```python
@tool
async def get_weather(city: str) -> dict[str, float]:
    # Its docstring becomes the description; an `Args:` section describes the parameters.
    ...

toolbox = Toolbox([get_weather])
```

A `Tool` stays callable exactly like the function it wraps, so it can be tested directly.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, ParamSpec, Protocol, TypeVar, cast, overload

from .cancellation import Cancellation
from .envelopes import ToolCall, ToolResult
from .errors import CallCanceled, UsageError
from .messages import ToolDefinition
from .modes import ModeDecision, ModeSource, ToolMode, classify_tool
from .policy import ConsentAnswer
from .schema import Signature

if TYPE_CHECKING:
    from .store import LedgerEntry
    from .toolsets import RunScope

__all__ = ["DEFAULT_TIMEOUT", "Cancellation", "Parameters", "Tool", "ToolContext", "Toolbox", "tool"]

P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_TIMEOUT: Final = 30.0
"""Seconds a call may run when its tool sets no `timeout` (the wire protocol's default)."""

_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class ToolContext:
    """What a tool may know about the call it runs for; declare a parameter of this type to get it.

    The parameter is filled in by the runtime and never appears in the schema the model sees.
    """

    __slots__ = ("_ask", "_cancellation", "_progress", "_stopped", "call_id", "thread_id", "tool_name")

    def __init__(
        self,
        call_id: str,
        tool_name: str,
        thread_id: str | None = None,
        cancellation: Cancellation | None = None,
        *,
        progress: Callable[[float, float | None, str | None], None] | None = None,
        ask: Callable[[str], Awaitable[ConsentAnswer]] | None = None,
    ) -> None:
        """Describe one call; the pipeline passes `progress` and `ask` (see their methods)."""
        self.call_id = call_id
        """The model's id for this call."""
        self.tool_name = tool_name
        """The tool's registered name."""
        self.thread_id = thread_id
        """The conversation the call belongs to, if any."""
        self._cancellation = cancellation
        self._stopped = False
        self._progress = progress
        self._ask = ask

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Tell the run how far the call got: a `ToolProgress` event in the run's event stream.

        Nothing happens when no one listens (a run without `on_event` or `stream()`).
        """
        if self._progress is not None:
            self._progress(progress, total, message)

    @property
    def reports_progress(self) -> bool:
        """True when `report_progress` reaches someone: skip measuring progress when it is False."""
        return self._progress is not None

    async def ask(self, question: str) -> ConsentAnswer:
        """Put a yes/no question about this running call to whoever answers consent for the run.

        That is the handler the policy would ask for this call (the application's, else the
        person at the thread's client); the question is shown as a consent prompt for the call,
        with `question` as its reason. With no one to ask, or no answer in the policy's
        `consent_timeout`, the answer is no.

        Raises:
            CallCanceled: The run was canceled while waiting for the answer.
        """
        if self._ask is None:
            return ConsentAnswer(False, "no one is available to answer")
        return await self._ask(question)

    @property
    def idempotency_key(self) -> str:
        """A key derived from the thread and call ids: the same on every retry of this call.

        Pass it to services that de-duplicate requests, so a retried call has its effect once.
        """
        seed = f"{self.thread_id or ''}\x00{self.call_id}".encode()
        return hashlib.sha256(seed).hexdigest()[:32]

    @property
    def cancelled(self) -> bool:
        """True once the call was canceled or ran past its deadline; stop work and return."""
        return self._stopped or (self._cancellation is not None and self._cancellation.cancelled)

    def check_cancelled(self) -> None:
        """Raise `CallCanceled` if the call was canceled or timed out.

        Call it between steps of a long synchronous tool, which cannot be interrupted otherwise.
        """
        if self.cancelled:
            raise CallCanceled(f"call {self.call_id} of tool '{self.tool_name}' was canceled")

    def stop(self) -> None:
        """Mark the call as canceled (the runtime calls this when the deadline passes)."""
        self._stopped = True


class Parameters(Protocol):
    """A tool's parameters: their JSON Schema and how a call's arguments are checked.

    `Signature` reads them from a Python function; a tool whose schema comes from elsewhere (a
    client, a server of tools) gives its own.
    """

    @property
    def json_schema(self) -> dict[str, Any]:
        """The parameters as a JSON Schema object."""
        ...

    @property
    def description(self) -> str:
        """What the tool does, when its definition says (else empty)."""
        ...

    @property
    def injected(self) -> Mapping[str, type]:
        """Parameters the runtime fills in (e.g. a `ToolContext`), by name; not in the schema."""
        ...

    def validate(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Return the arguments as keyword arguments for the function.

        Raises:
            InvalidArguments: With one problem per bad, missing or unexpected argument.
        """
        ...


class Tool(Generic[P, R]):
    """A function the model can call, with its schema, mode and execution options.

    Create one with `@tool` or `Toolbox.tool`. Calling a `Tool` calls the function itself.
    """

    is_client: bool = False
    """False for server tools; client tools are registered and executed by a client."""
    runs_on: Literal["server", "client", "mcp"] = "server"
    """Where a call runs: in this process, at a connected client, or at an MCP server (for traces)."""
    __name__: str
    __wrapped__: Callable[P, R]

    def __init__(
        self,
        function: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        mode: ToolMode | str | None = None,
        timeout: float | None = None,
        requires_permission: bool = False,
        inline: bool = False,
        idempotent: bool = False,
        mode_fallback: ToolMode = ToolMode.EXTERNAL,
        parameters: Parameters | None = None,
    ) -> None:
        """Make `function` a tool (`@tool` and `Toolbox.tool` call this).

        `parameters`, when given, describes and checks the arguments instead of `function`'s
        signature (for a tool whose schema comes from elsewhere, e.g. a client).
        """
        if not callable(function) or isinstance(function, type):
            raise UsageError(f"@tool needs a function, got {function!r:.80}")
        name = name or str(getattr(function, "__name__", ""))
        if not _NAME.match(name):
            raise UsageError(f"tool name {name!r} is not valid: use 1-64 letters, digits, '_' or '-'")
        if timeout is not None and not timeout > 0:
            raise UsageError(f"tool '{name}': timeout must be a positive number of seconds")
        is_async = inspect.iscoroutinefunction(inspect.unwrap(function))
        if inline and is_async:
            raise UsageError(f"tool '{name}': inline=True applies to sync functions only")
        try:
            explicit = None if mode is None else ToolMode(mode)
        except ValueError:
            choices = ", ".join(m.value for m in ToolMode)
            raise UsageError(f"tool '{name}': mode {mode!r} is not one of {choices}") from None
        signature = parameters or Signature.of(function, name=name, injected_types=(ToolContext,))
        functools.update_wrapper(self, function)
        self.function = function
        """The wrapped function."""
        self.name = name
        """The name the model calls the tool by."""
        self.description = description if description is not None else signature.description
        """What the model is told the tool does (the docstring unless given)."""
        self.mode_decision: ModeDecision = classify_tool(name, explicit=explicit, fallback=mode_fallback)
        """The tool's mode and why it was chosen."""
        self.timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        """Seconds a call may run before it ends as a Timeout."""
        self.requires_permission = requires_permission
        """Every call asks for consent, whatever the mode."""
        self.inline = inline
        """A sync tool runs on the event loop instead of a worker thread (for trivial tools)."""
        self.idempotent = idempotent
        """Running a call twice has the effect of running it once; retries are safe."""
        self.is_async = is_async
        """The function is a coroutine function."""
        self.signature: Parameters = signature
        """The parameters' validator and JSON Schema."""
        self.context_parameter: str | None = next(iter(signature.injected), None)
        """The parameter that receives the `ToolContext`, if the function declares one."""
        self.takes_context = self.context_parameter is not None
        """A call gets its `ToolContext` (see `with_context`)."""

    def with_context(self, context: ToolContext) -> Callable[..., R]:
        """The function to call with a call's validated arguments, given the call's context.

        The pipeline calls it for a tool that `takes_context`; by default the context goes to
        `context_parameter`. A subclass may hand it over otherwise.
        """
        assert self.context_parameter is not None
        return functools.partial(self.function, **{self.context_parameter: context})

    @property
    def mode(self) -> ToolMode:
        """The tool's `ToolMode`."""
        return self.mode_decision.mode

    @property
    def parameters_schema(self) -> dict[str, Any]:
        """The JSON Schema object of the tool's parameters."""
        return self.signature.json_schema

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the wrapped function directly (no validation, no policy)."""
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name} mode={self.mode}>"

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Return `arguments` validated into keyword arguments for the function.

        Raises:
            InvalidArguments: With one problem per bad, missing or unexpected argument.
        """
        return self.signature.validate(self.name, arguments)

    def with_mode_fallback(self, fallback: ToolMode) -> Tool[P, R]:
        """Return this tool with `fallback` as its mode if no pattern or option decided it."""
        if self.mode_decision.source is not ModeSource.FALLBACK or self.mode is fallback:
            return self
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.mode_decision = ModeDecision(fallback, ModeSource.FALLBACK)
        return clone

    def to_openai(self) -> dict[str, Any]:
        """Describe the tool in the OpenAI Chat Completions `tools` format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters_schema,
            },
        }

    def to_anthropic(self) -> dict[str, Any]:
        """Describe the tool in the Anthropic Messages `tools` format."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.parameters_schema,
        }


@overload
def tool(function: Callable[P, R], /) -> Tool[P, R]: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    mode: ToolMode | str | None = None,
    timeout: float | None = None,
    requires_permission: bool = False,
    inline: bool = False,
    idempotent: bool = False,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...
def tool(
    function: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    mode: ToolMode | str | None = None,
    timeout: float | None = None,
    requires_permission: bool = False,
    inline: bool = False,
    idempotent: bool = False,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Make a function a tool, bare (`@tool`) or with options (`@tool(mode="read")`).

    Args:
        function: The sync or async function; its type hints give the parameters' schema and its
            docstring the description (`Args:` entries describe parameters).
        name: The name the model sees (the function's name unless given).
        description: What the tool does (the docstring unless given).
        mode: The `ToolMode`; by default decided from the name's pattern.
        timeout: Seconds a call may run (30 unless given).
        requires_permission: Ask for consent before every call.
        inline: Run a sync function on the event loop rather than in a worker thread. Only for
            trivial functions: an inline call cannot be timed out.
        idempotent: Calls may be retried safely (read-mode tools are always retried safely).

    Raises:
        UsageError: The function cannot be a tool (see the message for why).
    """

    def decorate(function: Callable[P, R]) -> Tool[P, R]:
        return Tool(
            function,
            name=name,
            description=description,
            mode=mode,
            timeout=timeout,
            requires_permission=requires_permission,
            inline=inline,
            idempotent=idempotent,
        )

    return decorate if function is None else decorate(function)


class Toolbox:
    """The tools a model may call, by name.

    Args:
        tools: Tools or plain functions (which become tools with default options).
        mode_fallback: The mode of tools whose name matches no pattern and that set none.

    Raises:
        UsageError: Two tools share a name, or a function cannot be a tool.
    """

    def __init__(
        self,
        tools: Iterable[Tool[Any, Any] | Callable[..., Any]] = (),
        *,
        mode_fallback: ToolMode = ToolMode.EXTERNAL,
    ) -> None:
        self.mode_fallback = mode_fallback
        self._tools: dict[str, Tool[Any, Any]] = {}
        self._openai: list[dict[str, Any]] | None = None
        self._anthropic: list[dict[str, Any]] | None = None
        self._definitions: tuple[ToolDefinition, ...] | None = None
        for item in tools:
            self.add(item)

    def add(self, item: Tool[P, R] | Callable[P, R]) -> Tool[P, R]:
        """Register a tool (or a function, made a tool with default options) and return it.

        Raises:
            UsageError: A tool with that name is already registered.
        """
        new: Tool[P, R] = (
            cast("Tool[P, R]", item) if isinstance(item, Tool) else Tool(item, mode_fallback=self.mode_fallback)
        )
        new = new.with_mode_fallback(self.mode_fallback)
        if new.name in self._tools:
            raise UsageError(f"a tool named '{new.name}' is already registered in this toolbox")
        self._tools[new.name] = new
        self._openai = self._anthropic = self._definitions = None
        return new

    @overload
    def tool(self, function: Callable[P, R], /) -> Tool[P, R]: ...
    @overload
    def tool(
        self,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        mode: ToolMode | str | None = None,
        timeout: float | None = None,
        requires_permission: bool = False,
        inline: bool = False,
        idempotent: bool = False,
    ) -> Callable[[Callable[P, R]], Tool[P, R]]: ...
    def tool(
        self, function: Callable[P, R] | None = None, /, **options: Any
    ) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
        """Register a function as a tool: `@toolbox.tool` or `@toolbox.tool(mode="read")`."""

        def register(function: Callable[P, R]) -> Tool[P, R]:
            return self.add(Tool(function, mode_fallback=self.mode_fallback, **options))

        return register if function is None else register(function)

    def get(self, name: str) -> Tool[Any, Any] | None:
        """Return the tool registered as `name`, or None."""
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool[Any, Any]:
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool[Any, Any]]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._tools)

    def suggest(self, name: str, limit: int = 5) -> list[str]:
        """Return registered names close to `name` (then others), at most `limit`."""
        import difflib  # only for an unknown tool's name: not loaded on first use

        close = difflib.get_close_matches(name, self._tools, n=limit, cutoff=0.5)
        rest = [other for other in self._tools if other not in close]
        return (close + rest)[:limit]

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """The tools as a model request offers them (built once, cached until a tool is added)."""
        if self._definitions is None:
            self._definitions = tuple(
                ToolDefinition(item.name, item.description, item.parameters_schema) for item in self._tools.values()
            )
        return self._definitions

    def to_openai(self) -> list[dict[str, Any]]:
        """The tool list in the OpenAI Chat Completions `tools` format (built once, cached)."""
        if self._openai is None:
            self._openai = [item.to_openai() for item in self._tools.values()]
        return self._openai

    def to_anthropic(self) -> list[dict[str, Any]]:
        """The tool list in the Anthropic Messages `tools` format (built once, cached)."""
        if self._anthropic is None:
            self._anthropic = [item.to_anthropic() for item in self._tools.values()]
        return self._anthropic

    # -- the `Toolset` protocol (`toolwire.toolsets`): a toolbox binds to itself ---------------

    async def setup(self) -> None:
        """Nothing to open: function tools hold no connection."""

    async def teardown(self) -> None:
        """Nothing to close."""

    async def bind(self, scope: RunScope) -> Toolbox:
        """The toolbox itself: its tools are the same in every run."""
        return self

    def instructions(self) -> Sequence[str]:
        """Function tools add nothing to the system prompt."""
        return ()

    def tools(self) -> Toolbox:
        """The toolbox itself."""
        return self

    def answer(self, call: ToolCall) -> ToolResult | None:
        """None: every call runs its tool."""
        return None

    def remote(self, call: ToolCall) -> None:
        """None: function tools run in process."""
        return None

    async def after_batch(self, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> None:
        """Nothing to apply."""

    def resume(self, entries: Sequence[LedgerEntry]) -> Collection[str]:
        """None: a function tool is never run twice (its open calls end Canceled by `system`)."""
        return ()

    async def end_run(self) -> None:
        """Nothing was held for the run."""

    def saved_result(self, entry: LedgerEntry) -> ToolResult | None:
        """None: function tools save no answers."""
        return None
