"""Kubernetes' compile-time checks that cel-cpp does not perform, run on the checked AST.

Why: the Kubernetes base environment adds cel-go AST validators (and one program-time check)
that reject expressions cel-cpp happily compiles. A linter that mirrors the API server must
reject them too, with cel-go's messages:

* homogeneous aggregate literals (`cel.HomogeneousAggregateLiterals()`, in the base env since
  1.0; in current cel-go it *is* the validator below): every element of a list literal, and
  every key and every value of a map literal, must have an equivalent type —
  `expected type 'int' but found 'string'`. Equivalence is strict: `[1, dyn("a")]` and
  `["a", object.x]` fail too (`... but found 'dyn'`). Literals inside a `format(...)` call are
  exempt (ext.Strings registers that exemption).
* literal arguments of `duration()` / `timestamp()` and literal `matches` patterns (1.29,
  `ValidateDurationLiterals`, `ValidateTimestampLiterals`, `ValidateRegexLiterals`):
  `invalid duration argument`, `invalid timestamp argument`, `invalid matches argument`. As in
  cel-go, the check looks at the call's first non-receiver argument, so for the global form
  `matches(s, re)` it is `s` that must be a valid pattern.
* regex constants of `matches`, `find` and `findAll` are compiled when the program is built
  (`cel.OptimizeRegex`): an invalid one fails with Go's regexp error text,
  `error parsing regexp: missing closing ): \\`(\\``.

Literal checks follow the Go semantics cel-go inherits (`time.ParseDuration`,
`time.Parse(time.RFC3339, ...)` plus cel-go's year 1..9999 range, Go's RE2 dialect) rather than
cel-cpp's absl parsers, which accept other spellings (a lower-case `t`/`z` in timestamps) and
reject some Go accepts (`1µs`).

* constant `format` calls (ext.Strings' `stringFormatValidator`, `StringsValidateFormatCalls`,
  on by default): `"<literal>".format([<list literal>])` must parse as a format string, name
  no more clauses than arguments and no fewer (`too many arguments supplied to string.format
  (expected 2, got 3)`), and give each clause an argument of a kind it formats (`error during
  formatting: decimal clause can only be used on integers, was given double`); the parser is
  `k8s_library.strings_format`'s, shared with evaluation.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..common.ast import CheckedAst, ConstKind, Node, NodeKind
from ..common.errors import CompileProblem, ErrorStage
from ..common.types import CelType, TypeKind, WellKnown, format_go_type
from ..k8s_library.strings_format import (
    CLAUSE_KINDS,
    STRING_CLAUSE_KINDS,
    FormatProblem,
    clause_error,
    parse_format,
)

__all__ = [
    "HOMOGENEOUS_EXEMPT_FUNCTIONS",
    "MAX_UNIX_TIME",
    "MIN_UNIX_TIME",
    "RegexCheck",
    "format_go_type",
    "go_regexp_error",
    "parse_go_duration",
    "parse_go_rfc3339",
    "program_plan_errors",
    "program_regex_errors",
    "validate_double_literals",
    "validate_duration_literals",
    "validate_duration_overloads",
    "validate_format_calls",
    "validate_homogeneous_literals",
    "validate_regex_literals",
    "validate_timestamp_literals",
    "validate_type_identifiers",
    "validate_type_parameters",
]

HOMOGENEOUS_EXEMPT_FUNCTIONS: frozenset[str] = frozenset({"format"})
"""Functions whose literal arguments may mix types (`"%s %d".format(["a", 1])`)."""

MIN_UNIX_TIME = -62135596800
"""0001-01-01T00:00:00Z, cel-go's lower timestamp bound."""

MAX_UNIX_TIME = 253402300799
"""9999-12-31T23:59:59Z, cel-go's upper timestamp bound."""

RegexCheck = Callable[[str], str | None]
"""Returns None for a valid pattern, else Go's regexp error text for it."""


