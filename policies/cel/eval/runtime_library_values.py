"""Kubernetes Semver and Quantity values where cel-go's standard functions meet them.

Why: our engine carries a `kubernetes.Semver` as a tagged list and a `kubernetes.Quantity` as
its canonical string (`k8s_library._types`). While the checker knows the type, that is
invisible; behind `dyn` (a DRA device attribute is `dyn`, an `orValue` fallback is `dyn`) the
standard functions of lists and strings take the carriers: `v.size()` would be 2,
`q.startsWith("8")` true, `v.exists(x, ...)` would iterate the tag. In cel-go these values are
objects (`apiserver/pkg/cel` `Semver`, `Quantity`) with no trait at all, and their `Equal`
accepts only their own type. So, as cel-go answers:

* a standard function given one as an argument no overload accepts fails with cel-go's text for
  that function (`no such overload: size`, `no such overload: string(kubernetes.Semver)`, ...);
* `v == x` for `x` of another type is `no such overload` (`Semver.Equal` returns
  `MaybeNoSuchOverloadErr`), while `x == v` is false (the left operand's `Equal` decides) and
  `v != x` is true (`!=` is "`Equal` did not answer true");
* list and map equality skip an element comparison that fails (`[v] == [1]` is true: cel-go's
  `baseList.Equal` stops only on `false`), and `in` a list ignores such failures;
* a comprehension over one fails (`got 'cel.Semver', expected iterable type`, the Go type);
* `x in [constants]` looks `x` up in a Go map (cel-go's `OptOptimize` set membership): a Semver,
  a struct holding slices, panics there (`hash of unhashable type cel.Semver`), a Quantity, a
  pointer, is never found;
* `type(v)` is the library type.

The cost walk computes these answers and marks the run unsafe, so the program (which would
answer for the carrier) is not consulted.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Literal

from ..common.ast import CheckedAst, Node, NodeKind
from ..common.jsonvalue import (
    Duration,
    ErrorValue,
    Opaque,
    OptionalValue,
    Timestamp,
    TypeValue,
    UInt,
    walk_type_name,
)
from ..common.types import CelType, TypeKind
from ..k8s_library import LIBRARIES
from ..k8s_library.equality import equal_by_type

__all__ = [
    "ENGINE_NO_OVERLOAD",
    "LIBRARY_VALUE_TYPES",
    "DefaultingMap",
    "guard_library_values",
    "in_cel_go_words",
    "is_library_value",
    "iteration_refusal",
    "may_hold_library_value",
    "nodes_reaching_library_values",
    "refusal",
    "set_membership",
    "walk_equal",
]

SEMVER = "kubernetes.Semver"
QUANTITY = "kubernetes.Quantity"
LIBRARY_VALUE_TYPES = frozenset({SEMVER, QUANTITY})
_GO_TYPES = {SEMVER: "cel.Semver", QUANTITY: "cel.Quantity"}
"""`%T` of the apiserver's Go types, as cel-go's messages print them."""

_NO_SUCH_OVERLOAD = "no such overload"

Native = Callable[[list[object]], object | None]
Guard = Callable[[list[object]], bool]


def is_library_value(value: object) -> bool:
    return isinstance(value, Opaque) and value.type_name in LIBRARY_VALUE_TYPES


def _holds(value: object) -> bool:
    """Whether `value` is, or holds in a list, map value or optional, a library value."""
    if isinstance(value, Opaque):
        return value.type_name in LIBRARY_VALUE_TYPES
    if isinstance(value, list):
        return any(_holds(v) for v in value)
    if isinstance(value, dict):
        return any(_holds(v) for v in value.values())
    if isinstance(value, OptionalValue):
        return value.has_value and _holds(value.value)
    return False


_NEVER_LIBRARY = frozenset({TypeKind.PRIMITIVE, TypeKind.NULL, TypeKind.WRAPPER, TypeKind.TYPE,
                            TypeKind.FUNCTION})


def may_hold_library_value(t: CelType) -> bool:
    """Whether a value of the checked type `t` can be, or hold, a Semver or Quantity: only
    calls with such an argument need the answers of this module (the others stay as fast as
    they were)."""
    if t.kind in _NEVER_LIBRARY:
        return False
    if t.kind in (TypeKind.LIST, TypeKind.MAP):
        return any(may_hold_library_value(p) for p in t.params) if t.params else True
    return True


def nodes_reaching_library_values(checked: CheckedAst) -> frozenset[int]:
    """Ids of the nodes whose value may be, or hold, a Semver or Quantity.

    A node's own type is not enough: the checker infers type parameters from the other side
    (`versions.reverse()[0] == "a"` types the element `string`), so a node counts when any
    node beneath it, or the range or initial value of a comprehension variable it reads, has a
    type that may hold one (`may_hold_library_value`). Variables are told apart by name only,
    which can only add nodes.
    """
    order: list[Node] = []
    stack = [checked.root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children())
    from_json = _read_from_claim_json(order)
    tainted_names: set[str] = set()
    reaching: set[int] = set()
    changed = True
    while changed:  # comprehension variables feed back into the nodes that read them
        changed = False
        for node in reversed(order):  # children before parents
            if node.id in reaching or node.id in from_json:
                continue
            hit = may_hold_library_value(checked.type_of(node.id)) or (
                node.kind is NodeKind.IDENT and node.name in tainted_names) or any(
                child.id in reaching for child in node.children())
            if hit:
                reaching.add(node.id)
                changed = True
            if node.kind is NodeKind.COMPREHENSION:
                for source, names in ((node.iter_range, (node.iter_var, node.iter_var2)),
                                      (node.accu_init, (node.accu_var,))):
                    if source is not None and source.id in reaching:
                        new = {n for n in names if n} - tainted_names
                        if new:
                            tainted_names |= new
                            changed = True
    return frozenset(reaching)


_CLAIM_JSON = "object"
"""The extractor's variable: the claim's opaque config, decoded from JSON."""

_JSON_READS = frozenset({"_[_]", "_[?_]", "_?._"})


def _read_from_claim_json(order: Sequence[Node]) -> frozenset[int]:
    """Ids of the nodes that only read the claim's JSON (`object`, its fields and elements,
    plain or optional): JSON decodes to null, bools, numbers, strings, lists and maps, never to
    a Semver or Quantity, so these nodes cannot reach one whatever their `dyn` type says (the
    common extractor is then planned without the library-value checks). Empty when a
    comprehension binds the name `object` (a variable of the same name may hold anything)."""
    binds = {name for n in order if n.kind is NodeKind.COMPREHENSION
             for name in (n.iter_var, n.iter_var2, n.accu_var) if name}
    if _CLAIM_JSON in binds:
        return frozenset()
    found: set[int] = set()
    for node in reversed(order):  # children before parents
        if node.kind is NodeKind.IDENT:
            if node.name == _CLAIM_JSON:
                found.add(node.id)
        elif node.kind is NodeKind.SELECT:
            if node.operand is not None and node.operand.id in found:
                found.add(node.id)
        elif node.kind is NodeKind.CALL and node.function in _JSON_READS and node.args \
                and node.args[0].id in found:
            found.add(node.id)
    return frozenset(found)


_PLAIN_TYPES = frozenset({int, float, str, bool, bytes, type(None)})


def _all_plain(values: list[object]) -> bool:
    """Whether every value is a scalar (the common case, decided without a walk)."""
    return all(type(value) in _PLAIN_TYPES for value in values)


def _type_name(value: object) -> str:
    """`walk_type_name` as the argument lists of `no such overload` texts print it."""
    return walk_type_name(value) or "dyn"


# --- equality -----------------------------------------------------------------------------------


@typing.overload
def walk_equal(a: object, b: object, *, go_errors: Literal[False] = False) -> bool | None: ...


@typing.overload
def walk_equal(a: object, b: object, *, go_errors: Literal[True]) -> bool | ErrorValue | None: ...


@typing.overload
def walk_equal(a: object, b: object, *, go_errors: bool) -> bool | ErrorValue | None: ...


def walk_equal(a: object, b: object, *, go_errors: bool = False) -> bool | ErrorValue | None:
    """cel-go's `types.Equal(a, b)` on walk values: null equals only null, numbers compare
    across int, uint and double, lists and maps element-wise, optionals by presence and value,
    opaque values by type and value (a Semver or Quantity by its library's equality); None
    where the walk cannot tell (an engine value it could not read).

    With `go_errors`, a Semver or Quantity answers as its `Equal` does (the error `no such
    overload` against a value of another type), a list or map comparison skips an element
    comparison that failed (`baseList.Equal` stops only on false), and an unread engine value
    against a scalar is not known; without it (callers that need a bool) those comparisons are
    false."""
    if a is None or b is None:
        return a is None and b is None
    return _equal_method(a, b, go_errors)


def _equal_method(a: object, b: object, go_errors: bool) -> bool | ErrorValue | None:
    """`a.Equal(b)` as cel-go's value types implement it (`walk_equal` without the null rule
    of `types.Equal`, which `Optional.Equal` does not apply to the values it holds)."""
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            same = walk_equal(x, y, go_errors=go_errors)
            if _decides(same):
                return same
        return True
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        for key, value in a.items():
            other = b.get(key, _ABSENT)
            if other is _ABSENT:
                return False
            same = walk_equal(value, other, go_errors=go_errors)
            if _decides(same):
                return same
        return True
    if isinstance(a, OptionalValue):
        if not isinstance(b, OptionalValue):
            return False
        if not a.has_value or not b.has_value:
            return a.has_value == b.has_value
        return _equal_method(a.value, b.value, go_errors)
    if isinstance(a, Opaque) or isinstance(b, Opaque):
        return _opaque_equal(a, b, go_errors)
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b  # cel-go compares numbers across int, uint and double
    return type(a) is type(b) and bool(a == b)


_ABSENT = object()


def _decides(same: bool | ErrorValue | None) -> bool:
    """Whether an element comparison decides a list or map comparison: one that is false or
    unknown does; one that failed is skipped, as cel-go's `baseList.Equal` skips it."""
    return same is not True and not isinstance(same, ErrorValue)


