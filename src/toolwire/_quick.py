"""`quick_init`: a faster `__init__` for the frozen, slotted dataclasses built on every call.

A frozen dataclass's generated `__init__` sets each field with `object.__setattr__(self, "name",
value)`, which looks the slot up by name every time: a 9-field `LedgerEntry` costs 1.2 µs on
CPython 3.11. Setting the slots through their member descriptors, bound once, costs 0.7 µs. The
messages, ledger entries and model requests of a turn are built on the loop's hot path, so they
get this `__init__`; their signature, defaults and immutability do not change.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["quick_init"]

T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Replace the `__init__` of frozen, slotted dataclass `cls` with an equivalent, faster one."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: quick_init takes a frozen, slotted dataclass without __post_init__")
    scope: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for field in dataclasses.fields(cls):  # pyright: ignore[reportArgumentType]
        name = field.name
        scope[f"_set_{name}"] = getattr(cls, name).__set__
        value = name
        if field.default is not dataclasses.MISSING:
            scope[f"_default_{name}"] = field.default
            default = f"=_default_{name}"
            if not field.init:
                value = f"_default_{name}"
        elif field.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{name}"] = field.default_factory
            default = "=_MISSING"
            value = f"_factory_{name}() if {name} is _MISSING else {name}" if field.init else f"_factory_{name}()"
        else:
            default = ""
        if field.init:
            (keyword if field.kw_only else positional).append(f"{name}{default}")
        body.append(f"    _set_{name}(self, {value})")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, scope)  # the way dataclasses builds its own __init__
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    return cls
