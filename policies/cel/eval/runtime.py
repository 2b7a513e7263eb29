"""Evaluate a compiled extractor against a decoded `object`, as the scheduler would.

Why two evaluations: the value must be exactly what cel-expr-python (our CEL engine) computes, so
the compiled program itself is run; the runtime *cost* must be what cel-go's tracker charges,
which cel-cpp cannot tell us, so `runtime_cost.track_cost` re-walks the checked AST first. The
walk runs first because it is the one that stops at the cost limit: an expression such as
`lists.range(1000000).map(x, x)` is cut off after bounded work and the real program never runs.

The walk delegates every CEL function to cel-expr-python through `CelBridge`: for each call site
and argument shape it deserializes a tiny checked expression (the function applied to variables
`a0, a1, ...`, with the call's own overload ids) in the program's environment, binds the argument
values and decodes the result. Deserializing a checked AST (rather than compiling text) reaches
internal functions such as `@sortByAssociatedKeys` and keeps the checker's overload choice.

When the walk reports `program_unsafe` (it computed a call cel-expr-python would get wrong, or
could not survive: an optional handed to Python code crashes the interpreter), or that running
the program would pass the evaluation's CPU or memory ceiling (`CostOutcome.program_affordable`),
the program is not run and the walk's value is the result.

Errors are reported in upstream wording: a missing key reads
`no such key: <k>. Consider using CEL optional chaining (?), has() macro, or orValue() for optional
fields` (kind `missing field`, reference §3.6/§6.2), a cost overrun reads `operation cancelled:
actual cost limit exceeded` (kind `cel evaluation cost exceeded`), anything else is `cel
evaluation failed`. The caller decides `cel expression returned non-string` from `cel_type`.
"""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from cel_expr_python import cel

from ...core.cache import BoundedCache
from ..check.env import get_env
from ..common.ast import CheckedAst
from ..common.errors import KIND_COST_EXCEEDED, KIND_FAILED, KIND_MISSING_FIELD
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
    duration_text,
    timestamp_text,
    walk_type_name,
)
from ..common.wire import int_field, len_field
from ..k8s_library import python_parameter_kinds, type_values
from ..k8s_library._types import TAG_FORMAT, TAG_OPTIONAL, TAG_SEMVER
from .runtime_cost import COST_LIMIT_EXCEEDED, CallSite, track_cost
from .runtime_steps import literal_key_map_call

__all__ = [
    "KIND_COST_EXCEEDED",
    "KIND_FAILED",
    "KIND_MISSING_FIELD",
    "MISSING_FIELD_HINT",
    "NO_SUCH_OVERLOAD",
    "CelBridge",
    "EvalProblem",
    "EvalResult",
    "bridge_for",
    "cel_type_name",
    "evaluate",
    "interp_type_name",
    "strings_error",
    "to_plain",
    "translate_error",
]

#: Kubernetes `dracel.EnhanceRuntimeError` suffix for `no such key:` errors.
MISSING_FIELD_HINT = (". Consider using CEL optional chaining (?), has() macro, or orValue() for "
                      "optional fields")

_DEFAULT_ENV_YAML = """
extensions:
- {name: optional}
- {name: strings, version: 2}
- {name: bindings}
- {name: sets}
- {name: lists}
- {name: cel.lib.ext.comprev2}
"""


@dataclass(frozen=True)
class EvalProblem:
    """A runtime failure: `kind` is the upstream error kind, `message` its upstream text."""

    kind: str
    message: str


@dataclass(frozen=True)
class EvalResult:
    """Value and CEL type (as cel-go names it) of one evaluation, its cel-go runtime cost, and
    the error, if any (then `value` is None)."""

    value: object
    cel_type: str
    runtime_cost: int
    error: EvalProblem | None


class CompiledLike(Protocol):
    """What `evaluate` needs from `compile.CompileResult`."""

    @property
    def ok(self) -> bool: ...

    @property
    def checked(self) -> CheckedAst | None: ...

    @property
    def program(self) -> Any: ...


