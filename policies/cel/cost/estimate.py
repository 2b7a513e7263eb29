"""Static cost estimation of a checked CEL expression, exactly as cel-go's `checker/cost.go`.

Why exact: the Kubernetes scheduler (and the API server for DRA selectors) rejects an expression
whose *estimated* maximum cost exceeds a limit. A linter that wants to predict those rejections
must reproduce cel-go v0.26's arithmetic bit for bit: saturating uint64 sums and products, float64
cost factors rounded up with `math.Ceil`, the union over every candidate overload the checker
recorded, the macro expansions' accumulator layout, and the size bookkeeping (paths such as
`object.items.@items`) that lets size estimators answer.

The walk below mirrors cel-go's `coster` method by method, including evaluation order, because
size caching and path bookkeeping are order-dependent. Differences from cel-go are deliberate and
documented where they occur (type parameters are treated as `dyn`, as cel-go's checker finalises
them; Go's slice aliasing of paths is not reproduced).

Beyond cel-go, the estimator remembers which sub-expressions introduced an unknown size into a
cost that became unbounded, so messages can say *what* to rewrite (`CostReport.unbounded`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from ..common.ast import CheckedAst, ConstKind, Node, NodeKind, offset_to_location
from ..common.types import CelType, Primitive, TypeKind, WellKnown
from ..common.unparse import source_span, unparse

__all__ = [
    "CONST_COST",
    "DEFAULT_OVERLOAD_ESTIMATORS",
    "LIST_CREATE_BASE_COST",
    "MAP_CREATE_BASE_COST",
    "MAX_UINT64",
    "REGEX_STRING_LENGTH_COST_FACTOR",
    "SELECT_AND_IDENT_COST",
    "STRING_TRAVERSAL_COST_FACTOR",
    "STRUCT_CREATE_BASE_COST",
    "UNBOUNDED_THRESHOLD",
    "UNKNOWN_SIZE",
    "CallEstimate",
    "CallEstimator",
    "CostEstimate",
    "CostReport",
    "EstimateNode",
    "OverloadEstimator",
    "SizeEstimate",
    "SizeEstimator",
    "SizePath",
    "UnboundedCause",
    "estimate_cost",
    "estimate_size",
    "fixed_cost",
    "fixed_size",
    "go_kind",
]

# --- constants (cel-go common/cost.go) ---------------------------------------------------------

MAX_UINT64 = (1 << 64) - 1
SELECT_AND_IDENT_COST = 1
CONST_COST = 0
LIST_CREATE_BASE_COST = 10
MAP_CREATE_BASE_COST = 30
STRUCT_CREATE_BASE_COST = 40
STRING_TRAVERSAL_COST_FACTOR = 0.1
REGEX_STRING_LENGTH_COST_FACTOR = 0.25

# A cost at or above this can only come from an unknown (2^64-1) size: the smallest factor cel-go
# applies to a size is 0.1, and ceil((2^64-1) * 0.1) = 1844674407370955264 is above it.
UNBOUNDED_THRESHOLD = MAX_UINT64 // 10

_TWO_64 = 1 << 64
_MAX_AS_FLOAT = float(MAX_UINT64)  # 2^64 exactly, as Go converts math.MaxUint64 to float64
_ACCUMULATORS = ("@result", "__result__")


# --- saturating arithmetic ---------------------------------------------------------------------


def _add(x: int, y: int) -> int:
    """cel-go addUint64NoOverflow."""
    return MAX_UINT64 if y > 0 and x > MAX_UINT64 - y else x + y


def _mul(x: int, y: int) -> int:
    """cel-go multiplyUint64NoOverflow."""
    return MAX_UINT64 if y != 0 and x > MAX_UINT64 // y else x * y


def _mul_factor(x: int, factor: float) -> int:
    """cel-go multiplyByCostFactor: float64 product rounded up, saturating at 2^64-1."""
    xf = float(x)
    if xf > 0 and factor > 0 and xf > _MAX_AS_FLOAT / factor:
        return MAX_UINT64
    ceil = math.ceil(xf * factor)
    return MAX_UINT64 if ceil >= _TWO_64 else int(ceil)


def _wrap(x: int) -> int:
    """Go uint64 arithmetic that cel-go does *not* saturate (it wraps modulo 2^64)."""
    return x & MAX_UINT64


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """A [min, max] cost range (uint64, saturating)."""

    min: int
    max: int

    def add(self, other: CostEstimate) -> CostEstimate:
        return CostEstimate(_add(self.min, other.min), _add(self.max, other.max))

    def multiply(self, other: CostEstimate) -> CostEstimate:
        return CostEstimate(_mul(self.min, other.min), _mul(self.max, other.max))

    def multiply_by_cost_factor(self, factor: float) -> CostEstimate:
        return CostEstimate(_mul_factor(self.min, factor), _mul_factor(self.max, factor))

    def union(self, other: CostEstimate) -> CostEstimate:
        return CostEstimate(min(self.min, other.min), max(self.max, other.max))


@dataclass(frozen=True, slots=True)
class SizeEstimate:
    """A [min, max] size range: code points, bytes, list items or map entries."""

    min: int
    max: int

    def add(self, other: SizeEstimate) -> SizeEstimate:
        return SizeEstimate(_add(self.min, other.min), _add(self.max, other.max))

    def multiply(self, other: SizeEstimate) -> SizeEstimate:
        return SizeEstimate(_mul(self.min, other.min), _mul(self.max, other.max))

    def multiply_by_cost_factor(self, factor: float) -> CostEstimate:
        return CostEstimate(_mul_factor(self.min, factor), _mul_factor(self.max, factor))

    def multiply_by_cost(self, cost: CostEstimate) -> CostEstimate:
        return CostEstimate(_mul(self.min, cost.min), _mul(self.max, cost.max))

    def union(self, other: SizeEstimate) -> SizeEstimate:
        return SizeEstimate(min(self.min, other.min), max(self.max, other.max))

    def as_cost(self) -> CostEstimate:
        return self.multiply_by_cost_factor(1)


def fixed_cost(n: int) -> CostEstimate:
    """A cost of exactly n."""
    return CostEstimate(n, n)


def fixed_size(n: int) -> SizeEstimate:
    """A size of exactly n."""
    return SizeEstimate(n, n)


UNKNOWN_SIZE = SizeEstimate(0, MAX_UINT64)
_ZERO = CostEstimate(0, 0)
_ONE = CostEstimate(1, 1)


@dataclass(frozen=True, slots=True)
class CallEstimate:
    """Cost of one call (without its arguments) and, optionally, the size of its result."""

    cost: CostEstimate
    result_size: SizeEstimate | None = None


# --- estimator protocols -----------------------------------------------------------------------


class SizePath(tuple[str, ...]):
    """A cel-go field path (`object`, `spec`, `@items`, ...) that also carries the node's type.

    It *is* a tuple of path elements, so a path-only estimator can simply use
    `".".join(path)`; type-aware estimators (the Kubernetes cost tests size every string at 12)
    read `cel_type`. The path is empty when cel-go would pass a nil path.
    """

    cel_type: CelType
    node: Node | None

    def __new__(cls, parts: Sequence[str] = (), cel_type: CelType | None = None,
                node: Node | None = None) -> SizePath:
        self = super().__new__(cls, parts)
        self.cel_type = cel_type if cel_type is not None else CelType(TypeKind.DYN)
        self.node = node
        return self

    def dotted(self) -> str:
        """The path as cel-go test harnesses key it: elements joined with dots."""
        return ".".join(self)


class SizeEstimator(Protocol):
    """cel-go `CostEstimator.EstimateSize`: a size for a path, or None when unknown."""

    def estimate_size(self, path: SizePath) -> SizeEstimate | None: ...


@dataclass(frozen=True, slots=True)
class EstimateNode:
    """cel-go `AstNode`: what a call estimator learns about a target or argument.

    `path` is empty for nodes not reachable from a variable (and for accumulator variables);
    `computed_size` is the size CEL derived itself (literals, concatenations, results of sized
    calls), or None.
    """

    path: SizePath
    type: CelType
    node: Node | None
    computed_size: SizeEstimate | None


class CallEstimator(Protocol):
    """cel-go `CostEstimator.EstimateCallCost`: a call's own cost, or None for the default."""

    def estimate_call(self, function: str, overload_id: str, target: EstimateNode | None,
                      args: Sequence[EstimateNode]) -> CallEstimate | None: ...


