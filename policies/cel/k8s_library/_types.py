"""Shared plumbing for the Kubernetes CEL libraries.

Why this module exists: cel-expr-python 0.1.3 cannot carry a Python object
through CEL, cannot return a value of an opaque (abstract) type, and maps every
`cel.Type.AbstractType` to `dyn` in the type checker. Each library therefore
comes in two halves:

* **declarations** (`Decl`): the upstream signatures with their upstream type
  names (`net.IP`, `kubernetes.Quantity`, `optional_type(...)`) and overload
  ids, rendered as env-config function entries. Declared that way, cel-cpp's
  checker sees real opaque types, so `quantity("1") == 1` fails to compile and
  the checked AST carries the upstream overload ids.
* **runtime** (`cel.CelExtension`): Python implementations working on
  *carriers*, plain CEL values that stand for the opaque ones at run time.
  A checked AST from the declaration environment is deserialized into the
  runtime environment, whose dispatch is by function name and argument kind.

Carriers: `net.IP`, `net.CIDR`, `kubernetes.URL` and `kubernetes.Quantity`
are carried as their canonical string (what upstream's `ConvertToNative` to
string yields, so an extractor returning one still produces the upstream
key); `kubernetes.Semver`, `kubernetes.NamedFormat` and the optionals the
format library returns are carried as tagged lists, because they share member
names with string carriers (`compareTo`) or must not look like strings.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cel_expr_python import cel

NO_SUCH_OVERLOAD = "no such overload"

# Tags of list carriers. A private-use code point cannot come from a
# Kubernetes object in practice and survives the C++ string conversion (NUL
# does not: cel-expr-python truncates returned strings at the first NUL).
TAG_SEMVER = "\ue000kubernetes.Semver"
TAG_FORMAT = "\ue000kubernetes.NamedFormat"
TAG_OPTIONAL = "\ue000optional"
TAG_TYPE = "\ue000type"  # `[TAG_TYPE, "net.IP"]`: the type value of a library type

_V = TypeVar("_V")

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


class CelError(Exception):
    """An evaluation error worded as upstream words it.

    Raised from an implementation; cel-expr-python turns it into an error
    value whose text is ``UNKNOWN: <message>``.
    """


def no_such_overload() -> CelError:
    return CelError(NO_SUCH_OVERLOAD)


# --------------------------------------------------------------------------
# Go-compatible text helpers


def go_quote(s: str) -> str:
    """Go's strconv.Quote, which upstream error messages embed via %q."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch.isprintable():
            out.append(ch)
        elif ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_quote_bytes(data: bytes) -> str:
    """strconv.Quote of a Go string that may hold invalid UTF-8."""
    out = ['"']
    i = 0
    while i < len(data):
        size = _utf8_len(data, i)
        if size == 0:
            out.append(f"\\x{data[i]:02x}")
            i += 1
            continue
        out.append(go_quote(data[i : i + size].decode("utf-8"))[1:-1])
        i += size
    out.append('"')
    return "".join(out)


def _utf8_len(data: bytes, i: int) -> int:
    """Length of the valid UTF-8 sequence at data[i], or 0."""
    for size in (1, 2, 3, 4):
        try:
            data[i : i + size].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return size if i + size <= len(data) else 0
    return 0


def from_go_bytes(data: bytes) -> str:
    """Decode bytes a Go string would hold; invalid UTF-8 becomes U+FFFD."""
    return data.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------
# Checker declarations


@dataclass(frozen=True)
class TypeInfo:
    """One type as the env-config YAML spells it (cel-go's `TypeDesc`)."""

    name: str
    params: tuple[TypeInfo, ...] = ()
    is_type_param: bool = False

    def to_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type_name": self.name}
        if self.is_type_param:
            out["is_type_param"] = True
        if self.params:
            out["params"] = [p.to_config() for p in self.params]
        return out


def t(name: str, *params: TypeInfo) -> TypeInfo:
    return TypeInfo(name, tuple(params))


def type_param(name: str) -> TypeInfo:
    return TypeInfo(name, (), True)


BOOL = t("bool")
INT = t("int")
UINT = t("uint")
DOUBLE = t("double")
STRING = t("string")
BYTES = t("bytes")
DURATION = t("duration")
TIMESTAMP = t("timestamp")
DYN = t("dyn")