def evaluate(compiled: CompiledLike, variables: Mapping[str, object], *,
             cost_limit: int = 1_000_000, optimize: bool = True,
             env: Any = None) -> EvalResult:
    """Run an extractor: cel-go runtime cost first (stopping at `cost_limit`), then the value.

    `optimize` mirrors cel-go's `OptOptimize`, which every Kubernetes program enables (constant
    literals and conversions are folded and cost nothing); pass False to reproduce harnesses that
    build programs without it, such as Kubernetes' `library/cost_test.go`. `env` is the
    cel-expr-python environment that plans the program; by default the runtime environment of
    `compiled.key` (`env.get_env(key).runtime`, where the Kubernetes libraries live), else a
    standard-library environment.
    """
    checked, program = compiled.checked, compiled.program
    if not compiled.ok or checked is None:
        return EvalResult(None, "", 0, EvalProblem(KIND_FAILED, "expression did not compile"))
    if program is None:
        reason = getattr(compiled, "program_error", None) or "the program could not be planned"
        return EvalResult(None, "", 0, EvalProblem(KIND_FAILED, f"instantiate CEL program: {reason}"))
    bridge = bridge_for(_environment_of(compiled, env))
    outcome = track_cost(checked, variables, bridge, limit=cost_limit, optimize=optimize)
    if outcome.status == "cost_exceeded":
        return EvalResult(None, "", outcome.cost, EvalProblem(KIND_COST_EXCEEDED,
                                                            COST_LIMIT_EXCEEDED))
    if outcome.status == "plan_error":
        return EvalResult(None, "", 0, EvalProblem(KIND_FAILED,
                                                 f"instantiate CEL program: {outcome.message}"))
    if outcome.status == "work_exceeded":
        # a bound of this evaluation (`runtime_bounds`, the copy, step and CPU budgets), not
        # cel-go's: the message says which
        return EvalResult(None, "", outcome.cost, EvalProblem(KIND_FAILED, outcome.message))
    if not outcome.run_program:
        return _walk_result(outcome.value, outcome.cost)
    value, type_name, error = _run_program(program, variables, outcome.value)
    return EvalResult(value, type_name, outcome.cost, error)


def _walk_result(value: object, cost: int) -> EvalResult:
    """The cost walk's own value, when the program must not run (see `CostOutcome`)."""
    if isinstance(value, ErrorValue):
        return EvalResult(None, "", cost, translate_error(value.message, value))
    return EvalResult(to_plain(value, times=True), interp_type_name(value), cost, None)


def _environment_of(compiled: CompiledLike, env: Any) -> Any:
    """The cel-expr-python environment that plans the program (None: standard library)."""
    if env is not None:
        return env
    own = getattr(compiled, "env", None)
    if own is not None:
        return own
    key = getattr(compiled, "key", None)
    if key is not None:
        return get_env(key).runtime
    return None


# Where the program and the walk disagree on whether the evaluation fails, the walk decides.
# It ran every call through cel-expr-python, so the two differ only where cel-cpp's own
# evaluation departs from cel-go's: attribute resolution (cel-cpp rejects `has(s.f)` on a
# string and `s[0]` with its own errors, where cel-go's `refQualify` answers false or `no such
# key`, and optional selection on a scalar is none), map literals with double, list or type
# keys (cel-go builds them), and cel-cpp's limit of 10,000 comprehension iterations in total,
# which cel-go does not have. The walk follows cel-go's interpreter in those.


