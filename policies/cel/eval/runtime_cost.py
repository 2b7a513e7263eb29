"""cel-go's runtime cost of one evaluation, computed by a tree-walking interpreter.

Why an interpreter: cel-cpp (under cel-expr-python) evaluates CEL but tracks no cost, and cel-go's
runtime cost is not a function of the expression alone: it depends on which branches run, how
many times a comprehension loops and how large the strings and lists are that each call receives.
So we re-walk the checked AST the way cel-go's interpreter plans and evaluates it, and charge
exactly what cel-go's `CostObserver` charges (reference §5.4, read against cel-go
`interpreter/{planner,interpretable,attributes,decorators,runtimecost}.go`):

* an *attribute* (a variable with its chain of field selections and indexes) is one cel-go
  instruction: the instruction costs 1 when evaluated and every qualifier costs 1 when applied,
  also on `dyn` values and also when it fails. An optional qualifier (`.?f`, `[?k]`) is charged
  only when the field is present. A presence test `has(a.b)` charges its qualifiers but not the
  attribute itself (Kubernetes' `PresenceTestHasCost(false)`);
* the branches of `?:` and an attribute used as an index (`a[b.c]`) are *resolved*, not evaluated,
  so their base variable is free (cel-go's `conditionalAttribute` / `attrQualifier`); anything
  else used as an operand of a select or index is wrapped in a relative attribute costing 1;
* constants cost 0; list/map literals 10/30 once built (also when an element fails); `&&`, `||`,
  `?:`, comprehension loops, `or`/`orValue` cost nothing themselves and short-circuit with CEL's
  commutative error semantics; a comprehension stops when its condition evaluates to `false`;
* a call costs what `cost_k8s_runtime.call_cost` says for its overload id and *actual* argument
  and result values, also when it returns an error; a call with three or more arguments that
  stops at an erroneous argument is not charged (cel-go cannot find its arguments on the stack);
* with cel-go's `OptOptimize` (on in Kubernetes, `optimize=True`), list and map literals of
  constants and type conversions of constants are folded at plan time and cost 0, and `x in
  [constants]` becomes a set lookup that costs nothing beyond `x`.

Every function's *semantics* are delegated through a `CallBridge` (cel-expr-python in production,
see `runtime.py`), so no CEL function is re-implemented here, with these exceptions: control
flow, attribute resolution (map and list access), literal construction, list concatenation for
comprehension accumulators (to keep `map`/`filter` linear), the macro helper
`@not_strictly_false`, `size` (read off the value, so a shared list is never handed over
whole), and where cel-cpp alone would disagree with cel-go: `cel.@mapInsert` (`transformMap`),
`string.format` (`k8s_library.strings_format`), `==`/`!=`/`in` on Quantity and Semver values
(by value, as the program after `k8s_library.equality`'s rewrite) and `type()` of library
values. Values follow `jsonvalue`'s model and mirror cel-cpp's semantics, so the
value the interpreter computes agrees with the one cel-expr-python computes for the whole
expression, except where the walk computes a call the program cannot compute faithfully (a
`format` rendering, a `cel.@mapInsert` of values Python cannot carry, an optional that must not
reach Python code): `CostOutcome.program_unsafe` then tells the caller to use the walk's value.

Evaluation stops as soon as the running cost exceeds the limit (cel-go raises `operation
cancelled: actual cost limit exceeded` at that point), and a separate step budget bounds the work
of loops cel-go prices at zero per iteration. What cel-go's cost does not bound (a call's work
and result, priced after it ran or by top-level sizes) is measured before the call runs
(`runtime_bounds`), and the CPU clock has the last word (`runtime_steps.MAX_CPU_SECONDS`).

This module is the public API and the planner (checked AST to steps, cached per AST and bridge);
the steps it builds, which evaluate and charge, are in `runtime_steps`, and the plan-time folding
of constant type conversions asks `runtime_conversions` for cel-go's verdict.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ...core.cache import BoundedCache
from ..common.ast import CheckedAst, Constant, ConstKind, Node, NodeKind
from ..common.jsonvalue import (
    NONE,
    Duration,
    ErrorValue,
    Opaque,
    OptionalValue,
    Timestamp,
    TypeValue,
    UInt,
)
from ..common.types import CelType, Primitive, TypeKind
from ..k8s_library._types import TAG_FORMAT, TAG_OPTIONAL
from ..k8s_library.comprehensions import MAP_INSERT
from ..k8s_library.dra import DRA_INCLUDES_ID, MAX_INCLUDES_VALUES
from ..k8s_library.type_values import LIBRARY_TYPES
from .call_site import CallBridge, CallSite, PreparedCall, ResultKind
from .cost_k8s_runtime import (
    go_overload_id,
    kubernetes_receiver_type,
    kubernetes_result_type,
)
from .runtime_bounds import bulky
from .runtime_conversions import (
    CONVERSION_FUNCTIONS,
    conversion_verdict,
    folds_conversion,
)
from .runtime_library_values import (
    guard_library_values,
    nodes_reaching_library_values,
)
from .runtime_steps import (
    FIELD,
    INDEX,
    MAX_CPU_SECONDS,
    PRESENCE,
    RESULT,
    Attr,
    Call,
    CondBase,
    Const,
    ConstSetMembership,
    CostExceeded,
    Fail,
    Fold,
    Guard,
    ListStep,
    Logic,
    MapStep,
    Native,
    NotStrictlyFalse,
    OptionalOr,
    PlanError,
    PlanStep,
    Qual,
    RelBase,
    Run,
    TrackerPanic,
    UnsafeConst,
    Var,
    VarBase,
    WorkExceeded,
    build_list,
    build_map,
    library_kind,
    library_type_equality,
    map_insert_unfaithful,
    native_add_list,
    native_format,
    native_includes,
    native_index_of,
    native_map_insert,
    native_map_membership,
    native_size,
    optional_guard,
    scalar_equality,
    value_equality,
)

__all__ = [
    "COST_LIMIT_EXCEEDED",
    "PROGRAM_MAX_ITERATIONS",
    "CallBridge",
    "CallSite",
    "CostOutcome",
    "PreparedCall",
    "ResultKind",
    "plan_error",
    "track_cost",
]

#: cel-go's exact error text when the running cost passes the limit.
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"

_PLAN_CACHE_SIZE = 256

# The Kubernetes lists library's overloads of `indexOf` / `lastIndexOf` (the strings
# extension has its own).
_LIST_INDEX = frozenset({"list_a_index_of_int", "list_a_last_index_of_int"})


def _native_dra_includes(values: list[object]) -> object | None:
    """DRA's `includes` on values Python code cannot take, as `native_includes`; a list past
    DRA's limit is left to the library, which reports the limit."""
    target = values[0] if values else None
    if isinstance(target, list) and len(target) > MAX_INCLUDES_VALUES:
        return None
    return native_includes(values)


