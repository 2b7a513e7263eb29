"""kubernetes.lists: `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf` (and `includes`).

Upstream declares one overload per element type; at run time cel-go picks
the overload whose list type matches the list's *first* element (an empty
list takes the first overload, `int`), then applies that type's operations
strictly. The runtime here does the same on plain Python values:

* `sum`: elements must all be of the first element's kind (int, double or
  duration); int overflow is `integer overflow`; an empty list sums to `0`.
* `min`/`max`/`isSorted`: cel-go's `Compare`; an element it cannot compare
  with (another type, NaN) is skipped, an element that is not comparable at
  all (list, map, null) is `no such overload`. `min`/`max` of an empty list
  are the errors `min called on empty list` / `max called on empty list`.

Limits of cel-expr-python's value conversion, which Python code cannot see
past: `uint` elements arrive as plain ints (so a uint sum/min/max comes back
as an int), and durations/timestamps arrive with microsecond precision.
"""

from __future__ import annotations

import datetime
from typing import Any

from cel_expr_python import cel

from ._types import (
    BOOL,
    BYTES,
    DOUBLE,
    DURATION,
    DYN,
    INT,
    INT64_MAX,
    INT64_MIN,
    STRING,
    TIMESTAMP,
    UINT,
    CelError,
    CelKind,
    Decl,
    LibrarySpec,
    Runtime,
    cel_compare,
    cel_equal,
    is_comparable,
    kind_of,
    list_of,
    no_such_overload,
    to_cel,
    type_param,
)

NAME = "kubernetes.lists"

_COMPARABLE = (
    ("int", INT),
    ("uint", UINT),
    ("double", DOUBLE),
    ("bool", BOOL),
    ("duration", DURATION),
    ("timestamp", TIMESTAMP),
    ("string", STRING),
    ("bytes", BYTES),
)
_SUMMABLE = (("int", INT), ("uint", UINT), ("double", DOUBLE), ("duration", DURATION))

_A = type_param("A")

# `indexOf`/`lastIndexOf` also exist in the strings extension; an env config
# cannot add overloads to them, so these two declarations must be merged
# through an extension (see `MERGED_FUNCTIONS`).
MERGED_FUNCTIONS = frozenset({"indexOf", "lastIndexOf"})

_MAX_DURATION_NS = INT64_MAX


def _want_list(value: Any) -> list[Any]:
    if type(value) is not list:
        raise no_such_overload()
    return value


def _dispatch_comparable(items: list[Any]) -> None:
    """cel-go's runtime overload match: the first element must be comparable."""
    if items and not is_comparable(items[0]):
        raise no_such_overload()


def _is_sorted(value: Any) -> bool:
    items = _want_list(value)
    _dispatch_comparable(items)
    prev: Any = None
    for item in items:
        if not is_comparable(item):
            raise no_such_overload()
        if prev is not None and cel_compare(prev, item) == 1:
            return False
        prev = item
    return True


def _extreme(name: str, prefer: int) -> Any:
    def impl(value: Any) -> Any:
        items = _want_list(value)
        _dispatch_comparable(items)
        result: Any = None
        for item in items:
            if not is_comparable(item):
                raise no_such_overload()
            if result is None or cel_compare(result, item) == prefer:
                result = item
        if result is None:
            raise CelError(f"{name} called on empty list")
        return to_cel(result)

    return impl


def _sum(value: Any) -> Any:
    items = _want_list(value)
    if not items:
        return 0
    kind = kind_of(items[0])
    if kind == CelKind.INT:
        total = 0
        for item in items:
            if kind_of(item) != CelKind.INT:
                raise no_such_overload()
            total += item
            if not INT64_MIN <= total <= INT64_MAX:
                raise CelError("integer overflow")
        return total
    if kind == CelKind.DOUBLE:
        acc = 0.0
        for item in items:
            if kind_of(item) != CelKind.DOUBLE:
                raise no_such_overload()
            acc += item
        return acc
    if kind == CelKind.DURATION:
        span = datetime.timedelta(0)
        for item in items:
            if kind_of(item) != CelKind.DURATION:
                raise no_such_overload()
            span += item
            if abs(span // datetime.timedelta(microseconds=1)) * 1000 > _MAX_DURATION_NS:
                raise CelError("integer overflow")
        return to_cel(span)
    raise no_such_overload()


def _index_of(value: Any, item: Any) -> int:
    items = _want_list(value)
    for i, element in enumerate(items):
        if cel_equal(element, item):
            return i
    return -1


def _last_index_of(value: Any, item: Any) -> int:
    items = _want_list(value)
    for i in range(len(items) - 1, -1, -1):
        if cel_equal(items[i], item):
            return i
    return -1


def _includes(target: Any, item: Any) -> bool:
    if type(target) is list:
        return any(cel_equal(element, item) for element in target)
    return cel_equal(target, item)


def declarations(version: int = 0) -> tuple[Decl, ...]:
    decls: list[Decl] = []
    for name, typ in _COMPARABLE:
        decls.append(Decl("isSorted", f"list_{name}_is_sorted_bool", (), BOOL, list_of(typ)))
    for name, typ in _SUMMABLE:
        decls.append(Decl("sum", f"list_{name}_sum_{name}", (), typ, list_of(typ)))
    for fn in ("max", "min"):
        for name, typ in _COMPARABLE:
            decls.append(Decl(fn, f"list_{name}_{fn}_{name}", (), typ, list_of(typ)))
    decls.append(Decl("indexOf", "list_a_index_of_int", (_A,), INT, list_of(_A)))
    decls.append(Decl("lastIndexOf", "list_a_last_index_of_int", (_A,), INT, list_of(_A)))
    if version >= 1:
        decls.append(Decl("includes", "list_includes_dyn_dyn", (DYN,), BOOL, DYN))
    return tuple(decls)


def spec(version: int = 0) -> LibrarySpec:
    """The lists library at an upstream `ListsVersion` (the base env uses 0)."""
    lst = cel.Type.LIST
    runtimes = [
        Runtime("isSorted", "list_is_sorted_bool", (lst,), cel.Type.BOOL, _is_sorted, True),
        Runtime("sum", "list_sum", (lst,), cel.Type.DYN, _sum, True),
        Runtime("max", "list_max", (lst,), cel.Type.DYN, _extreme("max", -1), True),
        Runtime("min", "list_min", (lst,), cel.Type.DYN, _extreme("min", 1), True),
        Runtime("indexOf", "list_a_index_of_int", (lst, cel.Type.DYN), cel.Type.INT, _index_of, True),
        Runtime(
            "lastIndexOf",
            "list_a_last_index_of_int",
            (lst, cel.Type.DYN),
            cel.Type.INT,
            _last_index_of,
            True,
        ),
    ]
    if version >= 1:
        runtimes.append(
            Runtime(
                "includes",
                "list_includes_dyn_dyn",
                (cel.Type.DYN, cel.Type.DYN),
                cel.Type.BOOL,
                _includes,
                True,
            )
        )
    return LibrarySpec(NAME, declarations(version), tuple(runtimes))


SPEC = spec(0)

INCLUDES_NAME = "kubernetes.lists.v1"
INCLUDES_SPEC = LibrarySpec(
    INCLUDES_NAME,
    tuple(d for d in spec(1).declarations if d.function == "includes"),
    tuple(r for r in spec(1).runtimes if r.function == "includes"),
)
"""What `ListsVersion(1)` adds to version 0 (`includes`): the base environment takes version 0
from 1.0 and version 1 from 1.37, as a separate library."""
