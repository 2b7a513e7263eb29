"""The run-time half of cel-go's two-variable comprehensions: `cel.@mapInsert`.

Why here: `transformMap` and `transformMapEntry` expand to comprehensions whose step calls the
internal function `cel.@mapInsert` (cel-go `ext/comprehensions.go`). cel-expr-python declares it
(`cel.lib.ext.comprev2`) but registers no implementation, so every such program failed with
`No overload found in reference resolve step for cel.@mapInsert`. A Python implementation cannot
be registered under the declared name (the declaration's overloads collide with it), so it is
registered as `@k8s_mapInsert`, a name of the same length, and `equality.RuntimeEnv` renames the
calls in the checked AST before planning it, as it does for Quantity and Semver equality.

Semantics (cel-go `types.InsertMapKeyValue`): a key already present, by CEL key equality
(`1 == 1u`), fails with `insert failed: key <k> already exists` (`%v` of the key); the map form
inserts the update's entries in order and stops at the first such failure.

cel-expr-python hands Python plain values: `uint` arrives as `int`, timestamps and durations as
`datetime` values it will not take back inside a map, and an optional crashes the process. The
cost walk (`policies.cel.eval.runtime_cost`) computes these calls itself and keeps the program from
running when an argument is not plain, so these limits never show in an evaluation.
"""

from __future__ import annotations

from typing import Any

from cel_expr_python import cel

from ._types import CelError, LibrarySpec, Runtime

__all__ = [
    "MAP_INSERT",
    "NAME",
    "RENAMES",
    "RUNTIME_MAP_INSERT",
    "SPEC",
    "duplicate_key_message",
]

NAME = "cel.lib.ext.comprev2.runtime"

MAP_INSERT = "cel.@mapInsert"
"""cel-go's internal function name, as the checked AST spells it."""

RUNTIME_MAP_INSERT = "@k8s_mapInsert"
"""The name the implementation is registered under (as long as `MAP_INSERT`)."""

RENAMES: dict[str, str] = {MAP_INSERT: RUNTIME_MAP_INSERT}
assert all(len(old) == len(new) for old, new in RENAMES.items())


def duplicate_key_message(key_text: str) -> str:
    """cel-go's error for a key inserted twice (`key_text` as Go's `%v` prints the key)."""
    return f"insert failed: key {key_text} already exists"


def _go_text(key: Any) -> str:
    if key is True:
        return "true"
    if key is False:
        return "false"
    return str(key)


def _same_key(a: Any, b: Any) -> bool:
    """CEL key equality on plain keys: numbers by value, bools only with bools."""
    return (type(a) is bool) == (type(b) is bool) and bool(a == b)


def _insert(target: dict[Any, Any], key: Any, value: Any) -> dict[Any, Any]:
    for existing in target:
        if _same_key(existing, key):
            raise CelError(duplicate_key_message(_go_text(key)))
    if any(existing == key for existing in target):
        # Python merges `true` with `1`; such maps never reach here (see the module docstring).
        raise CelError(f"insert failed: key {_go_text(key)} cannot be held next to an equal key "
                       "of another type")
    out = dict(target)
    out[key] = value
    return out


def _insert_key_value(target: Any, key: Any, value: Any) -> dict[Any, Any]:
    if not isinstance(target, dict):
        raise CelError("no such overload")
    return _insert(target, key, value)


def _insert_map(target: Any, update: Any) -> dict[Any, Any]:
    if not isinstance(target, dict) or not isinstance(update, dict):
        raise CelError("no such overload")
    for key, value in update.items():
        target = _insert(target, key, value)
    return target


SPEC = LibrarySpec(
    NAME,
    (),
    (
        Runtime(RUNTIME_MAP_INSERT, "k8s_map_insert_key_value",
                (cel.Type.MAP, cel.Type.DYN, cel.Type.DYN), cel.Type.MAP, _insert_key_value),
        Runtime(RUNTIME_MAP_INSERT, "k8s_map_insert_map", (cel.Type.MAP, cel.Type.MAP),
                cel.Type.MAP, _insert_map),
    ),
)