def _identity(values: list[object]) -> object | None:
    return values[0]


def _receiver_guard(type_name: str, other: Guard | None) -> Guard:
    """A guard tripping (no such overload, as cel-go's type guards answer) when the receiver is
    not a value of the library type `type_name`, or when `other` trips."""
    def guard(values: list[object]) -> bool:
        receiver = values[0] if values else None
        if not isinstance(receiver, Opaque) or receiver.type_name != type_name:
            return not isinstance(receiver, ErrorValue)
        return other is not None and other(values)
    return guard


_TYPE_TYPE = TypeValue("type")


def _type_of_type(values: list[object]) -> object | None:
    """`type(t)` of a type value is `type` (the engine cannot take the library types' values);
    anything else goes to the engine."""
    return _TYPE_TYPE if isinstance(values[0], TypeValue) else None


def _optional_value(values: list[object]) -> object | None:
    value = values[0]
    if not isinstance(value, OptionalValue):
        return None
    return value.value if value.has_value else ErrorValue("optional.none() dereference")


def _optional_has_value(values: list[object]) -> object | None:
    value = values[0]
    return value.has_value if isinstance(value, OptionalValue) else None


FORMAT_TYPE_NAME = "kubernetes.NamedFormat"

_CARRIER_OPTIONAL_OVERLOADS = frozenset({"format-named", "format-validate"})
"""The Kubernetes format library's calls whose optional results the engine carries as tagged
lists (`k8s_library.format`): the walk turns them into real optionals, so `orValue`, `or`,
`==` and the other optional functions work on them as in cel-go, and the walk's value is the
result."""


def _real_optional(value: object) -> object:
    """An optional carried as `[TAG_OPTIONAL]` / `[TAG_OPTIONAL, v]` as an `OptionalValue`
    (a format inside it as the format library's own value)."""
    token = value.token if isinstance(value, Opaque) else None
    if not isinstance(token, list) or not token or token[0] != TAG_OPTIONAL or len(token) > 2:
        return value
    if len(token) == 1:
        return NONE
    inner = token[1]
    if isinstance(inner, list) and len(inner) == 2 and inner[0] == TAG_FORMAT:
        inner = Opaque(FORMAT_TYPE_NAME, inner)
    return OptionalValue(inner, True)