def _run_program(program: Any, variables: Mapping[str, object], interp_value: object
                 ) -> tuple[object, str, EvalProblem | None]:
    try:
        result = program.eval(data={**_TYPE_ACTIVATION, **variables})
    except MemoryError:
        # a safety net: the walk, bounded by `runtime_bounds`, computed the same value
        return _walk_value(interp_value)
    except _ENGINE_EXCEPTIONS as exc:
        # The binding also raises ValueError (a C++ exception such as `vector::reserve`),
        # TypeError or SystemError (a value it cannot convert): the walk's verdict stands.
        if not isinstance(exc, RuntimeError):
            return _walk_value(interp_value)
        if not isinstance(interp_value, ErrorValue):
            return to_plain(interp_value, times=True), interp_type_name(interp_value), None
        return None, "", translate_error(str(exc), interp_value)
    name = result.type().name()
    if isinstance(interp_value, ErrorValue) and name != "ERROR":
        return None, "", translate_error(interp_value.message, interp_value)
    if name == "ERROR":
        try:
            message = result.value()
        except TypeError:
            # An opaque value (an optional, or an extension type) cel-expr-python cannot export.
            return _walk_value(interp_value)
        if not isinstance(interp_value, ErrorValue):
            return to_plain(interp_value, times=True), interp_type_name(interp_value), None
        return None, "", translate_error(str(message), interp_value)
    # cel-expr-python 0.1.3 cannot export an optional held in a list (RuntimeError
    # "Unimplemented type") and crashes the process on one held in a map: such values are
    # taken from the cost walk, which computed the same value.
    if name.startswith(("LIST", "MAP")) and not _exportable(result, name):
        if isinstance(interp_value, ErrorValue):
            return None, "", translate_error(interp_value.message, interp_value)
        return to_plain(interp_value, times=True), interp_type_name(interp_value), None
    try:
        plain = result.plain_value()
    except (RuntimeError, SystemError, TypeError):
        # any other value the engine cannot export: the walk's too
        if isinstance(interp_value, ErrorValue):
            return None, "", translate_error(interp_value.message, interp_value)
        return to_plain(interp_value, times=True), interp_type_name(interp_value), None
    if isinstance(plain, bytearray):
        plain = bytes(plain)
    if name == "TYPE":
        plain = cel_type_name(result.value().name())
    library_type = type_values.type_name_of(plain)
    if library_type is not None:
        return library_type, "type", None
    # Kubernetes library values travel as carriers (strings, tagged lists): name their type.
    carrier = interp_value if isinstance(interp_value, Opaque) else _tagged_carrier(plain)
    if carrier is not None and carrier.type_name != "unknown":
        return plain, carrier.type_name, None
    return plain, cel_type_name(name), None


_ENGINE_EXCEPTIONS = (RuntimeError, ValueError, TypeError, SystemError)


def _walk_value(interp_value: object) -> tuple[object, str, EvalProblem | None]:
    """The cost walk's value as the result (it ran every call through cel-expr-python)."""
    if isinstance(interp_value, ErrorValue):
        return None, "", translate_error(interp_value.message, interp_value)
    return to_plain(interp_value, times=True), interp_type_name(interp_value), None


def _exportable(value: Any, name: str) -> bool:
    """Whether `plain_value()` can export a cel-expr-python value: not when a list or map holds
    a value the binding cannot convert (it reports optionals as ERROR values)."""
    if name.startswith("LIST"):
        return all(_exportable(v, v.type().name()) for v in value.value())
    if name.startswith("MAP"):
        return all(_exportable(v, v.type().name()) for v in value.value().values())
    # A type value inside a container exports as a binding object, not as its name.
    return name not in ("ERROR", "TYPE")


_STATUS_PREFIX = r"^[A-Z][A-Z_]+: "
_STATUS_SUFFIX = r" \[[A-Z][A-Z_]+\]$"
_CPP_MISSING_KEY = re.compile(r"^Key not found in map\s*:\s*(.*)$", re.DOTALL)
_CPP_NO_OVERLOAD = re.compile(r"^No matching overloads found\b")
#: cel-go's text when no overload accepts the argument values at run time (`MaybeNoSuchOverload`;
#: a few dispatch paths append `: <function>`).
NO_SUCH_OVERLOAD = "no such overload"


def translate_error(message: str, interp_value: object = None) -> EvalProblem:
    """Upstream kind and wording for a cel-expr-python runtime error message.

    cel-cpp's `NOT_FOUND: Key not found in map : "x"` becomes cel-go's `no such key: x` plus
    Kubernetes' hint. When the walk's own value is an error it is preferred: it is phrased as
    cel-go phrases attribute errors, which is what Kubernetes classifies.
    """
    text = _clean(interp_value.message if isinstance(interp_value, ErrorValue) else message)
    # Kubernetes classifies by text, in this order (reference §1.4, errors.go).
    if text.startswith("no such key:"):
        return EvalProblem(KIND_MISSING_FIELD, text + MISSING_FIELD_HINT)
    if "no such key:" in text:
        return EvalProblem(KIND_MISSING_FIELD, text)
    if "cost" in text and ("exceeded" in text or "limit" in text):
        return EvalProblem(KIND_COST_EXCEEDED, text)
    return EvalProblem(KIND_FAILED, text)