def list_of(elem: TypeInfo) -> TypeInfo:
    return t("list", elem)


def map_of(key: TypeInfo, value: TypeInfo) -> TypeInfo:
    return t("map", key, value)


def optional_of(elem: TypeInfo) -> TypeInfo:
    return t("optional_type", elem)


@dataclass(frozen=True)
class Decl:
    """One upstream overload: what the type checker must know about it."""

    function: str
    overload_id: str
    args: tuple[TypeInfo, ...]
    result: TypeInfo
    target: TypeInfo | None = None  # receiver of a member overload

    def overload_config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.overload_id}
        if self.target is not None:
            out["target"] = self.target.to_config()
        if self.args:
            out["args"] = [a.to_config() for a in self.args]
        out["return"] = self.result.to_config()
        return out


def function_configs(decls: Iterable[Decl]) -> list[dict[str, Any]]:
    """Group overloads by function name, in first-seen order, as env-config entries."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for d in decls:
        grouped.setdefault(d.function, []).append(d.overload_config())
    return [{"name": name, "overloads": ovs} for name, ovs in grouped.items()]


# --------------------------------------------------------------------------
# Runtime overloads


@dataclass(frozen=True)
class Runtime:
    """One runtime overload: dispatched by name, receiver style and argument kinds."""

    function: str
    overload_id: str
    params: tuple[cel.Type, ...]
    result: cel.Type
    impl: Callable[..., Any]
    member: bool = False


def extension(name: str, runtimes: Sequence[Runtime]) -> cel.CelExtension:
    """Build a CelExtension, grouping overloads by function name."""
    grouped: dict[str, list[cel.Overload]] = {}
    for r in runtimes:
        grouped.setdefault(r.function, []).append(
            cel.Overload(r.overload_id, r.result, list(r.params), is_member=r.member, impl=r.impl)
        )
    return cel.CelExtension(name, [cel.FunctionDecl(fn, ovs) for fn, ovs in grouped.items()])


@dataclass(frozen=True)
class LibrarySpec:
    """Both halves of one upstream library."""

    name: str
    declarations: tuple[Decl, ...]
    runtimes: tuple[Runtime, ...] = field(default=())

    def build(self) -> cel.CelExtension:
        return extension(self.name, self.runtimes)


# --------------------------------------------------------------------------
# Argument checks (a carrier of the wrong kind can only arrive through `dyn`)


def want_str(value: Any) -> str:
    if type(value) is not str:
        raise no_such_overload()
    return value


def want_int(value: Any) -> int:
    if type(value) is not int:
        raise no_such_overload()
    return value


def want_bool(value: Any) -> bool:
    if type(value) is not bool:
        raise no_such_overload()
    return value


# --------------------------------------------------------------------------
# Library types carried as their canonical text (net.IP, net.CIDR): `parse`
# turns a string into the value or raises the upstream conversion error.


def carrier_decoder(parse: Callable[[str], _V]) -> Callable[[object], _V]:
    """Decode a carrier: one that does not parse was not of the type, a dispatch mismatch."""

    def decode(value: object) -> _V:
        try:
            return parse(want_str(value))
        except CelError:
            raise no_such_overload() from None

    return decode


def string_conversion(parse: Callable[[str], object]) -> Callable[[object], str]:
    """The `T(string)` conversion: the parsed value's canonical text, or the parse error."""

    def convert(raw: object) -> str:
        return str(parse(want_str(raw)))

    return convert


def validity_check(parse: Callable[[str], object]) -> Callable[[object], bool]:
    """The `isT(string)` check: whether the string converts (errors are false, not raised)."""

    def check(raw: object) -> bool:
        try:
            parse(want_str(raw))
        except CelError:
            return False
        return True

    return check


def unwrap_tagged(value: Any, tag: str) -> Any:
    """The payload of a tagged list carrier, or a no-such-overload error."""
    if type(value) is not list or len(value) != 2 or value[0] != tag:
        raise no_such_overload()
    return value[1]


def optional_some(value: Any) -> list[Any]:
    return [TAG_OPTIONAL, value]


def optional_none() -> list[Any]:
    return [TAG_OPTIONAL]


# --------------------------------------------------------------------------
# Timestamps and durations
#
# cel-expr-python converts a returned datetime/timedelta only when the declared
# return type says so; a `dyn` result must look like the protobuf message.