def _index_of_offset(last: bool) -> Native:
    """ext.Strings' `indexOf(s, offset)` / `lastIndexOf(s, offset)` as cel-go computes them,
    in code points: a negative offset fails, an offset at or past the end finds nothing (-1,
    where cel-cpp fails), the empty string is found at the offset clamped to the end."""
    def native(values: list[object]) -> object | None:
        text, sub, offset = values
        if not isinstance(text, str) or not isinstance(sub, str) or isinstance(offset, bool) \
                or not isinstance(offset, int):
            return None
        if offset < 0:
            return ErrorValue(f"index out of range: {offset}")
        if not sub:
            return min(offset, len(text))
        if offset >= len(text):
            return -1
        if last:
            return text.rfind(sub, 0, min(offset, len(text) - len(sub)) + len(sub))
        return text.find(sub, offset)
    return native


def _library_equality_guard(inner: tuple[Native | None, Guard | None]) -> Native:
    """`lib == dyn(x)`: a Kubernetes library value's `Equal` answers `no such overload` for a
    value of another kind (`cidr(c) == dyn(1)`). A string may be another library value's
    carrier, so only values no carrier looks like are refused; the rest go to the inner native."""
    native = inner[0]

    def guarded(values: list[object]) -> object | None:
        other = values[1]
        if other is None or isinstance(other, bool | int | float | bytes | dict):
            return ErrorValue("no such overload")
        return native(values) if native is not None else None
    return guarded


def _split_empty(values: list[object]) -> object | None:
    """`''.split('')` (with any limit but 0) is `[]` in cel-go, as Go's `strings.SplitN`
    explodes an empty string into no parts; cel-cpp answers `['']`. Other splits go to the
    engine (None)."""
    if values[0] == "" and values[1] == "" and (len(values) < 3 or values[2] != 0):
        return []
    return None


def _substring(values: list[object]) -> object | None:
    """`s.substring(start, end)` within bounds, in code points as cel-go counts them (cel-cpp
    refuses `'a'.substring(0, 1)`); None (the engine words the error) otherwise."""
    text, start, end = values
    if isinstance(text, str) and type(start) is int and type(end) is int \
            and 0 <= start <= end <= len(text):
        return text[start:end]
    return None


_STRING_OFFSET_SEARCHES: dict[str, Native] = {
    "string_substring_int_int": _substring,
    "string_index_of_string_int": _index_of_offset(last=False),
    "string_last_index_of_string_int": _index_of_offset(last=True),
    "string_split_string": _split_empty,
    "string_split_string_int": _split_empty,
}


_GO_ZERO_TIME = re.compile(r"^0001-01-01T00:00:00(?:\.0+)?Z$")


def _of_non_zero(values: list[object]) -> object | None:
    """`optional.ofNonZeroValue` of a timestamp: cel-go's zero timestamp is Go's zero time,
    0001-01-01T00:00:00Z (`Timestamp.IsZeroValue`), where cel-cpp takes the Unix epoch. An
    optional has no zero value in cel-go (it is no `Zeroer`), so even `optional.none()` is
    wrapped, where cel-cpp unwraps it; a map is zero when empty. Other values go to the engine
    (None), whose zero values are cel-go's."""
    value = values[0]
    if isinstance(value, OptionalValue):
        return OptionalValue(value, True)
    if isinstance(value, dict):  # also a map whose keys the engine cannot receive
        return OptionalValue(value, True) if value else NONE
    if not isinstance(value, Timestamp):
        return None
    return NONE if _GO_ZERO_TIME.match(value.text) else OptionalValue(value, True)


# Optionals built and opened here: the bridge can export one level of optional only, so a
# nested optional (`optional.of(optional.none())`) would come back as an unreadable value.
_OPTIONAL_NATIVES: dict[str, Native] = {
    "optional_of": lambda values: OptionalValue(values[0], True),
    "optional_none": lambda _values: NONE,
    "optional_value": _optional_value,
    "optional_hasValue": _optional_has_value,
}


PROGRAM_MAX_ITERATIONS = 1000
"""Comprehension iterations after which the planned program is not run (`CostOutcome`): the
engine's comprehensions copy their list on every iteration, so its time and memory grow with
the square of the iterations; past this the walk's value is the result."""