# ------------------------------------------------------------------------------------------------
# Types as cel-go prints them
# ------------------------------------------------------------------------------------------------

def _type_name(t: CelType) -> str:
    """The part of a type cel-go compares besides kind and parameters (`TypeName()`)."""
    if t.kind in (TypeKind.PRIMITIVE, TypeKind.WRAPPER):
        return str(t.primitive)
    if t.kind is TypeKind.WELL_KNOWN:
        return str(t.well_known)
    return t.name


def is_equivalent_type(a: CelType, b: CelType) -> bool:
    """cel-go `Type.IsEquivalentType`: same kind, same name (type params excepted), same params."""
    if a.kind is not b.kind or len(a.params) != len(b.params):
        return False
    if a.kind is not TypeKind.TYPE_PARAM and _type_name(a) != _type_name(b):
        return False
    return all(is_equivalent_type(p, q) for p, q in zip(a.params, b.params, strict=True))


# ------------------------------------------------------------------------------------------------
# Helpers on the checked AST
# ------------------------------------------------------------------------------------------------


def _error_at(ast: CheckedAst, node_id: int, message: str, stage: ErrorStage) -> CompileProblem:
    line, column = ast.location(node_id)
    if line < 1:
        return CompileProblem(-1, 0, message, stage)
    return CompileProblem(line, column, message, stage)


def _has_exempt_ancestor(ast: CheckedAst, node: Node, exempt: frozenset[str]) -> bool:
    parent = ast.parent(node.id)
    while parent is not None:
        if parent.kind is NodeKind.CALL and parent.function in exempt:
            return True
        parent = ast.parent(parent.id)
    return False


def _unwrap_optional(t: CelType) -> CelType:
    return t.params[0] if t.is_optional and t.params else t


def _calls(ast: CheckedAst, functions: Iterable[str],
           nodes: Sequence[Node] | None = None) -> Iterator[Node]:
    """Calls of `functions` in pre-order: among `nodes` when given, else from the AST's index."""
    if nodes is None:
        yield from ast.index.calls_of(functions)
        return
    wanted = frozenset(functions)
    for node in nodes:
        if node.kind is NodeKind.CALL and node.function in wanted:
            yield node


def _string_literal(node: Node) -> str | None:
    if node.kind is NodeKind.CONST and node.const is not None \
            and node.const.kind is ConstKind.STRING and isinstance(node.const.value, str):
        return node.const.value
    return None


# ------------------------------------------------------------------------------------------------
# Homogeneous aggregate literals
# ------------------------------------------------------------------------------------------------


def validate_homogeneous_literals(
    ast: CheckedAst, exempt: frozenset[str] = HOMOGENEOUS_EXEMPT_FUNCTIONS,
    nodes: Sequence[Node] | None = None,
) -> list[CompileProblem]:
    """cel-go `ValidateHomogeneousAggregateLiterals` on our checked AST.

    Lists stop at their first mismatch; maps report every mismatching key and value, each
    against the types of the first entry (as cel-go does).
    """
    errors: list[CompileProblem] = []

    def mismatch(node_id: int, expected: CelType, actual: CelType) -> None:
        errors.append(_error_at(
            ast, node_id,
            f"expected type '{format_go_type(expected)}' but found '{format_go_type(actual)}'",
            ErrorStage.VALIDATE))

    for node in ast.index.aggregates if nodes is None else nodes:
        if node.kind is NodeKind.LIST and node.elements:
            if _has_exempt_ancestor(ast, node, exempt):
                continue
            optional = set(node.optional_indices)
            first: CelType | None = None
            for i, elem in enumerate(node.elements):
                et = ast.type_of(elem.id)
                if i in optional:
                    et = _unwrap_optional(et)
                if first is None:
                    first = et
                elif not is_equivalent_type(first, et):
                    mismatch(elem.id, first, et)
                    break
        elif node.kind is NodeKind.STRUCT and not node.message_name and node.entries:
            if _has_exempt_ancestor(ast, node, exempt):
                continue
            key_type: CelType | None = None
            val_type: CelType | None = None
            for entry in node.entries:
                if entry.key is None:
                    continue
                kt = ast.type_of(entry.key.id)
                vt = ast.type_of(entry.value.id)
                if entry.optional_entry:
                    vt = _unwrap_optional(vt)
                if key_type is None or val_type is None:
                    key_type, val_type = kt, vt
                    continue
                if not is_equivalent_type(key_type, kt):
                    mismatch(entry.key.id, key_type, kt)
                if not is_equivalent_type(val_type, vt):
                    mismatch(entry.value.id, val_type, vt)
    return errors


