"""Which regular expressions a client may register: none that can backtrack catastrophically.

Client schemas carry `pattern`s that other programs may run with backtracking engines (browsers,
Python's `re`), and the Rust engine that toolwire compiles them with is fast only for bounded
sizes. `check_pattern` parses a pattern with Python's own regex parser and refuses:
backreferences, lookaround, a quantifier with a large or no upper bound over a sub-expression that
has one too (`^(a+)+$`), an alternation whose branches can match the same text under such a
quantifier (`(a|ab)*`), and patterns too large once their repetitions are expanded.
"""

from __future__ import annotations

import functools
import importlib
import re
import warnings
from typing import Any, Final, NoReturn

__all__ = ["SchemaProblem", "check_pattern", "preview"]

_LARGE_REPEAT: Final = 100
"""A quantifier whose upper bound is above this counts as unbounded for the backtracking rules."""


class SchemaProblem(ValueError):
    """A client's parameters schema was refused; the message says why, in words a developer can act on."""


def check_pattern(pattern: str, *, max_length: int = 1_000, max_nesting: int = 16) -> int:
    """Refuse a pattern that could backtrack catastrophically or not compile; return its estimated size.

    The size estimates the compiled regex (repetitions expanded), to bound compilation time.

    Raises:
        SchemaProblem: The pattern is refused; the message says why.
    """
    shown = preview(pattern)
    if len(pattern) > max_length:
        raise SchemaProblem(f"pattern {shown} is longer than {max_length} characters")
    translated, nesting = _translate(pattern)
    if nesting > max_nesting:
        raise SchemaProblem(f"pattern {shown} nests groups deeper than {max_nesting} levels")
    try:
        tree = _parse_regex(translated)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        raise SchemaProblem(f"pattern {shown} does not compile: {exc}") from None
    return _RegexAnalysis(shown).size(tree, None)


