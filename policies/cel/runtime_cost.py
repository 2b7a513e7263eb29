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
`@not_strictly_false`, and where cel-cpp alone would disagree with cel-go: `cel.@mapInsert`
(`transformMap`), `string.format` (`k8s_library.strings_format`), `==`/`!=`/`in` on Quantity
and Semver values (by value, as the program after `k8s_library.equality`'s rewrite) and `type()`
of library values. Values follow `jsonvalue`'s model and mirror cel-cpp's semantics, so the
value the interpreter computes agrees with the one cel-expr-python computes for the whole
expression, except where the walk computes a call the program cannot compute faithfully (a
`format` rendering, a `cel.@mapInsert` of values Python cannot carry, an optional that must not
reach Python code): `CostOutcome.program_unsafe` then tells the caller to use the walk's value.

Evaluation stops as soon as the running cost exceeds the limit (cel-go raises `operation
cancelled: actual cost limit exceeded` at that point), and a separate step budget bounds the work
of loops cel-go prices at zero per iteration.
"""

from __future__ import annotations

import datetime
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from policies.cel.ast import CheckedAst, Constant, ConstKind, Node, NodeKind
from policies.cel.cost import LIST_CREATE_BASE_COST, MAP_CREATE_BASE_COST
from policies.cel.cost_k8s_runtime import go_overload_id, kubernetes_result_type, pricer_for
from policies.cel.jsonvalue import (
    NONE,
    BoolKey,
    CelError,
    Duration,
    Opaque,
    OptionalValue,
    Timestamp,
    TypeValue,
    UInt,
)
from policies.cel.k8s_library.comprehensions import MAP_INSERT, duplicate_key_message
from policies.cel.k8s_library.equality import equal_by_type
from policies.cel.k8s_library.strings_format import FormatFailure
from policies.cel.k8s_library.strings_format import render as render_format
from policies.cel.k8s_library.type_values import LIBRARY_TYPES
from policies.cel.types import CelType, Primitive, TypeKind
from policies.cel.validators import parse_go_duration, parse_go_rfc3339

__all__ = [
    "COST_LIMIT_EXCEEDED",
    "CallBridge",
    "CallSite",
    "CostOutcome",
    "PreparedCall",
    "ResultKind",
    "conversion_verdict",
    "plan_error",
    "track_cost",
]

#: cel-go's exact error text when the running cost passes the limit.
COST_LIMIT_EXCEEDED = "operation cancelled: actual cost limit exceeded"

ResultKind = Literal["plain", "optional", "opaque", "any"]

# cel-go `overloads.IsTypeConversionFunction`: folded when their single argument is constant.
_CONVERSIONS = frozenset({"bool", "bytes", "double", "duration", "dyn", "int", "string",
                          "timestamp", "type", "uint"})
CONVERSION_FUNCTIONS = _CONVERSIONS
"""Type conversions cel-go's planner folds when their argument is constant."""
_PLAN_CACHE_SIZE = 256
_MACRO_ACCUMULATORS = frozenset({"@result", "__result__"})


@dataclass(frozen=True, slots=True)
class CallSite:
    """What a bridge needs to run one call: names, candidates, shape and result kind.

    `result_kind` comes from the call's checked type: `plain` results (JSON-like, no `dyn`)
    decode fast, `optional` ones need unwrapping, `opaque` ones (extension types such as
    `kubernetes.Quantity`, named by `type_name`) are kept as `Opaque` values.
    """

    function: str
    overload_ids: tuple[str, ...]
    member: bool
    arity: int
    result_kind: ResultKind
    type_name: str = ""


class PreparedCall(Protocol):
    """One call site made ready to run (compiled once, called per evaluation)."""

    def call(self, args: Sequence[object]) -> object:
        """Result of the call, or a `CelError` value; never raises for CEL errors."""
        ...


class CallBridge(Protocol):
    """Runs CEL functions on interpreter values (cel-expr-python in production)."""

    def prepare(self, site: CallSite) -> PreparedCall:
        """A runner for this call site; cheap to call repeatedly."""
        ...


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


def track_cost(checked: CheckedAst, variables: Mapping[str, object], bridge: CallBridge, *,
               limit: int = 1_000_000, optimize: bool = True, kubernetes: bool = True,
               max_steps: int | None = None) -> CostOutcome:
    """Evaluate `checked` with cel-go's runtime cost tracking.

    `optimize` mirrors cel-go's `OptOptimize` (on in every Kubernetes program), `kubernetes`
    installs Kubernetes' call pricing. `max_steps` bounds loop iterations plus calls (default:
    four per unit of cost limit, at least 100,000).
    """
    steps = max_steps if max_steps is not None else max(100_000, 4 * limit)
    run = _Run(dict(variables), limit, steps)
    try:
        root = _plan_for(checked, bridge, optimize, kubernetes)
        value = root.eval(run)
    except _PlanError as exc:
        return CostOutcome("plan_error", 0, message=str(exc))
    except _CostExceeded:
        return CostOutcome("cost_exceeded", run.cost, message=COST_LIMIT_EXCEEDED)
    except _WorkExceeded:
        return CostOutcome("work_exceeded", run.cost,
                           message=f"dry-run step budget of {steps} exhausted")
    except RecursionError:
        # cel-cpp's parser caps nesting far below Python's stack; this is a safety net.
        return CostOutcome("work_exceeded", run.cost, message="expression nests too deeply")
    return CostOutcome("ok", run.cost, value, program_unsafe=run.unsafe)


def plan_error(checked: CheckedAst, bridge: CallBridge, *, kubernetes: bool = True,
               nodes: Sequence[Node] | None = None) -> tuple[str, int] | None:
    """Why cel-go could not build the program of `checked` with `OptOptimize` (message and the
    id of the node that failed, 0 if unknown), or None.

    cel-go folds type conversions of constants while planning (`int("x")`, `uint(-1)`, also in
    a branch that never runs), and a failing one makes `env.Program()` fail. The plan is
    cached, so a later `track_cost` of the same AST reuses it. Without a conversion of a
    constant among `nodes` (the AST's nodes, when the caller has them) nothing can fail.
    """
    if nodes is not None and not any(_folds_conversion(n) for n in nodes):
        return None
    try:
        _plan_for(checked, bridge, True, kubernetes)
    except _PlanError as exc:
        return str(exc), exc.node_id
    return None


def _folds_conversion(node: Node) -> bool:
    return (node.kind is NodeKind.CALL and node.function in _CONVERSIONS
            and node.target is None and len(node.args) == 1 and _constant(node.args[0]))


def _constant(node: Node) -> bool:
    """Whether the planner can fold `node` to a constant (literals, literal lists and maps,
    conversions of those)."""
    kind = node.kind
    if kind is NodeKind.CONST:
        return True
    if kind is NodeKind.LIST:
        return all(_constant(e) for e in node.elements)
    if kind is NodeKind.STRUCT:
        return not node.message_name and all(
            e.key is not None and _constant(e.key) and _constant(e.value) for e in node.entries)
    return kind is NodeKind.CALL and node.target is None and node.function in _CONVERSIONS \
        and len(node.args) == 1 and _constant(node.args[0])


_CONVERSION_TARGETS = {
    "int": "int", "uint": "uint", "double": "double", "bool": "bool",
    "duration": "google.protobuf.Duration", "timestamp": "google.protobuf.Timestamp",
}
_GO_INT = re.compile(r"[+-]?[0-9]+")
_GO_UINT = re.compile(r"[0-9]+")
_GO_BOOLS = frozenset({"1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false",
                       "False"})
_GO_DECIMAL_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_GO_HEX_FLOAT = re.compile(
    r"([+-]?)0[xX]((?:_?[0-9a-fA-F])+\.?(?:[0-9a-fA-F](?:_?[0-9a-fA-F])*)?|"
    r"\.[0-9a-fA-F](?:_?[0-9a-fA-F])*)[pP]([+-]?[0-9]+)")
_GO_SPECIAL_FLOAT = re.compile(r"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1
_TIME_MIN, _TIME_MAX = -62135596800, 253402300799
_OVERFLOW = {"int": "integer overflow", "uint": "unsigned integer overflow"}


def _go_parse_float_ok(text: str) -> bool:
    """Go `strconv.ParseFloat(text, 64)` succeeds (well formed and in range)."""
    if _GO_SPECIAL_FLOAT.fullmatch(text):
        return True
    if _GO_DECIMAL_FLOAT.fullmatch(text):
        return math.isfinite(float(text))
    m = _GO_HEX_FLOAT.fullmatch(text)
    if m is None:
        return False
    mantissa = m.group(2).replace("_", "")
    try:
        return math.isfinite(float.fromhex(f"{m.group(1)}0x{mantissa}p{m.group(3)}"))
    except OverflowError:
        return False


def _string_converts(function: str, text: str) -> bool:
    if function == "int":
        return bool(_GO_INT.fullmatch(text)) and _INT64_MIN <= int(text) <= _INT64_MAX
    if function == "uint":
        return bool(_GO_UINT.fullmatch(text)) and int(text) <= _UINT64_MAX
    if function == "double":
        return _go_parse_float_ok(text)
    if function == "bool":
        return text in _GO_BOOLS
    if function == "duration":
        return not isinstance(parse_go_duration(text), str)
    return parse_go_rfc3339(text) is not None  # timestamp, with cel-go's year range


def _double_converts(function: str, value: float) -> bool:
    """cel-go `doubleToInt64Checked` / `doubleToUint64Checked` (bounds as Go compares them)."""
    if not math.isfinite(value):
        return False
    if function == "int":
        return float(_INT64_MIN) < value < float(_INT64_MAX)
    return 0.0 <= value < float(1 << 64)


def conversion_verdict(function: str, value: object) -> str | bool | None:
    """cel-go's verdict on the type conversion `function(value)` of a constant.

    The error message cel-go gives (`common/types`: a string that does not parse, `type
    conversion error from 'string' to 'int'`; a number out of the target's range, `integer
    overflow` / `unsigned integer overflow` / `timestamp overflow`; bytes that are not UTF-8,
    `invalid UTF-8 in bytes, cannot convert to string`), None when the conversion succeeds in
    cel-go, or False when this function does not know (then cel-cpp's verdict stands). Strings
    parse with Go's rules (`strconv`, `time.ParseDuration`, RFC 3339), not cel-cpp's.
    """
    if isinstance(value, str):
        if function not in _CONVERSION_TARGETS:
            return False
        if _string_converts(function, value):
            return None
        return f"type conversion error from 'string' to '{_CONVERSION_TARGETS[function]}'"
    if isinstance(value, float):
        if function not in _OVERFLOW:
            return False
        return None if _double_converts(function, value) else _OVERFLOW[function]
    if isinstance(value, UInt):
        if function != "int":
            return False
        return None if value <= _INT64_MAX else _OVERFLOW["int"]
    if isinstance(value, int) and not isinstance(value, bool):
        if function == "uint":
            return None if value >= 0 else _OVERFLOW["uint"]
        if function == "timestamp":
            return None if _TIME_MIN <= value <= _TIME_MAX else "timestamp overflow"
        return False
    if isinstance(value, bytes) and function == "string":
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return "invalid UTF-8 in bytes, cannot convert to string"
        return None
    return False


# ------------------------------------------------------------------------------------------------
# Run state
# ------------------------------------------------------------------------------------------------


class _CostExceeded(Exception):
    """Internal: the running cost passed the limit (cel-go panics with EvalCancelledError)."""


class _WorkExceeded(Exception):
    """Internal: the step budget is exhausted."""


class _PlanError(Exception):
    """Internal: cel-go would fail to build the program (at node `node_id`, 0 if unknown)."""

    def __init__(self, message: str, node_id: int = 0) -> None:
        super().__init__(message)
        self.node_id = node_id


_MISSING = object()


class _Run:
    __slots__ = ("cost", "limit", "max_steps", "steps", "unsafe", "vars")

    def __init__(self, variables: dict[str, object], limit: int, max_steps: int) -> None:
        self.vars = variables
        self.limit = limit
        self.max_steps = max_steps
        self.cost = 0
        self.steps = 0
        self.unsafe = False

    def charge(self, amount: int) -> None:
        self.cost += amount
        if self.cost > self.limit:
            raise _CostExceeded

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.max_steps:
            raise _WorkExceeded

    def lookup(self, name: str) -> object:
        value = self.vars.get(name, _MISSING)
        if value is _MISSING:
            return CelError(f"no such attribute(s): {name}")
        return value


# ------------------------------------------------------------------------------------------------
# Plan steps
# ------------------------------------------------------------------------------------------------


class _Step:
    __slots__ = ()

    def eval(self, rt: _Run) -> object:
        raise NotImplementedError


class _Const(_Step):
    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def eval(self, rt: _Run) -> object:
        return self.value


class _Fail(_Step):
    """A construct the interpreter cannot evaluate; yields an error value."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def eval(self, rt: _Run) -> object:
        return CelError(self.message)


class _Var(_Step):
    """A variable with no qualifiers: an attribute costing 1."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def eval(self, rt: _Run) -> object:
        value = rt.lookup(self.name)
        rt.charge(1)
        return value


# --- attributes -----------------------------------------------------------------------------------

_FIELD, _INDEX, _PRESENCE = 0, 1, 2


class _Qual:
    """One qualifier: a field, a constant key, an attribute key or a computed key."""

    __slots__ = ("attr", "key", "kind", "optional", "step")

    def __init__(self, kind: int, *, key: object = None, attr: _Attr | None = None,
                 step: _Step | None = None, optional: bool = False) -> None:
        self.kind = kind
        self.key = key
        self.attr = attr
        self.step = step
        self.optional = optional

    def key_value(self, rt: _Run) -> object:
        if self.attr is not None:
            return self.attr.resolve(rt)
        if self.step is not None:
            return self.step.eval(rt)
        return self.key


class _Base:
    __slots__ = ()

    def resolve(self, rt: _Run) -> object:
        raise NotImplementedError


class _VarBase(_Base):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def resolve(self, rt: _Run) -> object:
        return rt.lookup(self.name)


class _RelBase(_Base):
    """Relative attribute: the operand is evaluated (with its own costs)."""

    __slots__ = ("step",)

    def __init__(self, step: _Step) -> None:
        self.step = step

    def resolve(self, rt: _Run) -> object:
        return self.step.eval(rt)


class _CondBase(_Base):
    """`c ? t : f`: the chosen branch is resolved, so its base variable is not charged."""

    __slots__ = ("cond", "falsy", "truthy")

    def __init__(self, cond: _Step, truthy: _Attr, falsy: _Attr) -> None:
        self.cond = cond
        self.truthy = truthy
        self.falsy = falsy

    def resolve(self, rt: _Run) -> object:
        c = self.cond.eval(rt)
        if c is True:
            return self.truthy.resolve(rt)
        if c is False:
            return self.falsy.resolve(rt)
        if isinstance(c, CelError):
            return c
        return CelError("no such overload: _?_:_")


class _Attr(_Step):
    """An attribute: a base plus qualifiers, evaluated as one cel-go instruction."""

    __slots__ = ("base", "keys", "quals", "watched")

    def __init__(self, base: _Base, quals: tuple[_Qual, ...], watched: bool) -> None:
        self.base = base
        self.quals = quals
        self.watched = watched
        # Constant, non-optional field/index keys take a fast path (the common `a.b.c`).
        simple = all(q.attr is None and q.step is None and not q.optional
                     and q.kind != _PRESENCE for q in quals)
        self.keys = tuple((q.key, q.kind) for q in quals) if simple and quals else None

    def eval(self, rt: _Run) -> object:
        value = self.resolve(rt)
        if self.watched:
            rt.charge(1)
        return value

    def resolve(self, rt: _Run) -> object:
        obj = self.base.resolve(rt)
        keys = self.keys
        if keys is not None and not isinstance(obj, OptionalValue | CelError):
            for key, kind in keys:
                rt.charge(1)
                if type(obj) is dict and type(key) is str:
                    found = obj.get(key, _MISSING)
                    if found is _MISSING:
                        return CelError(f"no such key: {key}")
                    obj = found
                    continue
                ok, value = _qualify(obj, key, kind)
                if not ok:
                    return value if isinstance(value, CelError) else _missing(obj, key)
                obj = value
            return obj
        if not self.quals:
            return obj
        return _apply_qualifiers(rt, obj, self.quals)


def _apply_qualifiers(rt: _Run, obj: object, quals: tuple[_Qual, ...]) -> object:
    """cel-go `applyQualifiers` with the observer's charges (see module docstring)."""
    if isinstance(obj, CelError):
        return obj
    optional = False
    if isinstance(obj, OptionalValue):
        if not obj.has_value:
            return obj
        obj, optional = obj.value, True
    for q in quals:
        optional = optional or q.optional
        key = q.key_value(rt)
        if isinstance(key, CelError):
            if not optional:
                rt.charge(1)
            return key
        if q.kind == _PRESENCE:
            rt.charge(1)
            return _presence(obj, key)
        found, value = _qualify(obj, key, q.kind)
        if optional:
            if isinstance(value, CelError):
                return value
            if not found:
                return NONE
            rt.charge(1)
        else:
            rt.charge(1)
            if not found:
                return value if isinstance(value, CelError) else _missing(obj, key)
        obj = value
    return OptionalValue(obj, True) if optional else obj


def _qualify(obj: object, key: object, kind: int) -> tuple[bool, object]:
    """Field selection / indexing with cel-cpp's value semantics: (found, value-or-error)."""
    if isinstance(obj, dict):
        mkey = _map_key(key)
        if isinstance(mkey, CelError):
            return False, mkey
        if mkey in obj:
            return True, obj[mkey]
        return False, None
    if isinstance(obj, list):
        if kind == _FIELD:
            return False, CelError(f"no such key: {_key_text(key)}")
        index = _list_index(key)
        if isinstance(index, CelError):
            return False, index
        if 0 <= index < len(obj):
            return True, obj[index]
        return False, None
    if isinstance(obj, CelError):
        return False, obj
    if kind == _FIELD:
        # cel-go: "no such key" (refQualify's default case); cel-cpp also fails here.
        return False, CelError(f"no such key: {_key_text(key)}")
    return False, CelError(f"no such overload: index of {_type_text(obj)}")


def _presence(obj: object, field: object) -> object:
    if isinstance(obj, dict):
        return _map_key(field) in obj
    if isinstance(obj, CelError):
        return obj
    # cel-cpp rejects presence tests on non-maps (cel-go would answer false for scalars).
    return CelError("Applying SELECT to non-message type")


def _missing(obj: object, key: object) -> CelError:
    if isinstance(obj, list):
        return CelError(f"index out of bounds: {_key_text(key)}")
    return CelError(f"no such key: {_key_text(key)}")


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
    return CelError(f"unsupported key type: {_type_text(key)}")


def _list_index(key: object) -> int | CelError:
    if key is True or key is False:
        return CelError("unsupported index type: bool")
    if isinstance(key, int):
        return int(key)
    if isinstance(key, float) and key.is_integer():
        return int(key)
    return CelError(f"unsupported index type: {_type_text(key)}")


def _key_text(key: object) -> str:
    if isinstance(key, BoolKey):
        key = key.value
    if key is True:
        return "true"
    if key is False:
        return "false"
    return str(int(key)) if isinstance(key, UInt) else str(key)


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


class _Logic(_Step):
    """`&&` (`absorbing` False) or `||` (`absorbing` True): CEL's commutative short circuit —
    the absorbing value wins over an error on either side; otherwise an error propagates."""

    __slots__ = ("absorbing", "lhs", "op", "rhs")

    def __init__(self, lhs: _Step, rhs: _Step, *, absorbing: bool) -> None:
        self.lhs = lhs
        self.rhs = rhs
        self.absorbing = absorbing
        self.op = "_||_" if absorbing else "_&&_"

    def eval(self, rt: _Run) -> object:
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


def _logic_error(left: object, right: object, op: str) -> CelError:
    if isinstance(left, CelError):
        return left
    if isinstance(right, CelError):
        return right
    return CelError(f"no such overload: {op}")


class _NotStrictlyFalse(_Step):
    """Macro helper: true unless its argument is `false`; costs 1 like any call."""

    __slots__ = ("arg",)

    def __init__(self, arg: _Step) -> None:
        self.arg = arg

    def eval(self, rt: _Run) -> object:
        value = self.arg.eval(rt)
        rt.charge(1)
        return value if value is True or value is False else True


class _OptionalOr(_Step):
    """`a.or(b)` / `a.orValue(b)`: short-circuits, and cel-go charges nothing for it."""

    __slots__ = ("fallback", "lhs", "rhs", "unwrap")

    def __init__(self, lhs: _Step, rhs: _Step, unwrap: bool, fallback: PreparedCall) -> None:
        self.lhs = lhs
        self.rhs = rhs
        self.unwrap = unwrap
        self.fallback = fallback

    def eval(self, rt: _Run) -> object:
        left = self.lhs.eval(rt)
        if isinstance(left, Opaque):
            # An extension library's own optional carrier: let the library answer.
            right = self.rhs.eval(rt)
            return right if isinstance(right, CelError) else self.fallback.call([left, right])
        if not isinstance(left, OptionalValue):
            return left
        if left.has_value:
            return left.value if self.unwrap else left
        return self.rhs.eval(rt)


# --- calls ---------------------------------------------------------------------------------------


Native = Callable[[list[object]], object | None]
Guard = Callable[[list[object]], bool]


class _Call(_Step):
    """A function call; `native` computes it here (None: ask the bridge), and `guard` says
    when its arguments must not reach the bridge's (and the program's) Python code."""

    __slots__ = ("args", "guard", "native", "overrides", "precheck", "prepared", "price",
                 "varargs")

    def __init__(self, site: CallSite, args: tuple[_Step, ...], prepared: PreparedCall,
                 native: Native | None, kubernetes: bool, guard: Guard | None = None,
                 overrides: bool = False) -> None:
        overload = go_overload_id(site.function, site.overload_ids)
        self.args = args
        self.prepared = prepared
        self.price = pricer_for(site.function, overload, kubernetes=kubernetes)
        self.native = native
        self.guard = guard
        self.overrides = overrides  # a native result differs from the program's: use ours
        self.varargs = len(args) >= 3
        self.precheck = overload == "lists_range"

    def eval(self, rt: _Run) -> object:
        args = self.args
        if len(args) == 2:
            lhs = args[0].eval(rt)
            rhs = args[1].eval(rt)
            values: list[object] = [lhs, rhs]
            error = lhs if isinstance(lhs, CelError) else (
                rhs if isinstance(rhs, CelError) else None)
        else:
            values = []
            error = None
            last = len(args) - 1
            for i, arg in enumerate(args):
                value = arg.eval(rt)
                values.append(value)
                if isinstance(value, CelError):
                    if self.varargs and i < last:
                        return value  # cel-go stops here and cannot price the call
                    if error is None:
                        error = value
        rt.tick()
        result: object
        if error is not None:
            result = error
        else:
            if self.precheck:
                _precheck_range(rt, values)
            guarded = self.guard is not None and self.guard(values)
            if guarded:
                rt.unsafe = True
            native = self.native(values) if self.native is not None else None
            if native is not None:
                result = native
                if self.overrides:
                    rt.unsafe = True
            elif guarded:
                result = CelError("no such overload")
            else:
                result = self.prepared.call(values)
        rt.charge(self.price(values, result))
        return result


def _precheck_range(rt: _Run, values: list[object]) -> None:
    """`lists.range(n)` costs n + 11: refuse to build a list whose price is already too high."""
    n = values[0] if values else 0
    if isinstance(n, int) and not isinstance(n, bool) and rt.cost + max(n, 0) + 11 > rt.limit:
        rt.charge(max(n, 0) + 11)


def _native_add_list(values: list[object]) -> object | None:
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


def _native_map_insert(values: list[object]) -> object | None:
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
        if isinstance(mkey, CelError):
            return mkey
        if mkey in out:
            return CelError(duplicate_key_message(_key_text(mkey)))
        out[mkey] = value
    return out


def _native_format(values: list[object]) -> object | None:
    """cel-go's `string.format` (`k8s_library.strings_format`), which renders doubles and the
    `%f`/`%e` clauses unlike cel-cpp; None (cel-cpp renders) where it cannot be faithful."""
    text, args = values
    if not isinstance(text, str) or not isinstance(args, list):
        return None
    rendered = render_format(text, args)
    if isinstance(rendered, FormatFailure):
        return CelError(rendered.message)
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


def _map_insert_unfaithful(values: list[object]) -> bool:
    """Whether the program's `cel.@mapInsert` would see a value it cannot carry faithfully.

    Only the new entries are looked at: the map itself holds entries inserted (and looked at)
    before. Bool keys count as unfaithful, since Python merges `true` with `1`.
    """
    if len(values) == 3:
        return type(values[1]) not in (str, int) or not _python_faithful(values[2])
    return len(values) != 2 or not _python_faithful(values[1])


def _holds_optional(value: object) -> bool:
    if isinstance(value, OptionalValue):
        return True
    if isinstance(value, list):
        return any(_holds_optional(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_optional(v) for v in value.values())
    return False


def _optional_guard(signatures: Sequence[Sequence[str]]) -> Guard | None:
    """A guard tripping when an optional could reach one of the Python overloads `signatures`
    (cel-expr-python crashes converting it): itself as a `dyn` argument, or inside a list or
    map argument of a `dyn`, list or map parameter."""
    kinds: dict[int, set[str]] = {}
    for sig in signatures:
        for i, kind in enumerate(sig):
            if kind != "other":
                kinds.setdefault(i, set()).add(kind)
    if not kinds:
        return None

    def reaches(value: object, accepted: set[str]) -> bool:
        if isinstance(value, OptionalValue):
            return "dyn" in accepted
        if isinstance(value, list):
            return bool(accepted & {"dyn", "list"}) and _holds_optional(value)
        if isinstance(value, dict):
            return bool(accepted & {"dyn", "map"}) and _holds_optional(value)
        return False

    def guard(values: list[object]) -> bool:
        return any(i in kinds and reaches(v, kinds[i]) for i, v in enumerate(values))
    return guard


def _carrier(value: object) -> object:
    """The library carrier inside walk values (what the program's values are)."""
    if isinstance(value, Opaque):
        return value.token
    if isinstance(value, list):
        return [_carrier(v) for v in value]
    if isinstance(value, dict):
        return {k: _carrier(v) for k, v in value.items()}
    return value


def _value_equality(function: str, type_name: str) -> Native:
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


def _library_type_equality(equal: bool) -> Native:
    """`==`/`!=` when an operand is the type value of a library type (which the bridge cannot
    encode): equal exactly to the same type value."""
    scalar = _scalar_equality(equal)

    def native(values: list[object]) -> object | None:
        lhs, rhs = values
        if not ((isinstance(lhs, TypeValue) and lhs.name in LIBRARY_TYPES)
                or (isinstance(rhs, TypeValue) and rhs.name in LIBRARY_TYPES)):
            return scalar(values)
        same = isinstance(lhs, TypeValue) and isinstance(rhs, TypeValue) and lhs.name == rhs.name
        return same if equal else not same
    return native


_SCALARS = (str, int, float)


def _scalar_equality(equal: bool) -> Native:
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


def _library_kind(t: CelType) -> str | None:
    """The Quantity/Semver type `t` is, or holds in lists and map values (as the program's
    equality rewrite reads it)."""
    if t.kind is TypeKind.ABSTRACT and t.name in _VALUE_EQUALITY_TYPES and not t.params:
        return t.name
    if t.kind is TypeKind.LIST and t.params:
        return _library_kind(t.elem)
    if t.kind is TypeKind.MAP and len(t.params) == 2:
        return _library_kind(t.value)
    return None


class _ConstSetMembership(_Step):
    """`x in [constants]` under OptOptimize: only `x` is charged."""

    __slots__ = ("arg", "items", "prepared")

    def __init__(self, arg: _Step, items: list[object], prepared: PreparedCall) -> None:
        self.arg = arg
        self.items = items
        self.prepared = prepared

    def eval(self, rt: _Run) -> object:
        value = self.arg.eval(rt)
        if isinstance(value, CelError):
            return value
        return self.prepared.call([value, self.items])


# --- literals ------------------------------------------------------------------------------------


class _List(_Step):
    __slots__ = ("elements", "optional")

    def __init__(self, elements: tuple[_Step, ...], optional: frozenset[int]) -> None:
        self.elements = elements
        self.optional = optional

    def eval(self, rt: _Run) -> object:
        result = self._build(rt)
        rt.charge(LIST_CREATE_BASE_COST)
        return result

    def _build(self, rt: _Run) -> object:
        out: list[object] = []
        for i, element in enumerate(self.elements):
            value = element.eval(rt)
            item = _list_item(value, i in self.optional)
            if isinstance(item, CelError):
                return item
            if item is not _SKIP:
                out.append(item)
        return out


_SKIP = object()


def _list_item(value: object, optional: bool) -> object:
    if isinstance(value, CelError):
        return value
    if not optional:
        return value
    if not isinstance(value, OptionalValue):
        return CelError("cannot initialize optional list element from non-optional value")
    return value.value if value.has_value else _SKIP


def _build_list(values: list[object], optional: frozenset[int]) -> object:
    out: list[object] = []
    for i, value in enumerate(values):
        item = _list_item(value, i in optional)
        if isinstance(item, CelError):
            return item
        if item is not _SKIP:
            out.append(item)
    return out


class _Map(_Step):
    __slots__ = ("entries",)

    def __init__(self, entries: tuple[tuple[_Step, _Step, bool], ...]) -> None:
        self.entries = entries

    def eval(self, rt: _Run) -> object:
        pairs: list[tuple[object, object, bool]] = []
        result: object = None
        for key_step, value_step, optional in self.entries:
            key = key_step.eval(rt)
            if isinstance(key, CelError):
                result = key
                break
            value = value_step.eval(rt)
            if isinstance(value, CelError):
                result = value
                break
            pairs.append((key, value, optional))
        else:
            result = _build_map(pairs)
        rt.charge(MAP_CREATE_BASE_COST)
        return result


def _build_map(pairs: list[tuple[object, object, bool]]) -> object:
    out: dict[object, object] = {}
    for key, value, optional in pairs:
        mkey = _literal_key(key)
        if isinstance(mkey, CelError):
            return mkey
        if optional:
            if not isinstance(value, OptionalValue):
                return CelError(f"cannot initialize optional entry '{_key_text(key)}' from "
                                f"non-optional value")
            if not value.has_value:
                continue
            value = value.value
        if mkey in out:
            return CelError("duplicate key in map")
        out[mkey] = value
    return out


def _literal_key(key: object) -> object:
    if isinstance(key, str) or (isinstance(key, int) and key is not True and key is not False):
        return key
    if key is True or key is False:
        return BoolKey(key)
    return CelError(f"Invalid map key type: '{_type_text(key)}'")


# --- comprehensions ------------------------------------------------------------------------------


class _Fold(_Step):
    __slots__ = ("accu_init", "accu_var", "cond", "iter_range", "iter_var", "iter_var2",
                 "result", "step")

    def __init__(self, node: Node, parts: tuple[_Step, _Step, _Step, _Step, _Step]) -> None:
        self.iter_var = node.iter_var
        self.iter_var2 = node.iter_var2
        self.accu_var = node.accu_var
        self.iter_range, self.accu_init, self.cond, self.step, self.result = parts

    def eval(self, rt: _Run) -> object:
        rng = self.iter_range.eval(rt)
        if not isinstance(rng, list | dict):
            if isinstance(rng, CelError):
                return rng
            return CelError("No matching overloads found : <iter_range>")
        accu = self.accu_init.eval(rt)
        if self.accu_var in _MACRO_ACCUMULATORS and isinstance(accu, list | dict) and not accu:
            # Only macro accumulators (which user text cannot name) may grow in place.
            accu = _Accumulator() if isinstance(accu, list) else _MapAccumulator()
        names = (self.accu_var, self.iter_var, self.iter_var2)
        saved = [rt.vars.get(n, _MISSING) for n in names]
        scope = rt.vars
        scope[self.accu_var] = accu
        try:
            for first, second in _iterate(rng, bool(self.iter_var2)):
                rt.tick()
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
    return key.value if isinstance(key, BoolKey) else key


def _restore(scope: dict[str, object], names: Sequence[str], saved: Sequence[object]) -> None:
    for name, old in zip(names, saved, strict=True):
        if not name:
            continue
        if old is _MISSING:
            scope.pop(name, None)
        else:
            scope[name] = old


# ------------------------------------------------------------------------------------------------
# Planning (cel-go's planner + decorators, reduced to what changes values or costs)
# ------------------------------------------------------------------------------------------------

_plan_lock = threading.Lock()
_plans: OrderedDict[tuple[int, int, bool, bool], tuple[CheckedAst, CallBridge, _Step]] = (
    OrderedDict())


def _plan_for(checked: CheckedAst, bridge: CallBridge, optimize: bool, kubernetes: bool
              ) -> _Step:
    """Plans are cached (bounded, oldest planned first out); the entry keeps its AST alive so
    ids stay unique. A hit is read without the lock (a dict read is atomic) and does not
    reorder the cache: it is on every evaluation, and a re-plan after eviction is cheap."""
    key = (id(checked), id(bridge), optimize, kubernetes)
    hit = _plans.get(key)
    if hit is not None and hit[0] is checked and hit[1] is bridge:
        return hit[2]
    root = _Planner(checked, bridge, optimize, kubernetes).plan(checked.root, frozenset())
    with _plan_lock:
        _plans[key] = (checked, bridge, root)
        while len(_plans) > _PLAN_CACHE_SIZE:
            _plans.popitem(last=False)
    return root


class _Planner:
    def __init__(self, ast: CheckedAst, bridge: CallBridge, optimize: bool,
                 kubernetes: bool) -> None:
        self.ast = ast
        self.bridge = bridge
        self.optimize = optimize
        self.kubernetes = kubernetes

    def plan(self, n: Node, scope: frozenset[str]) -> _Step:
        kind = n.kind
        if kind is NodeKind.CONST:
            return _Const(const_value(n.const))
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
        return _Fail(f"unsupported expression #{n.id}")

    # --- identifiers and attributes ------------------------------------------------------------

    def _ident(self, node_id: int, name: str, scope: frozenset[str]) -> _Step:
        ref = self.ast.references.get(node_id)
        if ref is not None and ref.value is not None:
            return _Const(const_value(ref.value))
        if name in scope:
            return _Var(name)
        resolved = ref.name if ref is not None and ref.name else name
        if self.ast.type_of(node_id).kind is TypeKind.TYPE:
            return _Const(TypeValue(resolved))
        return _Var(resolved)

    def _select(self, n: Node, scope: frozenset[str]) -> _Step:
        if n.id in self.ast.references and not n.test_only:
            return self._ident(n.id, n.field, scope)
        assert n.operand is not None
        operand = _as_attr(self.plan(n.operand, scope), watched=True)
        if n.test_only:
            return _Attr(operand.base, (*operand.quals, _Qual(_PRESENCE, key=n.field)),
                         watched=False)
        return _Attr(operand.base, (*operand.quals, _Qual(_FIELD, key=n.field)),
                     operand.watched)

    def _index(self, target: _Step, index: _Step, optional: bool, field: bool) -> _Step:
        operand = _as_attr(target, watched=True)
        kind = _FIELD if field else _INDEX
        if isinstance(index, _Const):
            qual = _Qual(kind, key=index.value, optional=optional)
        elif isinstance(index, _Attr | _Var):
            qual = _Qual(kind, attr=_as_attr(index, watched=False), optional=optional)
        else:
            qual = _Qual(kind, step=index, optional=optional)
        return _Attr(operand.base, (*operand.quals, qual), operand.watched)

    # --- calls ---------------------------------------------------------------------------------

    def _call(self, n: Node, scope: frozenset[str]) -> _Step:
        fn = n.function
        arg_nodes = ([n.target] if n.target is not None else []) + list(n.args)
        args = tuple(self.plan(a, scope) for a in arg_nodes)
        candidates = self.ast.overload_ids(n.id)
        if fn == "_&&_" and len(args) == 2:
            return _Logic(*args, absorbing=False)
        if fn == "_||_" and len(args) == 2:
            return _Logic(*args, absorbing=True)
        if fn == "_?_:_" and len(args) == 3:
            return _Attr(_CondBase(args[0], _as_attr(args[1], watched=False),
                                   _as_attr(args[2], watched=False)), (), watched=False)
        if fn in ("_[_]", "_[?_]") and len(args) == 2:
            return self._index(args[0], args[1], fn == "_[?_]", field=False)
        if fn == "_?._" and len(args) == 2:
            return self._index(args[0], args[1], True, field=True)
        if fn == "@not_strictly_false" and len(args) == 1:
            return _NotStrictlyFalse(args[0])
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
            return _OptionalOr(args[0], args[1], fn == "orValue", self.bridge.prepare(site))
        if self.optimize:
            folded = self._fold_call(n.id, site, overload, args)
            if folded is not None:
                return folded
        if fn == "format" and n.target is not None and len(n.args) == 1:
            return _Call(site, args, self.bridge.prepare(site), _native_format, self.kubernetes,
                         overrides=True)
        native, guard = self._native(n, fn, overload)
        return _Call(site, args, self.bridge.prepare(site), native, self.kubernetes, guard)

    def _native(self, n: Node, fn: str, overload: str) -> tuple[Native | None, Guard | None]:
        """What the walk computes itself for this call, and when the program must not run."""
        if overload == "add_list":
            return _native_add_list, None
        if fn == MAP_INSERT:
            return _native_map_insert, _map_insert_unfaithful
        if fn == "type" and n.target is None and len(n.args) == 1:
            arg_type = self.ast.type_of(n.args[0].id)
            if arg_type.kind is TypeKind.ABSTRACT and arg_type.name in LIBRARY_TYPES:
                # As the program's renamed `type()`: the static library type, by name.
                value = TypeValue(arg_type.name)
                return (lambda _values: value), None
        if fn in ("_==_", "_!=_", "@in") and n.target is None and len(n.args) == 2:
            left = _library_kind(self.ast.type_of(n.args[0].id))
            right_type = self.ast.type_of(n.args[1].id)
            if fn == "@in":
                right = _library_kind(right_type.elem) if right_type.kind is TypeKind.LIST \
                    and right_type.params else None
            else:
                right = _library_kind(right_type)
            if left is not None and left == right:
                return _value_equality(fn, left), None
            if fn != "@in" and any(self.ast.type_of(a.id).kind in (TypeKind.TYPE, TypeKind.DYN)
                                   for a in n.args):
                return _library_type_equality(fn == "_==_"), None
            if fn != "@in":
                return _scalar_equality(fn == "_==_"), None
        kinds = getattr(self.bridge, "python_parameter_kinds", None)
        signatures = kinds(fn) if callable(kinds) else ()
        return None, _optional_guard(signatures) if signatures else None

    def _fold_call(self, node_id: int, site: CallSite, overload: str, args: tuple[_Step, ...]
                   ) -> _Step | None:
        if site.function in _CONVERSIONS and len(args) == 1 and isinstance(args[0], _Const):
            verdict = conversion_verdict(site.function, args[0].value)
            if isinstance(verdict, str):
                raise _PlanError(verdict, node_id)
            value = self.bridge.prepare(site).call([args[0].value])
            if isinstance(value, CelError):
                if verdict is False:
                    raise _PlanError(value.message, node_id)
                # cel-go converts it, cel-cpp cannot (`duration("1µs")`): not folded, so the
                # program fails only if it gets there.
                return None
            return _Const(value)
        if overload == "in_list" and len(args) == 2 and isinstance(args[1], _Const):
            items = args[1].value
            if isinstance(items, list):
                if not items:
                    return _Const(False)
                if all(_is_primitive(v) for v in items):
                    return _ConstSetMembership(args[0], items, self.bridge.prepare(site))
        return None

    # --- literals ------------------------------------------------------------------------------

    def _list(self, n: Node, scope: frozenset[str]) -> _Step:
        elements = tuple(self.plan(e, scope) for e in n.elements)
        optional = frozenset(n.optional_indices)
        if self.optimize and all(isinstance(e, _Const) for e in elements):
            value = _build_list([e.value for e in elements if isinstance(e, _Const)], optional)
            # cel-go folds the literal into a constant even when building it fails (the error
            # is then the constant's value), unlike a failing conversion.
            return _Const(value)
        return _List(elements, optional)

    def _struct(self, n: Node, scope: frozenset[str]) -> _Step:
        if n.message_name:
            return _Fail(f"message construction is not supported: {n.message_name}")
        entries: list[tuple[_Step, _Step, bool]] = []
        for e in n.entries:
            if e.key is None:
                return _Fail("map entry without a key")
            entries.append((self.plan(e.key, scope), self.plan(e.value, scope), e.optional_entry))
        if self.optimize and all(isinstance(k, _Const) and isinstance(v, _Const)
                                 for k, v, _ in entries):
            value = _build_map([(k.value, v.value, o) for k, v, o in entries
                                if isinstance(k, _Const) and isinstance(v, _Const)])
            return _Const(value)  # an error value too, as for lists
        return _Map(tuple(entries))

    def _comprehension(self, n: Node, scope: frozenset[str]) -> _Step:
        parts = (n.iter_range, n.accu_init, n.loop_condition, n.loop_step, n.result)
        if any(p is None for p in parts):
            return _Fail("incomplete comprehension")
        assert n.iter_range is not None and n.accu_init is not None
        assert n.loop_condition is not None and n.loop_step is not None and n.result is not None
        loop_scope = scope | {v for v in (n.iter_var, n.iter_var2, n.accu_var) if v}
        result_scope = scope | ({n.accu_var} if n.accu_var else set())
        return _Fold(n, (self.plan(n.iter_range, scope), self.plan(n.accu_init, scope),
                         self.plan(n.loop_condition, loop_scope),
                         self.plan(n.loop_step, loop_scope), self.plan(n.result, result_scope)))


def _as_attr(step: _Step, *, watched: bool) -> _Attr:
    """The attribute cel-go builds around an operand of a select, index or `?:` branch."""
    if isinstance(step, _Attr):
        if watched:
            return step
        return _Attr(step.base, step.quals, watched=False)
    if isinstance(step, _Var):
        return _Attr(_VarBase(step.name), (), watched)
    return _Attr(_RelBase(step), (), watched)


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
        return CelError("missing constant")
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
    return CelError("unsupported constant")


def _epoch_text(seconds: int, nanos: int) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    base = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{nanos:09d}Z".replace(".000000000Z", "Z") if nanos else f"{base}Z"