def _clean(message: str) -> str:
    """Drop absl status decorations and restate cel-cpp's missing-key error as cel-go does."""
    text = re.sub(_STATUS_SUFFIX, "", re.sub(_STATUS_PREFIX, "", message.strip()))
    missing = _CPP_MISSING_KEY.match(text)
    if missing:
        return f"no such key: {_unquote(missing.group(1).strip())}"
    if _CPP_NO_OVERLOAD.match(text):
        return NO_SUCH_OVERLOAD
    return _CPP_WORDING.get(text, text)


_CPP_WORDING = {"divide by zero": "division by zero"}
"""cel-cpp messages cel-go words otherwise (`types.divideByZeroErr`)."""


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return text


# ------------------------------------------------------------------------------------------------
# Type names
# ------------------------------------------------------------------------------------------------

_CPP_TYPE_NAMES = {
    "BOOL": "bool", "INT": "int", "UINT": "uint", "DOUBLE": "double", "STRING": "string",
    "BYTES": "bytes", "NULL": "null_type", "NULL_TYPE": "null_type",
    "TIMESTAMP": "google.protobuf.Timestamp", "DURATION": "google.protobuf.Duration",
    "TYPE": "type", "DYN": "dyn", "LIST": "list", "MAP": "map", "ERROR": "error",
}


def cel_type_name(cpp_name: str) -> str:
    """cel-go's `TypeName()` for a cel-expr-python type name (`LIST<DYN>` -> `list`)."""
    simple = _CPP_TYPE_NAMES.get(cpp_name)
    if simple is not None:
        return simple
    base = cpp_name.split("<", 1)[0].strip()
    return _CPP_TYPE_NAMES.get(base, base)


def interp_type_name(value: object) -> str:
    """cel-go's type name of an interpreter value."""
    return walk_type_name(value) or "unknown"


def _plain_key(key: object, times: bool) -> object:
    """A map key as `to_plain` presents it: a list or map key stays a `LiteralKey` (a Python
    dict cannot hold it), anything else as its plain value."""
    if isinstance(key, BoolKey):
        return key.value
    if isinstance(key, LiteralKey):
        if key.by_ref and not isinstance(key.value, OptionalValue):
            return key
        key = key.value
    return to_plain(key, times=times)


def to_plain(value: object, *, times: bool = False) -> object:
    """An interpreter value as cel-expr-python's `plain_value()` would present it; with
    `times`, timestamps and durations as the `datetime` and `timedelta` it exports for a
    result (else as their text, which is how an input value is handed to it)."""
    if isinstance(value, UInt):
        return int(value)
    if isinstance(value, list):
        return [to_plain(v, times=times) for v in value]
    if isinstance(value, dict):
        return {_plain_key(k, times): to_plain(v, times=times) for k, v in value.items()}
    if times and isinstance(value, Timestamp):
        return datetime.datetime.fromisoformat(value.text)
    if times and isinstance(value, Duration):
        micros = decimal.Decimal(value.text.removesuffix("s")) * 1_000_000
        return datetime.timedelta(microseconds=int(micros))
    if isinstance(value, Timestamp | Duration | TypeValue):
        return value.text if not isinstance(value, TypeValue) else value.name
    if isinstance(value, OptionalValue):
        return to_plain(value.value, times=times) if value.has_value else None
    if isinstance(value, Opaque):
        return value.token
    return value


# ------------------------------------------------------------------------------------------------
# The bridge: one CEL call through cel-expr-python
# ------------------------------------------------------------------------------------------------

_TYPE_ACTIVATION = type_values.activation()
"""Values of the library type identifiers, bound in every evaluation (never mutated)."""

_BRIDGE_CACHE_SIZE = 8
_PROGRAM_CACHE_SIZE = 1024
_bridges: BoundedCache[Any, CelBridge] = BoundedCache("cel.eval.bridges", _BRIDGE_CACHE_SIZE,
                                                      lru=False)
