"""kubernetes.regex: `<string>.find(regex)` and `<string>.findAll(regex[, n])`.

Patterns use Go's regexp syntax and matching rules, which `_re2` gets from RE2 itself. A bad
pattern yields upstream's runtime error `Illegal regex: <Go regexp error>`. Upstream also
compiles *literal* patterns when the program is created, so a bad literal fails before
evaluation; `literal_pattern_error` lets a checker report that case at compile time.
"""

from __future__ import annotations

from cel_expr_python import cel

from ._re2 import (
    Re2Error,
    Regex,
    compile_re2,
    find,
    find_all,
    pattern_error,
)
from ._types import (
    INT,
    STRING,
    CelError,
    Decl,
    LibrarySpec,
    Runtime,
    list_of,
    want_int,
    want_str,
)

NAME = "kubernetes.regex"


def _compile(pattern: str) -> Regex:
    try:
        return compile_re2(pattern)
    except Re2Error as err:
        raise CelError(f"Illegal regex: {err}") from None


def literal_pattern_error(pattern: str) -> str | None:
    """Go's `regexp.Compile` error for `pattern` (what upstream reports for a bad literal)."""
    return pattern_error(pattern)


def _find(text: object, pattern: object) -> str:
    return find(_compile(want_str(pattern)), want_str(text))


def _find_all(text: object, pattern: object) -> list[str]:
    return find_all(_compile(want_str(pattern)), want_str(text), -1)


def _find_all_n(text: object, pattern: object, n: object) -> list[str]:
    return find_all(_compile(want_str(pattern)), want_str(text), want_int(n))


DECLARATIONS: tuple[Decl, ...] = (
    Decl("find", "string_find_string", (STRING,), STRING, target=STRING),
    Decl("findAll", "string_find_all_string", (STRING,), list_of(STRING), target=STRING),
    Decl("findAll", "string_find_all_string_int", (STRING, INT), list_of(STRING), target=STRING),
)

_S = cel.Type.STRING
_LS = cel.Type.List(cel.Type.STRING)

SPEC = LibrarySpec(
    NAME,
    DECLARATIONS,
    (
        Runtime("find", "string_find_string", (_S, _S), _S, _find, member=True),
        Runtime("findAll", "string_find_all_string", (_S, _S), _LS, _find_all, member=True),
        Runtime(
            "findAll",
            "string_find_all_string_int",
            (_S, _S, cel.Type.INT),
            _LS,
            _find_all_n,
            member=True,
        ),
    ),
)
