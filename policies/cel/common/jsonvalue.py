"""CEL values in Python: decoding opaque parameters as Kubernetes does, and the value model.

Why one module: the values CEL sees at run time start here. `decode_k8s_json` produces them from
the claim's parameters, and the runtime cost interpreter (`runtime_cost`) computes with them. The
plain Python types cover what JSON can express (`None`, `bool`, `int`, `float`, `str`, `list`,
`dict` with string keys); the small wrappers below (`UInt`, `Timestamp`, `OptionalValue`, ...)
carry the CEL types Python cannot tell apart, so no type information is lost between calls.

Decoding. The scheduler decodes `opaque.parameters` with `k8s.io/apimachinery/pkg/util/json.Unmarshal`
(sigs.k8s.io/json, "case-sensitive, integer-preserving") before binding them to `object`. CEL
then sees an `int` or a `double` depending on the *spelling* of each number, and an extractor such
as `string(object.vlan)` behaves differently for `7` and `7.0`. A dry run must reproduce that:

* a number whose JSON text has no `.` and parses as an int64 is an `int`; anything else (`1.5`,
  `1e3`, `9223372036854775808`) is a `double`; a number outside the float64 range is an error;
* keys are case-sensitive; a duplicated key keeps its last value (Go's `encoding/json` map
  semantics; the scheduler does not use the strict decoder that would reject it);
* `NaN`/`Infinity` literals are not JSON; an invalid `\\u` surrogate becomes U+FFFD;
* an empty document decodes to an empty object (the PR treats empty raw parameters so).

YAML test fixtures reach Kubernetes through `kubectl`, which converts YAML to JSON with
`sigs.k8s.io/yaml` before the API server stores the raw JSON. That conversion prints floats with
Go's shortest formatting, so `1.0` in YAML arrives as `1` (an `int`!), `1.5` stays a double, and
non-string keys become strings. `decode_k8s_json` applies the same normalisation to already-decoded
Python objects, so fixtures written in YAML see the types the scheduler would see.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, final

__all__ = [
    "NONE",
    "BoolKey",
    "Duration",
    "ErrorValue",
    "K8sJsonError",
    "LiteralKey",
    "Opaque",
    "OptionalValue",
    "Timestamp",
    "TypeValue",
    "UInt",
    "actual_size",
    "decode_k8s_json",
    "holds_optional",
    "loads_strict",
    "try_decode_k8s_json",
    "walk_type_name",
]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
# Go's encoding/json prints a float64 in 'f' notation (no exponent, no '.' when integral) when
# 1e-6 <= |f| < 1e21, and with an exponent otherwise.
_GO_FLOAT_PLAIN_LIMIT = 1e21
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class K8sJsonError(ValueError):
    """The parameters are not JSON Kubernetes could decode (message in Go's wording where known)."""


def decode_k8s_json(text_or_obj: str | bytes | object) -> object:
    """Decode JSON text, or normalise a YAML/JSON-decoded Python value, as Kubernetes would.

    Raises `K8sJsonError` for input the scheduler could not decode; use `try_decode_k8s_json`
    for an error value instead.
    """
    if isinstance(text_or_obj, bytes | bytearray):
        return _decode_text(bytes(text_or_obj).decode("utf-8", errors="replace"))
    if isinstance(text_or_obj, str):
        return _decode_text(text_or_obj)
    return _normalise(text_or_obj)


def try_decode_k8s_json(text_or_obj: str | bytes | object) -> tuple[object, str | None]:
    """`decode_k8s_json` with the error as a value: `(value, None)` or `(None, message)`."""
    try:
        return decode_k8s_json(text_or_obj), None
    except K8sJsonError as exc:
        return None, str(exc)


# ------------------------------------------------------------------------------------------------
# JSON text
# ------------------------------------------------------------------------------------------------


def _parse_int(text: str) -> int | float:
    # json hands us integer-syntax literals (no '.', 'e' or 'E'); Go's ParseInt then decides.
    value = int(text)
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    return _parse_float(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        # strconv.ParseFloat reports ErrRange; json.Unmarshal turns that into a type error.
        raise K8sJsonError(f"json: cannot unmarshal number {text} into Go value of type float64")
    return value


def _reject_constant(text: str) -> object:
    raise K8sJsonError(f"invalid character '{text[0]}' looking for beginning of value")


def loads_strict(data: str | bytes) -> object:
    """`json.loads` refusing what Go's decoder refuses: `NaN`/`Infinity` (not JSON) and
    numbers out of float64's range (`1e400`); K8sJsonError (a ValueError) in Go's wording.
    Integers are left as Python reads them (the caller decides their range)."""
    return json.loads(data, parse_float=_parse_float, parse_constant=_reject_constant)


def _decode_text(text: str) -> object:
    if not text.strip():
        return {}
    try:
        value = json.loads(text, parse_int=_parse_int, parse_float=_parse_float,
                           parse_constant=_reject_constant)
    except K8sJsonError:
        raise
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise K8sJsonError(str(exc)) from exc
    return _fix_strings(value)


def _fix_strings(value: object) -> object:
    """Replace lone UTF-16 surrogates (from `\\ud800` escapes) by U+FFFD, as Go's decoder does."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, list):
        return [_fix_strings(v) for v in value]
    if isinstance(value, dict):
        return {_fix_key(k): _fix_strings(v) for k, v in value.items()}
    return value


def _fix_key(key: str) -> str:
    return _LONE_SURROGATE.sub("\ufffd", key) if _LONE_SURROGATE.search(key) else key


# ------------------------------------------------------------------------------------------------
# Already-decoded Python values (YAML fixtures)
# ------------------------------------------------------------------------------------------------


def _normalise(value: object) -> object:
    if value is None or isinstance(value, bool | str):
        return _fix_strings(value)
    if isinstance(value, int):
        return value if _INT64_MIN <= value <= _INT64_MAX else float(value)
    if isinstance(value, float):
        return _normalise_float(value)
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for k, v in value.items():
            out[_key_text(k)] = _normalise(v)
        return out
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    if isinstance(value, datetime.datetime | datetime.date):
        # sigs.k8s.io/yaml hands unquoted timestamps to encoding/json as strings.
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        raise K8sJsonError("json: unsupported value: binary data")
    raise K8sJsonError(f"json: unsupported type: {type(value).__name__}")


def _normalise_float(value: float) -> int | float:
    if math.isnan(value) or math.isinf(value):
        raise K8sJsonError(f"json: unsupported value: {_go_float_name(value)}")
    if value.is_integer() and abs(value) < _GO_FLOAT_PLAIN_LIMIT:
        as_int = int(value)
        if _INT64_MIN <= as_int <= _INT64_MAX:
            return as_int
    return value


def _go_float_name(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


def _key_text(key: Any) -> str:
    """sigs.k8s.io/yaml turns non-string mapping keys into their JSON-ish text."""
    if isinstance(key, str):
        return _fix_key(key)
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        if key.is_integer() and abs(key) < _GO_FLOAT_PLAIN_LIMIT:
            return str(int(key))
        return repr(key)
    if isinstance(key, datetime.datetime | datetime.date):
        return key.isoformat()
    raise K8sJsonError(f"json: unsupported map key type: {type(key).__name__}")


# ------------------------------------------------------------------------------------------------
# Value model
# ------------------------------------------------------------------------------------------------


@final
class UInt(int):
    """A CEL `uint` (Python's int cannot tell `1u` from `1`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


@dataclass(frozen=True, slots=True)
class BoolKey:
    """A `bool` map key: Python would merge `true` with the key `1`, CEL does not."""

    value: bool


class LiteralKey:
    """A map-literal key of a kind no JSON object has: cel-go keeps any value as a key of its
    Go map, a double, null, type, timestamp or duration by value (`1.0` apart from `1`), a
    list, map or optional by reference: two equal lists are two keys, and so is one list of
    `object` read twice (each read wraps the JSON value anew), so every such key is its own."""

    __slots__ = ("by_ref", "value")

    def __init__(self, value: object, *, by_ref: bool) -> None:
        self.value = value
        self.by_ref = by_ref

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LiteralKey):
            return NotImplemented
        if self.by_ref or other.by_ref:
            return self is other
        return type(self.value) is type(other.value) and bool(self.value == other.value)

    def __hash__(self) -> int:
        return id(self) if self.by_ref else hash((type(self.value), self.value))

    def __repr__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class Timestamp:
    """A CEL timestamp, kept as the RFC 3339 text cel-cpp prints for it."""

    text: str


@dataclass(frozen=True, slots=True)
class Duration:
    """A CEL duration, kept as the text cel-cpp prints for it (e.g. `1.5s`)."""

    text: str


@dataclass(frozen=True, slots=True)
class TypeValue:
    """A CEL type value, named as cel-go names types (`int`, `list`, `google.protobuf.Timestamp`)."""

    name: str


@dataclass(frozen=True, slots=True)
class OptionalValue:
    """A CEL `optional_type` value; `NONE` is the empty one."""

    value: object = None
    has_value: bool = False


NONE = OptionalValue()


@dataclass(frozen=True, slots=True)
class ErrorValue:
    """A CEL error value (errors are values in CEL until they reach the result)."""

    message: str


@dataclass(frozen=True, slots=True)
class Opaque:
    """A value of an extension type we can only carry (e.g. a Kubernetes `Quantity`)."""

    type_name: str
    token: object = None


_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (UInt, "uint"), (int, "int"), (float, "double"), (str, "string"), (bytes, "bytes"),
    (list, "list"), (dict, "map"), (Timestamp, "google.protobuf.Timestamp"),
    (Duration, "google.protobuf.Duration"), (TypeValue, "type"), (OptionalValue, "optional_type"))


def walk_type_name(value: object) -> str | None:
    """cel-go's `TypeName()` of a value of this model (what error texts print), or None for one
    it cannot name (an engine value never read, a map key wrapper)."""
    if value is None:
        return "null_type"
    if isinstance(value, bool | BoolKey):
        return "bool"
    for cls, name in _TYPE_NAMES:
        if isinstance(value, cls):
            return name
    if isinstance(value, Opaque):
        return value.type_name
    return None


def timestamp_text(moment: datetime.datetime) -> str:
    """cel-go's `string(timestamp)`: RFC 3339 in UTC, fractional seconds only when set."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.UTC)
    text = f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}"
    return text + "Z"


def duration_text(delta: datetime.timedelta) -> str:
    """cel-go's `string(duration)`: seconds with a fraction when there is one (`1.5s`)."""
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    sign = "-" if micros < 0 else ""
    seconds, fraction = divmod(abs(micros), 1_000_000)
    return f"{sign}{seconds}.{fraction:06d}s" if fraction else f"{sign}{seconds}s"


def holds_optional(value: object) -> bool:
    """Whether a value is, or holds in a list or map value, an optional."""
    if isinstance(value, OptionalValue):
        return True
    if isinstance(value, list):
        return any(holds_optional(v) for v in value)
    if isinstance(value, dict):
        return any(holds_optional(v) for v in value.values())
    return False


def actual_size(value: object) -> int:
    """cel-go's `actualSize`: the size of strings (code points), bytes, lists and maps; the size
    of an optional's value; 1 for everything else."""
    if isinstance(value, str | bytes | list | dict):
        return len(value)
    if isinstance(value, OptionalValue) and value.has_value:
        return actual_size(value.value)
    return 1