"""Bridges by cel-expr-python environment (None: the standard library). The key is the
environment itself (compared by identity, kept alive by its entry). Hits are lock-free and do
not refresh the order: environments are few (one per version, mode and kind in use), far under
the bound, and this is on every evaluation."""

_programs: BoundedCache[tuple[Any, CallSite, tuple[Any, ...], bool], Any] = BoundedCache(
    "cel.eval.programs", _PROGRAM_CACHE_SIZE)
"""Planned single-call programs by (environment, call site, argument shapes, wrapped)."""


def bridge_for(env: Any = None) -> CelBridge:
    """The bridge for a cel-expr-python environment (bounded cache; None: standard library)."""
    hit = _bridges.get(env)
    if hit is not None:
        return hit
    actual = env if env is not None else cel.NewEnv(
        config=cel.NewEnvConfigFromYaml(_DEFAULT_ENV_YAML))
    bridge = CelBridge(actual)
    _bridges.put(env, bridge)
    return bridge


class _Unencodable(Exception):
    """Internal: a value that cannot be handed to cel-expr-python."""


Shape = Any  # "v" | ("call", fn, overloads, shapes) | ("list", shapes) | ("map", pairs)


class CelBridge:
    """Runs single CEL calls in a cel-expr-python environment (cached per call shape)."""

    def __init__(self, env: Any) -> None:
        self._env = env

    def prepare(self, site: CallSite) -> _PreparedCall:
        """A runner for `site` (see `runtime_cost.CallBridge`)."""
        return _PreparedCall(self, site)

    @staticmethod
    def python_parameter_kinds(function: str) -> tuple[tuple[str, ...], ...]:
        """Parameter kinds of the Python overloads behind `function` (the walk keeps optional
        values away from them: cel-expr-python crashes converting one)."""
        return python_parameter_kinds(function)

    def call(self, site: CallSite, args: Sequence[object]) -> object:
        """Run one call with interpreter values; a `ErrorValue` value on failure."""
        return self.prepare(site).call(args)

    def run(self, site: CallSite, shapes: tuple[Shape, ...], bindings: Sequence[object],
            wrap: bool) -> object:
        """Evaluate `site` for encoded arguments (`_OPAQUE` for an unexportable result)."""
        program = self._program(site, shapes, wrap)
        if isinstance(program, ErrorValue):
            return program
        data = {_VAR_NAMES[i] if i < len(_VAR_NAMES) else f"a{i}": v
                for i, v in enumerate(bindings)}
        try:
            value = program.eval(data=data)
            decoded = _decode(value, site.result_kind == "plain" and not wrap)
        except _ENGINE_EXCEPTIONS as exc:
            return ErrorValue(_engine_message(exc))
        if wrap and isinstance(decoded, list):
            return OptionalValue(decoded[0], True) if decoded else NONE
        return _finish(site, decoded)

    def _program(self, site: CallSite, shapes: tuple[Shape, ...], wrap: bool) -> Any:
        key = (self._env, site, shapes, wrap)
        program = _programs.get(key)
        if program is not None:
            return program
        try:
            program = self._env.deserialize(_checked_call(site, shapes, wrap))
        except RuntimeError as exc:
            return ErrorValue(str(exc))
        _programs.put(key, program)
        return program


_VAR_NAMES = tuple(f"a{i}" for i in range(16))
_CARRIER_TAGS = {TAG_SEMVER: "kubernetes.Semver", TAG_FORMAT: "kubernetes.NamedFormat",
                 TAG_OPTIONAL: "optional_type"}


