"""Upstream `==`, `!=` and `in` for Quantity and Semver values, which their carriers lack.

Why: upstream compares these values, not their texts: `Quantity.Equal` is `Cmp(...) == 0`
(`quantity("1Ki") == quantity("1024")`, `quantity("1000m") == quantity("1")`), and
`Semver.Equal` is `Version.EQ`, which ignores build metadata. Our carriers must keep what
the other functions observe (the text `1Ki`, the scale of `1000m` that makes it a
non-integer, the build of `1.0.0+b` that a string conversion shows), so two equal values
can have different carriers, and cel-cpp's `==` compares carriers. Nor can the runtime
environment take over the operators: an extension overload of `_==_` replaces the built-in
for every type, and `@in` cannot be overloaded at all.

So the *call* changes, not the operator: before a checked AST is planned in the runtime
environment, every `_==_`, `_!=_` or `@in` whose operands the checker typed as Quantity (or
Semver, or lists and map values of them) is renamed to a function of this module that
compares values, as upstream does. Type checking is untouched (it happened before, in the
checking environment, with upstream's declarations), and so are the checked AST's
references and types, which cost estimation and the rules read.

The new names are as long as the old ones, so the rename overwrites the name's bytes in the
serialized AST and no enclosing length changes: a byte patch, located by a minimal walk of
the protobuf wire format (`cel.expr.CheckedExpr`, field numbers from cel-spec).

Not covered (cel-cpp's own structural equality decides, unpatched): operands typed `dyn`
(`dyn(quantity("1Ki")) == quantity("1024")`), optionals of these types, and Quantity or
Semver values nested in a map *key* position or inside a value typed `dyn`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cel_expr_python import cel

from ..common.wire import field_spans
from . import comprehensions, quantity, semver, type_values
from ._types import TAG_SEMVER, CelError, Runtime, no_such_overload

__all__ = [
    "QUANTITY_RUNTIMES",
    "SEMVER_RUNTIMES",
    "RuntimeEnv",
    "equal_by_type",
    "rename_calls",
    "rewrite_equality",
    "rewrite_type_calls",
]

_QUANTITY = "q"
_SEMVER = "s"
_TYPE_NAMES = {b"kubernetes.Quantity": _QUANTITY, b"kubernetes.Semver": _SEMVER}

# (kind, operator) -> the runtime function standing in for it; same length, by construction.
RENAMES: dict[tuple[str, str], str] = {
    (_QUANTITY, "_==_"): "@qeq",
    (_QUANTITY, "_!=_"): "@qne",
    (_QUANTITY, "@in"): "@qi",
    (_SEMVER, "_==_"): "@seq",
    (_SEMVER, "_!=_"): "@sne",
    (_SEMVER, "@in"): "@si",
}
assert all(len(name) == len(op) for (_, op), name in RENAMES.items())

_CHECKED_EXPR_URL = b"type.googleapis.com/cel.expr.CheckedExpr"


# ------------------------------------------------------------------------------------------------
# Values


def _quantity_leaf(value: object) -> bool:
    return type(value) is str


def _semver_leaf(value: object) -> bool:
    return type(value) is list and len(value) == 2 and value[0] == TAG_SEMVER


def _quantity_equal(a: object, b: object) -> bool:
    return quantity.decode(a).cmp(quantity.decode(b)) == 0


def _semver_equal(a: object, b: object) -> bool:
    return semver.decode(a).compare(semver.decode(b)) == 0


@dataclass(frozen=True)
class _Equality:
    """Upstream equality of one type, through lists and map values (as cel-go's `Equal`)."""

    is_leaf: Callable[[object], bool]
    leaf_equal: Callable[[object, object], bool]

    def equal(self, a: object, b: object) -> bool:
        if self.is_leaf(a) and self.is_leaf(b):
            return self.leaf_equal(a, b)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(self.equal(x, y) for x, y in zip(a, b, strict=True))
        if isinstance(a, dict) and isinstance(b, dict):
            # Keys are plain CEL keys (the checker typed the values, not the keys).
            return a.keys() == b.keys() and all(self.equal(v, b[k]) for k, v in a.items())
        raise no_such_overload()

    def not_equal(self, a: object, b: object) -> bool:
        return not self.equal(a, b)

    def contains(self, element: object, values: object) -> bool:
        if not isinstance(values, list):
            raise no_such_overload()
        return any(self.equal(element, v) for v in values)

    def runtimes(self, kind: str) -> tuple[Runtime, ...]:
        dyn, boolean = cel.Type.DYN, cel.Type.BOOL
        return (
            Runtime(RENAMES[kind, "_==_"], f"k8s_{kind}_equals", (dyn, dyn), boolean, self.equal),
            Runtime(RENAMES[kind, "_!=_"], f"k8s_{kind}_not_equals", (dyn, dyn), boolean,
                    self.not_equal),
            Runtime(RENAMES[kind, "@in"], f"k8s_{kind}_in_list", (dyn, cel.Type.LIST), boolean,
                    self.contains),
        )


QUANTITY_RUNTIMES = _Equality(_quantity_leaf, _quantity_equal).runtimes(_QUANTITY)
"""Runtime functions the Quantity library adds for rewritten comparisons."""

SEMVER_RUNTIMES = _Equality(_semver_leaf, _semver_equal).runtimes(_SEMVER)
"""Runtime functions the Semver library adds for rewritten comparisons."""

_BY_TYPE = {
    "kubernetes.Quantity": _Equality(_quantity_leaf, _quantity_equal),
    "kubernetes.Semver": _Equality(_semver_leaf, _semver_equal),
}


def equal_by_type(type_name: str, a: object, b: object) -> bool | None:
    """Upstream `==` of two carriers of the CEL type `type_name` (also lists of them).

    None when `type_name` is not one whose carriers can differ for equal values; callers
    that evaluate outside a planned program (a cost walk) then compare carriers.
    """
    equality = _BY_TYPE.get(type_name)
    if equality is None:
        return None
    try:
        return equality.equal(a, b)
    except CelError:
        return False


# ------------------------------------------------------------------------------------------------
# The checked AST


def rewrite_equality(serialized: bytes) -> bytes:
    """`serialized` (an Any holding a CheckedExpr) with Quantity/Semver comparisons renamed.

    Returns the input itself when nothing needs renaming (always, unless the AST mentions
    one of the two types).
    """
    if b"kubernetes.Quantity" not in serialized and b"kubernetes.Semver" not in serialized:
        return serialized
    checked = _checked_expr_span(serialized)
    if checked is None:
        return serialized
    kinds: dict[int, str] = {}
    element_kinds: dict[int, str] = {}
    calls: list[_Call] = []
    for number, start, end, _ in field_spans(serialized, *checked):
        if number == 3:  # type_map entry
            _type_entry(serialized, start, end, kinds, element_kinds)
        elif number == 4:
            calls = _calls(serialized, start, end)
    patched: bytearray | None = None
    for call in calls:
        if len(call.args) != 2 or call.function not in ("_==_", "_!=_", "@in"):
            continue
        left = kinds.get(call.args[0])
        right = element_kinds if call.function == "@in" else kinds
        if left is None or right.get(call.args[1]) != left:
            continue
        if patched is None:
            patched = bytearray(serialized)
        name = RENAMES[left, call.function].encode()
        patched[call.name_offset : call.name_offset + len(name)] = name
    return serialized if patched is None else bytes(patched)


def rename_calls(serialized: bytes, renames: dict[str, str]) -> bytes:
    """`serialized` (an Any holding a CheckedExpr) with every call of a function in `renames`
    renamed, whatever its operand types (each new name as long as the old one)."""
    if not any(old.encode() in serialized for old in renames):
        return serialized
    checked = _checked_expr_span(serialized)
    if checked is None:
        return serialized
    root = _first(serialized, *checked, 4)
    if root is None:
        return serialized
    patched = bytearray(serialized)
    for call in _calls(serialized, *root):
        new = renames.get(call.function)
        if new is not None and len(new) == len(call.function):
            name = new.encode()
            patched[call.name_offset : call.name_offset + len(name)] = name
    return bytes(patched)


_LIBRARY_TYPE_NAMES = (b"net.IP", b"net.CIDR", b"kubernetes.")
"""Byte strings one of which a checked AST holds when any node is typed as a library type."""


def rewrite_type_calls(serialized: bytes) -> bytes:
    """`serialized` with each `type(x)`, `x` typed as a library type, renamed to that type's
    function (`type_values`)."""
    # Every serialized AST contains b"type" (in its type URL): test for the library type
    # names instead, so ordinary expressions skip the walk.
    if not any(name in serialized for name in _LIBRARY_TYPE_NAMES):
        return serialized
    checked = _checked_expr_span(serialized)
    if checked is None:
        return serialized
    abstract: dict[int, str] = {}
    calls: list[_Call] = []
    for number, start, end, _ in field_spans(serialized, *checked):
        if number == 3:  # type_map entry
            expr_id, name = _abstract_entry(serialized, start, end)
            if name in type_values.RENAMES:
                abstract[expr_id] = name
        elif number == 4:
            calls = _calls(serialized, start, end)
    if not abstract:
        return serialized
    patched = bytearray(serialized)
    for call in calls:
        if call.function == "type" and len(call.args) == 1 and call.args[0] in abstract:
            renamed = type_values.RENAMES[abstract[call.args[0]]].encode()
            patched[call.name_offset : call.name_offset + len(renamed)] = renamed
    return bytes(patched)


def _abstract_entry(buf: bytes, start: int, end: int) -> tuple[int, str]:
    """(expression id, abstract type name or "") of one type_map entry."""
    expr_id, name = 0, ""
    for number, s, e, value in field_spans(buf, start, end):
        if number == 1:
            expr_id = value
        elif number == 2:
            abstract = _first(buf, s, e, 14)
            if abstract is not None:
                found = _first(buf, *abstract, 1)
                if found is not None:
                    name = bytes(buf[found[0] : found[1]]).decode("utf-8", "replace")
    return expr_id, name


@dataclass(frozen=True)
class _Call:
    function: str
    name_offset: int  # offset of the function name's bytes in the serialized AST
    args: tuple[int, ...]  # expression ids of the arguments


def _first(buf: bytes, start: int, end: int, number: int) -> tuple[int, int] | None:
    for n, s, e, _ in field_spans(buf, start, end):
        if n == number:
            return s, e
    return None


def _checked_expr_span(serialized: bytes) -> tuple[int, int] | None:
    url = _first(serialized, 0, len(serialized), 1)
    if url is None or serialized[url[0] : url[1]] != _CHECKED_EXPR_URL:
        return None
    return _first(serialized, 0, len(serialized), 2)


def _type_entry(buf: bytes, start: int, end: int, kinds: dict[int, str],
                element_kinds: dict[int, str]) -> None:
    expr_id = 0
    for number, s, e, value in field_spans(buf, start, end):
        if number == 1:
            expr_id = value
        elif number == 2:
            kind = _kind(buf, s, e)
            if kind is not None:
                kinds[expr_id] = kind
            element = _first(buf, s, e, 6)  # list_type
            if element is not None:
                elem_type = _first(buf, *element, 1)
                elem_kind = None if elem_type is None else _kind(buf, *elem_type)
                if elem_kind is not None:
                    element_kinds[expr_id] = elem_kind


def _kind(buf: bytes, start: int, end: int) -> str | None:
    """The library type a `cel.expr.Type` is, or holds in lists and map values."""
    for number, s, e, _ in field_spans(buf, start, end):
        if number == 14:  # abstract_type {name = 1}
            name = _first(buf, s, e, 1)
            return None if name is None else _TYPE_NAMES.get(bytes(buf[name[0] : name[1]]))
        if number == 6:  # list_type {elem_type = 1}
            inner = _first(buf, s, e, 1)
            return None if inner is None else _kind(buf, *inner)
        if number == 7:  # map_type {key_type = 1, value_type = 2}
            inner = _first(buf, s, e, 2)
            return None if inner is None else _kind(buf, *inner)
    return None


# Child expressions by message: Expr's kinds (select 5, call 6, list 7, struct 8,
# comprehension 9) and, within them, the fields holding an Expr or a struct Entry.
_EXPR_FIELDS: dict[str, frozenset[int]] = {
    "select": frozenset({1}),
    "call": frozenset({1, 3}),
    "list": frozenset({1}),
    "entry": frozenset({3, 4}),
    "comprehension": frozenset({2, 4, 5, 6, 7}),  # 1, 3 and 8 are variable names
}
_EXPR_KINDS = {5: "select", 6: "call", 7: "list", 8: "struct", 9: "comprehension"}


def _calls(buf: bytes, start: int, end: int) -> list[_Call]:
    """Every call of the expression tree in buf[start:end]."""
    calls: list[_Call] = []
    stack = [(start, end)]
    while stack:
        s, e = stack.pop()
        for number, ks, ke, _ in field_spans(buf, s, e):
            kind = _EXPR_KINDS.get(number)
            if kind == "call":
                calls.append(_call(buf, ks, ke, stack))
            elif kind == "struct":
                for n, es, ee, _ in field_spans(buf, ks, ke):
                    if n == 2:
                        stack.extend(_children(buf, es, ee, _EXPR_FIELDS["entry"]))
            elif kind is not None:
                stack.extend(_children(buf, ks, ke, _EXPR_FIELDS[kind]))
    return calls


def _children(buf: bytes, start: int, end: int, numbers: frozenset[int]) -> Iterator[tuple[int, int]]:
    for number, s, e, _ in field_spans(buf, start, end):
        if number in numbers:
            yield s, e


def _call(buf: bytes, start: int, end: int, stack: list[tuple[int, int]]) -> _Call:
    function, name_offset, args = "", -1, []
    for number, s, e, _ in field_spans(buf, start, end):
        if number == 2:
            function, name_offset = buf[s:e].decode("utf-8"), s
        elif number in (1, 3):
            stack.append((s, e))
            if number == 3:
                args.append(_expr_id(buf, s, e))
    return _Call(function, name_offset, tuple(args))


def _expr_id(buf: bytes, start: int, end: int) -> int:
    for number, _, _, value in field_spans(buf, start, end):
        if number == 2:
            return value
    return 0


# ------------------------------------------------------------------------------------------------
# The runtime environment


class RuntimeEnv:
    """The runtime `cel.Env` of the libraries, planning checked ASTs with upstream equality.

    `deserialize` rewrites the checked AST (see the module docstring) before cel-cpp plans
    it, points `cel.@mapInsert` calls at their implementation (`comprehensions`) and
    `type()` of library values at their type values (`type_values`);
    `compile` is the plain environment's (text compiled here is checked loosely, on
    carriers, and is not rewritten).
    """

    __slots__ = ("env",)

    def __init__(self, env: cel.Env) -> None:
        self.env = env

    def deserialize(self, serialized: bytes) -> cel.Expression:
        """Plan a serialized checked AST (`Expression.serialize()` of the checking env)."""
        rewritten = rename_calls(rewrite_equality(bytes(serialized)), comprehensions.RENAMES)
        return self.env.deserialize(rewrite_type_calls(rewritten))

    def compile(self, expression: str, disable_check: bool = False) -> cel.Expression:
        """Compile text in the runtime environment itself."""
        return self.env.compile(expression, disable_check=disable_check)