def _opaque_equal(a: object, b: object, go_errors: bool) -> bool | ErrorValue | None:
    """`a.Equal(b)` where either is an opaque value (and `a` no list, map or optional)."""
    if go_errors and is_library_value(a) and not (
            isinstance(b, Opaque) and b.type_name in (getattr(a, "type_name", None), "unknown")):
        return ErrorValue(_NO_SUCH_OVERLOAD)  # `Semver.Equal` accepts only a Semver
    if not (isinstance(a, Opaque) and isinstance(b, Opaque)):
        unread = "unknown" in (getattr(a, "type_name", None), getattr(b, "type_name", None))
        return None if go_errors and unread else False
    if "unknown" in (a.type_name, b.type_name):
        return None
    if a.type_name != b.type_name:
        return False
    by_type = equal_by_type(a.type_name, a.token, b.token)
    return a.token == b.token if by_type is None else by_type


def _equality(function: str) -> Native:
    """`==`, `!=` or `in` computed with `walk_equal` (cel-go's errors) when a library value
    takes part (None: it does not, or the answer does not depend on it)."""
    def native(values: list[object]) -> object | None:
        if len(values) != 2 or not (_holds(values[0]) or _holds(values[1])):
            return None
        lhs, rhs = values
        if function == "@in":
            return _contains(rhs, lhs)
        same = walk_equal(lhs, rhs, go_errors=True)
        if same is None:
            return None
        if function == "_!=_":
            return same is not True
        return same
    return native