def _parse_regex(pattern: str) -> list[tuple[Any, Any]]:
    """Return the parse tree of `pattern` as Python's `re` sees it: (opcode, argument) pairs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "possible nested set" and friends: Python-only concerns
        return list(_regex_parser().parse(pattern).data)


@functools.cache
def _regex_parser() -> Any:
    # Python's own regex parser: private, but with this shape since it was `sre_parse` (renamed
    # `re._parser` in 3.11, when importing `sre_parse` started to warn). Nothing else is private.
    return importlib.import_module("re._parser")


def _translate(pattern: str) -> tuple[str, int]:
    r"""Rewrite the ECMA-262 / Rust syntax Python's parser lacks, and measure group nesting.

    `(?<name>` becomes `(?P<name>`, `\k<name>` a Python backreference (refused as such), and
    `\p{..}` / `\P{..}` a class that `_atom_weight` knows is a heavy Unicode property.
    """
    out: list[str] = []
    depth = nesting = 0
    in_class = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escape = pattern[i + 1]
            if escape in "pP" and pattern.startswith("{", i + 2) and (end := pattern.find("}", i)) > 0:
                out.append(_PROPERTY_IN_CLASS if in_class else f"[{_PROPERTY_IN_CLASS}]")
                i = end + 1
                continue
            if escape == "k" and pattern.startswith("<", i + 2) and (end := pattern.find(">", i)) > 0:
                out.append(f"(?P={pattern[i + 3 : end]})")
                i = end + 1
                continue
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern.startswith("]", i + 1) or pattern.startswith("^]", i + 1):
                out.append(pattern[i : i + 2])  # a leading ']' is a literal, not the end
                i += 2
                continue
        elif char == "(":
            depth += 1
            nesting = max(nesting, depth)
            if pattern.startswith("?<", i + 1) and not pattern.startswith(("?<=", "?<!"), i + 1):
                out.append("(?P<")
                i += 3
                continue
        elif char == ")":
            depth -= 1
        out.append(char)
        i += 1
    return "".join(out), nesting


_PROPERTY_MARK: Final = 0x10FFFF
_PROPERTY_IN_CLASS: Final = "\\w\\U0010ffff"
"""What `\\p{..}` becomes: word characters (for overlap) plus U+10FFFF, a mark for its weight."""
_MAX_CODE_POINT: Final = 0x10FFFF
_Intervals = list[tuple[int, int]]
_SPACE: Final[_Intervals] = [(9, 13), (32, 32), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A)]
_SPACE.extend([(0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)])


def _complement(intervals: _Intervals) -> _Intervals:
    result: _Intervals = []
    start = 0
    for low, high in _merge(intervals):
        if low > start:
            result.append((start, low - 1))
        start = high + 1
    if start <= _MAX_CODE_POINT:
        result.append((start, _MAX_CODE_POINT))
    return result


def _merge(intervals: _Intervals) -> _Intervals:
    merged: _Intervals = []
    for low, high in sorted(intervals):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


# Approximations that keep the relations that matter: \d within \w, \w and \s disjoint.
_NON_ASCII_WORD: Final = [(low, high) for low, high in _complement(_SPACE) if low >= 0x80]
_CATEGORIES: Final[dict[str, _Intervals]] = {
    "CATEGORY_DIGIT": [(48, 57), *[(max(low, 0x660), high) for low, high in _NON_ASCII_WORD if high >= 0x660]],
    "CATEGORY_SPACE": _SPACE,
    "CATEGORY_WORD": [(48, 57), (65, 90), (95, 95), (97, 122), *_NON_ASCII_WORD],
}


class _RegexAnalysis:
    """One pass over a parse tree: refuses what backtracks catastrophically, returns the size.

    Recursion follows the tree, whose depth `max_pattern_nesting` bounds.
    """

    __slots__ = ("_shown",)

    def __init__(self, shown: str) -> None:
        self._shown = shown

    def _refuse(self, why: str) -> NoReturn:
        raise SchemaProblem(f"pattern {self._shown} can take exponential time ({why})")

    def size(self, items: list[tuple[Any, Any]], repeat: str | None) -> int:
        """Estimated compiled size of `items`; `repeat` is set inside an unbounded quantifier."""
        total = 0
        for op, av in items:
            match op.name:
                case "LITERAL" | "NOT_LITERAL" | "ANY" | "IN":
                    total += _atom_weight(op.name, av)
                case "SUBPATTERN":
                    total += self.size(av[3], repeat)
                case "ATOMIC_GROUP":
                    total += self.size(av, repeat)
                case "BRANCH":
                    if repeat is not None:
                        self._check_alternatives(av[1])
                    total += sum(self.size(branch, repeat) for branch in av[1])
                case "MAX_REPEAT" | "MIN_REPEAT" | "POSSESSIVE_REPEAT":
                    low, high, body = av
                    large = high > _LARGE_REPEAT
                    if large and repeat is not None:
                        self._refuse("nested quantifier")
                    inner = self.size(body, "repeat" if large else repeat)
                    total += inner * max(1, low + 1 if high >= _regex_parser().MAXREPEAT else high)
                case "GROUPREF" | "GROUPREF_EXISTS":
                    raise SchemaProblem(f"pattern {self._shown} uses a backreference, which is not supported")
                case "ASSERT" | "ASSERT_NOT":
                    kind = "lookbehind" if av[0] < 0 else "lookahead"
                    raise SchemaProblem(f"pattern {self._shown} uses a {kind}, which is not supported")
                case _:
                    total += 1
        return total

    def _check_alternatives(self, branches: list[list[tuple[Any, Any]]]) -> None:
        """Refuse an alternation, under a quantifier, whose branches can start the same way."""
        tagged: list[tuple[int, int, int]] = []
        for index, branch in enumerate(branches):
            first, nullable = _first(branch)
            if nullable:
                # Python moves a prefix common to all branches out: (a|ab) arrives as a(?:|b).
                self._refuse("ambiguous alternation")
            tagged.extend((low, high, index) for low, high in _merge(first))
        tagged.sort()
        reach, owner = -1, -1
        for low, high, index in tagged:
            if low <= reach and index != owner:
                self._refuse("ambiguous alternation")
            if high > reach:
                reach, owner = high, index


def _atom_weight(op: str, av: Any) -> int:
    if op == "LITERAL":
        return 1
    if op != "IN":
        return 10
    items = [(item_op.name, item_av) for item_op, item_av in av]
    if any(name == "LITERAL" and value == _PROPERTY_MARK for name, value in items):
        return 600
    ascii_only = all(
        (name == "LITERAL" and value < 128) or (name == "RANGE" and value[1] < 128) or name == "CATEGORY"
        for name, value in items
    )
    return 1 if ascii_only and not any(name == "CATEGORY" and "NOT" in value.name for name, value in items) else 10


def _first(items: list[tuple[Any, Any]]) -> tuple[_Intervals, bool]:
    """Characters a match of `items` can start with, and whether it can match the empty string."""
    first: _Intervals = []
    for op, av in items:
        match op.name:
            case "LITERAL":
                return [*first, (av, av)], False
            case "NOT_LITERAL":
                return [*first, *_complement([(av, av)])], False
            case "ANY":
                return [*first, (0, _MAX_CODE_POINT)], False
            case "IN":
                return [*first, *_class_intervals(av)], False
            case "SUBPATTERN" | "ATOMIC_GROUP":
                inner, nullable = _first(av[3] if op.name == "SUBPATTERN" else av)
            case "BRANCH":
                parts = [_first(branch) for branch in av[1]]
                inner = [interval for part, _ in parts for interval in part]
                nullable = any(empty for _, empty in parts)
            case "MAX_REPEAT" | "MIN_REPEAT" | "POSSESSIVE_REPEAT":
                inner, nullable = _first(av[2])
                nullable = nullable or av[0] == 0
            case _:  # anchors and anything zero-width
                inner, nullable = [], True
        first.extend(inner)
        if not nullable:
            return first, False
    return first, True


def _class_intervals(av: Any) -> _Intervals:
    intervals: _Intervals = []
    negate = False
    for op, value in av:
        match op.name:
            case "NEGATE":
                negate = True
            case "LITERAL":
                intervals.append((value, value))
            case "RANGE":
                intervals.append(value)
            case "CATEGORY":
                name = value.name.replace("_NOT", "")
                base = _CATEGORIES.get(name, [(0, _MAX_CODE_POINT)])
                intervals.extend(_complement(base) if "_NOT_" in value.name else base)
            case _:
                intervals.append((0, _MAX_CODE_POINT))
    return _complement(intervals) if negate else intervals


def preview(value: Any) -> str:
    """A short `repr` of a value for messages (long values are cut)."""
    text = repr(value)
    return text if len(text) <= 80 else text[:76] + "...'"