OverloadEstimator = Callable[
    [SizeEstimator | None, EstimateNode | None, Sequence[EstimateNode]], CallEstimate | None]
"""cel-go `FunctionEstimator` registered with `checker.OverloadCostEstimate` for one overload."""


def estimate_size(sizes: SizeEstimator | None, node: EstimateNode) -> SizeEstimate:
    """Computed size, else the size estimator's answer, else unknown (cel-go ext `estimateSize`)."""
    if node.computed_size is not None:
        return node.computed_size
    if sizes is not None:
        est = sizes.estimate_size(node.path)
        if est is not None:
            return est
    return UNKNOWN_SIZE


# --- cel-go kinds ------------------------------------------------------------------------------

_PRIMITIVE_KINDS = {
    Primitive.BOOL: "bool", Primitive.INT64: "int", Primitive.UINT64: "uint",
    Primitive.DOUBLE: "double", Primitive.STRING: "string", Primitive.BYTES: "bytes",
}
_WELL_KNOWN_KINDS = {WellKnown.ANY: "any", WellKnown.TIMESTAMP: "timestamp",
                     WellKnown.DURATION: "duration"}
_SCALAR_KINDS = frozenset({"bool", "double", "duration", "int", "timestamp", "uint"})


def go_kind(t: CelType) -> str:
    """The cel-go `types.Kind` of a checked type, as a short name.

    Wrappers take the wrapped primitive's kind (cel-go `NewNullableType`); type parameters are
    `dyn` because cel-go's checker substitutes unbound type parameters by dyn in its final type
    map; abstract types are `opaque`, messages `struct`.
    """
    k = t.kind
    if k is TypeKind.PRIMITIVE or k is TypeKind.WRAPPER:
        return _PRIMITIVE_KINDS.get(t.primitive or Primitive.UNSPECIFIED, "unspecified")
    if k is TypeKind.WELL_KNOWN:
        return _WELL_KNOWN_KINDS.get(t.well_known or WellKnown.UNSPECIFIED, "unspecified")
    return _OTHER_KINDS[k]