def _contains(container: object, item: object) -> object | None:
    """cel-go's `container.Contains(item)` (`in`) with a library value on either side."""
    if is_library_value(container):
        return ErrorValue(_NO_SUCH_OVERLOAD)
    if isinstance(container, list):
        for element in container:
            same = _equal_method(item, element, True) if item is not None else element is None
            if same is None:
                return None
            if same is True:
                return True
        return False
    if isinstance(container, dict):
        # a library value is no key of a map of strings, ints, uints or bools
        return False if is_library_value(item) else None
    return None


# --- other standard functions -------------------------------------------------------------------

_ANY_ARGUMENT: Mapping[str, frozenset[int]] = {
    "dyn": frozenset({0}),
    "type": frozenset({0}),
    "optional.of": frozenset({0}),
    "optional.ofNonZeroValue": frozenset({0}),
    "includes": frozenset({0, 1}),
    "indexOf": frozenset({1}),
    "lastIndexOf": frozenset({1}),
    "cel.@mapInsert": frozenset({2}),
    "or": frozenset({1}),
    "orValue": frozenset({1}),
}
"""Standard (and DRA) functions with a parameter of any type, by argument position (a member
call's receiver is 0)."""

_PLAIN_REFUSALS = frozenset({"!_", "@in", "startsWith", "endsWith", "contains", "matches"})
"""Functions whose binding answers `no such overload` without naming itself."""