_SHALLOW_NATIVES: frozenset[Native] = frozenset({_identity, native_size,
                                                 *_OPTIONAL_NATIVES.values()})
"""Natives that neither traverse nor copy their arguments' contents: their calls are not
measured against `runtime_bounds` (a shared list may be wrapped, counted or passed on)."""


@dataclass(frozen=True, slots=True)
class CostOutcome:
    """Result of the cost walk.

    `status`: `ok` (value computed), `cost_exceeded` (stopped above the limit; `cost` is the
    first running total above it, as cel-go reports), `work_exceeded` (the step budget ran out in
    loops cel-go prices at zero), `plan_error` (cel-go could not even build the program, e.g. a
    constant conversion that fails at plan time).

    `program_unsafe`: a call handed (or would have handed) Python code a value cel-expr-python
    cannot carry there faithfully, or at all (it crashes on optionals); the program must not
    run, and `value` is the evaluation's value.
    """

    status: Literal["ok", "cost_exceeded", "work_exceeded", "plan_error"]
    cost: int
    value: object = None
    message: str = ""
    program_unsafe: bool = False
    cpu_seconds: float = 0.0
    iterations: int = 0

    @property
    def program_affordable(self) -> bool:
        """Whether running the planned program stays within the evaluation's ceilings: not
        when the walk (which computed the same value, every call through the engine) used over
        a quarter of the CPU ceiling, since the program would redo the engine's share of that
        work where the ceiling cannot stop it; nor after more than
        `PROGRAM_MAX_ITERATIONS` comprehension iterations, since the engine's comprehensions
        build their lists by copying (time and memory quadratic in the iterations; figures in
        docs/performance.md, "Bounded evaluation")."""
        return (self.cpu_seconds <= MAX_CPU_SECONDS / 4
                and self.iterations <= PROGRAM_MAX_ITERATIONS)

    @property
    def run_program(self) -> bool:
        """Whether the caller may run the planned program for the value (else the walk's
        value is the result)."""
        return not self.program_unsafe and self.program_affordable


def track_cost(checked: CheckedAst, variables: Mapping[str, object], bridge: CallBridge, *,
               limit: int = 1_000_000, optimize: bool = True, kubernetes: bool = True,
               max_steps: int | None = None) -> CostOutcome:
    """Evaluate `checked` with cel-go's runtime cost tracking.

    `optimize` mirrors cel-go's `OptOptimize` (on in every Kubernetes program), `kubernetes`
    installs Kubernetes' call pricing. `max_steps` bounds loop iterations plus calls (default:
    four per unit of cost limit, at least 100,000).
    """
    steps = max_steps if max_steps is not None else max(100_000, 4 * limit)
    run = Run(dict(variables), limit, steps)
    try:
        root = _plan_for(checked, bridge, optimize, kubernetes)
        value = root.eval(run)
        if bulky((value,)):
            # every caller converts the result whole (the program's export, JSON, text)
            run.check_call(RESULT, [value])
    except PlanError as exc:
        return CostOutcome("plan_error", 0, message=str(exc))
    except CostExceeded:
        return CostOutcome("cost_exceeded", run.cost, message=COST_LIMIT_EXCEEDED)
    except TrackerPanic as exc:
        return CostOutcome("ok", run.cost, ErrorValue(str(exc)), program_unsafe=True)
    except WorkExceeded as exc:
        return CostOutcome("work_exceeded", run.cost, message=str(exc))
    except RecursionError:
        # cel-cpp's parser caps nesting far below Python's stack; this is a safety net.
        return CostOutcome("work_exceeded", run.cost,
                           message="evaluation stopped: the expression or a value nests too deeply")
    except MemoryError:
        # a safety net behind `runtime_bounds` (the engine's std::bad_alloc arrives as this)
        return CostOutcome("work_exceeded", run.cost,
                           message="evaluation stopped: out of memory")
    return CostOutcome("ok", run.cost, value, program_unsafe=run.unsafe,
                       cpu_seconds=run.cpu_used(), iterations=run.iterations)


def plan_error(checked: CheckedAst, bridge: CallBridge, *, kubernetes: bool = True,
               nodes: Sequence[Node] | None = None) -> tuple[str, int] | None:
    """Why cel-go could not build the program of `checked` with `OptOptimize` (message and the
    id of the node that failed, 0 if unknown), or None.

    cel-go folds type conversions of constants while planning (`int("x")`, `uint(-1)`, also in
    a branch that never runs), and a failing one makes `env.Program()` fail. The plan is
    cached, so a later `track_cost` of the same AST reuses it. Without a conversion of a
    constant among `nodes` (the AST's nodes, when the caller has them) nothing can fail.
    """
    if nodes is not None and not any(folds_conversion(n) for n in nodes):
        return None
    try:
        _plan_for(checked, bridge, True, kubernetes)
    except PlanError as exc:
        return str(exc), exc.node_id
    return None