_OTHER_KINDS = {
    TypeKind.DYN: "dyn", TypeKind.TYPE_PARAM: "dyn", TypeKind.NULL: "null",
    TypeKind.LIST: "list", TypeKind.MAP: "map", TypeKind.MESSAGE: "struct",
    TypeKind.TYPE: "type", TypeKind.ERROR: "error", TypeKind.ABSTRACT: "opaque",
    TypeKind.FUNCTION: "opaque",
}


def _is_scalar(t: CelType) -> bool:
    """cel-go isScalar: fixed-size types (optional of a scalar included)."""
    if go_kind(t) in _SCALAR_KINDS:
        return True
    return t.is_optional and bool(t.params) and _is_scalar(t.params[0])


# --- report ------------------------------------------------------------------------------------


class UnboundedCause:
    """A sub-expression whose unknown size made the estimated maximum cost unbounded.

    `node_id`/`line`/`column`/`text` locate the sub-expression of unknown size (`object.x`);
    `operation_id`/`operation_text` the operation whose cost scales with it (`"p-" + object.x`).

    Where it stands and how it reads are worked out on first access (then kept): a 10 KiB
    extractor can have a hundred causes, describing them all would be a large share of
    estimating its cost, and SA108 names three. Immutable in effect; compares by its described fields.
    """

    __slots__ = ("_ast", "_location", "_operation_text", "_text", "node_id", "operation_id",
                 "reason")

    def __init__(self, ast: CheckedAst, node_id: int, operation_id: int, reason: str) -> None:
        self._ast = ast
        self.node_id = node_id
        self.operation_id = operation_id
        self.reason = reason
        self._location: tuple[int, int] | None = None
        self._text: str | None = None
        self._operation_text: str | None = None

    @property
    def line(self) -> int:
        return self._where()[0]

    @property
    def column(self) -> int:
        return self._where()[1]

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = unparse(self._ast.node(self.node_id), self._ast)
        return self._text

    @property
    def operation_text(self) -> str:
        if self._operation_text is None:
            self._operation_text = unparse(self._ast.node(self.operation_id), self._ast)
        return self._operation_text

    def _where(self) -> tuple[int, int]:
        # Threads racing here compute the same value; either store wins.
        if self._location is None:
            ast = self._ast
            span = source_span(ast.node(self.node_id), ast)
            self._location = (offset_to_location(ast.expression, span[0]) if span is not None
                              else ast.location(self.node_id))
        return self._location

    def _fields(self) -> tuple[object, ...]:
        return (self.node_id, self.line, self.column, self.text, self.reason, self.operation_id,
                self.operation_text)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UnboundedCause):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"UnboundedCause(node_id={self.node_id}, line={self.line}, column={self.column}, "
                f"text={self.text!r}, reason={self.reason!r}, operation_id={self.operation_id}, "
                f"operation_text={self.operation_text!r})")


@dataclass(frozen=True, slots=True)
class CostReport:
    """Estimated [min, max] cost and, when max is unbounded, what made it so."""

    min: int
    max: int
    unbounded: tuple[UnboundedCause, ...] = ()

    @property
    def estimate(self) -> CostEstimate:
        return CostEstimate(self.min, self.max)


# --- the coster --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _EntrySize:
    container: str  # "list" or "map"
    key: SizeEstimate
    val: SizeEstimate

    def union(self, other: _EntrySize | None) -> _EntrySize | None:
        if other is None:
            return None
        return _EntrySize(self.container, self.key.union(other.key), self.val.union(other.val))


@dataclass(slots=True)
class _LocalVar:
    path: list[str]
    size: SizeEstimate | None
    entry: _EntrySize | None


@dataclass(frozen=True, slots=True)
class _Cause:
    operation: int
    operand: int
    reason: str


_REASONS = {
    "add_string": "string concatenation with {a} string of unknown size",
    "add_bytes": "bytes concatenation with {a} value of unknown size",
    "equals": "equality test between values of unknown size",
    "not_equals": "inequality test between values of unknown size",
    "string_to_bytes": "conversion of {a} string of unknown size to bytes",
    "bytes_to_string": "conversion of {a} value of unknown size to string",
    "strings_quote": "strings.quote() of {a} string of unknown size",
    "string_format": "format() with {a} format string of unknown size",
    "starts_with_string": "startsWith() with {a} prefix of unknown size",
    "ends_with_string": "endsWith() with {a} suffix of unknown size",
    "in_list": "membership test in {a} list of unknown size",
    "matches_string": "regular-expression match involving {a} string of unknown size",
    "contains_string": "substring search involving {a} string of unknown size",
}
_ORDERING = ("less_", "greater_", "less_equals_", "greater_equals_")


def _reason_template(overload_id: str, function: str) -> str:
    if overload_id in _REASONS:
        return _REASONS[overload_id]
    if overload_id.startswith(_ORDERING):
        return "ordering comparison of {a} value of unknown size"
    return f"{function}() on {{a}} value of unknown size"