_BOOL_ANSWERS = frozenset({"_<_", "_<=_", "_>_", "_>=_", "-_"})
_RECEIVERS: tuple[type, ...] = (str, Timestamp, Duration)
"""cel-go types with `Receiver`: an operator they lack a trait for is offered to their
`Receive`, which answers `no such overload` without the name."""
_NUMBERS: tuple[type, ...] = (int, float)
_ORDERED: tuple[type, ...] = (bool, int, float, str, bytes, Timestamp, Duration)
_TRAITS: Mapping[str, tuple[type, ...]] = {
    "size": (str, bytes, list, dict),
    "sort": (list,),
    "-_": (int, float, Duration),
    "_+_": (int, float, str, bytes, list, Timestamp, Duration),
    "_-_": (int, float, Timestamp, Duration),
    "_*_": _NUMBERS, "_/_": _NUMBERS, "_%_": (int,),
    "_<_": _ORDERED, "_<=_": _ORDERED, "_>_": _ORDERED, "_>=_": _ORDERED,
}
"""Functions bound to one implementation behind a trait of the first operand (`Sizer`,
`Adder`, `Comparer`, ...), with the walk types that have it: without the trait cel-go answers
`no such overload: <name>`; with it, the operand's method answers `no such overload`."""


@lru_cache(maxsize=1)
def _kubernetes_parameters() -> Mapping[str, tuple[str, ...]]:
    """Parameter type names (receiver first) of every Kubernetes library overload; a type
    parameter or `dyn` reads `*`."""
    out: dict[str, tuple[str, ...]] = {}
    for lib in LIBRARIES:
        for decl in lib.declarations:
            params = ((decl.target,) if decl.target is not None else ()) + tuple(decl.args)
            out[decl.overload_id] = tuple(
                "*" if p.is_type_param or p.name == "dyn" else p.name for p in params)
    return out


@lru_cache(maxsize=1)
def _kubernetes_receivers() -> Mapping[str, str]:
    """The receiver type of every Kubernetes library member overload."""
    return {decl.overload_id: decl.target.name for lib in LIBRARIES for decl in lib.declarations
            if decl.target is not None and decl.target.name in LIBRARY_TYPE_NAMES}


LIBRARY_TYPE_NAMES = frozenset({SEMVER, QUANTITY, "net.IP", "net.CIDR", "kubernetes.URL",
                                "kubernetes.NamedFormat"})


def _receiver_of(candidates: Sequence[str]) -> str | None:
    """The one library type every candidate overload is a method of, or None."""
    receivers = {_kubernetes_receivers().get(c) for c in candidates}
    return receivers.pop() if len(receivers) == 1 and None not in receivers else None


