""""Did you mean" for a misspelled function or macro in a compile error.

cel-go reports a misspelled function (`object.?a.orVlaue("")`) as `undeclared reference to
'orVlaue'`, which does not say what was meant. This module proposes the nearest names and
keeps a proposal only when the expression, with that one name replaced, no longer reports the
name as undeclared in the same environment: a suggestion is a checked fact about the target
release's environment, never a guess from a list that may hold names the release lacks.

It runs only on compile failures, and is bounded: a few errors, a few candidates each.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from . import k8s_library
from .check.env import get_env
from .common.errors import CompileProblem
from .compile import CompileResult, compile_in

_UNDECLARED = re.compile(r"^undeclared reference to '([A-Za-z_][A-Za-z0-9_.]*)' \(in container '[^']*'\)$")

CEL_NAMES = (
    # standard functions and macros
    "size", "int", "uint", "double", "string", "bytes", "bool", "type", "dyn", "duration",
    "timestamp", "matches", "contains", "startsWith", "endsWith", "has", "all", "exists",
    "exists_one", "map", "filter", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
    "getFullYear", "getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds",
    # strings, lists, sets, optionals, bindings, two-variable comprehensions
    "charAt", "indexOf", "lastIndexOf", "lowerAscii", "upperAscii", "replace", "split",
    "substring", "trim", "join", "quote", "format", "reverse", "flatten", "slice", "sort",
    "sortBy", "distinct", "first", "last", "range", "lists.range", "sets.contains",
    "sets.equivalent", "sets.intersects", "hasValue", "value", "or", "orValue", "optMap",
    "optFlatMap", "optional.of", "optional.ofNonZeroValue", "optional.none", "cel.bind",
    "existsOne", "transformList", "transformMap", "transformMapEntry", "object",
)
"""Names an extractor may mean: candidates only (each is checked against the environment)."""

MAX_ERRORS = 3
MAX_CANDIDATES = 3
_CUTOFF = 0.7


def _names(result: CompileResult) -> list[str]:
    version = result.key.kubernetes_version
    library = {entry["name"] for entry in k8s_library.checker_config_for(version).functions}
    return sorted({*CEL_NAMES, *library})


def _name_end(source: str, error: CompileProblem, name: str) -> int | None:
    """Where `name` ends in `source`: just before the reported column (a call's `(`, where
    cel-go points), else its first whole-word occurrence."""
    lines = source.split("\n")
    if 1 <= error.line <= len(lines) and error.column >= 1:
        offset = sum(len(text) + 1 for text in lines[:error.line - 1]) + error.column - 1
        for end in (offset, offset + len(name)):
            if source[max(0, end - len(name)):end] == name:
                return end
    match = re.search(rf"(?<![A-Za-z0-9_.]){re.escape(name)}(?![A-Za-z0-9_])", source)
    return match.end() if match else None


def _still_undeclared(result: CompileResult, source: str, name: str) -> bool:
    replaced = compile_in(get_env(result.key), source)
    return any((m := _UNDECLARED.match(e.message)) is not None and m.group(1) == name
               for e in replaced.errors)


def suggestions(result: CompileResult) -> tuple[str, ...]:
    """`did you mean 'orValue'?` for each misspelled name of a failed compile whose nearest
    known name, put in its place, is declared in the same environment."""
    if result.ok:
        return ()
    out: list[str] = []
    seen: set[str] = set()
    errors: Iterable[CompileProblem] = result.errors[:MAX_ERRORS]
    for error in errors:
        m = _UNDECLARED.match(error.message)
        if m is None or m.group(1) in seen:
            continue
        name = m.group(1)
        seen.add(name)
        end = _name_end(result.expression, error, name)
        if end is None:
            continue
        for candidate in difflib.get_close_matches(name, _names(result), MAX_CANDIDATES, _CUTOFF):
            source = result.expression[:end - len(name)] + candidate + result.expression[end:]
            if not _still_undeclared(result, source, candidate):
                out.append(f"did you mean '{candidate}' instead of '{name}'?")
                break
    return tuple(out)