class _Descriptor:
    __slots__ = ("full_name",)

    def __init__(self, full_name: str) -> None:
        self.full_name = full_name


class Timestamp:
    """Duck-typed google.protobuf.Timestamp accepted by cel-expr-python."""

    DESCRIPTOR = _Descriptor("google.protobuf.Timestamp")

    def __init__(self, seconds: int, nanos: int) -> None:
        self.seconds = seconds
        self.nanos = nanos


class Duration:
    """Duck-typed google.protobuf.Duration accepted by cel-expr-python."""

    DESCRIPTOR = _Descriptor("google.protobuf.Duration")

    def __init__(self, seconds: int, nanos: int) -> None:
        self.seconds = seconds
        self.nanos = nanos


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def to_cel(value: Any) -> Any:
    """Make a Python value returnable through a `dyn`-typed overload."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        delta = value - _EPOCH
        micros = (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
        seconds, micro = divmod(micros, 1_000_000)
        return Timestamp(seconds, micro * 1000)
    if isinstance(value, datetime.timedelta):
        micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
        sign = -1 if micros < 0 else 1
        seconds, micro = divmod(abs(micros), 1_000_000)
        return Duration(sign * seconds, sign * micro * 1000)
    return value


# --------------------------------------------------------------------------
# CEL value semantics on plain Python values


class CelKind:
    """The CEL kind of a plain value, as far as cel-expr-python lets us see it."""

    NULL = "null"
    BOOL = "bool"
    INT = "int"
    DOUBLE = "double"
    STRING = "string"
    BYTES = "bytes"
    TIMESTAMP = "timestamp"
    DURATION = "duration"
    LIST = "list"
    MAP = "map"
    OTHER = "other"


def kind_of(value: Any) -> str:
    if value is None:
        return CelKind.NULL
    if type(value) is bool:
        return CelKind.BOOL
    if type(value) is int:
        return CelKind.INT
    if type(value) is float:
        return CelKind.DOUBLE
    if type(value) is str:
        return CelKind.STRING
    if isinstance(value, bytes | bytearray):
        return CelKind.BYTES
    if isinstance(value, datetime.datetime):
        return CelKind.TIMESTAMP
    if isinstance(value, datetime.timedelta):
        return CelKind.DURATION
    if isinstance(value, list):
        return CelKind.LIST
    if isinstance(value, dict):
        return CelKind.MAP
    return CelKind.OTHER


def _numeric(k: str) -> bool:
    return k in (CelKind.INT, CelKind.DOUBLE)


def cel_equal(a: Any, b: Any) -> bool:
    """CEL heterogeneous equality on plain values (numbers compare by value)."""
    ka, kb = kind_of(a), kind_of(b)
    if _numeric(ka) and _numeric(kb):
        return bool(a == b)
    if ka != kb:
        return False
    if ka == CelKind.LIST:
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if ka == CelKind.MAP:
        if len(a) != len(b):
            return False
        for key, val in a.items():
            other = _map_lookup(b, key)
            if other is _MISSING or not cel_equal(val, other):
                return False
        return True
    if ka == CelKind.BYTES:
        return bytes(a) == bytes(b)
    return bool(a == b)


_MISSING = object()


def _map_lookup(m: dict[Any, Any], key: Any) -> Any:
    for k, v in m.items():
        if cel_equal(k, key):
            return v
    return _MISSING


def cel_compare(a: Any, b: Any) -> int | None:
    """cel-go's `Compare`: -1/0/1, or None where it yields an error value."""
    ka, kb = kind_of(a), kind_of(b)
    if _numeric(ka) and _numeric(kb):
        if (ka == CelKind.DOUBLE and math.isnan(a)) or (kb == CelKind.DOUBLE and math.isnan(b)):
            return None
        return (a > b) - (a < b)
    if ka != kb or ka not in _ORDERED:
        return None
    if ka == CelKind.BYTES:
        a, b = bytes(a), bytes(b)
    return int((a > b) - (a < b))


_ORDERED = (CelKind.BOOL, CelKind.STRING, CelKind.BYTES, CelKind.TIMESTAMP, CelKind.DURATION)


def is_comparable(value: Any) -> bool:
    """Whether cel-go's value implements `traits.Comparer`."""
    k = kind_of(value)
    return _numeric(k) or k in _ORDERED
