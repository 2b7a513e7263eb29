"""cel-go's `string.format` (ext.Strings v1+, `ext/formatting.go`): parsing and rendering.

Why: Kubernetes evaluates `"...".format([...])` with cel-go, whose rendering differs from
cel-cpp's where an extractor can see it: doubles inside lists and maps print with six decimals
(`[2.710000]`), `%f` and `%e` go through the en-US number printer (`1,234.500000`,
`1.052033 × 10⁰³`, `∞`), and `%s` of a double uses Go's shortest `%g` (`1.234567e+06`). The
same parser also serves the compile-time validator (`validators.validate_format_calls`), which
only differs in how a clause treats its argument.

The parser reads the format string byte by byte, as cel-go does: the clause after a `%` is one
UTF-8 byte, and `"%é"` reports the clause `Ã`.

`render(text, args)` works on the cost walk's values (`policies.cel.common.jsonvalue`). It returns
None where it cannot be faithful: timestamps and durations anywhere in the arguments (the walk
holds them at microsecond precision); the caller then
lets cel-cpp render. Two points of the en-US printer are taken on trust from cel-go's tests and
golang.org/x/text's documentation rather than read from its code: `%f` groups thousands with
`,`, and a negative `%e` exponent is written with a superscript minus. cel-go builds the `%e`
verb as `%<precision>e`, so the precision is a *width* (the mantissa always has six decimals);
this is reproduced.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from ..common.jsonvalue import BoolKey, Duration, Timestamp, TypeValue, walk_type_name
from ._types import go_quote, go_quote_bytes

__all__ = [
    "CLAUSE_KINDS",
    "STRING_CLAUSE_KINDS",
    "FormatProblem",
    "clause_error",
    "parse_format",
    "render",
]

CLAUSE_KINDS: dict[str, tuple[str, ...]] = {
    # clause -> the kinds of argument it formats (besides `s`, which takes nearly anything)
    "d": ("int", "uint"),
    "f": ("double", "string"),
    "e": ("double", "string"),
    "b": ("int", "uint", "bool"),
    "x": ("int", "uint", "string", "bytes"),
    "X": ("int", "uint", "string", "bytes"),
    "o": ("int", "uint"),
}
STRING_CLAUSE_KINDS = ("list", "map", "int", "uint", "double", "bool", "string", "timestamp",
                       "bytes", "duration", "type", "null")
_CLAUSE_ERRORS = {
    "s": "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
         "types, durations, and timestamps",
    "d": "decimal clause can only be used on integers",
    "f": "fixed-point clause can only be used on doubles",
    "e": "scientific clause can only be used on doubles",
    "b": "only integers and bools can be formatted as binary",
    "x": "only integers, byte buffers, and strings can be formatted as hex",
    "X": "only integers, byte buffers, and strings can be formatted as hex",
    "o": "octal clause can only be used on integers",
}
_CLAUSE_ERROR = "could not parse formatting clause"
_PRECISION_ERROR = _CLAUSE_ERROR + ": error while parsing precision"
_DURING = "error during formatting"
_INVALID_UTF8 = "invalid UTF-8 in bytes, cannot convert to string"
_GO_INT_MAX = (1 << 63) - 1
_DEFAULT_PRECISION = 6


@dataclass(frozen=True, slots=True)
class FormatProblem:
    """Why a format call fails: cel-go's message, and where (opaque to the parser: the
    validator passes node ids; None means the call itself)."""

    message: str
    where: object = None


def clause_error(clause: str, type_name: str, where: object = None) -> FormatProblem:
    """The error of clause `clause` given an argument of type `type_name`."""
    return FormatProblem(f"{_CLAUSE_ERRORS[clause]}, was given {type_name}", where)


Interpolate = Callable[[int, str, int | None], "str | FormatProblem"]


def parse_format(text: str, arg_count: int, interpolate: Interpolate, *,
                 runtime: bool) -> tuple[str, int] | FormatProblem:
    """cel-go `parseFormatString`: the output and the number of arguments consumed, or the
    first failure. `interpolate(index, clause, precision)` renders (or checks) one argument.

    At run time the argument is fetched before the end of the string is checked (so a missing
    argument wins); the validator's argument list never fails, so it reports the end first.
    """
    data = text.encode("utf-8")
    out: list[str] = []
    i, arg_index, n = 0, 0, len(data)
    literal_start = 0
    while i < n:
        if data[i] != 0x25:  # '%'
            i += 1
            continue
        out.append(data[literal_start:i].decode("utf-8", "replace"))
        if i + 1 < n and data[i + 1] == 0x25:
            out.append("%")
            i += 2
            literal_start = i
            continue
        if runtime and arg_index >= arg_count:
            return FormatProblem(f"index {arg_index} out of range")
        if i + 1 >= n:
            return FormatProblem("unexpected end of string")
        if arg_index >= arg_count:
            return FormatProblem(f"index {arg_index} out of range")
        parsed = _clause(data, i + 1)
        if isinstance(parsed, FormatProblem):
            return parsed
        clause, precision, after = parsed
        rendered = interpolate(arg_index, clause, precision)
        if isinstance(rendered, FormatProblem):
            return FormatProblem(f"{_DURING}: {rendered.message}", rendered.where)
        out.append(rendered)
        i = literal_start = after
        arg_index += 1
    out.append(data[literal_start:].decode("utf-8", "replace"))
    return "".join(out), arg_index


def _clause(data: bytes, j: int) -> tuple[str, int | None, int] | FormatProblem:
    """(clause, precision, index after the clause) of the clause starting at `data[j]`."""
    precision: int | None = None
    n = len(data)
    if data[j] == 0x2E:  # '.'
        j += 1
        start = j
        while True:
            if j >= n:
                return FormatProblem(
                    f"{_PRECISION_ERROR}: could not find end of precision specifier")
            if not 0x30 <= data[j] <= 0x39:
                break
            j += 1
        digits = data[start:j].decode("ascii")
        if not digits:
            return FormatProblem(f'{_PRECISION_ERROR}: error while converting precision to '
                                 f'integer: strconv.Atoi: parsing "": invalid syntax')
        if int(digits) > _GO_INT_MAX:
            return FormatProblem(f'{_PRECISION_ERROR}: error while converting precision to '
                                 f'integer: strconv.Atoi: parsing "{digits}": value out of range')
        precision = int(digits)
    clause = chr(data[j])
    if clause != "s" and clause not in CLAUSE_KINDS:
        return FormatProblem(f'{_CLAUSE_ERROR}: unrecognized formatting clause "{clause}"')
    return clause, precision, j + 1


# ------------------------------------------------------------------------------------------------
# Rendering (cel-go `stringFormatter`)
# ------------------------------------------------------------------------------------------------


class _Unfaithful(Exception):
    """Internal: a value this module cannot render as cel-go would (see the docstring)."""


MAX_RENDERED_PRECISION = 1000
"""The largest clause precision this package renders (`%.1000f` prints ~1,000 characters).