# ------------------------------------------------------------------------------------------------
# duration / timestamp / regex literal arguments
# ------------------------------------------------------------------------------------------------


def _first_literal_arg(call: Node) -> Node | None:
    """cel-go `formatValidator`: argument 0 of the call (receiver excluded), if a literal."""
    if not call.args:
        return None
    arg = call.args[0]
    return arg if arg.kind is NodeKind.CONST else None


def validate_duration_literals(
    ast: CheckedAst, nodes: Sequence[Node] | None = None
) -> list[CompileProblem]:
    """`duration('...')` with a literal that Go's `time.ParseDuration` rejects."""
    errors: list[CompileProblem] = []
    for call in _calls(ast, ("duration",), nodes):
        arg = _first_literal_arg(call)
        if arg is None:
            continue
        text = _string_literal(arg)
        if text is not None and isinstance(parse_go_duration(text), str):
            errors.append(_error_at(ast, arg.id, "invalid duration argument", ErrorStage.VALIDATE))
    return errors


def validate_timestamp_literals(
    ast: CheckedAst, nodes: Sequence[Node] | None = None
) -> list[CompileProblem]:
    """`timestamp('...')` / `timestamp(<int>)` literals cel-go cannot convert."""
    errors: list[CompileProblem] = []
    for call in _calls(ast, ("timestamp",), nodes):
        arg = _first_literal_arg(call)
        if arg is None or arg.const is None:
            continue
        ok = True
        if arg.const.kind is ConstKind.STRING and isinstance(arg.const.value, str):
            ok = parse_go_rfc3339(arg.const.value) is not None
        elif arg.const.kind is ConstKind.INT and isinstance(arg.const.value, int):
            ok = MIN_UNIX_TIME <= arg.const.value <= MAX_UNIX_TIME
        if not ok:
            errors.append(_error_at(ast, arg.id, "invalid timestamp argument",
                                    ErrorStage.VALIDATE))
    return errors


def validate_regex_literals(
    ast: CheckedAst, check: RegexCheck, nodes: Sequence[Node] | None = None
) -> list[CompileProblem]:
    """`matches` whose first (non-receiver) argument is an invalid regex literal."""
    errors: list[CompileProblem] = []
    for call in _calls(ast, ("matches",), nodes):
        arg = _first_literal_arg(call)
        if arg is None:
            continue
        pattern = _string_literal(arg)
        if pattern is not None and check(pattern) is not None:
            errors.append(_error_at(ast, arg.id, "invalid matches argument", ErrorStage.VALIDATE))
    return errors


PROGRAM_REGEX_FUNCTIONS: tuple[str, ...] = ("matches", "find", "findAll")
"""Functions whose regex constant cel-go compiles when building the program (`OptimizeRegex`):
the standard `matches` (with `OptOptimize`) and Kubernetes' `find` / `findAll`."""