class _PreparedCall:
    """A call site bound to a bridge; all-plain arguments take a lock-free fast path."""

    __slots__ = ("_bridge", "_fast", "_names", "_plain_shapes", "_site")

    def __init__(self, bridge: CelBridge, site: CallSite) -> None:
        self._bridge = bridge
        self._site = site
        self._plain_shapes: tuple[Shape, ...] = ("v",) * site.arity
        self._names = tuple(f"a{i}" for i in range(site.arity))
        self._fast: Any = None

    def call(self, args: Sequence[object]) -> object:
        result = self._call(args)
        if type(result) is ErrorValue and self._site.function in _STRINGS_INDEXED:
            restated = strings_error(self._site.function, args)
            if restated is not None:
                return ErrorValue(restated)
        return result

    def _call(self, args: Sequence[object]) -> object:
        site = self._site
        plain = True
        for a in args:
            if type(a) is not str and not _is_plain(a):
                plain = False
                break
        if plain:
            program = self._fast
            if program is None:
                program = self._bridge._program(site, self._plain_shapes, False)
                if isinstance(program, ErrorValue):
                    return program
                self._fast = program
            try:
                value = program.eval(data=dict(zip(self._names, args, strict=True)))
                result = _decode(value, site.result_kind == "plain")
            except _ENGINE_EXCEPTIONS as exc:
                return ErrorValue(_engine_message(exc))
            if result is not _OPAQUE:
                return _finish(site, result)
            wrapped = self._bridge.run(site, self._plain_shapes, list(args), True)
            return Opaque("unknown") if wrapped is _OPAQUE else wrapped
        bindings: list[object] = []
        try:
            shapes = tuple(_encode(a, bindings) for a in args)
        except _Unencodable as exc:
            answered = literal_key_map_call(site.function, args)
            if answered is not None:
                return answered
            return ErrorValue(f"cannot pass {exc} to {site.function}")
        result = self._bridge.run(site, shapes, bindings, False)
        if result is _OPAQUE:
            # cel-cpp's own optionals (and other opaque values) cannot be exported: unwrap them
            # inside CEL with `hasValue()` / `value()`.
            result = self._bridge.run(site, shapes, bindings, True)
        return Opaque("unknown") if result is _OPAQUE else result


def _engine_message(exc: Exception) -> str:
    """An engine exception as an error value's text (a conversion failure is not the user's
    to read: it names the binding's signature)."""
    if isinstance(exc, RuntimeError):
        return str(exc)
    return f"the CEL engine could not compute this call ({type(exc).__name__})"


_STRINGS_INDEXED = frozenset({"charAt", "substring", "indexOf", "lastIndexOf"})


def strings_error(function: str, args: Sequence[object]) -> str | None:
    """cel-go's error for a strings-extension call with an index out of range, else None.

    cel-cpp words these errors differently and without the index (`<string>.charAt(<pos>):
    <pos> is greater than <string>.size()`); cel-go (ext/strings.go, indices in code points)
    says `index out of range: N` or `invalid substring range. start: S, end: E`. Called only
    for calls cel-cpp failed, with the call's arguments (receiver first).
    """
    if not args or type(args[0]) is not str or not all(type(a) in (str, int) for a in args):
        return None
    size = len(args[0])
    rest = args[1:]
    if function == "charAt" and len(rest) == 1 and type(rest[0]) is int:
        return _out_of_range(rest[0], size)
    if function == "substring" and len(rest) == 1 and type(rest[0]) is int:
        return _out_of_range(rest[0], size)
    if function == "substring" and len(rest) == 2 and type(rest[0]) is type(rest[1]) is int:
        start, end = rest
        if isinstance(start, int) and isinstance(end, int) and start > end:
            return f"invalid substring range. start: {start}, end: {end}"
        return _out_of_range(start, size) or _out_of_range(end, size)
    if function in ("indexOf", "lastIndexOf") and len(rest) == 2 and type(rest[1]) is int \
            and rest[0] != "":
        offset = rest[1]
        return f"index out of range: {offset}" if isinstance(offset, int) and offset < 0 \
            else None
    return None


def _out_of_range(index: object, size: int) -> str | None:
    if isinstance(index, int) and (index < 0 or index > size):
        return f"index out of range: {index}"
    return None


def _finish(site: CallSite, result: object) -> object:
    """Tag exportable results of extension types (library carriers) with their CEL type."""
    if isinstance(result, ErrorValue) or result is _OPAQUE:
        return result
    if site.result_kind == "opaque":
        return Opaque(site.type_name, result)
    tagged = _tagged_carrier(result)
    if tagged is not None:
        return tagged
    if type(result) is list and any(type(v) is list for v in result):
        # a list of library values (`versions.reverse()`): its elements are objects too
        return [_tagged_carrier(v) or v for v in result]
    if site.result_kind == "optional":
        # An optional the call returned as a plain value is a library's carrier.
        return Opaque("optional_type", result)
    return result