Why a bound upstream lacks: cel-go's runtime cost tracker (`interpreter/runtimecost.go`,
`costCall`) has no case for `string_format`, so it charges the default 1 for the call, and
Kubernetes' `library/cost.go` adds nothing for it either: `'%.999999999f'.format([-0.0])`
costs 2 and builds a 1 GB string. No cost limit stops that, so the
evaluation here refuses such a clause instead (SA208 flags it at lint and admission time).
"""


def oversized_clauses(text: str) -> list[tuple[str, int]]:
    """(verb as written, e.g. `%.999999999f`, precision) of each clause of the format string
    `text` whose precision is over `MAX_RENDERED_PRECISION`. A linear scan of the text."""
    found: list[tuple[str, int]] = []
    data = text.encode("utf-8")
    i, n = 0, len(data)
    while i < n - 1:
        if data[i] != 0x25:
            i += 1
            continue
        if data[i + 1] == 0x25:
            i += 2
            continue
        parsed = _clause(data, i + 1)
        if isinstance(parsed, FormatProblem):
            return found
        _, precision, after = parsed
        if precision is not None and precision > MAX_RENDERED_PRECISION:
            found.append((data[i:after].decode("utf-8", "replace"), precision))
        i = after
    return found


def render(text: str, args: Sequence[object]) -> str | FormatProblem | None:
    """cel-go's `text.format(args)` on walk values; None where it cannot be faithful.

    A clause whose precision is over `MAX_RENDERED_PRECISION` fails (evaluation stays
    bounded in time and memory whatever upstream would spend)."""
    oversized = oversized_clauses(text)
    if oversized:
        verb, precision = oversized[0]
        return FormatProblem(f"{_DURING}: the precision of {verb} ({precision}) is over "
                             f"{MAX_RENDERED_PRECISION}, the most this evaluation renders")
    if any(_holds_time(a) for a in args):
        return None

    def interpolate(index: int, clause: str, precision: int | None) -> str | FormatProblem:
        return _RENDERERS[clause](args[index], precision, clause)

    try:
        outcome = parse_format(text, len(args), interpolate, runtime=True)
    except _Unfaithful:
        return None
    return outcome if isinstance(outcome, FormatProblem) else outcome[0]


def _holds_time(value: object) -> bool:
    if isinstance(value, Timestamp | Duration):
        return True
    if isinstance(value, list):
        return any(_holds_time(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_time(v) for v in value.values())
    return False


def _type_name(value: object) -> str:
    """cel-go's `TypeName()` of a walk value, else the Python type's name."""
    return walk_type_name(value) or type(value).__name__


def _go_g(value: float) -> str:
    """Go `fmt.Sprintf("%g", value)`: shortest digits, exponent form below 1e-4 or from 1e+06."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    shortest = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in shortest.digits)
    exponent = int(shortest.exponent)
    point = len(digits) + exponent  # digits before the decimal point
    if point - 1 < -4 or point - 1 >= _DEFAULT_PRECISION:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if point - 1 < 0 else '+'}{abs(point - 1):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _to_string(value: object) -> str | FormatProblem:
    """cel-go `FormatString`: what `%s` prints for one value."""
    if isinstance(value, list):
        return _format_list(value)
    if isinstance(value, dict):
        return _format_map(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, BoolKey):
        return "true" if value.value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return _go_g(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            # cel-go converts the bytes to a string first (`Bytes.ConvertToType`), which
            # refuses invalid UTF-8 with this text.
            return FormatProblem(_INVALID_UTF8)
    if isinstance(value, TypeValue):
        return value.name
    return clause_error("s", _type_name(value))


def _member(value: object) -> str | FormatProblem:
    """cel-go `clauseForType` + `quoteForCEL`: one element of a list or value of a map."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return go_quote(_go_g(value))
        return f"{value:.6f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(int(value))
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bytes):
        rendered = _to_string(value)
        return rendered if isinstance(rendered, FormatProblem) else "b" + go_quote_bytes(value)
    if value is None or isinstance(value, bool | TypeValue | list | dict):
        return _to_string(value)
    return FormatProblem(f"no formatting function for {_type_name(value)}")


def _format_list(values: list[object]) -> str | FormatProblem:
    parts: list[str] = []
    for value in values:
        rendered = _member(value)
        if isinstance(rendered, FormatProblem):
            return rendered
        parts.append(rendered)
    return "[" + ", ".join(parts) + "]"


def _format_map(values: dict[object, object]) -> str | FormatProblem:
    pairs: list[tuple[str, str]] = []
    for key, value in values.items():
        if isinstance(key, str):
            key_text = go_quote(key)
        elif isinstance(key, BoolKey | bool):
            key_text = str(_to_string(key))
        elif isinstance(key, int):
            key_text = str(int(key))
        else:
            return FormatProblem(f"no formatting function for map key of type {_type_name(key)}")
        rendered = _member(value)
        if isinstance(rendered, FormatProblem):
            return rendered
        pairs.append((key_text, rendered))
    pairs.sort(key=lambda pair: pair[0].encode("utf-8"))
    return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"


def _string_clause(value: object, precision: int | None, clause: str) -> str | FormatProblem:
    return _to_string(value)


def _decimal(value: object, precision: int | None, clause: str) -> str | FormatProblem:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(int(value))
    return clause_error(clause, _type_name(value))


_FLOAT_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _double_argument(value: object, clause: str) -> float | FormatProblem:
    if isinstance(value, str) and value in _FLOAT_WORDS:
        return _FLOAT_WORDS[value]
    if isinstance(value, float):
        return value
    return clause_error(clause, _type_name(value))


def _special(number: float) -> str | None:
    """The en-US printer's NaN and infinities."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "∞" if number > 0 else "-∞"
    return None


def _fixed(value: object, precision: int | None, clause: str) -> str | FormatProblem:
    number = _double_argument(value, clause)
    if isinstance(number, FormatProblem):
        return number
    special = _special(number)
    if special is not None:
        return special
    digits = _DEFAULT_PRECISION if precision is None else precision
    # cel-go's locale printer writes a negative zero without its sign (as `%e` does)
    return f"{number + 0.0:,.{digits}f}"


_SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _scientific(value: object, precision: int | None, clause: str) -> str | FormatProblem:
    number = _double_argument(value, clause)
    if isinstance(number, FormatProblem):
        return number
    width = _DEFAULT_PRECISION if precision is None else precision
    special = _special(number)
    if special is None:
        number += 0.0  # no sign on a negative zero (see `_fixed`)
        mantissa, _, exponent_text = f"{number:.{_DEFAULT_PRECISION}e}".partition("e")
        exponent = int(exponent_text)
        sign = "-" if exponent < 0 else ""
        superscript = f"{sign}{abs(exponent):02d}".translate(_SUPERSCRIPTS)
        # cel-go ≥ 0.24 (Kubernetes ≥ 1.33) writes no narrow no-break spaces around `×`
        special = f"{mantissa}×10{superscript}"
    return special.rjust(width)


def _binary(value: object, precision: int | None, clause: str) -> str | FormatProblem:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return format(int(value), "b")
    return clause_error(clause, _type_name(value))


def _hex(value: object, precision: int | None, clause: str) -> str | FormatProblem:
    spec = "X" if clause == "X" else "x"
    if isinstance(value, str):
        value = value.encode("utf-8")
    if isinstance(value, bytes):
        return value.hex().upper() if spec == "X" else value.hex()
    if isinstance(value, int) and not isinstance(value, bool):
        return format(int(value), spec)
    return clause_error(clause, _type_name(value))


def _octal(value: object, precision: int | None, clause: str) -> str | FormatProblem:
    if isinstance(value, int) and not isinstance(value, bool):
        return format(int(value), "o")
    return clause_error(clause, _type_name(value))


_RENDERERS: dict[str, Callable[[object, int | None, str], str | FormatProblem]] = {
    "s": _string_clause, "d": _decimal, "f": _fixed, "e": _scientific, "b": _binary,
    "x": _hex, "X": _hex, "o": _octal,
}