# ------------------------------------------------------------------------------------------------
# Planning (cel-go's planner + decorators, reduced to what changes values or costs)
# ------------------------------------------------------------------------------------------------

_plans: BoundedCache[tuple[CheckedAst, CallBridge, bool, bool], PlanStep] = BoundedCache(
    "cel.eval.plans", _PLAN_CACHE_SIZE, lru=False)
"""Plans by (AST, bridge, optimize, kubernetes). ASTs and bridges compare by identity, and the
key holds them, so an entry's objects live as long as it does."""


def _plan_for(checked: CheckedAst, bridge: CallBridge, optimize: bool, kubernetes: bool
              ) -> PlanStep:
    """Plans are cached (bounded, oldest planned first out). A hit is lock-free and does not
    reorder the cache: it is on every evaluation, and a re-plan after eviction is cheap."""
    key = (checked, bridge, optimize, kubernetes)
    hit = _plans.get(key)
    if hit is not None:
        return hit
    root = _Planner(checked, bridge, optimize, kubernetes).plan(checked.root, frozenset())
    _plans.put(key, root)
    return root


class _Planner:
    def __init__(self, ast: CheckedAst, bridge: CallBridge, optimize: bool,
                 kubernetes: bool) -> None:
        self.ast = ast
        self.bridge = bridge
        self.optimize = optimize
        self.kubernetes = kubernetes
        # calls that may meet a Semver or Quantity answer as cel-go (runtime_library_values)
        self.reaching_library_values = nodes_reaching_library_values(ast) if kubernetes \
            else frozenset()

    def plan(self, n: Node, scope: frozenset[str]) -> PlanStep:
        kind = n.kind
        if kind is NodeKind.CONST:
            return Const(const_value(n.const))
        if kind is NodeKind.IDENT:
            return self._ident(n.id, n.name, scope)
        if kind is NodeKind.SELECT:
            return self._select(n, scope)
        if kind is NodeKind.CALL:
            return self._call(n, scope)
        if kind is NodeKind.LIST:
            return self._list(n, scope)
        if kind is NodeKind.STRUCT:
            return self._struct(n, scope)
        if kind is NodeKind.COMPREHENSION:
            return self._comprehension(n, scope)
        return Fail(f"unsupported expression #{n.id}")

    # --- identifiers and attributes ------------------------------------------------------------

    def _ident(self, node_id: int, name: str, scope: frozenset[str]) -> PlanStep:
        ref = self.ast.references.get(node_id)
        if ref is not None and ref.value is not None:
            return Const(const_value(ref.value))
        if name in scope:
            return Var(name)
        resolved = ref.name if ref is not None and ref.name else name
        if self.ast.type_of(node_id).kind is TypeKind.TYPE:
            return Const(TypeValue(resolved))
        return Var(resolved)

    def _select(self, n: Node, scope: frozenset[str]) -> PlanStep:
        if n.id in self.ast.references and not n.test_only:
            return self._ident(n.id, n.field, scope)
        assert n.operand is not None
        operand = _as_attr(self.plan(n.operand, scope), watched=True)
        if n.test_only:
            return Attr(operand.base, (*operand.quals, Qual(PRESENCE, key=n.field)),
                         watched=False)
        return Attr(operand.base, (*operand.quals, Qual(FIELD, key=n.field)),
                     operand.watched)

    def _index(self, target: PlanStep, index: PlanStep, optional: bool, field: bool) -> PlanStep:
        operand = _as_attr(target, watched=True)
        kind = FIELD if field else INDEX
        if isinstance(index, Const):
            qual = Qual(kind, key=index.value, optional=optional)
        elif isinstance(index, Attr | Var):
            qual = Qual(kind, attr=_as_attr(index, watched=False), optional=optional)
        else:
            qual = Qual(kind, step=index, optional=optional)
        return Attr(operand.base, (*operand.quals, qual), operand.watched)

    # --- calls ---------------------------------------------------------------------------------

    def _call(self, n: Node, scope: frozenset[str]) -> PlanStep:
        fn = n.function
        arg_nodes = ([n.target] if n.target is not None else []) + list(n.args)
        args = tuple(self.plan(a, scope) for a in arg_nodes)
        candidates = self.ast.overload_ids(n.id)
        if fn == "_&&_" and len(args) == 2:
            return Logic(*args, absorbing=False)
        if fn == "_||_" and len(args) == 2:
            return Logic(*args, absorbing=True)
        if fn == "_?_:_" and len(args) == 3:
            return Attr(CondBase(args[0], _as_attr(args[1], watched=False),
                                   _as_attr(args[2], watched=False)), (), watched=False)
        if fn in ("_[_]", "_[?_]") and len(args) == 2:
            return self._index(args[0], args[1], fn == "_[?_]", field=False)
        if fn == "_?._" and len(args) == 2:
            return self._index(args[0], args[1], True, field=True)
        if fn == "@not_strictly_false" and len(args) == 1:
            return NotStrictlyFalse(args[0])
        overload = go_overload_id(fn, candidates)
        result_type = self.ast.type_of(n.id)
        declared = kubernetes_result_type(overload) if self.kubernetes else None
        if declared is not None:
            site = CallSite(fn, candidates, n.target is not None, len(args), "opaque", declared)
        else:
            site = CallSite(fn, candidates, n.target is not None, len(args),
                            result_kind(result_type), _opaque_name(result_type))
        if fn in ("or", "orValue") and len(args) == 2 and overload in (
                "", "optional_or_optional", "optional_orValue_value"):
            return OptionalOr(args[0], args[1], fn == "orValue", self.bridge.prepare(site))
        if self.optimize:
            folded = self._fold_call(n.id, site, overload, args)
            if folded is not None:
                return folded
        if fn == "format" and n.target is not None and len(n.args) == 1:
            return Call(site, args, self.bridge.prepare(site), native_format, self.kubernetes,
                         overrides=True)
        if overload in _CARRIER_OPTIONAL_OVERLOADS:
            prepared = self.bridge.prepare(site)
            return Call(site, args, prepared, lambda values: _real_optional(prepared.call(values)),
                        self.kubernetes, self._python_guard(fn), overrides=True)
        if fn == "type" and n.target is None and len(n.args) == 1 \
                and self.ast.type_of(n.args[0].id).kind is TypeKind.TYPE:
            return Call(site, args, self.bridge.prepare(site), _type_of_type, self.kubernetes,
                        overrides=True)
        if overload in _STRING_OFFSET_SEARCHES:
            return Call(site, args, self.bridge.prepare(site), _STRING_OFFSET_SEARCHES[overload],
                        self.kubernetes, overrides=True)
        if overload == "optional_ofNonZeroValue":
            return Call(site, args, self.bridge.prepare(site), _of_non_zero,
                        self.kubernetes, self._python_guard(fn), overrides=True)
        native, guard = self._native(n, fn, overload)
        receiver = self._library_receiver(n, candidates)
        if receiver is not None:
            guard = _receiver_guard(receiver, guard)
        if self.kubernetes and any(a.id in self.reaching_library_values for a in arg_nodes):
            native, guard = guard_library_values(fn, candidates, native, guard)
        return Call(site, args, self.bridge.prepare(site), native, self.kubernetes, guard,
                    shallow=native in _SHALLOW_NATIVES)

    def _library_receiver(self, n: Node, candidates: Sequence[str]) -> str | None:
        """The Kubernetes library type every candidate overload of a member call is declared
        on (None if any is not): our engine carries URLs, IPs, CIDRs and quantities as
        strings, so only the walk can tell `url(s).getScheme()` from `s.getScheme()`."""
        if n.target is None or not candidates or not self.kubernetes:
            return None
        receivers = {kubernetes_receiver_type(c) for c in candidates}
        if len(receivers) != 1 or None in receivers:
            return None
        return receivers.pop()

    def _native(self, n: Node, fn: str, overload: str) -> tuple[Native | None, Guard | None]:
        """What the walk computes itself for this call, and when the program must not run."""
        if overload == "add_list" or (fn == "_+_" and "add_list" in self.ast.overload_ids(n.id)):
            # also behind `dyn`: two lists are joined here (and counted: `Run.grow`)
            return native_add_list, None
        if fn == "size" and len(n.args) + (n.target is not None) == 1:
            return native_size, self._python_guard(fn)
        if fn == "dyn" and n.target is None and len(n.args) == 1:
            # `dyn` is the identity: computed here, an optional stays one (the bridge could
            # not export it and the guards below would no longer see it).
            return _identity, None
        optional = _OPTIONAL_NATIVES.get(overload)
        if optional is not None:
            # On a receiver that is not an optional (`dyn([optional.none()]).value()`) the
            # native declines and the call goes to the engine, whose `value`/`hasValue` for
            # the format library's carrier (a list) is Python code: guarded like any other.
            return optional, self._python_guard(fn)
        if fn in ("indexOf", "lastIndexOf") and _LIST_INDEX & set(self.ast.overload_ids(n.id)):
            kinds = getattr(self.bridge, "python_parameter_kinds", None)
            signatures = kinds(fn) if callable(kinds) else ()
            return native_index_of(fn == "lastIndexOf"), optional_guard(signatures)
        if overload == "list_includes_dyn_dyn":
            return native_includes, self._python_guard(fn)
        if overload == DRA_INCLUDES_ID:
            return _native_dra_includes, self._python_guard(fn)
        if fn == MAP_INSERT:
            return native_map_insert, map_insert_unfaithful
        if fn == "type" and n.target is None and len(n.args) == 1:
            arg_type = self.ast.type_of(n.args[0].id)
            if arg_type.kind is TypeKind.ABSTRACT and arg_type.name in LIBRARY_TYPES:
                # As the program's renamed `type()`: the static library type, by name.
                value = TypeValue(arg_type.name)
                return (lambda _values: value), None
        if fn == "_==_" and n.target is None and len(n.args) == 2:
            left_type = self.ast.type_of(n.args[0].id)
            if left_type.kind is TypeKind.ABSTRACT and left_type.name in LIBRARY_TYPES \
                    and self.ast.type_of(n.args[1].id).kind is TypeKind.DYN:
                return _library_equality_guard(self._native_equality(n, fn)), None
        return self._native_equality(n, fn)

    def _native_equality(self, n: Node, fn: str) -> tuple[Native | None, Guard | None]:
        if fn in ("_==_", "_!=_", "@in") and n.target is None and len(n.args) == 2:
            left = library_kind(self.ast.type_of(n.args[0].id))
            right_type = self.ast.type_of(n.args[1].id)
            if fn == "@in":
                right = library_kind(right_type.elem) if right_type.kind is TypeKind.LIST \
                    and right_type.params else None
            else:
                right = library_kind(right_type)
            if left is not None and left == right:
                return value_equality(fn, left), None
            if fn != "@in" and any(self.ast.type_of(a.id).kind in (TypeKind.TYPE, TypeKind.DYN)
                                   for a in n.args):
                return library_type_equality(fn == "_==_"), None
            if fn != "@in":
                return scalar_equality(fn == "_==_"), None
        if fn == "@in":
            return native_map_membership, self._python_guard(fn)
        return None, self._python_guard(fn)

    def _python_guard(self, fn: str) -> Guard | None:
        """`optional_guard` of the Python overloads of `fn`, if it has any."""
        kinds = getattr(self.bridge, "python_parameter_kinds", None)
        signatures = kinds(fn) if callable(kinds) else ()
        return optional_guard(signatures) if signatures else None

    def _fold_call(self, node_id: int, site: CallSite, overload: str, args: tuple[PlanStep, ...]
                   ) -> PlanStep | None:
        if site.function in CONVERSION_FUNCTIONS and len(args) == 1 and isinstance(args[0], Const):
            verdict = conversion_verdict(site.function, args[0].value)
            if isinstance(verdict, str):
                raise PlanError(verdict, node_id)
            value = self.bridge.prepare(site).call([args[0].value])
            if isinstance(value, ErrorValue):
                if verdict is False:
                    raise PlanError(value.message, node_id)
                # cel-go converts it, cel-cpp cannot (`duration("1µs")`): not folded, so the
                # program fails only if it gets there.
                return None
            return Const(value)
        if overload == "in_list" and len(args) == 2 and isinstance(args[1], Const):
            items = args[1].value
            if isinstance(items, list):
                if not items:
                    return Const(False)
                if all(_is_primitive(v) for v in items):
                    return ConstSetMembership(args[0], items, self.bridge.prepare(site))
        return None

    # --- literals ------------------------------------------------------------------------------

    def _list(self, n: Node, scope: frozenset[str]) -> PlanStep:
        elements = tuple(self.plan(e, scope) for e in n.elements)
        optional = frozenset(n.optional_indices)
        if self.optimize and all(isinstance(e, Const) for e in elements):
            value = build_list([e.value for e in elements if isinstance(e, Const)], optional)
            # cel-go folds the literal into a constant even when building it fails (the error
            # is then the constant's value), unlike a failing conversion.
            return Const(value)
        return ListStep(elements, optional)

    def _struct(self, n: Node, scope: frozenset[str]) -> PlanStep:
        if n.message_name:
            return Fail(f"message construction is not supported: {n.message_name}")
        entries: list[tuple[PlanStep, PlanStep, bool]] = []
        for e in n.entries:
            if e.key is None:
                return Fail("map entry without a key")
            entries.append((self.plan(e.key, scope), self.plan(e.value, scope), e.optional_entry))
        if self.optimize and all(isinstance(k, Const) and isinstance(v, Const)
                                 for k, v, _ in entries):
            value, pruned = build_map([(k.value, v.value, o) for k, v, o in entries
                                       if isinstance(k, Const) and isinstance(v, Const)])
            return UnsafeConst(value) if pruned else Const(value)  # an error value too, as for lists
        return MapStep(tuple(entries))

    def _comprehension(self, n: Node, scope: frozenset[str]) -> PlanStep:
        parts = (n.iter_range, n.accu_init, n.loop_condition, n.loop_step, n.result)
        if any(p is None for p in parts):
            return Fail("incomplete comprehension")
        assert n.iter_range is not None and n.accu_init is not None
        assert n.loop_condition is not None and n.loop_step is not None and n.result is not None
        loop_scope = scope | {v for v in (n.iter_var, n.iter_var2, n.accu_var) if v}
        result_scope = scope | ({n.accu_var} if n.accu_var else set())
        return Fold(n, (self.plan(n.iter_range, scope), self.plan(n.accu_init, scope),
                         self.plan(n.loop_condition, loop_scope),
                         self.plan(n.loop_step, loop_scope), self.plan(n.result, result_scope)))