_ORDERING_FUNCTIONS = frozenset({"min", "max", "isSorted"})
"""The lists library's functions that compare elements: with a library value among them,
cel-go's dispatcher finds no overload (`no such overload: min(list)`)."""


def _accepted(function: str, candidates: Sequence[str], position: int, type_name: str) -> bool:
    if position in _ANY_ARGUMENT.get(function, ()):
        return True
    declared = _kubernetes_parameters()
    for overload in candidates:
        params = declared.get(overload)
        if params is not None and position < len(params) and params[position] in ("*", type_name):
            return True
    return False


ENGINE_NO_OVERLOAD = "No matching overloads found"
"""cel-cpp's text for a call no overload takes: the cost walk rewords it with `refusal`."""


_CONVERSION_TARGETS: Mapping[str, str] = {
    "int": "int", "uint": "uint", "double": "double", "bool": "bool",
    "duration": "google.protobuf.Duration", "timestamp": "google.protobuf.Timestamp",
}


def in_cel_go_words(function: str, values: list[object], error: ErrorValue) -> ErrorValue:
    """The engine's error for a call, in cel-go's words where they are known: a call no
    overload takes (`refusal`), a string a conversion cannot parse."""
    message = error.message
    if ENGINE_NO_OVERLOAD in message:
        return refusal(function, values)
    target = _CONVERSION_TARGETS.get(function)
    if target is not None and len(values) == 1 and type(values[0]) is str:
        return ErrorValue(f"type conversion error from 'string' to '{target}'")
    if function == "int" and len(values) == 1 and type(values[0]) is float \
            and "out of int64 range" in message:
        return ErrorValue("integer overflow")
    return error


def refusal(function: str, values: list[object]) -> ErrorValue:
    """cel-go's error for `function` called on `values`, which it has no overload for."""
    if function in _PLAIN_REFUSALS:
        return ErrorValue(_NO_SUCH_OVERLOAD)
    traits = _TRAITS.get(function)
    if traits is not None:
        first = values[0] if values else None
        # (a Python bool is an int; of these, cel-go's bool answers comparisons and negation)
        has_trait = function in _BOOL_ANSWERS if type(first) is bool \
            else isinstance(first, traits)
        if has_trait or isinstance(first, _RECEIVERS):
            return ErrorValue(_NO_SUCH_OVERLOAD)
        return ErrorValue(f"{_NO_SUCH_OVERLOAD}: {function}")
    if function == "flatten" and values:
        return ErrorValue(f"{_NO_SUCH_OVERLOAD}: {_type_name(values[0])}.flatten()")
    if function == "distinct" and values:
        first = values[0]
        go_type = go_type_name(first)
        if go_type is not None:
            return ErrorValue(lister_assertion_panic(first, go_type))
    signature = ", ".join(_type_name(v) for v in values)
    return ErrorValue(f"{_NO_SUCH_OVERLOAD}: {function}({signature})")