def program_regex_errors(
    ast: CheckedAst, check: RegexCheck, nodes: Sequence[Node] | None = None
) -> list[CompileProblem]:
    """Regex constants that would make `env.Program()` fail upstream.

    The regex is argument 1 counting the receiver (so `s.find(re)` and `matches(s, re)`).
    """
    errors: list[CompileProblem] = []
    for call in _calls(ast, PROGRAM_REGEX_FUNCTIONS, nodes):
        args = ((call.target,) if call.target is not None else ()) + call.args
        if len(args) < 2:
            continue
        pattern = _string_literal(args[1])
        if pattern is None:
            continue
        problem = check(pattern)
        if problem is not None:
            errors.append(_error_at(ast, args[1].id, problem, ErrorStage.PROGRAM))
    return errors


# ------------------------------------------------------------------------------------------------
# Constant string.format() calls
# ------------------------------------------------------------------------------------------------

def _go_kind(t: CelType) -> str:
    """cel-go's `Type.Kind()` of a checked type, as a name (`dyn`, `int`, `list`, `opaque`...)."""
    k = t.kind
    if k is TypeKind.DYN:
        return "dyn"
    if k is TypeKind.PRIMITIVE:
        return format_go_type(t)
    if k is TypeKind.WELL_KNOWN:
        return {WellKnown.TIMESTAMP: "timestamp", WellKnown.DURATION: "duration"}.get(
            t.well_known or WellKnown.UNSPECIFIED, "any")
    return {TypeKind.LIST: "list", TypeKind.MAP: "map", TypeKind.TYPE: "type",
            TypeKind.NULL: "null"}.get(k, "opaque")


def _go_type_name(t: CelType) -> str:
    """cel-go's `Type.TypeName()`: the type without its parameters (`list`, `optional_type`)."""
    if t.kind is TypeKind.LIST:
        return "list"
    if t.kind is TypeKind.MAP:
        return "map"
    if t.kind is TypeKind.TYPE:
        return "type"
    if t.is_optional:
        return "optional_type"
    return format_go_type(t) if not t.params else t.name


def _string_clause_problem(ast: CheckedAst, node: Node) -> Node | None:
    """cel-go `verifyString`: the first node (the argument or, inside list and map literals, a
    member) whose type `%s` cannot format."""
    kind = _go_kind(ast.type_of(node.id))
    if kind != "dyn" and kind not in STRING_CLAUSE_KINDS:
        return node
    members: tuple[Node, ...] = ()
    if node.kind is NodeKind.LIST:
        members = node.elements
    elif node.kind is NodeKind.STRUCT and not node.message_name:
        members = tuple(part for e in node.entries
                        for part in ((e.key, e.value) if e.key is not None else (e.value,)))
    for member in members:
        bad = _string_clause_problem(ast, member)
        if bad is not None:
            return bad
    return None


def validate_format_calls(
    ast: CheckedAst, nodes: Sequence[Node] | None = None
) -> list[CompileProblem]:
    """ext.Strings' `stringFormatValidator`: `"<literal>".format([<list literal>])` calls.

    Calls whose format string is not a literal, or whose arguments are not a list literal,
    are left to evaluation, as upstream does.
    """
    errors: list[CompileProblem] = []
    for call in _calls(ast, ("format",), nodes):
        if call.target is None or len(call.args) != 1 or call.args[0].kind is not NodeKind.LIST:
            continue
        text = _string_literal(call.target)
        if text is None:
            continue
        args = call.args[0].elements

        def check(index: int, clause: str, _precision: int | None,
                  args: tuple[Node, ...] = args) -> str | FormatProblem:
            arg = args[index]
            if clause == "s":
                bad = _string_clause_problem(ast, arg)
                return "" if bad is None else clause_error(
                    clause, _go_type_name(ast.type_of(bad.id)), bad.id)
            kind = _go_kind(ast.type_of(arg.id))
            if kind == "dyn" or kind in CLAUSE_KINDS[clause]:
                return ""
            return clause_error(clause, _go_type_name(ast.type_of(arg.id)), arg.id)

        outcome = parse_format(text, len(args), check, runtime=False)
        if isinstance(outcome, FormatProblem):
            where = outcome.where if isinstance(outcome.where, int) else call.id
            errors.append(_error_at(ast, where, outcome.message, ErrorStage.VALIDATE))
        elif len(args) > outcome[1]:
            errors.append(_error_at(
                ast, call.id,
                f"too many arguments supplied to string.format (expected {outcome[1]}, got "
                f"{len(args)})", ErrorStage.VALIDATE))
    return errors


