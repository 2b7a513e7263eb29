"""The evaluation steps of the runtime cost walk: what `runtime_cost`'s planner builds and runs.

Why apart from the planner: planning reads the checked AST once per program and decides what
cel-go's planner decides (which attributes group, which constants fold, which calls are computed
here), while these steps run on every evaluation and see only values. Each `PlanStep` mirrors a cel-go
interpretable and charges what cel-go's `CostObserver` charges for it (the rules are listed in
`runtime_cost`'s docstring): attributes and their qualifiers, `&&`/`||`/`?:` and optional
`or`/`orValue`, calls (with the natives computed here rather than through the bridge), list and
map literals, and comprehensions. `Run` is one evaluation's state: variables, running cost and
step budget; it raises `CostExceeded` / `WorkExceeded` when one runs out. The planner raises
`PlanError` when cel-go could not build the program.

Values follow `jsonvalue`'s model and mirror cel-cpp's semantics. Nothing here is public API:
callers go through `runtime_cost.track_cost`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from ..common.ast import Node
from ..common.jsonvalue import (
    NONE,
    BoolKey,
    Duration,
    ErrorValue,
    LiteralKey,
    Opaque,
    OptionalValue,
    Timestamp,
    TypeValue,
    UInt,
)
from ..common.types import CelType, TypeKind
from ..cost.estimate import LIST_CREATE_BASE_COST, MAP_CREATE_BASE_COST
from ..k8s_library.comprehensions import duplicate_key_message
from ..k8s_library.equality import equal_by_type
from ..k8s_library.strings_format import FormatProblem
from ..k8s_library.strings_format import render as render_format
from ..k8s_library.type_values import LIBRARY_TYPES
from .cost_k8s_runtime import go_overload_id, priced_by_result, pricer_for
from .runtime_bounds import (
    BULKY_TEXT,
    MAX_HANDLED_CHARS,
    MAX_HANDLED_ELEMENTS,
    bulky,
    call_seconds,
    handled_size,
    output_bound,
)
from .runtime_conversions import GO_UNCONVERTED
from .runtime_library_values import (
    DefaultingMap,
    go_type_name,
    in_cel_go_words,
    iteration_refusal,
    lister_assertion_panic,
    set_membership,
    walk_equal,
)

if TYPE_CHECKING:
    from .call_site import CallSite, PreparedCall

_MACRO_ACCUMULATORS = frozenset({"@result", "__result__"})


# ------------------------------------------------------------------------------------------------
# Run state
# ------------------------------------------------------------------------------------------------


class CostExceeded(Exception):
    """Internal: the running cost passed the limit (cel-go panics with EvalCancelledError)."""


class WorkExceeded(Exception):
    """Internal: a work budget of the evaluation is exhausted (the message says which)."""


class TrackerPanic(Exception):
    """Internal: a cel-go cost tracker panicked on an argument; cel-go's program recovers the
    panic into an `internal error` that ends the whole evaluation (see `Call`)."""


class PlanError(Exception):
    """Internal: cel-go would fail to build the program (at node `node_id`, 0 if unknown)."""

    def __init__(self, message: str, node_id: int = 0) -> None:
        super().__init__(message)
        self.node_id = node_id


_MISSING = object()

MAX_COPIED_ELEMENTS = 1_000_000
"""List elements one evaluation may copy into new lists (`Run.grow`): cel-go joins lists lazily
at cost 1, so its cost limit does not stop `cel.bind(x, x + x, ...)` doubling; this bounds the
memory the walk and the program then use (a few tens of MB)."""

MAX_CPU_SECONDS = 1.0
"""CPU time (of the evaluating thread) one evaluation may use: the last resort behind the cost
limit and the step and copy budgets, for whatever else turns out slow."""

_CPU_STOP_MARGIN = 0.05
"""How much earlier than `MAX_CPU_SECONDS` the evaluation is stopped: the clock is read only
every `_CPU_CHECK_EVERY` steps, and the steps between two reads, plus unwinding, must still end
within the ceiling the evaluation promises."""

_CPU_CHECK_EVERY = 256
"""Steps between two looks at the thread's CPU clock (a look is a system call, too dear for
every step)."""

RESULT = "result"
"""`Run.check_call`'s name for the evaluation's result (which every caller converts whole)."""


class Run:
    __slots__ = ("copied", "cost", "cpu_deadline", "iterations", "limit", "max_steps",
                 "measured", "next_cpu_check", "steps", "unsafe", "vars")

    def __init__(self, variables: dict[str, object], limit: int, max_steps: int) -> None:
        self.vars = variables
        self.limit = limit
        self.max_steps = max_steps
        self.cost = 0
        self.steps = 0
        self.copied = 0
        self.iterations = 0
        self.measured = False
        self.unsafe = False
        self.cpu_deadline = time.thread_time() + MAX_CPU_SECONDS - _CPU_STOP_MARGIN
        self.next_cpu_check = _CPU_CHECK_EVERY

    def cpu_used(self) -> float:
        """CPU seconds (of this thread) the evaluation has used so far; 0 for one of fewer
        than `_CPU_CHECK_EVERY` steps and no call on a large value (`check_call`), which
        cannot have used a measurable share of the ceiling (and reading the clock is a visible
        share of a typical extractor's evaluation)."""
        if self.steps < _CPU_CHECK_EVERY and not self.measured:
            return 0.0
        return time.thread_time() - (self.cpu_deadline - MAX_CPU_SECONDS + _CPU_STOP_MARGIN)

    def charge(self, amount: int) -> None:
        self.cost += amount
        if self.cost > self.limit:
            raise CostExceeded

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise WorkExceeded(f"evaluation stopped after {self.max_steps:,} steps")
        if self.steps >= self.next_cpu_check:
            self.next_cpu_check = self.steps + _CPU_CHECK_EVERY
            if time.thread_time() > self.cpu_deadline:
                raise WorkExceeded(f"evaluation stopped after {MAX_CPU_SECONDS:g} s of CPU")

    def grow(self, elements: int) -> None:
        """Count `elements` copied into a new list against `MAX_COPIED_ELEMENTS`."""
        self.copied += elements
        if self.copied > MAX_COPIED_ELEMENTS:
            raise WorkExceeded(f"evaluation stopped after copying {MAX_COPIED_ELEMENTS} list "
                               f"elements (lists this large are joined without copying by cel-go)")
        self.tick()

    def check_call(self, function: str, values: list[object]) -> None:
        """Refuse a call, before it runs, that would take plus build more than
        `MAX_HANDLED_ELEMENTS` elements or `MAX_HANDLED_CHARS` characters (`runtime_bounds`),
        or whose size predicts it would take the evaluation past `MAX_CPU_SECONDS` (a step
        looks at the clock only every `_CPU_CHECK_EVERY` steps; a call this large looks now)."""
        self.measured = True
        elements, chars = handled_size(values)
        extra = None
        if elements <= MAX_HANDLED_ELEMENTS and chars <= MAX_HANDLED_CHARS:
            extra = output_bound(function, values, elements, chars)
        if extra is not None:
            elements += extra[0]
            chars += extra[1]
        what = "the result" if function == RESULT else f"{function}()"
        if elements > MAX_HANDLED_ELEMENTS:
            raise WorkExceeded(f"evaluation stopped: {what} would hold more than "
                               f"{MAX_HANDLED_ELEMENTS:,} list elements and map entries")
        if chars > MAX_HANDLED_CHARS:
            raise WorkExceeded(f"evaluation stopped: {what} would hold more than "
                               f"{MAX_HANDLED_CHARS:,} characters")
        now = time.thread_time()
        if now + call_seconds(function, elements, chars) > self.cpu_deadline:
            if now > self.cpu_deadline:
                raise WorkExceeded(f"evaluation stopped after {MAX_CPU_SECONDS:g} s of CPU")
            raise WorkExceeded(f"evaluation stopped: {what} would take the evaluation past "
                               f"{MAX_CPU_SECONDS:g} s of CPU")

    def lookup(self, name: str) -> object:
        value = self.vars.get(name, _MISSING)
        if value is _MISSING:
            return ErrorValue(f"no such attribute(s): {name}")
        if type(value) is _PendingAccumulator:
            value = value.force(self, name)
        return value


class _PendingAccumulator:
    """A comprehension's accumulator before its first use.

    cel-go's `folder` evaluates the accumulator's initial expression only when the accumulator
    is first read (`folder.ResolveName`), in the scope outside the loop. For the standard
    macros the initial value is a constant, so that changes nothing; for `cel.bind(x, init,
    body)` it means `init` is evaluated (and charged) only if `body` reads `x`, and at that
    point of the evaluation.
    """

    __slots__ = ("fold", "outer", "value")

    def __init__(self, fold: Fold, outer: Sequence[object]) -> None:
        self.fold = fold
        self.outer = outer  # the values of (accu_var, iter_var, iter_var2) outside the loop
        self.value: object = _MISSING

    def force(self, rt: Run, name: str) -> object:
        if self.value is not _MISSING:
            # Evaluated once: a nested binding's initialiser may read this one again after
            # the scope it was stored in was restored.
            scope_value = rt.vars.get(name, _MISSING)
            if scope_value is self:
                rt.vars[name] = self.value
            return self.value
        fold, scope = self.fold, rt.vars
        names = (fold.accu_var, fold.iter_var, fold.iter_var2)
        current = [scope.get(n, _MISSING) if n else _MISSING for n in names]
        _restore(scope, names, self.outer)
        try:
            value = fold.accu_init.eval(rt)
        finally:
            _restore(scope, names, current)
        if fold.accu_var in _MACRO_ACCUMULATORS and isinstance(value, list | dict) and not value:
            # Only macro accumulators (which user text cannot name) may grow in place.
            value = _Accumulator() if isinstance(value, list) else _MapAccumulator()
        self.value = value
        scope[name] = value
        return value


# ------------------------------------------------------------------------------------------------
# Plan steps
# ------------------------------------------------------------------------------------------------


class PlanStep:
    __slots__ = ()

    def eval(self, rt: Run) -> object:
        raise NotImplementedError


class Const(PlanStep):
    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def eval(self, rt: Run) -> object:
        return self.value


class UnsafeConst(Const):
    """A constant the program computes otherwise (see `build_map`): evaluating it marks the
    run `unsafe`, so the walk's value stands."""

    __slots__ = ()

    def eval(self, rt: Run) -> object:
        rt.unsafe = True
        return self.value


class Fail(PlanStep):
    """A construct the interpreter cannot evaluate; yields an error value."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def eval(self, rt: Run) -> object:
        return ErrorValue(self.message)


class Var(PlanStep):
    """A variable with no qualifiers: an attribute costing 1."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def eval(self, rt: Run) -> object:
        value = rt.lookup(self.name)
        rt.charge(1)
        return value


# --- attributes -----------------------------------------------------------------------------------

FIELD, INDEX, PRESENCE = 0, 1, 2


class Qual:
    """One qualifier: a field, a constant key, an attribute key or a computed key."""

    __slots__ = ("attr", "key", "kind", "optional", "step")

    def __init__(self, kind: int, *, key: object = None, attr: Attr | None = None,
                 step: PlanStep | None = None, optional: bool = False) -> None:
        self.kind = kind
        self.key = key
        self.attr = attr
        self.step = step
        self.optional = optional

    def key_value(self, rt: Run) -> object:
        if self.attr is not None:
            return self.attr.resolve(rt)
        if self.step is not None:
            return self.step.eval(rt)
        return self.key


class _Base:
    __slots__ = ()

    def resolve(self, rt: Run) -> object:
        raise NotImplementedError


class VarBase(_Base):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def resolve(self, rt: Run) -> object:
        return rt.lookup(self.name)


class RelBase(_Base):
    """Relative attribute: the operand is evaluated (with its own costs)."""

    __slots__ = ("step",)

    def __init__(self, step: PlanStep) -> None:
        self.step = step

    def resolve(self, rt: Run) -> object:
        return self.step.eval(rt)


class CondBase(_Base):
    """`c ? t : f`: the chosen branch is resolved, so its base variable is not charged."""

    __slots__ = ("cond", "falsy", "truthy")

    def __init__(self, cond: PlanStep, truthy: Attr, falsy: Attr) -> None:
        self.cond = cond
        self.truthy = truthy
        self.falsy = falsy

    def resolve(self, rt: Run) -> object:
        c = self.cond.eval(rt)
        if c is True:
            return self.truthy.resolve(rt)
        if c is False:
            return self.falsy.resolve(rt)
        if isinstance(c, ErrorValue):
            return c
        return ErrorValue("no such overload")  # cel-go's words for a condition that is no bool


class Attr(PlanStep):
    """An attribute: a base plus qualifiers, evaluated as one cel-go instruction."""

    __slots__ = ("base", "keys", "quals", "watched")

    def __init__(self, base: _Base, quals: tuple[Qual, ...], watched: bool) -> None:
        self.base = base
        self.quals = quals
        self.watched = watched
        # Constant, non-optional field/index keys take a fast path (the common `a.b.c`).
        simple = all(q.attr is None and q.step is None and not q.optional
                     and q.kind != PRESENCE for q in quals)
        self.keys = tuple((q.key, q.kind) for q in quals) if simple and quals else None

    def eval(self, rt: Run) -> object:
        value = self.resolve(rt)
        if self.watched:
            rt.charge(1)
        return value

    def resolve(self, rt: Run) -> object:
        obj = self.base.resolve(rt)
        keys = self.keys
        if keys is not None and not isinstance(obj, OptionalValue | ErrorValue):
            for key, kind in keys:
                rt.charge(1)
                if type(obj) is dict and type(key) is str:
                    found = obj.get(key, _MISSING)
                    if found is _MISSING:
                        return ErrorValue(f"no such key: {key}")
                    obj = found
                    continue
                ok, value = _qualify(obj, key, kind)
                if not ok:
                    return value if isinstance(value, ErrorValue) else _missing(obj, key)
                obj = value
            return obj
        if not self.quals:
            return obj
        return _apply_qualifiers(rt, obj, self.quals)


def _apply_qualifiers(rt: Run, obj: object, quals: tuple[Qual, ...]) -> object:
    """cel-go `applyQualifiers` with the observer's charges (see `runtime_cost`'s docstring)."""
    if isinstance(obj, ErrorValue):
        return obj
    optional = False
    if isinstance(obj, OptionalValue):
        if not obj.has_value:
            return obj
        obj, optional = obj.value, True
    for q in quals:
        optional = optional or q.optional
        key = q.key_value(rt)
        if isinstance(key, ErrorValue):
            if not optional:
                rt.charge(1)
            return key
        if q.kind == PRESENCE:
            rt.charge(1)
            return _presence(obj, key)
        found, value = _qualify(obj, key, q.kind)
        if optional:
            if isinstance(value, ErrorValue):
                return value
            if not found:
                if quals[-1].kind == PRESENCE:
                    return False  # `has()` at the end of an absent optional chain
                # cel-cpp can answer an optional holding an error here (an index out of a list's
                # range, a key of a scalar), where cel-go's `refQualify` finds nothing: the
                # walk's none is the value.
                rt.unsafe = True
                return NONE
            rt.charge(1)
        else:
            rt.charge(1)
            if not found:
                return value if isinstance(value, ErrorValue) else _missing(obj, key)
        obj = value
    return OptionalValue(obj, True) if optional else obj


def _qualify(obj: object, key: object, kind: int) -> tuple[bool, object]:
    """Field selection / indexing as cel-go's `refQualify`: (found, value-or-error).

    A map looks the key up; a list takes the key as an index (`IndexOrError`: a field name is
    an `unsupported index type 'string' in list`); any other value has no keys, so the key is
    absent (a presence test or an optional qualifier answers false / none, a plain one fails
    with `no such key`). A key that is no string, number or bool is refused first, whatever
    the operand (`invalid qualifier type`), as cel-go builds no qualifier for it.
    """
    if not isinstance(key, str | int | float):
        if isinstance(key, ErrorValue):
            return False, key
        return False, ErrorValue(f"invalid qualifier type: {_qualifier_type(key)}")
    if isinstance(obj, dict):
        if isinstance(key, float) and obj:
            # a double key of a map literal first (cel-go's `refValMapAccessor.Find`)
            exact = obj.get(LiteralKey(key, by_ref=False), _MISSING)
            if exact is not _MISSING:
                return True, exact
        mkey = _map_key(key)
        if isinstance(mkey, ErrorValue):
            return False, mkey
        if mkey in obj:
            return True, obj[mkey]
        if type(obj) is DefaultingMap:
            return obj.default_for(mkey)
        return False, None
    if isinstance(obj, list):
        index = _list_index(key)
        if isinstance(index, ErrorValue):
            return False, index
        if 0 <= index < len(obj):
            return True, obj[index]
        return False, None
    if isinstance(obj, ErrorValue):
        return False, obj
    return False, None


def _presence(obj: object, field: object) -> object:
    """`has(x.f)`: cel-go's `refQualify` as a presence test (see `_qualify`)."""
    found, value = _qualify(obj, field, FIELD)
    return value if isinstance(value, ErrorValue) else found


def _missing(obj: object, key: object) -> ErrorValue:
    if isinstance(obj, list):
        return ErrorValue(f"index out of bounds: {_key_text(key)}")
    return ErrorValue(f"no such key: {_key_text(key)}")


def _map_key(key: object) -> object:
    if isinstance(key, str):
        return key
    if key is True or key is False:
        return BoolKey(key)
    if isinstance(key, int):
        return key
    if isinstance(key, float) and key.is_integer():
        return int(key)
    if isinstance(key, BoolKey):
        return key
    if isinstance(key, float):
        return key  # never a key: lookups simply miss
    return ErrorValue(f"unsupported key type: {_type_text(key)}")


def _list_index(key: object) -> int | ErrorValue:
    """cel-go's `IndexOrError`: an int, or a double or uint that converts losslessly."""
    if key is True or key is False:
        return ErrorValue("unsupported index type 'bool' in list")
    if isinstance(key, UInt):
        if key < 2**63:
            return int(key)
        return ErrorValue(f"unsupported index value {int(key)} in list")
    if isinstance(key, int):
        return int(key)
    if isinstance(key, float):
        if key.is_integer() and -(2.0**63) <= key < 2.0**63:
            return int(key)
        return ErrorValue(f"unsupported index value {_go_float(key)} in list")
    return ErrorValue(f"unsupported index type '{_type_text(key)}' in list")


def _go_float(value: float) -> str:
    """Go's `%v` of a float64 (shortest representation, `e+NN` exponents)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def _key_text(key: object) -> str:
    if isinstance(key, BoolKey | LiteralKey):
        key = key.value
    if key is True:
        return "true"
    if key is False:
        return "false"
    return str(int(key)) if isinstance(key, UInt) else str(key)


def _qualifier_type(key: object) -> str:
    """The Go type cel-go prints for a key it builds no qualifier for (`%T`): `types.Duration`,
    `*types.Optional`, `cel.Quantity`. A null, list or map key prints as its CEL type name: its
    Go type depends on where it came from (`types.Null` from a literal, `<nil>` from the claim's
    JSON), which the value does not tell."""
    if key is None or isinstance(key, list | dict):
        return _type_text(key)
    return go_type_name(key) or _type_text(key)


def _type_text(value: object) -> str:
    if value is None:
        return "null_type"
    if value is True or value is False:
        return "bool"
    names = {UInt: "uint", int: "int", float: "double", str: "string", bytes: "bytes",
             list: "list", dict: "map"}
    for t, n in names.items():
        if isinstance(value, t):
            return n
    return type(value).__name__


# --- logic ---------------------------------------------------------------------------------------


class Logic(PlanStep):
    """`&&` (`absorbing` False) or `||` (`absorbing` True): CEL's commutative short circuit —
    the absorbing value wins over an error on either side; otherwise an error propagates."""

    __slots__ = ("absorbing", "lhs", "op", "rhs")

    def __init__(self, lhs: PlanStep, rhs: PlanStep, *, absorbing: bool) -> None:
        self.lhs = lhs
        self.rhs = rhs
        self.absorbing = absorbing
        self.op = "_||_" if absorbing else "_&&_"

    def eval(self, rt: Run) -> object:
        stop = self.absorbing
        left = self.lhs.eval(rt)
        if left is stop:
            return stop
        right = self.rhs.eval(rt)
        if right is stop:
            return stop
        if left is (not stop) and right is (not stop):
            return not stop
        return _logic_error(left, right, self.op)


def _logic_error(left: object, right: object, op: str) -> ErrorValue:
    """cel-go's `evalAnd`/`evalOr`: the first operand that is no bool decides, an error as
    itself, any other value as `no such overload` (whatever the other operand is)."""
    for value in (left, right):
        if value is not True and value is not False:
            return value if isinstance(value, ErrorValue) else ErrorValue("no such overload")
    return ErrorValue(f"no such overload: {op}")  # unreachable: both operands are bools


class NotStrictlyFalse(PlanStep):
    """Macro helper: true unless its argument is `false`; costs 1 like any call."""

    __slots__ = ("arg",)

    def __init__(self, arg: PlanStep) -> None:
        self.arg = arg

    def eval(self, rt: Run) -> object:
        value = self.arg.eval(rt)
        rt.charge(1)
        return value if value is True or value is False else True


class OptionalOr(PlanStep):
    """`a.or(b)` / `a.orValue(b)`: short-circuits, and cel-go charges nothing for it."""

    __slots__ = ("fallback", "lhs", "rhs", "unwrap")

    def __init__(self, lhs: PlanStep, rhs: PlanStep, unwrap: bool, fallback: PreparedCall) -> None:
        self.lhs = lhs
        self.rhs = rhs
        self.unwrap = unwrap
        self.fallback = fallback

    def eval(self, rt: Run) -> object:
        left = self.lhs.eval(rt)
        if isinstance(left, Opaque):
            # An extension library's own optional carrier: let the library answer.
            right = self.rhs.eval(rt)
            return right if isinstance(right, ErrorValue) else self.fallback.call([left, right])
        if not isinstance(left, OptionalValue):
            # an error passes through; any other value is no optional (`MaybeNoSuchOverload`)
            return left if isinstance(left, ErrorValue) else ErrorValue("no such overload")
        if left.has_value:
            return left.value if self.unwrap else left
        return self.rhs.eval(rt)


# --- calls ---------------------------------------------------------------------------------------


Native = Callable[[list[object]], object | None]
Guard = Callable[[list[object]], bool]


_OWN_PLANS = frozenset({
    "_==_", "_!=_", "_&&_", "_||_", "_[_]", "_[?_]", "_?._",
    # singleton binary bindings: the standard library's operators and string tests, ext.Lists'
    "_+_", "_-_", "_*_", "_/_", "_%_", "_<_", "_<=_", "_>_", "_>=_", "@in", "contains",
    "startsWith", "endsWith", "matches", "@sortByAssociatedKeys",
    # the standard library's timestamp getters with a time zone: one overload per arity
    "getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek",
    "getHours", "getMinutes", "getSeconds", "getMilliseconds",
})
"""Functions cel-go's planner never turns into `evalVarArgs` for two arguments: those it gives
interpretables of their own, and those whose name-level binding is a binary one."""


_FUNCTION_BINDINGS = frozenset({"string_format"})
"""Two-argument overloads bound with `cel.FunctionBinding` (ext.Strings' `format`), which cel-go
plans as `evalVarArgs` too."""

_REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})

_CONVERSION_SOURCES: dict[str, tuple[type, ...]] = {
    "string": (str,), "int64": (int,), "uint64": (UInt,), "double": (float,), "bytes": (bytes,),
    "bool": (bool,), "timestamp": (Timestamp,), "duration": (Duration,)}
_CONVERSIONS = frozenset({"string", "int", "uint", "double", "bytes", "bool", "timestamp",
                          "duration"})


def _guarded_conversion(function: str, overload_ids: Sequence[str]
                        ) -> tuple[str, str, bool] | None:
    """(function, an argument kind, whether it is the only kind accepted or a kind refused) of
    a conversion whose argument cel-go checks where cel-cpp dispatches on the value, or None.

    cel-go guards an overload's binding with its declared argument types, so where the checker
    narrowed a `dyn` value to one overload (it can, through a type parameter:
    `o.optMap(v, string(v)).orValue('')` types `v` as string) another kind of value is `no such
    overload`; and a kind no overload of cel-go's declares (`GO_UNCONVERTED`) is `no such
    overload` whatever the candidates."""
    if function not in _CONVERSIONS:
        return None
    if len(overload_ids) == 1:
        source, sep, _ = overload_ids[0].partition("_to_")
        if sep and source in _CONVERSION_SOURCES:
            return function, source, True
    refused = GO_UNCONVERTED.get(function)
    return None if refused is None else (function, refused, False)


def _has_kind(value: object, kind: str) -> bool:
    if isinstance(value, ErrorValue):
        return True
    if kind == "int64":
        return isinstance(value, int) and not isinstance(value, bool | UInt)
    if kind == "bool":
        return value is True or value is False
    return isinstance(value, _CONVERSION_SOURCES[kind])


def _tracked_argument(overload: str) -> tuple[int, str] | None:
    """(argument index, Go type asserted) of the ext.Lists cost trackers that assert their
    argument's type: `distinct` and `sort` take the list, `@sortByAssociatedKeys` the keys,
    `flatten(depth)` an int. cel-go's cost observer runs them after the call, with the
    argument values, even an error, so any other value panics there."""
    if overload == "list_distinct" or (overload.startswith("list_") and overload.endswith(
            "_sort")):
        return 0, "traits.Lister"
    if overload.startswith("list_") and overload.endswith("_sortByAssociatedKeys"):
        return 1, "traits.Lister"
    if overload == "list_flatten_int":
        return 1, "types.Int"
    return None


_GO_CONTAINER_TYPES = ((ErrorValue, "*types.Err"), (dict, "*types.baseMap"),
                       (list, "*types.baseList"))
"""The Go types of the values `go_type_name` does not name."""


def _tracker_check(tracked: tuple[int, str], values: list[object]) -> None:
    """Raise `TrackerPanic` where the cost tracker's type assertion fails (`_tracked_argument`)."""
    index, wanted = tracked
    if index >= len(values):
        return
    value = values[index]
    if wanted == "types.Int":
        fits = isinstance(value, int) and not isinstance(value, bool | UInt)
    else:
        fits = isinstance(value, list)
    if fits:
        return
    go_type = go_type_name(value) or next(
        (name for cls, name in _GO_CONTAINER_TYPES if isinstance(value, cls)), "ref.Val")
    if wanted == "types.Int":  # a concrete type assertion: Go names both types
        raise TrackerPanic(f"internal error: interface conversion: ref.Val is {go_type}, "
                           "not types.Int")
    raise TrackerPanic(lister_assertion_panic(value, go_type))


class Call(PlanStep):
    """A function call; `native` computes it here (None: ask the bridge), and `guard` says
    when its arguments must not reach the bridge's (and the program's) Python code."""

    __slots__ = ("args", "concat", "function", "guard", "native", "overrides", "precharge",
                 "precheck", "prepared", "price", "regex", "runtime_type", "shallow", "tracked",
                 "varargs")

    def __init__(self, site: CallSite, args: tuple[PlanStep, ...], prepared: PreparedCall,
                 native: Native | None, kubernetes: bool, guard: Guard | None = None,
                 overrides: bool = False, shallow: bool = False) -> None:
        overload = go_overload_id(site.function, site.overload_ids)
        self.args = args
        self.function = site.function
        self.prepared = prepared
        self.price = pricer_for(site.function, overload, kubernetes=kubernetes)
        # A price known from the arguments is charged before the call when it alone passes
        # the limit: cel-go computes the call first, then fails the same way.
        self.precharge = not priced_by_result(site.function, overload, kubernetes=kubernetes)
        # `shallow`: the native neither traverses nor copies its arguments' contents (`dyn`,
        # optionals, `size`, list concatenation: counted by `Run.grow`), so nothing is measured.
        self.shallow = shallow and guard is None
        self.concat = site.function == "_+_" and len(args) == 2
        self.native = native
        self.guard = guard
        self.overrides = overrides  # a native result differs from the program's: use ours
        # cel-go plans a call with three or more arguments, and a call of two whose checked
        # overload is not unique (`dyn` arguments: the function's name-level dispatcher), as
        # `evalVarArgs`, which stops at the first erroneous argument.
        self.varargs = len(args) >= 3 or (len(args) == 2 and (
            overload in _FUNCTION_BINDINGS
            or (len(site.overload_ids) != 1 and site.function not in _OWN_PLANS)))
        self.precheck = overload == "lists_range"
        self.tracked = _tracked_argument(overload)
        self.runtime_type = _guarded_conversion(site.function, site.overload_ids)
        # `matches`, `find` and `findAll` with a constant pattern are planned by cel-go's regex
        # optimisations as a call on the receiver alone: an erroneous receiver is passed on
        # before the call is priced.
        self.regex = site.function in _REGEX_FUNCTIONS and len(args) == 2 \
            and isinstance(args[1], Const)

    def eval(self, rt: Run) -> object:
        args = self.args
        if len(args) == 2 and not self.varargs:
            lhs = args[0].eval(rt)
            rhs = args[1].eval(rt)
            values: list[object] = [lhs, rhs]
            error = lhs if isinstance(lhs, ErrorValue) else (
                rhs if isinstance(rhs, ErrorValue) else None)
        else:
            values = []
            error = None
            last = len(args) - 1
            for i, arg in enumerate(args):
                value = arg.eval(rt)
                values.append(value)
                if isinstance(value, ErrorValue):
                    if self.varargs and i < last:
                        return value  # cel-go stops here and cannot price the call
                    if error is None:
                        error = value
        rt.tick()
        result: object
        if error is not None:
            if self.regex:
                return error
            result = error
        else:
            if self.runtime_type is not None:
                function, source, accepted = self.runtime_type
                if _has_kind(values[0], source) is not accepted:
                    # cel-cpp would convert it: the program must not run
                    rt.unsafe = True
                    mismatch = ErrorValue(f"no such overload: {function}({_type_text(values[0])})")
                    rt.charge(self.price(values, mismatch))
                    return mismatch
            if self.precheck:
                _precheck_range(rt, values)
                refused = range_refusal(values)
                if refused is not None:
                    # cel-cpp's reserve() throws on it: the program must not run.
                    rt.unsafe = True
                    rt.charge(self.price(values, refused))
                    return refused
            if self.concat:
                # cel-go concatenates lists lazily (cost 1, whatever their sizes), so nested
                # `cel.bind(x, x + x, ...)` doubles a list 25 times within a cost of 100; here
                # the elements are copied, and every one copied counts against the step budget.
                rt.grow(_copied(values))
            if not self.shallow and not (self.concat and isinstance(values[0], list)
                                         and isinstance(values[1], list)):
                for value in values:
                    kind = type(value)
                    # `runtime_bounds.bulky`, inlined: this is on every call
                    if (kind not in _SMALL_KINDS if kind is not str
                            else len(value) > BULKY_TEXT):  # type: ignore[arg-type]
                        self._check(rt, values)
                        break
            guarded = self.guard is not None and self.guard(values)
            if guarded:
                rt.unsafe = True
            native = self.native(values) if self.native is not None else None
            if native is not None:
                result = native
                if self.overrides:
                    rt.unsafe = True
            elif guarded:
                result = ErrorValue("no such overload")
            else:
                result = self.prepared.call(values)
                if type(result) is ErrorValue:
                    result = in_cel_go_words(self.function, values, result)
        if self.tracked is not None:
            _tracker_check(self.tracked, values)
        rt.charge(self.price(values, result))
        return result


    def _check(self, rt: Run, values: list[object]) -> None:
        """Before a call on a value that can be large: its price, when known from the
        arguments and past the limit, then `Run.check_call`'s bounds. (Two lists joined are
        left to `Run.grow`: the join copies references, not what they hold.)"""
        if self.precharge:
            price = self.price(values, None)
            if rt.cost + price > rt.limit:
                rt.charge(price)
        rt.check_call(self.function, values)


_SMALL_KINDS = frozenset({bool, int, float, type(None)})


def _precheck_range(rt: Run, values: list[object]) -> None:
    """`lists.range(n)` costs n + 11: refuse to build a list whose price is already too high."""
    n = values[0] if values else 0
    if isinstance(n, int) and not isinstance(n, bool) and n < 0:
        return
    if isinstance(n, int) and not isinstance(n, bool) and rt.cost + max(n, 0) + 11 > rt.limit:
        rt.charge(max(n, 0) + 11)


def range_refusal(values: list[object]) -> list[object] | None:
    """cel-go's `lists.range(n)` for n < 0 (`ext/lists.go` `genRange` counts up to n: an empty
    list), which cel-cpp cannot compute (its `reserve()` throws); None for any other n."""
    n = values[0] if values else 0
    if isinstance(n, int) and not isinstance(n, bool) and n < 0:
        return []
    return None


def _copied(values: list[object]) -> int:
    """Elements `native_add_list` copies for these operands (an accumulator grows in place)."""
    lhs, rhs = values if len(values) == 2 else (None, None)
    if not isinstance(lhs, list) or not isinstance(rhs, list):
        return 0
    return len(rhs) if type(lhs) is _Accumulator else len(lhs) + len(rhs)


def native_size(values: list[object]) -> object | None:
    """`size` of a string (code points), bytes, list or map: computed here, as cel-go reads
    it off the value, so a large or shared value is never handed to the engine to be counted."""
    value = values[0]
    if type(value) in (str, bytes, list, dict) or isinstance(value, list | dict):
        return len(value)  # type: ignore[arg-type]
    return None


def native_add_list(values: list[object]) -> object | None:
    lhs, rhs = values
    if not isinstance(lhs, list) or not isinstance(rhs, list):
        return None
    if type(lhs) is _Accumulator:
        lhs.extend(rhs)
        return lhs
    return lhs + rhs


class _Accumulator(list[object]):
    """The list a comprehension builds; cel-go appends to it in place (a mutable list)."""


class _MapAccumulator(dict[object, object]):
    """The map `transformMap`/`transformMapEntry` build; cel-go inserts into it in place."""


def native_map_insert(values: list[object]) -> object | None:
    """cel-go `cel.@mapInsert` (`types.InsertMapKeyValue`): (map, key, value) or (map, map)."""
    target = values[0]
    if not isinstance(target, dict):
        return None
    if len(values) == 3:
        pairs: list[tuple[object, object]] = [(values[1], values[2])]
    elif len(values) == 2 and isinstance(values[1], dict):
        pairs = list(values[1].items())
    else:
        return None
    out: dict[object, object]
    if type(target) is _MapAccumulator:
        # In place, as cel-go's mutable map, unless the map is also among the new values.
        out = target if all(v is not target for _, v in pairs) else _MapAccumulator(target)
    else:
        out = dict(target)
    for key, value in pairs:
        mkey = key if isinstance(key, BoolKey) else _literal_key(key)
        if isinstance(mkey, ErrorValue):
            return mkey
        if mkey in out:
            return ErrorValue(duplicate_key_message(_key_text(mkey)))
        out[mkey] = value
    return out


def native_format(values: list[object]) -> object | None:
    """cel-go's `string.format` (`k8s_library.strings_format`), which renders doubles and the
    `%f`/`%e` clauses unlike cel-cpp; None (cel-cpp renders) where it cannot be faithful."""
    text, args = values
    if not isinstance(text, str) or not isinstance(args, list):
        return None
    rendered = render_format(text, args)
    if isinstance(rendered, FormatProblem):
        return ErrorValue(rendered.message)
    return rendered


def _python_faithful(value: object) -> bool:
    """Whether cel-expr-python carries `value` into Python and back unchanged: null, bool,
    int, double, string, bytes, and lists and maps of them (string or int keys)."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return True
    if isinstance(value, list):
        return all(_python_faithful(v) for v in value)
    if isinstance(value, dict):
        return all(type(k) in (str, int) and _python_faithful(v) for k, v in value.items())
    return False


def map_insert_unfaithful(values: list[object]) -> bool:
    """Whether the program's `cel.@mapInsert` would see a value it cannot carry faithfully.

    Only the new entries are looked at: the map itself holds entries inserted (and looked at)
    before. Bool keys count as unfaithful, since Python merges `true` with `1`.
    """
    if len(values) == 3:
        return type(values[1]) not in (str, int) or not _python_faithful(values[2])
    return len(values) != 2 or not _python_faithful(values[1])


def python_unsafe(value: object) -> bool:
    """Whether cel-expr-python cannot hand `value` to Python code intact.

    Why so wide: converting an optional for Python corrupts memory (a SIGSEGV some calls
    later, also for an optional inside a list or map), a type value arrives as a binding
    object our libraries cannot compare, and an engine value the walk itself cannot read
    (`Opaque("unknown")`) may be either. Timestamps, durations, uints and library carriers convert faithfully.
    """
    if isinstance(value, OptionalValue | TypeValue):
        return True
    if isinstance(value, Opaque):
        return value.type_name == "unknown"
    if isinstance(value, list):
        return any(python_unsafe(v) for v in value)
    if isinstance(value, dict):
        return any(python_unsafe(v) for v in value.values())
    return False


def optional_guard(signatures: Sequence[Sequence[str]]) -> Guard | None:
    """A guard tripping when a value Python code cannot take (`python_unsafe`) could reach one
    of the Python overloads `signatures`: itself as a `dyn` argument, or inside a list or map
    argument of a `dyn`, list or map parameter."""
    kinds: dict[int, set[str]] = {}
    for sig in signatures:
        for i, kind in enumerate(sig):
            if kind != "other":
                kinds.setdefault(i, set()).add(kind)
    if not kinds:
        return None

    def reaches(value: object, accepted: set[str]) -> bool:
        if isinstance(value, list):
            return bool(accepted & {"dyn", "list"}) and python_unsafe(value)
        if isinstance(value, dict):
            return bool(accepted & {"dyn", "map"}) and python_unsafe(value)
        return "dyn" in accepted and python_unsafe(value)

    def guard(values: list[object]) -> bool:
        return any(i in kinds and reaches(v, kinds[i]) for i, v in enumerate(values))
    return guard


def native_index_of(last: bool) -> Native:
    """The Kubernetes lists library's `indexOf`/`lastIndexOf` on values Python code cannot
    take (`python_unsafe`), with cel-go's equality; None (the library decides) otherwise."""
    def native(values: list[object]) -> object | None:
        items, item = values
        if not isinstance(items, list) or not python_unsafe(values):
            return None
        order = range(len(items) - 1, -1, -1) if last else range(len(items))
        for i in order:
            same = walk_equal(items[i], item)
            if same is None:
                return None
            if same:
                return i
        return -1
    return native


def native_includes(values: list[object]) -> object | None:
    """The Kubernetes lists library's `includes` on values Python code cannot take
    (`python_unsafe`), with cel-go's equality; None (the library decides) otherwise."""
    if not python_unsafe(values):
        return None
    target, item = values
    candidates = target if isinstance(target, list) else [target]
    for candidate in candidates:
        same = walk_equal(candidate, item)
        if same is None:
            return None
        if same:
            return True
    return False


def _carrier(value: object) -> object:
    """The library carrier inside walk values (what the program's values are)."""
    if isinstance(value, Opaque):
        return value.token
    if isinstance(value, list):
        return [_carrier(v) for v in value]
    if isinstance(value, dict):
        return {k: _carrier(v) for k, v in value.items()}
    return value


def value_equality(function: str, type_name: str) -> Native:
    """Upstream `==`/`!=`/`in` for Quantity and Semver operands (by value, not by carrier), as
    `k8s_library.equality` makes the program compare them."""
    def native(values: list[object]) -> object | None:
        lhs, rhs = _carrier(values[0]), _carrier(values[1])
        if function == "@in":
            if not isinstance(rhs, list):
                return None
            found = [equal_by_type(type_name, lhs, item) for item in rhs]
            return None if None in found else any(found)
        equal = equal_by_type(type_name, lhs, rhs)
        if equal is None:
            return None
        return equal if function == "_==_" else not equal
    return native


def library_type_equality(equal: bool) -> Native:
    """`==`/`!=` when an operand is the type value of a library type (which the bridge cannot
    encode): equal exactly to the same type value."""
    scalar = scalar_equality(equal)

    def native(values: list[object]) -> object | None:
        lhs, rhs = values
        if not ((isinstance(lhs, TypeValue) and lhs.name in LIBRARY_TYPES)
                or (isinstance(rhs, TypeValue) and rhs.name in LIBRARY_TYPES)):
            return scalar(values)
        same = isinstance(lhs, TypeValue) and isinstance(rhs, TypeValue) and lhs.name == rhs.name
        return same if equal else not same
    return native


_SCALARS = (str, int, float)


def scalar_equality(equal: bool) -> Native:
    """`==`/`!=` of two strings, two ints or two doubles, computed here: CEL's equality on
    them is Python's, and the bridge's round trip costs more than the rest of a typical
    extractor. Anything else (bools, uints, mixed types, containers) goes to the bridge."""
    def native(values: list[object]) -> object | None:
        lhs, rhs = values
        kind = type(lhs)
        if kind is not type(rhs) or kind not in _SCALARS:
            return None
        same = lhs == rhs
        return same if equal else not same
    return native


_VALUE_EQUALITY_TYPES = frozenset({"kubernetes.Quantity", "kubernetes.Semver"})


def library_kind(t: CelType) -> str | None:
    """The Quantity/Semver type `t` is, or holds in lists and map values (as the program's
    equality rewrite reads it)."""
    if t.kind is TypeKind.ABSTRACT and t.name in _VALUE_EQUALITY_TYPES and not t.params:
        return t.name
    if t.kind is TypeKind.LIST and t.params:
        return library_kind(t.elem)
    if t.kind is TypeKind.MAP and len(t.params) == 2:
        return library_kind(t.value)
    return None


class ConstSetMembership(PlanStep):
    """`x in [constants]` under OptOptimize: only `x` is charged."""

    __slots__ = ("arg", "items", "prepared")

    def __init__(self, arg: PlanStep, items: list[object], prepared: PreparedCall) -> None:
        self.arg = arg
        self.items = items
        self.prepared = prepared

    def eval(self, rt: Run) -> object:
        value = self.arg.eval(rt)
        if isinstance(value, ErrorValue):
            return value
        if bulky((value,)):
            rt.check_call("@in", [value])
        looked_up = set_membership(value)
        if looked_up is not None:
            rt.unsafe = True  # the program would look the carrier up
            return looked_up
        return self.prepared.call([value, self.items])


# --- literals ------------------------------------------------------------------------------------


class ListStep(PlanStep):
    __slots__ = ("elements", "optional")

    def __init__(self, elements: tuple[PlanStep, ...], optional: frozenset[int]) -> None:
        self.elements = elements
        self.optional = optional

    def eval(self, rt: Run) -> object:
        result = self._build(rt)
        rt.charge(LIST_CREATE_BASE_COST)
        return result

    def _build(self, rt: Run) -> object:
        out: list[object] = []
        for i, element in enumerate(self.elements):
            value = element.eval(rt)
            item = _list_item(value, i in self.optional)
            if isinstance(item, ErrorValue):
                return item
            if item is not _SKIP:
                out.append(item)
        return out


_SKIP = object()


def _list_item(value: object, optional: bool) -> object:
    if isinstance(value, ErrorValue):
        return value
    if not optional:
        return value
    if not isinstance(value, OptionalValue):
        return ErrorValue("cannot initialize optional list element from non-optional value")
    return value.value if value.has_value else _SKIP


def build_list(values: list[object], optional: frozenset[int]) -> object:
    out: list[object] = []
    for i, value in enumerate(values):
        item = _list_item(value, i in optional)
        if isinstance(item, ErrorValue):
            return item
        if item is not _SKIP:
            out.append(item)
    return out


class MapStep(PlanStep):
    __slots__ = ("entries",)

    def __init__(self, entries: tuple[tuple[PlanStep, PlanStep, bool], ...]) -> None:
        self.entries = entries

    def eval(self, rt: Run) -> object:
        pairs: list[tuple[object, object, bool]] = []
        result: object = None
        for key_step, value_step, optional in self.entries:
            key = key_step.eval(rt)
            if isinstance(key, ErrorValue):
                result = key
                break
            value = value_step.eval(rt)
            if isinstance(value, ErrorValue):
                result = value
                break
            pairs.append((key, value, optional))
        else:
            result, pruned = build_map(pairs)
            if pruned:
                rt.unsafe = True
        rt.charge(MAP_CREATE_BASE_COST)
        return result


def build_map(pairs: list[tuple[object, object, bool]]) -> tuple[object, bool]:
    """cel-go's `evalMap`: entries go into a Go map in order, so a repeated key keeps its last
    value (no error) and an absent optional entry removes an earlier one. Also whether one
    was removed so (cel-cpp keeps it: the program must not run)."""
    out: dict[object, object] = {}
    pruned = False
    for key, value, optional in pairs:
        mkey = _literal_key(key)
        if isinstance(mkey, ErrorValue):
            return mkey, False
        if optional:
            if not isinstance(value, OptionalValue):
                return ErrorValue(f"cannot initialize optional entry '{_key_text(key)}' from "
                                f"non-optional value"), False
            if not value.has_value:
                pruned = pruned or out.pop(mkey, _MISSING) is not _MISSING
                continue
            value = value.value
        out[mkey] = value
    return out, pruned


def literal_key_map_call(function: str, args: Sequence[object]) -> object | None:
    """The calls the walk answers itself on a map holding a `LiteralKey` (cel-expr-python
    cannot receive one): its size, type, equality and membership; None for any other."""
    if function == "size" and len(args) == 1 and isinstance(args[0], dict):
        return len(args[0])
    if function == "type" and len(args) == 1 and isinstance(args[0], dict):
        return TypeValue("map")
    if function in ("_==_", "_!=_") and len(args) == 2:
        same = walk_equal(args[0], args[1])
        return None if same is None else same == (function == "_==_")
    if function == "@in" and len(args) == 2 and isinstance(args[1], dict):
        key = _literal_key(args[0])
        if isinstance(key, ErrorValue):
            return key
        found, value = _qualify(args[1], args[0], INDEX) \
            if isinstance(args[0], str | int | float) else (key in args[1], None)
        return value if isinstance(value, ErrorValue) else found
    return None


def native_map_membership(values: list[object]) -> object | None:
    """`k in m` for a key no JSON object holds (a list, map, null, ...): cel-go looks it up in
    its Go map and finds nothing unless the very value is a key; None (the engine decides) for
    any other operands."""
    key, container = values
    if not isinstance(container, dict) or isinstance(key, str | int | float | bytes):
        return None
    return literal_key_map_call("@in", values)


def _literal_key(key: object) -> object:
    """A value as a key of the walk's dict (`LiteralKey` for the kinds JSON has no key of);
    bytes and library values are refused, as Go cannot hash them."""
    if isinstance(key, str) or (isinstance(key, int) and key is not True and key is not False):
        return key
    if key is True or key is False:
        return BoolKey(key)
    if key is None or isinstance(key, float | TypeValue | Timestamp | Duration):
        return LiteralKey(key, by_ref=False)
    if isinstance(key, list | dict | OptionalValue):
        return LiteralKey(key, by_ref=True)
    if isinstance(key, Opaque) and isinstance(key.token, str):
        # the library values Go can hash: IP and CIDR are values, URL and Quantity pointers
        if key.type_name in _HASHED_BY_VALUE:
            return LiteralKey(key, by_ref=False)
        if key.type_name in _HASHED_BY_REFERENCE:
            return LiteralKey(key, by_ref=True)
    return ErrorValue(f"Invalid map key type: '{_type_text(key)}'")


_HASHED_BY_VALUE = frozenset({"net.IP", "net.CIDR"})
_HASHED_BY_REFERENCE = frozenset({"kubernetes.URL", "kubernetes.Quantity"})


# --- comprehensions ------------------------------------------------------------------------------


class Fold(PlanStep):
    __slots__ = ("accu_init", "accu_var", "cond", "iter_range", "iter_var", "iter_var2",
                 "result", "step")

    def __init__(self, node: Node, parts: tuple[PlanStep, PlanStep, PlanStep, PlanStep, PlanStep]) -> None:
        self.iter_var = node.iter_var
        self.iter_var2 = node.iter_var2
        self.accu_var = node.accu_var
        self.iter_range, self.accu_init, self.cond, self.step, self.result = parts

    def eval(self, rt: Run) -> object:
        rng = self.iter_range.eval(rt)
        if not isinstance(rng, list | dict):
            if isinstance(rng, ErrorValue):
                return rng
            refused = iteration_refusal(rng)
            if refused is not None:
                rt.unsafe = True  # the program would iterate a library value's carrier
                return refused
            return ErrorValue("No matching overloads found : <iter_range>")
        names = (self.accu_var, self.iter_var, self.iter_var2)
        saved = [rt.vars.get(n, _MISSING) for n in names]
        scope = rt.vars
        scope[self.accu_var] = _PendingAccumulator(self, tuple(saved))
        try:
            for first, second in _iterate(rng, bool(self.iter_var2)):
                rt.tick()
                rt.iterations += 1
                scope[self.iter_var] = first
                if self.iter_var2:
                    scope[self.iter_var2] = second
                if self.cond.eval(rt) is False:
                    break
                scope[self.accu_var] = self.step.eval(rt)
            _restore(scope, names[1:], saved[1:])
            result = self.result.eval(rt)
        finally:
            _restore(scope, names, saved)
        if type(result) is _Accumulator:
            result = list(result)
        elif type(result) is _MapAccumulator:
            result = dict(result)
        return result


def _iterate(rng: list[object] | dict[object, object], two: bool
             ) -> Iterator[tuple[object, object]]:
    """(first, second) loop variables: (element, -) / (index, element) / (key, value)."""
    if isinstance(rng, list):
        if two:
            yield from enumerate(rng)
        else:
            for item in rng:
                yield item, None
        return
    for key, value in list(rng.items()):
        yield _key_value(key), value


def _key_value(key: object) -> object:
    return key.value if isinstance(key, BoolKey | LiteralKey) else key


def _restore(scope: dict[str, object], names: Sequence[str], saved: Sequence[object]) -> None:
    for name, old in zip(names, saved, strict=True):
        if not name:
            continue
        if old is _MISSING:
            scope.pop(name, None)
        else:
            scope[name] = old