def _as_attr(step: PlanStep, *, watched: bool) -> Attr:
    """The attribute cel-go builds around an operand of a select, index or `?:` branch."""
    if isinstance(step, Attr):
        if watched:
            return step
        return Attr(step.base, step.quals, watched=False)
    if isinstance(step, Var):
        return Attr(VarBase(step.name), (), watched)
    return Attr(RelBase(step), (), watched)


def _is_primitive(value: object) -> bool:
    """cel-go `types.IsPrimitiveType`: bool, bytes, double, int, string, uint."""
    return isinstance(value, bool | bytes | float | int | str)


def result_kind(t: CelType) -> ResultKind:
    """How a bridge should decode a call result of checked type `t`."""
    if t.is_optional:
        return "optional"
    if _opaque_name(t):
        return "opaque"
    return "plain" if _plain_type(t) else "any"


def _opaque_name(t: CelType) -> str:
    if (t.kind is TypeKind.ABSTRACT and not t.is_optional) or t.kind is TypeKind.MESSAGE:
        return t.name
    return ""


def _plain_type(t: CelType) -> bool:
    if t.kind is TypeKind.NULL:
        return True
    if t.kind is TypeKind.PRIMITIVE:
        return t.primitive in (Primitive.BOOL, Primitive.INT64, Primitive.DOUBLE, Primitive.STRING)
    if t.kind is TypeKind.LIST:
        return _plain_type(t.elem)
    if t.kind is TypeKind.MAP:
        return (t.key.kind is TypeKind.PRIMITIVE and t.key.primitive is Primitive.STRING
                and _plain_type(t.value))
    return False


def const_value(c: Constant | None) -> object:
    """Interpreter value of a literal."""
    if c is None:
        return ErrorValue("missing constant")
    kind, value = c.kind, c.value
    if kind is ConstKind.NULL:
        return None
    if kind is ConstKind.UINT:
        assert isinstance(value, int)
        return UInt(value)
    if kind in (ConstKind.BOOL, ConstKind.INT, ConstKind.DOUBLE, ConstKind.STRING,
                ConstKind.BYTES):
        return value
    if kind in (ConstKind.DURATION, ConstKind.TIMESTAMP):
        assert isinstance(value, tuple)
        seconds, nanos = value
        if kind is ConstKind.DURATION:
            return Duration(f"{seconds + nanos / 1e9:g}s")
        return Timestamp(_epoch_text(seconds, nanos))
    return ErrorValue("unsupported constant")


def _epoch_text(seconds: int, nanos: int) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    base = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{nanos:09d}Z".replace(".000000000Z", "Z") if nanos else f"{base}Z"