# ------------------------------------------------------------------------------------------------
# Go's time.ParseDuration
# ------------------------------------------------------------------------------------------------

_NANOS = 1
_DURATION_UNITS = {
    "ns": _NANOS,
    "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_INT64_LIMIT = 1 << 63


def parse_go_duration(text: str) -> int | str:
    """Parse like Go's `time.ParseDuration`: nanoseconds, or an error message.

    Grammar `[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+` (units ns, us, µs, μs, ms, s, m, h), `0`
    alone allowed, result within int64 nanoseconds.
    """
    orig = text
    s = text
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if s == "":
        return f'time: invalid duration "{orig}"'
    total = 0
    while s:
        if not (s[0] == "." or (s[0].isascii() and s[0].isdigit())):
            return f'time: invalid duration "{orig}"'
        i = 0
        while i < len(s) and s[i].isascii() and s[i].isdigit():
            i += 1
        pre = i > 0
        whole = int(s[:i]) if pre else 0
        if whole > _INT64_LIMIT:
            return f'time: invalid duration "{orig}"'
        s = s[i:]
        frac_digits = ""
        post = False
        if s.startswith("."):
            s = s[1:]
            j = 0
            while j < len(s) and s[j].isascii() and s[j].isdigit():
                j += 1
            frac_digits = s[:j]
            post = j > 0
            s = s[j:]
        if not pre and not post:
            return f'time: invalid duration "{orig}"'
        k = 0
        while k < len(s) and not (s[k] == "." or (s[k].isascii() and s[k].isdigit())):
            k += 1
        if k == 0:
            return f'time: missing unit in duration "{orig}"'
        unit_text = s[:k]
        s = s[k:]
        unit = _DURATION_UNITS.get(unit_text)
        if unit is None:
            return f'time: unknown unit "{unit_text}" in duration "{orig}"'
        if whole > _INT64_LIMIT // unit:
            return f'time: invalid duration "{orig}"'
        value = whole * unit
        if frac_digits:
            # Go accumulates the fraction in float64: v += uint64(float64(f) * (unit / scale)).
            digits = frac_digits[:19]
            value += int(float(int(digits)) * (unit / (10 ** len(digits))))
            if value > _INT64_LIMIT:
                return f'time: invalid duration "{orig}"'
        total += value
        if total > _INT64_LIMIT:
            return f'time: invalid duration "{orig}"'
    if neg:
        return -total
    if total > _INT64_LIMIT - 1:
        return f'time: invalid duration "{orig}"'
    return total


# ------------------------------------------------------------------------------------------------
# Go's time.Parse(time.RFC3339, ...) + cel-go's range
# ------------------------------------------------------------------------------------------------

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{1,2}):(\d{2}):(\d{2})(?:[.,](\d+))?"
    r"(?:(Z)|([+-])(\d{2}):(\d{2}))"
)