class _Coster:
    """Port of cel-go's `coster` (checker/cost.go); method names follow the Go ones."""

    def __init__(self, ast: CheckedAst, presence_test_cost: int, sizes: SizeEstimator | None,
                 calls: CallEstimator | None, overloads: Mapping[str, OverloadEstimator]) -> None:
        self.ast = ast
        self.presence = fixed_cost(presence_test_cost)
        self.sizes = sizes
        self.calls = calls
        self.overloads = overloads
        self.paths: dict[int, list[str]] = {}
        self.local_vars: dict[str, list[_LocalVar]] = {}
        self.computed_sizes: dict[int, SizeEstimate] = {}
        self.computed_entry_sizes: dict[int, _EntrySize] = {}
        self.causes: list[_Cause] = []

    # --- local variables ---

    def _push(self, name: str, var: _LocalVar) -> None:
        self.local_vars.setdefault(name, []).append(var)

    def _pop(self, name: str) -> None:
        stack = self.local_vars.get(name)
        if stack:
            stack.pop()

    def _peek(self, name: str) -> _LocalVar | None:
        stack = self.local_vars.get(name)
        return stack[-1] if stack else None

    def _push_local_var(self, name: str, e: Node) -> None:
        path = self._get_path(e)
        entry = self._compute_entry_size(e)
        self._push(name, _LocalVar(path, self._compute_size(e), entry))

    def _iter_container(self, entry: _EntrySize | None, range_expr: Node) -> str:
        if entry is not None:
            return entry.container
        return go_kind(self.ast.type_of(range_expr.id))

    def _push_iter_key(self, name: str, range_expr: Node) -> None:
        entry = self._compute_entry_size(range_expr)
        size = entry.key if entry is not None else None
        path = self._get_path(range_expr)
        sub = "@indices" if self._iter_container(entry, range_expr) == "list" else "@keys"
        self._push(name, _LocalVar([*path, sub], size, None))

    def _push_iter_value(self, name: str, range_expr: Node) -> None:
        entry = self._compute_entry_size(range_expr)
        size = entry.val if entry is not None else None
        path = self._get_path(range_expr)
        sub = "@items" if self._iter_container(entry, range_expr) == "list" else "@values"
        self._push(name, _LocalVar([*path, sub], size, None))

    def _push_iter_single(self, name: str, range_expr: Node) -> None:
        entry = self._compute_entry_size(range_expr)
        size = entry.key if entry is not None else None
        sub = "@keys"
        if self._iter_container(entry, range_expr) == "list":
            size = entry.val if entry is not None else None
            sub = "@items"
        path = self._get_path(range_expr)
        self._push(name, _LocalVar([*path, sub], size, None))

    # --- dispatch ---

    def cost(self, e: Node | None) -> CostEstimate:
        if e is None:
            return _ZERO
        k = e.kind
        if k is NodeKind.CONST:
            return fixed_cost(CONST_COST)
        if k is NodeKind.IDENT:
            return self._cost_ident(e)
        if k is NodeKind.SELECT:
            return self._cost_select(e)
        if k is NodeKind.CALL:
            return self._cost_call(e)
        if k is NodeKind.LIST:
            return self._cost_create_list(e)
        if k is NodeKind.STRUCT:
            if e.message_name:
                return self._cost_create_struct(e)
            return self._cost_create_map(e)
        if k is NodeKind.COMPREHENSION:
            if self._is_bind(e):
                return self._cost_bind(e)
            return self._cost_comprehension(e)
        return _ZERO

    def _cost_ident(self, e: Node) -> CostEstimate:
        var = self._peek(e.name)
        self.paths[e.id] = var.path if var is not None else [e.name]
        return fixed_cost(SELECT_AND_IDENT_COST)

    def _cost_select(self, e: Node) -> CostEstimate:
        assert e.operand is not None
        if e.test_only:
            # Like cel-go: the presence test replaces the qualifier's cost; no path is recorded.
            return self.presence.add(self.cost(e.operand))
        total = self.cost(e.operand)
        if go_kind(self.ast.type_of(e.operand.id)) in ("map", "struct"):
            total = total.add(fixed_cost(SELECT_AND_IDENT_COST))
        self.paths[e.id] = [*self._get_path(e.operand), e.field]
        return total

    def _cost_call(self, e: Node) -> CostEstimate:
        if e.function == "dyn" and e.args:
            arg = e.args[0]
            arg_cost = self.cost(arg)
            self._copy_size_estimates(e, arg)
            return _ONE.add(arg_cost)
        args = e.args
        arg_costs: list[CostEstimate] = []
        arg_nodes: list[EstimateNode] = []
        for a in args:
            arg_costs.append(self.cost(a))
            arg_nodes.append(self._new_ast_node(a))
        overload_ids = self.ast.overload_ids(e.id)
        if not overload_ids:
            return _ZERO
        total = _ZERO
        target: EstimateNode | None = None
        if e.target is not None:
            total = total.add(self.cost(e.target))
            target = self._new_ast_node(e.target)
        fn_cost = CostEstimate(MAX_UINT64, 0)
        result_size: SizeEstimate | None = None
        for overload in overload_ids:
            est = self._function_cost(e, overload, target, arg_nodes, arg_costs)
            fn_cost = fn_cost.union(est.cost)
            if est.result_size is not None:
                result_size = (est.result_size if result_size is None
                               else result_size.union(est.result_size))
            if overload in ("index_list", "index_map") and args:
                entry = self._compute_entry_size(args[0])
                result_size = entry.val if entry is not None else None
                sub = "@items" if overload == "index_list" else "@values"
                self.paths[e.id] = [*self._get_path(args[0]), sub]
            if result_size is None:
                result_size = self._compute_size(e)
        self._set_size(e, result_size)
        return total.add(fn_cost)

    def _cost_create_list(self, e: Node) -> CostEstimate:
        total = _ZERO
        item = SizeEstimate(0 if not e.elements else MAX_UINT64, 0)
        for el in e.elements:
            total = total.add(self.cost(el))
            item = item.union(self._size_or_unknown(el))
        self.computed_entry_sizes[e.id] = _EntrySize("list", fixed_size(1), item)
        return total.add(fixed_cost(LIST_CREATE_BASE_COST))

    def _cost_create_map(self, e: Node) -> CostEstimate:
        total = _ZERO
        empty = not e.entries
        key = SizeEstimate(0 if empty else MAX_UINT64, 0)
        val = SizeEstimate(0 if empty else MAX_UINT64, 0)
        for ent in e.entries:
            if ent.key is not None:
                total = total.add(self.cost(ent.key))
            total = total.add(self.cost(ent.value))
            key = key.union(self._size_or_unknown(ent.key) if ent.key is not None
                            else UNKNOWN_SIZE)
            val = val.union(self._size_or_unknown(ent.value))
        self.computed_entry_sizes[e.id] = _EntrySize("map", key, val)
        return total.add(fixed_cost(MAP_CREATE_BASE_COST))

    def _cost_create_struct(self, e: Node) -> CostEstimate:
        total = _ZERO
        for ent in e.entries:
            total = total.add(self.cost(ent.value))
        return total.add(fixed_cost(STRUCT_CREATE_BASE_COST))

    def _cost_comprehension(self, e: Node) -> CostEstimate:
        assert e.iter_range is not None and e.accu_init is not None
        total = self.cost(e.iter_range)
        total = total.add(self.cost(e.accu_init))
        self._push_local_var(e.accu_var, e.accu_init)
        if e.iter_var2:
            self._push_iter_key(e.iter_var, e.iter_range)
            self._push_iter_value(e.iter_var2, e.iter_range)
        else:
            self._push_iter_single(e.iter_var, e.iter_range)
        loop_cost = self.cost(e.loop_condition)
        step_cost = self.cost(e.loop_step)
        self._pop(e.iter_var)
        if e.iter_var2:
            self._pop(e.iter_var2)
        total = total.add(self.cost(e.result))
        self._pop(e.accu_var)
        range_cnt = self._size_or_unknown(e.iter_range)
        range_cost = range_cnt.multiply_by_cost(step_cost.add(loop_cost))
        if range_cnt.max >= UNBOUNDED_THRESHOLD and range_cost.max >= UNBOUNDED_THRESHOLD:
            reason = "iteration over {a} list or map of unknown size"
            self.causes.append(_Cause(e.id, e.iter_range.id, reason))
        total = total.add(range_cost)
        init = e.accu_init
        if init.kind is NodeKind.CONST:
            self._set_size(e, self._compute_size(init))
        elif init.kind is NodeKind.LIST or (init.kind is NodeKind.STRUCT
                                            and not init.message_name):
            self._set_size(e, range_cnt)
            step_entry = (self._compute_entry_size(e.loop_step)
                          if e.loop_step is not None else None)
            if step_entry is not None:
                self.computed_entry_sizes[e.id] = step_entry
        return total

    def _is_bind(self, e: Node) -> bool:
        rng, cond = e.iter_range, e.loop_condition
        return (rng is not None and rng.kind is NodeKind.LIST and not rng.elements
                and cond is not None and cond.kind is NodeKind.CONST and cond.const is not None
                and cond.const.kind is ConstKind.BOOL and cond.const.value is False
                and e.accu_var != "@result")

    def _cost_bind(self, e: Node) -> CostEstimate:
        assert e.accu_init is not None and e.result is not None
        total = self.cost(e.iter_range)  # binds keep the cost of their empty range (10)
        total = total.add(self.cost(e.accu_init))
        self._push_local_var(e.accu_var, e.accu_init)
        total = total.add(self.cost(e.result))
        self._pop(e.accu_var)
        self._copy_size_estimates(e, e.result)
        return total

    # --- functions ---

    def _function_cost(self, e: Node, overload: str, target: EstimateNode | None,
                       args: Sequence[EstimateNode], arg_costs: Sequence[CostEstimate]
                       ) -> CallEstimate:
        arg_sum = _ZERO
        for c in arg_costs:
            arg_sum = arg_sum.add(c)
        operands: list[EstimateNode] = ([target] if target is not None else []) + list(args)
        estimator = self.overloads.get(overload)
        if estimator is not None:
            est = estimator(self.sizes, target, args)
            if est is not None:
                self._note(e, overload, est.cost, operands)
                return CallEstimate(est.cost.add(arg_sum), est.result_size)
        if self.calls is not None:
            est = self.calls.estimate_call(e.function, overload, target, args)
            if est is not None:
                self._note(e, overload, est.cost, operands)
                return CallEstimate(est.cost.add(arg_sum), est.result_size)
        builtin = self._builtin_cost(e, overload, target, args, arg_costs)
        if builtin is not None:
            own, result_size, used = builtin
            self._note(e, overload, own, used)
            return CallEstimate(own.add(arg_sum), result_size)
        if overload in ("logical_or", "logical_and") and len(arg_costs) == 2:
            lhs, rhs = arg_costs
            return CallEstimate(CostEstimate(lhs.min, lhs.add(rhs).max))
        if overload == "conditional" and len(args) == 3:
            size = self._sz(args[1]).union(self._sz(args[2]))
            n1, n2 = args[1].node, args[2].node
            e1 = self._compute_entry_size(n1) if n1 is not None else None
            e2 = self._compute_entry_size(n2) if n2 is not None else None
            entry = e1.union(e2) if e1 is not None else None
            if entry is not None:
                self.computed_entry_sizes[e.id] = entry
            cost = arg_costs[0].add(arg_costs[1].union(arg_costs[2]))
            return CallEstimate(cost, size)
        return CallEstimate(_ONE.add(arg_sum))

    def _builtin_cost(self, e: Node, overload: str, target: EstimateNode | None,
                      args: Sequence[EstimateNode], arg_costs: Sequence[CostEstimate]
                      ) -> tuple[CostEstimate, SizeEstimate | None, list[EstimateNode]] | None:
        """cel-go's O(n) and O(n·m) built-ins: (own cost, result size, size operands used)."""
        f = STRING_TRAVERSAL_COST_FACTOR
        if overload == "string_format" and target is not None:
            return self._sz(target).multiply_by_cost_factor(f), None, [target]
        if overload in ("string_to_bytes", "bytes_to_string", "strings_quote") and len(args) == 1:
            sz = self._sz(args[0])
            if overload == "string_to_bytes":
                result = SizeEstimate(sz.min, _wrap(sz.max * 4))
            elif overload == "bytes_to_string":
                result = SizeEstimate(sz.min // 4, sz.max)
            else:
                result = SizeEstimate(_wrap(sz.min + 2), _wrap(sz.max * 2 + 2))
            return sz.multiply_by_cost_factor(f), result, [args[0]]
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return self._sz(args[0]).multiply_by_cost_factor(f), None, [args[0]]
        if overload == "in_list" and len(args) == 2:
            return self._sz(args[1]).multiply_by_cost_factor(1), None, [args[1]]
        if overload == "matches_string" and target is not None and len(args) == 1:
            str_cost = self._sz(target).add(fixed_size(1)).multiply_by_cost_factor(f)
            regex_cost = self._sz(args[0]).multiply_by_cost_factor(REGEX_STRING_LENGTH_COST_FACTOR)
            return str_cost.multiply(regex_cost), None, [target, args[0]]
        if overload == "contains_string" and target is not None and len(args) == 1:
            str_cost = self._sz(target).multiply_by_cost_factor(f)
            sub_cost = self._sz(args[0]).multiply_by_cost_factor(f)
            return str_cost.multiply(sub_cost), None, [target, args[0]]
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            result = self._sz(args[0]).add(self._sz(args[1]))
            n0, n1 = args[0].node, args[1].node
            e0 = self._compute_entry_size(n0) if n0 is not None else None
            e1 = self._compute_entry_size(n1) if n1 is not None else None
            entry = e0.union(e1) if e0 is not None else None
            if entry is not None:
                self.computed_entry_sizes[e.id] = entry
            if overload == "add_list":
                return _ONE, result, []
            return result.multiply_by_cost_factor(f), result, [args[0], args[1]]
        if overload in _SIZED_COMPARISONS and len(args) == 2:
            lhs, rhs = self._sz(args[0]), self._sz(args[1])
            smallest = min(lhs.max, rhs.max)
            cost = CostEstimate(1 if smallest > 0 else 0, smallest)
            return cost.multiply_by_cost_factor(f), None, [args[0], args[1]]
        return None

    def _note(self, e: Node, overload: str, own: CostEstimate,
              operands: Sequence[EstimateNode]) -> None:
        """Remember which operands of unknown size made this call's own cost unbounded."""
        if own.max < UNBOUNDED_THRESHOLD:
            return
        reason = _reason_template(overload, e.function)
        blamed = [o for o in operands if o.node is not None
                  and self._sz(o).max >= UNBOUNDED_THRESHOLD]
        if not blamed:
            self.causes.append(_Cause(e.id, e.id, reason))
        for o in blamed:
            assert o.node is not None
            self.causes.append(_Cause(e.id, o.node.id, reason))

    # --- paths and sizes ---

    def _get_path(self, e: Node) -> list[str]:
        if e.kind is NodeKind.IDENT:
            var = self._peek(e.name)
            if var is not None:
                return var.path
        return self.paths.get(e.id, [])

    def _new_ast_node(self, e: Node) -> EstimateNode:
        path = self._get_path(e)
        if path and path[0] in _ACCUMULATORS:
            path = []  # only paths rooted at variables are given to estimators
        t = self.ast.type_of(e.id)
        return EstimateNode(SizePath(path, t, e), t, e, self._compute_size(e))

    def _set_size(self, e: Node, size: SizeEstimate | None) -> None:
        if size is not None:
            self.computed_sizes[e.id] = size

    def _sz(self, node: EstimateNode) -> SizeEstimate:
        """cel-go sizeOrUnknown for an AstNode: its computed size or unknown."""
        return node.computed_size if node.computed_size is not None else UNKNOWN_SIZE

    def _size_or_unknown(self, e: Node) -> SizeEstimate:
        size = self._compute_size(e)
        return size if size is not None else UNKNOWN_SIZE

    def _copy_size_estimates(self, dst: Node, src: Node) -> None:
        self._set_size(dst, self._compute_size(src))
        entry = self._compute_entry_size(src)
        if entry is not None:
            self.computed_entry_sizes[dst.id] = entry

    def _compute_size(self, e: Node) -> SizeEstimate | None:
        cached = self.computed_sizes.get(e.id)
        if cached is not None:
            return cached
        literal = _compute_expr_size(e)
        if literal is not None:
            return literal
        t = self.ast.type_of(e.id)
        if self.sizes is not None:
            est = self.sizes.estimate_size(SizePath(self._get_path(e), t, e))
            if est is not None:
                self.computed_sizes[e.id] = est
                return est
        if _is_scalar(t):
            return fixed_size(1)
        if e.kind is NodeKind.IDENT:
            var = self._peek(e.name)
            if var is not None and var.size is not None:
                return var.size
        return None

    def _compute_entry_size(self, e: Node) -> _EntrySize | None:
        cached = self.computed_entry_sizes.get(e.id)
        if cached is not None:
            return cached
        if e.kind is NodeKind.IDENT:
            var = self._peek(e.name)
            if var is not None and var.entry is not None:
                return var.entry
        return None

    # --- report ---

    def unbounded_causes(self) -> tuple[UnboundedCause, ...]:
        """Deepest causes first-seen order; a cause whose operand contains another's is dropped."""
        under = self._operations_under()
        seen: set[tuple[int, int]] = set()
        out: list[UnboundedCause] = []
        for c in self.causes:
            if (c.operation, c.operand) in seen:
                continue
            seen.add((c.operation, c.operand))
            if any(op != c.operation for op in under.get(c.operand, ())):
                continue
            out.append(self._describe(c))
        return tuple(out)

    def _operations_under(self) -> dict[int, set[int]]:
        """node id → the cause operations in its subtree (itself included), one walk per op."""
        under: dict[int, set[int]] = {}
        for op in {c.operation for c in self.causes}:
            if not self.ast.has_node(op):
                continue
            cur: Node | None = self.ast.node(op)
            while cur is not None:
                under.setdefault(cur.id, set()).add(op)
                cur = self.ast.parent(cur.id)
        return under

    def _describe(self, c: _Cause) -> UnboundedCause:
        # the walk recorded every reached node's path; local variables carry their source's
        path = self.paths.get(c.operand) or []
        root = path[0] if path and not path[0].startswith(("@", "#")) else ""
        article = f"{'an' if root[:1] in tuple('aeiou') else 'a'} {root}-derived" if root else "a"
        return UnboundedCause(self.ast, c.operand, c.operation, c.reason.replace("{a}", article))


_SIZED_COMPARISONS = frozenset({
    "less_string", "greater_string", "less_equals_string", "greater_equals_string",
    "less_bytes", "greater_bytes", "less_equals_bytes", "greater_equals_bytes",
    "equals", "not_equals",
})


def _compute_expr_size(e: Node) -> SizeEstimate | None:
    """cel-go computeExprSize: sizes CEL knows from the literal itself."""
    if e.kind is NodeKind.CONST and e.const is not None:
        k, v = e.const.kind, e.const.value
        if k is ConstKind.STRING and isinstance(v, str):
            return fixed_size(len(v))
        if k is ConstKind.BYTES and isinstance(v, bytes):
            return fixed_size(len(v))
        if k is ConstKind.NOT_SET:
            return None
        return fixed_size(1)
    if e.kind is NodeKind.LIST:
        return fixed_size(len(e.elements))
    if e.kind is NodeKind.STRUCT and not e.message_name:
        return fixed_size(len(e.entries))
    return None


def estimate_cost(ast: CheckedAst, *, presence_test_cost: int = 0,
                  sizes: SizeEstimator | None = None, calls: CallEstimator | None = None,
                  overload_estimators: Mapping[str, OverloadEstimator] | None = None
                  ) -> CostReport:
    """Estimate the [min, max] cost of a checked expression as cel-go's `checker.Cost` does.

    `presence_test_cost` is 0 as in Kubernetes (`PresenceTestHasCost(false)`); cel-go's default
    is 1. `overload_estimators` defaults to the per-overload estimators cel-go's ext.Lists (v3)
    and ext.Sets register; they take precedence over `calls`, which takes precedence over the
    built-in rules.
    """
    if overload_estimators is None:
        overload_estimators = DEFAULT_OVERLOAD_ESTIMATORS
    coster = _Coster(ast, presence_test_cost, sizes, calls, overload_estimators)
    est = coster.cost(ast.root)
    causes = coster.unbounded_causes() if est.max >= UNBOUNDED_THRESHOLD else ()
    return CostReport(est.min, est.max, causes)



# --- per-overload estimators of cel-go ext.Sets and ext.Lists (v3) -----------------------------


def _sets_estimator(factor: float) -> OverloadEstimator:
    """cel-go ext/sets.go estimateSetsCost: |a|·|b|·factor + 1."""

    def estimate(sizes: SizeEstimator | None, target: EstimateNode | None,
                 args: Sequence[EstimateNode]) -> CallEstimate | None:
        if len(args) != 2:
            return None
        product = estimate_size(sizes, args[0]).multiply(estimate_size(sizes, args[1]))
        return CallEstimate(product.multiply_by_cost_factor(factor).add(_ONE))

    return estimate


def _allocating_list_call(factor: float, list_size: SizeEstimate) -> CallEstimate:
    """cel-go ext/lists.go estimateAllocatingListCall: size·factor + 1 call + 10 list."""
    cost = list_size.multiply_by_cost_factor(factor).add(_ONE)
    cost = cost.add(fixed_cost(LIST_CREATE_BASE_COST))
    return CallEstimate(cost, list_size)


def _int_literal(node: EstimateNode, default: int) -> int:
    """cel-go nodeAsIntValue: a non-negative int literal's value (negatives are 0), else default."""
    n = node.node
    if n is None or n.kind is not NodeKind.CONST or n.const is None:
        return default
    if n.const.kind is not ConstKind.INT or not isinstance(n.const.value, int):
        return default
    return max(0, n.const.value)


def _list_slice(sizes: SizeEstimator | None, target: EstimateNode | None,
                args: Sequence[EstimateNode]) -> CallEstimate | None:
    if target is None or len(args) != 2:
        return None
    sz = estimate_size(sizes, target)
    start = _int_literal(args[0], 0)
    end = _int_literal(args[1], sz.max)
    return _allocating_list_call(1, fixed_size(_wrap(end - start)))  # Go wraps end-start


def _lists_range(sizes: SizeEstimator | None, target: EstimateNode | None,
                 args: Sequence[EstimateNode]) -> CallEstimate | None:
    if target is not None or len(args) != 1:
        return None
    return _allocating_list_call(1, fixed_size(_int_literal(args[0], MAX_UINT64)))


def _list_reverse(sizes: SizeEstimator | None, target: EstimateNode | None,
                  args: Sequence[EstimateNode]) -> CallEstimate | None:
    if target is None or args:
        return None
    return _allocating_list_call(1, estimate_size(sizes, target))


def _list_flatten(sizes: SizeEstimator | None, target: EstimateNode | None,
                  args: Sequence[EstimateNode]) -> CallEstimate | None:
    if target is None or len(args) > 1:
        return None
    depth = _int_literal(args[0], MAX_UINT64) if args else 1
    return _allocating_list_call(float(depth), estimate_size(sizes, target))


def _list_distinct(sizes: SizeEstimator | None, target: EstimateNode | None,
                   args: Sequence[EstimateNode]) -> CallEstimate | None:
    if target is None or args:
        return None
    sz = estimate_size(sizes, target)
    return _allocating_list_call(2.0, sz.multiply(sz))


def _sort_cost(sizes: SizeEstimator | None, node: EstimateNode, elem: str) -> CallEstimate:
    sz = estimate_size(sizes, node)
    factor = 2.0
    if elem in ("string", "bytes"):
        factor += STRING_TRAVERSAL_COST_FACTOR
    return _allocating_list_call(factor, sz.multiply(sz))


def _list_sort(elem: str) -> OverloadEstimator:
    def estimate(sizes: SizeEstimator | None, target: EstimateNode | None,
                 args: Sequence[EstimateNode]) -> CallEstimate | None:
        if target is None or args:
            return None
        return _sort_cost(sizes, target, elem)

    return estimate


def _list_sort_by(elem: str) -> OverloadEstimator:
    def estimate(sizes: SizeEstimator | None, target: EstimateNode | None,
                 args: Sequence[EstimateNode]) -> CallEstimate | None:
        if target is None or len(args) != 1:
            return None
        return _sort_cost(sizes, args[0], elem)  # the sort-key list is what gets compared

    return estimate


_COMPARABLE_TYPE_NAMES = {
    "int": "int", "uint": "uint", "double": "double", "bool": "bool",
    "google.protobuf.Duration": "duration", "google.protobuf.Timestamp": "timestamp",
    "string": "string", "bytes": "bytes",
}


def _default_overload_estimators() -> dict[str, OverloadEstimator]:
    table: dict[str, OverloadEstimator] = {
        "list_sets_contains_list": _sets_estimator(1),
        "list_sets_intersects_list": _sets_estimator(1),
        # equivalence may need two m·n comparisons, one per direction
        "list_sets_equivalent_list": _sets_estimator(2),
        "list_slice": _list_slice,
        "list_flatten": _list_flatten,
        "list_flatten_int": _list_flatten,
        "lists_range": _lists_range,  # cel-go's overload id
        "list_range": _lists_range,  # cel-cpp's id for the same function
        "list_reverse": _list_reverse,
        "list_distinct": _list_distinct,
    }
    for type_name, elem in _COMPARABLE_TYPE_NAMES.items():
        table[f"list_{type_name}_sort"] = _list_sort(elem)
        table[f"list_{type_name}_sortByAssociatedKeys"] = _list_sort_by(elem)
    return table


DEFAULT_OVERLOAD_ESTIMATORS: Mapping[str, OverloadEstimator] = MappingProxyType(
    _default_overload_estimators())
"""Overload estimators registered by cel-go ext.Sets and ext.Lists at version 3 (read-only)."""