def guard_library_values(function: str, candidates: Sequence[str], native: Native | None,
                         guard: Guard | None) -> tuple[Native | None, Guard | None]:
    """`(native, guard)` of a call, extended to answer as cel-go where a library value is an
    argument (see the module docstring); unchanged for calls that cannot meet one."""
    if function in ("_==_", "_!=_", "@in"):
        equality = _equality(function)

        def equality_native(values: list[object]) -> object | None:
            if not _all_plain(values):
                answered = equality(values)
                if answered is not None:
                    return answered
            return native(values) if native is not None else None

        def equality_guard(values: list[object]) -> bool:
            if not _all_plain(values) and equality(values) is not None:
                return True
            return guard is not None and guard(values)
        return equality_native, equality_guard

    receiver = _receiver_of(candidates)

    def answer(values: list[object]) -> object | None:
        if receiver is not None and values and not isinstance(values[0], ErrorValue) and not (
                isinstance(values[0], Opaque) and values[0].type_name == receiver):
            # a library method on another value: the overload's type guard
            return refusal(function, values)
        if _all_plain(values):
            return None
        first = values[0] if values else None
        if isinstance(first, list) and function in ("sort", *_ORDERING_FUNCTIONS) \
                and any(is_library_value(v) for v in first):
            if function == "sort":
                return ErrorValue("list elements must be comparable")
            return refusal(function, values)
        for position, value in enumerate(values):
            if type(value) is Opaque and value.type_name in LIBRARY_VALUE_TYPES \
                    and not _accepted(function, candidates, position, value.type_name):
                return refusal(function, values)
        if function == "type" and len(values) == 1 and is_library_value(values[0]):
            value = values[0]
            assert isinstance(value, Opaque)
            return TypeValue(value.type_name)
        return None

    def refusing_native(values: list[object]) -> object | None:
        answered = answer(values)
        if answered is not None:
            return answered
        return native(values) if native is not None else None

    def refusing_guard(values: list[object]) -> bool:
        if answer(values) is not None:
            return True
        return guard is not None and guard(values)
    return refusing_native, refusing_guard


_GO_SCALAR_TYPES = ((bool, "types.Bool"), (UInt, "types.Uint"), (int, "types.Int"),
                    (float, "types.Double"), (str, "types.String"), (bytes, "types.Bytes"),
                    (type(None), "types.Null"), (Timestamp, "types.Timestamp"),
                    (Duration, "types.Duration"), (TypeValue, "*types.Type"),
                    (OptionalValue, "*types.Optional"))


def go_type_name(value: object) -> str | None:
    """The Go type (`%T`) of a walk value that is not a list or map, or None."""
    if isinstance(value, Opaque):
        return _GO_TYPES.get(value.type_name)
    return next((name for cls, name in _GO_SCALAR_TYPES if isinstance(value, cls)), None)


def lister_assertion_panic(value: object, go_type: str) -> str:
    """cel-go's panic text where a value of Go type `go_type` is asserted to be a
    `traits.Lister` (the lists extension's `distinct` and its cost trackers): Go names the first
    method, by name, that the value lacks — `Add` unless the value is an adder."""
    adder = type(value) is not bool and isinstance(value, _TRAITS["_+_"])
    return (f"internal error: interface conversion: {go_type} is not traits.Lister: "
            f"missing method {'Contains' if adder else 'Add'}")


def iteration_refusal(value: object) -> ErrorValue | None:
    """cel-go's error for a comprehension over a value that is not a list or map (its folder
    prints the Go type, `got 'types.Int', expected iterable type`), or None where the walk
    does not know the Go type."""
    go_type = go_type_name(value)
    return None if go_type is None else ErrorValue(f"got '{go_type}', expected iterable type")


def set_membership(value: object) -> object | None:
    """`value in [constants]` under cel-go's `OptOptimize` when `value` is a library value
    (a Go map lookup), or None."""
    if not isinstance(value, Opaque) or value.type_name not in LIBRARY_VALUE_TYPES:
        return None
    if value.type_name == SEMVER:
        return ErrorValue("internal error: runtime error: hash of unhashable type cel.Semver")
    return False


class DefaultingMap(dict[str, object]):
    """A map whose lookups find every string key, as DRA's `device.attributes` and
    `device.capacity` do (`newStringInterfaceMapWithDefault`): an absent domain reads as an
    empty map (indexing, selection, `has()`, `.?`), while `in`, `size()` and iteration see the
    domains present. The engine is handed a plain map, so a walk that served a default
    (`defaulted`) is the answer for that evaluation. One instance per evaluation.
    """

    __slots__ = ("defaulted",)

    def __init__(self, entries: Mapping[str, object]) -> None:
        super().__init__(entries)
        self.defaulted = False

    def default_for(self, key: object) -> tuple[bool, object]:
        """(found, value) of a key absent from the map."""
        if not isinstance(key, str):
            return False, None
        self.defaulted = True
        return True, {}