def _tagged_carrier(value: object) -> Opaque | None:
    """The Kubernetes library carries semvers, formats and its optionals as `[tag, payload]`
    lists whose tag names the type; recognise them so they are sized and compared as objects."""
    if isinstance(value, list) and value and isinstance(value[0], str):
        tag = value[0]
        if tag in _CARRIER_TAGS:
            return Opaque(_CARRIER_TAGS[tag], value)
    return None


# --- encoding interpreter values -------------------------------------------------------------------

_UINT_AS_INT_LIMIT = 1 << 63
_TYPE_SAMPLES: dict[str, object] = {
    "int": 0, "uint": UInt(0), "double": 0.0, "bool": False, "string": "", "bytes": b"",
    "list": [], "map": {}, "null_type": None, "type": TypeValue("int"), "optional_type": NONE,
    "google.protobuf.Timestamp": Timestamp("1970-01-01T00:00:00Z"),
    "google.protobuf.Duration": Duration("0s"),
}


def _encode(value: object, bindings: list[object]) -> Shape:
    """Shape of the sub-expression that rebuilds `value`; plain parts become variables."""
    if _is_plain(value):
        bindings.append(value)
        return "v"
    if isinstance(value, UInt):
        bindings.append(int(value))
        if value >= _UINT_AS_INT_LIMIT:
            return "v"  # cel-expr-python reads ints above int64 as uint
        return ("call", "uint", ("int64_to_uint64",), ("v",))
    if isinstance(value, BoolKey):
        bindings.append(value.value)
        return "v"
    if isinstance(value, list):
        return ("list", tuple(_encode(v, bindings) for v in value))
    if isinstance(value, dict):
        return ("map", tuple((_encode(k, bindings), _encode(v, bindings))
                             for k, v in value.items()))
    if isinstance(value, Timestamp):
        bindings.append(value.text)
        return ("call", "timestamp", ("string_to_timestamp",), ("v",))
    if isinstance(value, Duration):
        bindings.append(value.text)
        return ("call", "duration", ("string_to_duration",), ("v",))
    if isinstance(value, OptionalValue):
        if not value.has_value:
            return ("call", "optional.none", ("optional_none",), ())
        return ("call", "optional.of", ("optional_of",), (_encode(value.value, bindings),))
    if isinstance(value, Opaque) and _is_plain(value.token):
        bindings.append(value.token)
        return "v"
    if isinstance(value, TypeValue):
        if value.name not in _TYPE_SAMPLES:
            raise _Unencodable(f"type {value.name}")
        return ("call", "type", ("type",), (_encode(_TYPE_SAMPLES[value.name], bindings),))
    raise _Unencodable(f"a value of type {type(value).__name__}")


