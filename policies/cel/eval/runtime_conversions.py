"""cel-go's verdict on type conversions of constants, which its planner folds (`OptOptimize`).

Why: cel-go converts `int("x")`, `uint(-1)`, `duration("1h")` and the like while it plans the
program, also in a branch that never runs, and a failing conversion makes `env.Program()` fail
with cel-go's message. cel-cpp converts only when it evaluates, and parses by its own rules. So
the compile (`compile`, which reports such a program as cel-go would) and the runtime cost
planner (`runtime_cost`, which folds the conversions that succeed) both ask here which calls
fold (`CONVERSION_FUNCTIONS`, `folds_conversion`) and whether cel-go's conversion succeeds
(`conversion_verdict`, with Go's `strconv`, `time.ParseDuration` and RFC 3339 rules). No value is
converted here: the bridge does that.
"""

from __future__ import annotations

import math
import re

from ..check.validators import parse_go_duration, parse_go_rfc3339
from ..common.ast import Node, NodeKind
from ..common.jsonvalue import UInt

__all__ = ["CONVERSION_FUNCTIONS", "GO_UNCONVERTED", "conversion_verdict", "folds_conversion"]

# cel-go `overloads.IsTypeConversionFunction`: folded when their single argument is constant.
CONVERSION_FUNCTIONS = frozenset({"bool", "bytes", "double", "duration", "dyn", "int", "string",
                                  "timestamp", "type", "uint"})
"""Type conversions cel-go's planner folds when their argument is constant."""


def folds_conversion(node: Node) -> bool:
    return (node.kind is NodeKind.CALL and node.function in CONVERSION_FUNCTIONS
            and node.target is None and len(node.args) == 1 and _constant(node.args[0]))


def _constant(node: Node) -> bool:
    """Whether the planner can fold `node` to a constant (literals, literal lists and maps,
    conversions of those)."""
    kind = node.kind
    if kind is NodeKind.CONST:
        return True
    if kind is NodeKind.LIST:
        return all(_constant(e) for e in node.elements)
    if kind is NodeKind.STRUCT:
        return not node.message_name and all(
            e.key is not None and _constant(e.key) and _constant(e.value) for e in node.entries)
    return kind is NodeKind.CALL and node.target is None and node.function in CONVERSION_FUNCTIONS \
        and len(node.args) == 1 and _constant(node.args[0])


_CONVERSION_TARGETS = {
    "int": "int", "uint": "uint", "double": "double", "bool": "bool",
    "duration": "google.protobuf.Duration", "timestamp": "google.protobuf.Timestamp",
}
_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_UINT = re.compile(r"[0-9]+")
_GO_BOOLS = frozenset({"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false",
                       "False"})
_GO_DECIMAL_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_GO_HEX_FLOAT = re.compile(
    r"([+-]?)0[xX]((?:_?[0-9a-fA-F])+\.?(?:[0-9a-fA-F](?:_?[0-9a-fA-F])*)?|"
    r"\.[0-9a-fA-F](?:_?[0-9a-fA-F])*)[pP]([+-]?[0-9]+)")
_GO_SPECIAL_FLOAT = re.compile(r"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1
_TIME_MIN, _TIME_MAX = -62135596800, 253402300799
_OVERFLOW = {"int": "integer overflow", "uint": "unsigned integer overflow"}


def _go_parse_float_ok(text: str) -> bool:
    """Go `strconv.ParseFloat(text, 64)` succeeds (well formed and in range)."""
    if _GO_SPECIAL_FLOAT.fullmatch(text):
        return True
    if _GO_DECIMAL_FLOAT.fullmatch(text):
        return math.isfinite(float(text))
    m = _GO_HEX_FLOAT.fullmatch(text)
    if m is None:
        return False
    mantissa = m.group(2).replace("_", "")
    try:
        return math.isfinite(float.fromhex(f"{m.group(1)}0x{mantissa}p{m.group(3)}"))
    except OverflowError:
        return False


def _string_converts(function: str, text: str) -> bool:
    if function == "int":
        return bool(_GO_INT.fullmatch(text)) and _INT64_MIN <= int(text) <= _INT64_MAX
    if function == "uint":
        return bool(_GO_UINT.fullmatch(text)) and int(text) <= _UINT64_MAX
    if function == "double":
        return _go_parse_float_ok(text)
    if function == "bool":
        return text in _GO_BOOLS
    if function == "duration":
        return not isinstance(parse_go_duration(text), str)
    return parse_go_rfc3339(text) is not None  # timestamp, with cel-go's year range


def _double_converts(function: str, value: float) -> bool:
    """cel-go `doubleToInt64Checked` / `doubleToUint64Checked` (bounds as Go compares them)."""
    if not math.isfinite(value):
        return False
    if function == "int":
        return float(_INT64_MIN) < value < float(_INT64_MAX)
    return 0.0 <= value < float(1 << 64)


GO_UNCONVERTED: dict[str, str] = {"int": "bool"}
"""Conversions cel-cpp has an overload for and cel-go has not, by function: the argument kind
(cel-go has no `int(bool)`; a bool read from the claim's JSON is `dyn`, so only the value
tells, and a constant one fails when cel-go plans the program)."""


def conversion_verdict(function: str, value: object) -> str | bool | None:
    """cel-go's verdict on the type conversion `function(value)` of a constant.

    The error message cel-go gives (`common/types`: a string that does not parse, `type
    conversion error from 'string' to 'int'`; a number out of the target's range, `integer
    overflow` / `unsigned integer overflow` / `timestamp overflow`; bytes that are not UTF-8,
    `invalid UTF-8 in bytes, cannot convert to string`; a kind cel-go has no overload for,
    `no such overload: int(bool)`), None when the conversion succeeds in
    cel-go, or False when this function does not know (then cel-cpp's verdict stands). Strings
    parse with Go's rules (`strconv`, `time.ParseDuration`, RFC 3339), not cel-cpp's.
    """
    if isinstance(value, bool):
        if GO_UNCONVERTED.get(function) == "bool":
            return f"no such overload: {function}(bool)"
        return False
    if isinstance(value, str):
        if function not in _CONVERSION_TARGETS:
            return False
        if _string_converts(function, value):
            return None
        return f"type conversion error from 'string' to '{_CONVERSION_TARGETS[function]}'"
    if isinstance(value, float):
        if function not in _OVERFLOW:
            return False
        return None if _double_converts(function, value) else _OVERFLOW[function]
    if isinstance(value, UInt):
        if function != "int":
            return False
        return None if value <= _INT64_MAX else _OVERFLOW["int"]
    if isinstance(value, int) and not isinstance(value, bool):
        if function == "uint":
            return None if value >= 0 else _OVERFLOW["uint"]
        if function == "timestamp":
            return None if _TIME_MIN <= value <= _TIME_MAX else "timestamp overflow"
        return False
    if isinstance(value, bytes) and function == "string":
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return "invalid UTF-8 in bytes, cannot convert to string"
        return None
    return False
