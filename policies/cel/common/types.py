"""CEL type model decoded from `cel.expr.Type` (checked.proto).

Why a model of our own: the checked AST carries one type per node, and both the cost estimator
(which needs cel-go's notion of a type *kind*) and user-facing messages (which must spell types
as cel-go does: `list(string)`, `map(string, dyn)`, `optional_type(int)`) need it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ...core.identity_enum import IdentityEnum


class TypeKind(IdentityEnum):
    """Which `oneof type_kind` branch of `cel.expr.Type` was set."""

    DYN = "dyn"
    NULL = "null"
    PRIMITIVE = "primitive"
    WRAPPER = "wrapper"
    WELL_KNOWN = "well_known"
    LIST = "list"
    MAP = "map"
    FUNCTION = "function"
    MESSAGE = "message"
    TYPE_PARAM = "type_param"
    TYPE = "type"
    ERROR = "error"
    ABSTRACT = "abstract"


class Primitive(IdentityEnum):
    """`cel.expr.Type.PrimitiveType`; values are the proto enum numbers."""

    UNSPECIFIED = 0
    BOOL = 1
    INT64 = 2
    UINT64 = 3
    DOUBLE = 4
    STRING = 5
    BYTES = 6


class WellKnown(IdentityEnum):
    """`cel.expr.Type.WellKnownType`; values are the proto enum numbers."""

    UNSPECIFIED = 0
    ANY = 1
    TIMESTAMP = 2
    DURATION = 3


_PRIMITIVE_NAMES = {
    Primitive.UNSPECIFIED: "primitive_type_unspecified",
    Primitive.BOOL: "bool",
    Primitive.INT64: "int",
    Primitive.UINT64: "uint",
    Primitive.DOUBLE: "double",
    Primitive.STRING: "string",
    Primitive.BYTES: "bytes",
}

_WELL_KNOWN_NAMES = {
    WellKnown.UNSPECIFIED: "well_known_type_unspecified",
    WellKnown.ANY: "any",
    WellKnown.TIMESTAMP: "timestamp",
    WellKnown.DURATION: "duration",
}

OPTIONAL_TYPE_NAME = "optional_type"


@dataclass(frozen=True, slots=True)
class CelType:
    """One CEL type.

    Only the fields relevant to `kind` are meaningful:

    * PRIMITIVE / WRAPPER: `primitive`;
    * WELL_KNOWN: `well_known`;
    * MESSAGE: `name` (fully qualified message name);
    * TYPE_PARAM: `name` (e.g. `_var0`, `A`);
    * ABSTRACT: `name` and `params` (e.g. `optional_type` with one parameter);
    * LIST: `params == (elem,)`; MAP: `params == (key, value)`;
    * TYPE: `params == ()` for the bare `type`, else `(target,)`;
    * FUNCTION: `params == (result, *args)`.
    """

    kind: TypeKind
    primitive: Primitive | None = None
    well_known: WellKnown | None = None
    name: str = ""
    params: tuple[CelType, ...] = ()

    def __str__(self) -> str:
        return format_type(self)

    # --- convenient predicates (cel-go kinds) -------------------------------------------------

    @property
    def is_dyn(self) -> bool:
        """True for `dyn` (and for unresolved type parameters, which cel-go finalizes to dyn)."""
        return self.kind in (TypeKind.DYN, TypeKind.TYPE_PARAM)

    @property
    def is_optional(self) -> bool:
        """True for `optional_type(T)`."""
        return self.kind is TypeKind.ABSTRACT and self.name == OPTIONAL_TYPE_NAME

    @property
    def is_string(self) -> bool:
        """True for `string` (not its wrapper)."""
        return self.kind is TypeKind.PRIMITIVE and self.primitive is Primitive.STRING

    @property
    def is_bytes(self) -> bool:
        """True for `bytes` (not its wrapper)."""
        return self.kind is TypeKind.PRIMITIVE and self.primitive is Primitive.BYTES

    @property
    def elem(self) -> CelType:
        """Element type of a list (dyn for anything else)."""
        return self.params[0] if self.kind is TypeKind.LIST and self.params else DYN

    @property
    def key(self) -> CelType:
        """Key type of a map (dyn for anything else)."""
        return self.params[0] if self.kind is TypeKind.MAP and self.params else DYN

    @property
    def value(self) -> CelType:
        """Value type of a map (dyn for anything else)."""
        return self.params[1] if self.kind is TypeKind.MAP and len(self.params) > 1 else DYN


def primitive(p: Primitive) -> CelType:
    """Build a primitive type."""
    return CelType(TypeKind.PRIMITIVE, primitive=p)


def list_of(elem: CelType) -> CelType:
    """Build `list(elem)`."""
    return CelType(TypeKind.LIST, params=(elem,))


def map_of(key: CelType, value: CelType) -> CelType:
    """Build `map(key, value)`."""
    return CelType(TypeKind.MAP, params=(key, value))


def optional_of(t: CelType) -> CelType:
    """Build `optional_type(t)`."""
    return CelType(TypeKind.ABSTRACT, name=OPTIONAL_TYPE_NAME, params=(t,))


DYN = CelType(TypeKind.DYN)
NULL = CelType(TypeKind.NULL)
ERROR = CelType(TypeKind.ERROR)
BOOL = primitive(Primitive.BOOL)
INT = primitive(Primitive.INT64)
UINT = primitive(Primitive.UINT64)
DOUBLE = primitive(Primitive.DOUBLE)
STRING = primitive(Primitive.STRING)
BYTES = primitive(Primitive.BYTES)
TIMESTAMP = CelType(TypeKind.WELL_KNOWN, well_known=WellKnown.TIMESTAMP)
DURATION = CelType(TypeKind.WELL_KNOWN, well_known=WellKnown.DURATION)
ANY = CelType(TypeKind.WELL_KNOWN, well_known=WellKnown.ANY)


@dataclass(frozen=True, slots=True)
class _Spelling:
    """How one cel-go generation names the types that changed spelling (null, error, WKTs)."""

    primitives: Mapping[Primitive, str]
    well_known: Mapping[WellKnown, str]
    null: str
    error: str


_CHECKER_SPELLING = _Spelling(_PRIMITIVE_NAMES, _WELL_KNOWN_NAMES, "null", "!error!")
_GO_SPELLING = _Spelling(
    {**_PRIMITIVE_NAMES, Primitive.UNSPECIFIED: "dyn"},
    {WellKnown.TIMESTAMP: "google.protobuf.Timestamp", WellKnown.DURATION: "google.protobuf.Duration",
     WellKnown.ANY: "google.protobuf.Any", WellKnown.UNSPECIFIED: "dyn"},
    "null_type",
    "error",
)


def _format(t: CelType, sp: _Spelling) -> str:
    k = t.kind
    if k is TypeKind.DYN:
        return "dyn"
    if k is TypeKind.NULL:
        return sp.null
    if k is TypeKind.ERROR:
        return sp.error
    if k is TypeKind.PRIMITIVE:
        return sp.primitives[t.primitive or Primitive.UNSPECIFIED]
    if k is TypeKind.WRAPPER:
        return f"wrapper({sp.primitives[t.primitive or Primitive.UNSPECIFIED]})"
    if k is TypeKind.WELL_KNOWN:
        return sp.well_known[t.well_known or WellKnown.UNSPECIFIED]
    if k is TypeKind.LIST:
        return f"list({_format(t.elem, sp)})"
    if k is TypeKind.MAP:
        return f"map({_format(t.key, sp)}, {_format(t.value, sp)})"
    if k in (TypeKind.MESSAGE, TypeKind.TYPE_PARAM):
        return t.name
    if k is TypeKind.TYPE:
        return f"type({_format(t.params[0], sp)})" if t.params else "type"
    if k is TypeKind.FUNCTION:
        result, *args = t.params or (DYN,)
        return "(" + ", ".join(_format(a, sp) for a in args) + ") -> " + _format(result, sp)
    # ABSTRACT
    if not t.params:
        return t.name
    return f"{t.name}(" + ", ".join(_format(p, sp) for p in t.params) + ")"


def format_type(t: CelType) -> str:
    """Render a type the way cel-go's checker messages do (`FormatCelType`).

    Examples: `int`, `list(string)`, `map(string, dyn)`, `optional_type(int)`, `wrapper(int)`,
    `type(string)`, `null`, `!error!`.
    """
    return _format(t, _CHECKER_SPELLING)


def format_go_type(t: CelType) -> str:
    """A type as cel-go's `FormatCELType` prints it (`list(int)`, `null_type`, ...): the names
    cel-go ≥ 0.18 uses for well-known types and null, which Kubernetes' messages show."""
    return _format(t, _GO_SPELLING)