def _is_plain(value: object) -> bool:
    """True for values cel-expr-python converts faithfully from Python."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return True
    if isinstance(value, list):
        return all(_is_plain(v) for v in value)
    if type(value) is dict and isinstance(value, dict):
        return all(type(k) in (str, int) and _is_plain(v) for k, v in value.items())
    return False


# --- decoding cel-expr-python values -----------------------------------------------------------

_OPAQUE = object()


def _decode(value: Any, plain: bool) -> object:
    name = value.type().name()
    if name == "ERROR":
        try:
            message = value.value()
        except TypeError:
            return _OPAQUE
        return ErrorValue(str(message))
    if plain:
        return value.plain_value()
    return _decode_value(value, name)


def _decode_value(value: Any, name: str) -> object:
    if name in ("STRING", "INT", "DOUBLE", "BOOL", "NULL", "NULL_TYPE"):
        return value.value()
    if name == "UINT":
        return UInt(value.value())
    if name == "BYTES":
        return bytes(value.value())
    if name.startswith("LIST"):
        return [_decode_value(v, v.type().name()) for v in value.value()]
    if name.startswith("MAP"):
        return {_decode_key(k): _decode_value(v, v.type().name())
                for k, v in value.value().items()}
    if name == "TIMESTAMP":
        return Timestamp(timestamp_text(value.value()))
    if name == "DURATION":
        return Duration(duration_text(value.value()))
    if name == "TYPE":
        return TypeValue(cel_type_name(value.value().name()))
    if name == "ERROR":
        try:
            return ErrorValue(str(value.value()))
        except TypeError:
            return Opaque("unknown")
    return Opaque(name, value.plain_value())


def _decode_key(key: object) -> object:
    if key is True or key is False:
        return BoolKey(key)
    return key


# --- a checked call expression, written as protobuf (cel.expr.CheckedExpr in an Any) ----------

_CHECKED_EXPR_URL = b"type.googleapis.com/cel.expr.CheckedExpr"
_DYN_TYPE = b"\x0a\x00"  # cel.expr.Type{dyn: Empty}


class _Writer:
    """Builds `cel.expr.Expr` messages with fresh ids and the matching reference/type maps."""

    def __init__(self) -> None:
        self.next_id = 0
        self.next_var = 0
        self.maps = bytearray()

    def _new(self, reference: bytes | None) -> int:
        self.next_id += 1
        node_id = self.next_id
        if reference is not None:
            entry = int_field(1, node_id) + len_field(2, reference)
            self.maps += len_field(2, entry)
        self.maps += len_field(3, int_field(1, node_id) + len_field(2, _DYN_TYPE))
        return node_id

    def shape(self, shape: Shape) -> bytes:
        if shape == "v":
            name = f"a{self.next_var}"
            self.next_var += 1
            node_id = self._new(len_field(1, name.encode()))
            return int_field(2, node_id) + len_field(4, len_field(1, name.encode()))
        tag = shape[0]
        if tag == "call":
            _, function, overloads, args = shape
            return self.call(function, overloads, [self.shape(a) for a in args])
        if tag == "list":
            node_id = self._new(None)
            body = b"".join(len_field(1, self.shape(s)) for s in shape[1])
            return int_field(2, node_id) + len_field(7, body)
        node_id = self._new(None)
        body = b""
        for key_shape, value_shape in shape[1]:
            entry_id = self._new(None)
            entry = (int_field(1, entry_id) + len_field(3, self.shape(key_shape))
                     + len_field(4, self.shape(value_shape)))
            body += len_field(2, entry)
        return int_field(2, node_id) + len_field(8, body)

    def call(self, function: str, overloads: Sequence[str], args: list[bytes],
             target: bytes | None = None) -> bytes:
        reference = len_field(1, function.encode()) + b"".join(
            len_field(3, o.encode()) for o in overloads)
        node_id = self._new(reference)
        body = len_field(1, target) if target is not None else b""
        body += len_field(2, function.encode()) + b"".join(len_field(3, a) for a in args)
        return int_field(2, node_id) + len_field(6, body)

    def site_call(self, site: CallSite, shapes: tuple[Shape, ...]) -> bytes:
        self.next_var = 0
        built = [self.shape(s) for s in shapes]
        if site.member and built:
            return self.call(site.function, site.overload_ids, built[1:], target=built[0])
        return self.call(site.function, site.overload_ids, built)


def _checked_call(site: CallSite, shapes: tuple[Shape, ...], wrap: bool) -> bytes:
    """`f(a0, ...)`, or for an optional result `f(...).hasValue() ? [f(...).value()] : []`."""
    w = _Writer()
    if wrap:
        present = w.call("hasValue", ("optional_hasValue",), [],
                         target=w.site_call(site, shapes))
        inner = w.call("value", ("optional_value",), [], target=w.site_call(site, shapes))
        some = int_field(2, w._new(None)) + len_field(7, len_field(1, inner))
        empty = int_field(2, w._new(None)) + len_field(7, b"")
        root = w.call("_?_:_", ("conditional",), [present, some, empty])
    else:
        root = w.site_call(site, shapes)
    checked = bytes(w.maps) + len_field(4, root)
    return len_field(1, _CHECKED_EXPR_URL) + len_field(2, checked)