def parse_go_rfc3339(text: str) -> int | None:
    """Unix seconds of an RFC 3339 timestamp as cel-go's `timestamp(string)` accepts, else None.

    Go accepts a 1- or 2-digit hour, `.` or `,` before the fraction, an upper-case `T` and `Z`
    only, offsets up to 24:60; cel-go then requires years 0001..9999 after applying the offset.
    """
    if not text.isascii():
        return None
    m = _RFC3339.fullmatch(text)
    if m is None:
        return None
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    if not 1 <= month <= 12 or hour > 23 or minute > 59 or second > 59:
        return None
    # Year 0 is a leap year in the proleptic Gregorian calendar, like 2000.
    if not 1 <= day <= calendar.monthrange(year or 2000, month)[1]:
        return None
    offset = 0
    if m.group(8) is None:
        oh, om = int(m.group(10)), int(m.group(11))
        if oh > 24 or om > 60:
            return None
        offset = (oh * 60 + om) * 60 * (-1 if m.group(9) == "-" else 1)
    days = _days_from_civil(year, month, day)
    unix = days * 86400 + hour * 3600 + minute * 60 + second - offset
    if not MIN_UNIX_TIME <= unix <= MAX_UNIX_TIME:
        return None
    return unix


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 in the proleptic Gregorian calendar (valid for year 0 too)."""
    y = year - (1 if month <= 2 else 0)
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


# ------------------------------------------------------------------------------------------------
# Go regexp error text from RE2's
# ------------------------------------------------------------------------------------------------

_RE2_TO_GO = (
    ("missing )", "missing closing )"),
    ("missing ]", "missing closing ]"),
    ("unexpected )", "unexpected )"),
    ("trailing \\", "trailing backslash at end of expression"),
    ("no argument for repetition operator", "missing argument to repetition operator"),
    ("invalid repetition size", "invalid repeat count"),
    ("bad repetition operator", "invalid nested repetition operator"),
    ("invalid perl operator", "invalid or unsupported Perl syntax"),
    ("invalid named capture group", "invalid named capture"),
    ("invalid character class range", "invalid character class range"),
    ("invalid character class", "invalid character class"),
    ("invalid escape sequence", "invalid escape sequence"),
    ("invalid UTF-8", "invalid UTF-8"),
    ("pattern too large - compile failed", "expression too large"),
)
_BYTE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\C")


@dataclass(frozen=True, slots=True)
class _GoRegexpProblem:
    code: str
    expr: str

    def __str__(self) -> str:
        return f"error parsing regexp: {self.code}: `{self.expr}`"


def go_regexp_error(pattern: str, re2_message: str | None) -> str | None:
    """Go's `regexp.Compile` error for `pattern`, given RE2's verdict on it.

    RE2 (C++) and Go's regexp/syntax accept the same dialect but for `\\C` (any byte), which
    Go rejects. The argument part of the message is RE2's, which matches Go's in the common
    cases (`missing closing ): \\`(\\``).
    """
    byte_escape = _BYTE_ESCAPE.search(pattern)
    if byte_escape is not None:
        return str(_GoRegexpProblem("invalid escape sequence", "\\C"))
    if re2_message is None:
        return None
    text = re2_message.removeprefix("invalid regular expression: ")
    for re2_code, go_code in _RE2_TO_GO:
        if text == re2_code or text.startswith(re2_code + ": "):
            arg = text[len(re2_code) + 2:] if text.startswith(re2_code + ": ") else pattern
            if go_code in ("missing closing )", "unexpected )"):
                arg = pattern  # Go reports the whole expression for unbalanced parentheses
            elif go_code == "trailing backslash at end of expression":
                arg = ""
            return str(_GoRegexpProblem(go_code, arg))
    return str(_GoRegexpProblem(text, pattern))


# ------------------------------------------------------------------------------------------------
# Declarations cel-cpp cannot express as cel-go does
# ------------------------------------------------------------------------------------------------

_LIST_INDEX_OVERLOADS = frozenset({"list_a_index_of_int", "list_a_last_index_of_int"})
_NULL_ASSIGNABLE = frozenset({TypeKind.WRAPPER, TypeKind.MESSAGE, TypeKind.ABSTRACT})


def _assignable(param: CelType, arg: CelType) -> bool:
    """cel-go's checker assignability of `arg` to a parameter bound to `param` (`dyn` and type
    parameters take anything, a primitive goes to its wrapper, null to wrappers and messages)."""
    if param.is_dyn or arg.is_dyn or TypeKind.ERROR in (param.kind, arg.kind):
        return True
    if param.kind is not arg.kind:
        if arg.kind is TypeKind.NULL:
            return param.kind in _NULL_ASSIGNABLE
        return (param.kind is TypeKind.WRAPPER and arg.kind is TypeKind.PRIMITIVE
                and param.primitive is arg.primitive)
    if _type_name(param) != _type_name(arg) or len(param.params) != len(arg.params):
        return False
    return all(_assignable(p, q) for p, q in zip(param.params, arg.params, strict=True))


def _no_overload(ast: CheckedAst, call: Node) -> CompileProblem:
    receiver = format_go_type(ast.type_of(call.target.id)) + "." if call.target is not None else ""
    args = ", ".join(format_go_type(ast.type_of(a.id)) for a in call.args)
    return _error_at(ast, call.id,
                     f"found no matching overload for '{call.function}' applied to "
                     f"'{receiver}({args})'", ErrorStage.CHECK)


def validate_type_parameters(ast: CheckedAst) -> list[CompileProblem]:
    """Calls cel-go's checker rejects through a type parameter that our engine's declarations
    cannot carry (cel-expr-python declares extension overloads without type parameters):

    * the Kubernetes lists library's `list(A).indexOf(A)` / `lastIndexOf(A)`, declared here as
      `list(dyn).indexOf(dyn)`: `['a', 'b'].indexOf(1)` must fail;
    * the lists extension's `list(list(T)).flatten()`, which cel-cpp declares on `list(dyn)`:
      `['a', 'b'].flatten()` must fail (`flatten(depth)` takes any list, as in cel-go).
    """
    errors: list[CompileProblem] = []
    for call in _calls(ast, ("indexOf", "lastIndexOf", "flatten")):
        if call.target is None:
            continue
        receiver = ast.type_of(call.target.id)
        if receiver.kind is not TypeKind.LIST:
            continue
        if call.function == "flatten":
            if not call.args and not receiver.elem.is_dyn \
                    and receiver.elem.kind not in (TypeKind.LIST, TypeKind.ERROR):
                errors.append(_no_overload(ast, call))
        elif len(call.args) == 1 and set(ast.overload_ids(call.id)) <= _LIST_INDEX_OVERLOADS \
                and not _assignable(receiver.elem, ast.type_of(call.args[0].id)):
            errors.append(_no_overload(ast, call))
    return errors


def validate_duration_overloads(ast: CheckedAst) -> list[CompileProblem]:
    """`duration()` of an int or of null: cel-go declares the conversion on durations and
    strings only, where cel-cpp also takes seconds as an int (`duration(0)`) and lets null
    through as a duration; cel-go's checker finds no overload (null: `invalid duration
    argument`)."""
    errors: list[CompileProblem] = []
    for call in _calls(ast, ("duration",)):
        if call.target is not None or len(call.args) != 1:
            continue
        arg = ast.type_of(call.args[0].id)
        if ast.overload_ids(call.id) == ("int64_to_duration",):
            errors.append(_no_overload(ast, call))
        elif arg.kind is TypeKind.NULL:
            errors.append(_error_at(ast, call.args[0].id, "invalid duration argument",
                                    ErrorStage.CHECK))
    return errors


_TYPE_DYN = "dyn"


def validate_type_identifiers(ast: CheckedAst) -> list[CompileProblem]:
    """`dyn` names no type value in cel-go (only the `dyn()` conversion): a reference to it,
    as in `type(x) == dyn`, is undeclared there, where cel-cpp declares a type identifier."""
    errors: list[CompileProblem] = []
    for node in ast.walk():
        if node.kind is NodeKind.IDENT and node.name == _TYPE_DYN and not _bound(ast, node):
            errors.append(_error_at(ast, node.id,
                                    "undeclared reference to 'dyn' (in container '')",
                                    ErrorStage.CHECK))
    return errors


def _bound(ast: CheckedAst, node: Node) -> bool:
    """Whether an identifier names a comprehension variable in scope."""
    parent = ast.parent(node.id)
    while parent is not None:
        if parent.kind is NodeKind.COMPREHENSION and node.name in (
                parent.iter_var, parent.iter_var2, parent.accu_var):
            return True
        parent = ast.parent(parent.id)
    return False


def validate_double_literals(ast: CheckedAst) -> list[CompileProblem]:
    """cel-go's parser rejects a double literal outside float64's range (`1e309`: Go's
    `strconv.ParseFloat` reports a range error) as `invalid double literal`; cel-cpp reads it as
    infinity."""
    errors: list[CompileProblem] = []
    for node in ast.walk():
        if node.kind is NodeKind.CONST and node.const is not None \
                and node.const.kind is ConstKind.DOUBLE and isinstance(node.const.value, float) \
                and math.isinf(node.const.value):
            errors.append(_error_at(ast, node.id, "invalid double literal", ErrorStage.PARSE))
    return errors


_QUALIFIER_GO_TYPES = {ConstKind.NULL: "types.Null", ConstKind.BYTES: "types.Bytes"}
_FOLDED_CONVERSIONS = {"timestamp": "types.Timestamp", "duration": "types.Duration"}


def _constant(node: Node) -> bool:
    """Whether cel-go's constant folding (`OptOptimize`) makes `node` a constant: a literal, or a
    list or map literal of them."""
    if node.kind is NodeKind.CONST:
        return True
    if node.kind is NodeKind.LIST:
        return all(_constant(e) for e in node.elements)
    if node.kind is NodeKind.STRUCT and not node.message_name:
        return all(e.key is not None and _constant(e.key) and _constant(e.value)
                   for e in node.entries)
    return False


def _constant_qualifier_problem(ast: CheckedAst, index: Node) -> str | None:
    """The Go type cel-go's `newQualifier` names when a constant index is none it accepts."""
    if index.kind is NodeKind.CONST and index.const is not None:
        return _QUALIFIER_GO_TYPES.get(index.const.kind)
    if index.kind is NodeKind.CALL and index.target is None and len(index.args) == 1 \
            and index.function in _FOLDED_CONVERSIONS and index.args[0].kind is NodeKind.CONST:
        return _FOLDED_CONVERSIONS[index.function]
    if index.kind is NodeKind.LIST and _constant(index):
        return "*types.baseList"
    if index.kind is NodeKind.STRUCT and not index.message_name and _constant(index):
        return "*types.baseMap"
    if index.kind is NodeKind.IDENT and ast.type_of(index.id).kind is TypeKind.TYPE \
            and not _bound(ast, index):
        return "*types.Type"
    return None


def program_plan_errors(ast: CheckedAst) -> list[CompileProblem]:
    """What makes cel-go's planner (`env.Program()`) fail on a checked expression, which the
    scheduler reports as a failure to instantiate the program:

    * a constant index no qualifier is made of (`newQualifier`): `x[null]`, `x[b'a']` —
      `invalid qualifier type: types.Null`;
    * a local variable (comprehension or `cel.bind`) whose checked type is a type value
      (`[string].exists(x, x == string)`): the planner takes an identifier of type `type(T)`
      for a type name and cannot find one called `x` (`reference to undefined type: x`).
    """
    errors: list[CompileProblem] = []
    for call in _calls(ast, ("_[_]", "_[?_]")):
        if len(call.args) == 2:
            go_type = _constant_qualifier_problem(ast, call.args[1])
            if go_type is not None:
                errors.append(_error_at(ast, call.id, f"invalid qualifier type: {go_type}",
                                        ErrorStage.PROGRAM))
    for node in ast.walk():
        if node.kind is NodeKind.IDENT and ast.type_of(node.id).kind is TypeKind.TYPE \
                and _bound(ast, node):
            errors.append(_error_at(ast, node.id, f"reference to undefined type: {node.name}",
                                    ErrorStage.PROGRAM))
    return errors
