"""Compile a CEL expression the way the Kubernetes API server does, with a bounded cache.

Why: every rule about an expression (SA106 compile, SA107 output type, SA108 cost, the
advisories) starts from the same compilation; the webhook sees the same few expressions over
and over. `compile_expression` returns a value (`CompileResult`): the checked AST, the
program, cel-go-formatted errors, and whether the failure is one of *our engine's* limits
rather than the expression's fault.

Steps, mirroring cel-go's `env.Compile` then `env.Program`:

1. size limit (100,000 code points, cel-go's parser default) and the one syntax cel-cpp
   accepts that Kubernetes' parser does not (backtick-escaped identifiers);
2. parse + type-check with cel-cpp in the environment's checker;
3. if that passed, the Kubernetes AST validators (`dra_affinity.policies.cel.check.validators`);
4. if those passed, the program-time checks (regex constants; type conversions of constants,
   which cel-go's `OptOptimize` folds while planning, so `int("x")` fails `env.Program()`
   even in a branch that never runs) and the program itself.

Engine limits: cel-cpp's parser refuses nesting deeper than 32 (not configurable through
cel-expr-python); cel-go allows 250. When cel-cpp fails for that reason we estimate the
cel-go depths from a token scan: within cel-go's limit the result is `engine_limited` (the
rule layer reports an advisory, not SA106); beyond it, the result carries cel-go's error.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import yaml
from cel_expr_python import cel

from ..core.cache import BoundedCache, CacheInfo, text_weight
from . import k8s_library
from .check.env import (
    BASE_OPTIONS,
    CelEnvironment,
    EnvKey,
    EnvMode,
    Feature,
    _cross_numeric_extension,
    get_env,
)
from .check.validators import (
    format_go_type,
    program_plan_errors,
    program_regex_errors,
    validate_double_literals,
    validate_duration_literals,
    validate_duration_overloads,
    validate_format_calls,
    validate_homogeneous_literals,
    validate_regex_literals,
    validate_timestamp_literals,
    validate_type_identifiers,
    validate_type_parameters,
)
from .common.ast import CheckedAst, NodeKind
from .common.ast_decode import decode_checked_expr
from .common.errors import (
    CompileProblem,
    ErrorStage,
    parse_engine_errors,
    render_errors,
    split_status,
)
from .eval.runtime_conversions import CONVERSION_FUNCTIONS

__all__ = [
    "CEL_GO_MAX_CODE_POINTS",
    "CEL_GO_MAX_RECURSION_DEPTH",
    "DEFAULT_CACHE_SIZE",
    "ENGINE_MAX_NESTING",
    "CacheInfo",
    "CompileResult",
    "DepthEstimate",
    "alias_two_variable_exists_one",
    "cache_info",
    "clear_cache",
    "compile_expression",
    "compile_in",
    "compile_uncached",
    "escaped_identifiers",
    "estimate_depth",
]

CEL_GO_MAX_RECURSION_DEPTH = 250
"""cel-go parser default `MaxRecursionDepth`."""

CEL_GO_MAX_CODE_POINTS = 100_000
"""cel-go parser default `ExpressionSizeCodePointLimit`."""

ENGINE_MAX_NESTING = 32
"""cel-cpp's parser nesting limit as built into cel-expr-python 0.1.3."""

DEFAULT_CACHE_SIZE = 2048
"""Compiled expressions kept; a slice holds at most 8, a webhook sees a few hundred."""

CACHE_BYTES = 32 * 1024 * 1024
"""Budget of the compiled expressions kept (`result_weight`), per process. The count alone
let a webhook worker fed distinct 10 KiB expressions hold 2,048 x ~2.2 MB, ~4.4 GB, in a
512 Mi pod; this keeps ~15 of those, and the count still binds for ordinary expressions
(about 20 nodes, ~13 KB: 2,048 fit in 27 MB)."""

NODE_BYTES = 600
"""Python memory per checked-AST node, the compile result and its analysis
(`dra_affinity.policies.analysis.expression`) together: 470-590 bytes measured with
tracemalloc for 10 KiB expressions of `exists` macros, `==` chains and `has()` chains."""


def result_weight(result: CompileResult) -> int:
    """Estimated bytes a compile result holds: its text, its tree, its error messages."""
    nodes = result.checked.node_count if result.checked is not None else 0
    return (1024 + text_weight((result.expression,)) + NODE_BYTES * nodes
            + text_weight(e.message for e in result.errors))


_ENGINE_DEPTH_ERROR = (
    r"Expression recursion limit exceeded\. limit: \d+|"
    r"Exceeded max recursion depth of \d+ when parsing"
)


_LONE_SURROGATE = "[\ud800-\udfff]"
"""Compiled by `re` on first use, for non-ASCII text only: compiling the class is slow enough
to show in every start. The module's other patterns, read only from error text, are strings too."""


class LazyProgram:
    """The cel-expr-python program of a checked expression, planned in the runtime environment
    the first time it is asked for.

    Why lazy: planning a large expression is not cheap, and most compilations — every one
    `lint` and the webhook make — only ever need the checked AST (rules, cost, advisories).
    And a planning failure is our engine's, not one upstream reports at compile time: what
    cel-go's `env.Program()` rejects (constant conversions it folds, regex constants) is found
    by `plan_error` and `program_regex_errors` before the result is declared ok. So a program
    cel-cpp cannot plan shows as an evaluation error (`program_error`), never as SA106.
    Thread-safe: one planning per instance; racing callers wait for it.
    """

    __slots__ = ("_env", "_error", "_lock", "_program", "_serialized")

    def __init__(self, env: Any, serialized: bytes | None,
                 program: cel.Expression | None = None) -> None:
        self._env = env
        self._serialized = serialized
        self._program = program
        self._error: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def ready(cls, program: cel.Expression) -> LazyProgram:
        """An already planned program."""
        return cls(None, None, program)

    def get(self) -> cel.Expression | None:
        """The program, planning it now if needed (None if planning failed: see `error`)."""
        if self._program is not None or self._serialized is None:
            return self._program
        with self._lock:
            if self._serialized is not None:
                try:
                    self._program = self._env.deserialize(self._serialized)
                except RuntimeError as exc:
                    self._error = split_status(str(exc))[1].strip()
                self._serialized = None  # planned or failed: the bytes are not needed again
        return self._program

    @property
    def error(self) -> str | None:
        """Why planning failed (after `get`), else None."""
        self.get()
        return self._error


@dataclass(frozen=True, eq=False)
class CompileResult:
    """The outcome of compiling one expression in one environment.

    * `ok`: compiled and validated; `checked` is set and the program can be planned
      (`program`, on first access; see `LazyProgram`).
    * `errors`: what upstream would report (sorted by position); empty when `ok` and when
      `engine_limited`.
    * `output_type`: the checked type of the whole expression as cel-go prints it
      (`string`, `dyn`, `list(string)`, ...), set whenever type-checking succeeded.
    * `engine_limited`: our engine could not compile an expression upstream would accept
      (see `engine_limit_reason`); nothing can be said about it statically.
    """

    expression: str
    key: EnvKey
    ok: bool
    errors: tuple[CompileProblem, ...]
    output_type: str | None
    checked: CheckedAst | None
    plan: LazyProgram | None
    engine_limited: bool = False
    engine_limit_reason: str | None = None

    @property
    def program(self) -> cel.Expression | None:
        """The planned program: None unless `ok`, or when our engine could not plan it
        (`program_error` says why)."""
        return self.plan.get() if self.plan is not None else None

    @property
    def program_error(self) -> str | None:
        """Why our engine could not plan the program of an `ok` result, else None."""
        return self.plan.error if self.plan is not None else None

    @property
    def error_text(self) -> str:
        """The errors as upstream prints them (`ERROR: <input>:L:C: ...` + snippets)."""
        return render_errors(self.errors, self.expression)

    @property
    def stage(self) -> ErrorStage | None:
        """Stage of the first error, if any."""
        return self.errors[0].stage if self.errors else None


# ------------------------------------------------------------------------------------------------
# Depth estimation (tokenizer-level)
# ------------------------------------------------------------------------------------------------


class DepthEstimate(NamedTuple):
    """Estimated cel-go parser depths of an expression.

    `listener`: deepest nesting of one grammar rule (cel-go's `recursionListener`, message
    `expression recursion limit exceeded: 250`); `visitor`: deepest nesting of
    Relation/Calc/Select/Call/Index/ternary nodes (`max recursion depth exceeded`).
    """

    listener: int
    visitor: int


_RELATION_OPS = ("==", "!=", "<=", ">=", "<", ">")
_CALC_OPS = ("+", "-", "*", "/", "%")
_OPEN = "([{"
_CLOSE = ")]}"


class _Frame:
    """Counters of one bracket level; see `estimate_depth`."""

    __slots__ = ("calc", "member", "rel", "tern")

    def __init__(self) -> None:
        self.tern = 0
        self.rel = 0
        self.calc = 0
        self.member = 0

    def listener_terms(self) -> tuple[int, int, int, int]:
        # Each bracket level enters every rule once; left-recursive rules (relation, calc,
        # member) keep one context open per operator so far, calc and relation one more for
        # the operand being parsed; nested ternaries nest `expr` once each.
        return (
            1 + self.tern,
            1 + self.rel + (1 if self.rel else 0),
            1 + self.calc + (1 if self.calc else 0),
            1 + self.member,
        )

    def visitor_term(self) -> int:
        return self.tern + self.rel + self.calc + self.member


def _skip_string(text: str, i: int) -> int:
    """Index just past the string literal starting at `i` (prefixes already consumed)."""
    raw = (i > 0 and text[i - 1] in "rR") or (i > 1 and text[i - 2] in "rR" and text[i - 1] in "bB")
    quote = text[i]
    if text.startswith(quote * 3, i):
        end = text.find(quote * 3, i + 3)
        while not raw and end != -1 and _escaped(text, end):
            end = text.find(quote * 3, end + 1)
        return len(text) if end == -1 else end + 3
    j = i + 1
    while j < len(text):
        ch = text[j]
        if ch == "\\" and not raw:
            j += 2
            continue
        if ch == quote or ch == "\n":
            return j + 1
        j += 1
    return j


def _escaped(text: str, i: int) -> bool:
    n = 0
    while i - n - 1 >= 0 and text[i - n - 1] == "\\":
        n += 1
    return n % 2 == 1


def escaped_identifiers(text: str) -> list[tuple[int, int]]:
    """(line, column) of every backtick-escaped identifier (`` a.`b-c` ``) outside literals.

    cel-cpp parses them; the cel-go parser Kubernetes uses only does with
    `EnableIdentifierEscapeSyntax`, which the Kubernetes environment never sets.
    """
    if "`" not in text:
        return []  # the common case: skip the character walk
    found: list[tuple[int, int]] = []
    i, n = 0, len(text)
    line, line_start = 1, 0
    while i < n:
        ch = text[i]
        if ch == "\n":
            line, line_start = line + 1, i + 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end == -1 else end
        elif ch in "\"'":
            end = _skip_string(text, i)
            newlines = text.count("\n", i, end)
            if newlines:
                line += newlines
                line_start = text.rfind("\n", i, end) + 1
            i = end
        elif ch == "`":
            found.append((line, i - line_start + 1))
            end = text.find("`", i + 1)
            i = n if end == -1 else end + 1
        else:
            i += 1
    return found


_EXISTS_ONE = "exists_one"
_EXISTS_ONE_ALIAS = " existsOne"
assert len(_EXISTS_ONE) == len(_EXISTS_ONE_ALIAS)


def _skip_blank(text: str, i: int) -> int:
    """Index of the next token at or after `i`: whitespace and `//` comments skipped."""
    n = len(text)
    while i < n:
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end == -1 else end + 1
        else:
            break
    return i


def _call_arity(text: str, open_paren: int) -> int:
    """Number of top-level arguments of the call whose `(` is at `open_paren` (-1: unclosed)."""
    depth = 0
    commas = 0
    seen = False
    i, n = open_paren + 1, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            i = _skip_string(text, i)
            seen = True
            continue
        if text.startswith("//", i):
            i = _skip_blank(text, i)
            continue
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            if depth == 0:
                return commas + 1 if seen else 0
            depth -= 1
        elif ch == "," and depth == 0:
            commas += 1
        if not ch.isspace():
            seen = True
        i += 1
    return -1


def alias_two_variable_exists_one(text: str) -> str:
    """`x.exists_one(k, v, p)` spelled `x. existsOne(k, v, p)` (same length, same positions).

    cel-go registers the two-variable `exists_one` as an alias of `existsOne`; cel-cpp has
    only `existsOne` (the one-variable `exists_one(x, p)` is a standard macro in both). The
    respelling keeps every offset: the inserted blank is legal between `.` and a name, and
    calls are located at their `(`, which does not move.
    """
    if _EXISTS_ONE not in text:
        return text
    out = list(text)
    changed = False
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            i = _skip_string(text, i)
            continue
        if text.startswith("//", i):
            i = _skip_blank(text, i)
            continue
        if ch.isalpha() or ch == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            if j < n and text[j] in "\"'" and text[i:j].lower() in ("r", "b", "rb", "br"):
                i = _skip_string(text, j)
                continue
            if text[i:j] == _EXISTS_ONE and _after_dot(text, i):
                paren = _skip_blank(text, j)
                if paren < n and text[paren] == "(" and _call_arity(text, paren) == 3:
                    out[i:j] = _EXISTS_ONE_ALIAS
                    changed = True
            i = j
            continue
        i += 1
    return "".join(out) if changed else text


def _after_dot(text: str, i: int) -> bool:
    """Whether the name starting at `i` follows a `.` (a receiver call or a selection)."""
    k = i - 1
    while k >= 0 and text[k].isspace():
        k -= 1
    return k >= 0 and text[k] == "."


def estimate_depth(text: str) -> DepthEstimate:
    """Estimate cel-go's parser depths from tokens, without parsing.

    Per bracket level we count ternaries, relation and arithmetic operators and member
    postfixes (`.f`, `.f()`, `[i]`), resetting each counter where cel-go's grammar starts a
    new sub-rule (a relation resets arithmetic, `&&`/`||`/`?`/`:`/`,` reset both, any
    operator ends a member chain). Depths sum over the open levels. This is exact for the
    shapes that matter (nested brackets, operator and member chains, ternary chains) and an
    upper bound elsewhere.
    """
    stack: list[_Frame] = [_Frame()]
    # Only the innermost level's counters change, so the levels below are summed once, when
    # a level opens, and each measure costs O(1): the whole estimate is linear in the text.
    below: list[list[int]] = [[0, 0, 0, 0, 0]]
    best_listener = 0
    best_visitor = 0
    prev_operand = False
    i, n = 0, len(text)

    def terms(frame: _Frame) -> tuple[int, int, int, int, int]:
        return (*frame.listener_terms(), frame.visitor_term())

    def measure() -> None:
        nonlocal best_listener, best_visitor
        base, top_terms = below[-1], terms(stack[-1])
        sums = [base[k] + top_terms[k] for k in range(5)]
        best_listener = max(best_listener, *sums[:4])
        best_visitor = max(best_visitor, sums[4])

    def open_level() -> None:
        base, top_terms = below[-1], terms(stack[-1])
        below.append([base[k] + top_terms[k] for k in range(5)])
        stack.append(_Frame())

    def close_level() -> None:
        stack.pop()
        below.pop()

    while i < n:
        ch = text[i]
        top = stack[-1]
        if ch.isspace():
            i += 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end == -1 else end + 1
            continue
        if ch in "\"'":
            i = _skip_string(text, i)
            prev_operand = True
            continue
        if ch.isalpha() or ch == "_" or ch == "`":
            j = i + 1
            if ch == "`":
                j = text.find("`", i + 1)
                j = n if j == -1 else j + 1
            else:
                while j < n and (text[j].isalnum() or text[j] == "_"):
                    j += 1
            word = text[i:j]
            if j < n and text[j] in "\"'" and word.lower() in ("r", "b", "rb", "br"):
                i = _skip_string(text, j)
                prev_operand = True
                continue
            if word == "in" and prev_operand:
                top.rel += 1
                top.calc = top.member = 0
                prev_operand = False
            else:
                prev_operand = True
            i = j
            measure()
            continue
        if ch.isdigit() or (ch == "." and i + 1 < n and text[i + 1].isdigit() and not prev_operand):
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "."):
                j += 1
            i = j
            prev_operand = True
            continue
        if ch == ".":
            top.member += 1
            i += 2 if text.startswith(".?", i) else 1
            prev_operand = False
            measure()
            continue
        if ch in _OPEN:
            if ch == "[" and prev_operand:
                top.member += 1
            open_level()
            i += 1
            prev_operand = False
            measure()
            continue
        if ch in _CLOSE:
            if len(stack) > 1:
                close_level()
            i += 1
            prev_operand = True
            continue
        two = text[i:i + 2]
        if two in ("&&", "||"):
            top.calc = top.rel = top.member = 0
            i += 2
            prev_operand = False
            continue
        if two in _RELATION_OPS or ch in _RELATION_OPS:
            top.rel += 1
            top.calc = top.member = 0
            i += 2 if two in _RELATION_OPS else 1
            prev_operand = False
            measure()
            continue
        if ch in _CALC_OPS:
            if prev_operand:
                top.calc += 1
            top.member = 0
            i += 1
            prev_operand = False
            measure()
            continue
        if ch == "?":
            if prev_operand:
                top.tern += 1
                top.calc = top.rel = top.member = 0
            i += 1
            prev_operand = False
            measure()
            continue
        if ch == ",":
            top.tern = top.calc = top.rel = top.member = 0
        elif ch == ":":
            top.calc = top.rel = top.member = 0
        elif ch == "!":
            top.member = 0
        i += 1
        prev_operand = False
    measure()
    return DepthEstimate(best_listener, best_visitor)


def _upstream_depth_error(text: str) -> str | None:
    """cel-go's error for an expression too deep for cel-go as well, else None."""
    depth = estimate_depth(text)
    if depth.listener > CEL_GO_MAX_RECURSION_DEPTH:
        return f"expression recursion limit exceeded: {CEL_GO_MAX_RECURSION_DEPTH}"
    if depth.visitor > CEL_GO_MAX_RECURSION_DEPTH:
        return "max recursion depth exceeded"
    return None


# ------------------------------------------------------------------------------------------------
# Compilation
# ------------------------------------------------------------------------------------------------


def _failure(expression: str, key: EnvKey, errors: list[CompileProblem] | tuple[CompileProblem, ...],
             output_type: str | None = None,
             checked: CheckedAst | None = None) -> CompileResult:
    ordered = tuple(sorted(errors, key=lambda e: (e.line, e.column)))
    return CompileResult(expression, key, False, ordered, output_type, checked, None)


_LARGE_NUMBER = re.compile(r"\d[eE]\+?\d{3}|\d{300}")
"""A number literal that may be out of float64's range (cheap test before the AST walk)."""


def _validate(env: CelEnvironment, checked: CheckedAst) -> list[CompileProblem]:
    if _LARGE_NUMBER.search(checked.expression):
        errors = validate_double_literals(checked)
        if errors:
            return errors  # a parse error in cel-go: nothing else is reported
    errors = validate_type_parameters(checked)
    if "duration" in checked.expression:
        errors += validate_duration_overloads(checked)
    if "dyn" in checked.expression:
        errors += validate_type_identifiers(checked)
    if env.has(Feature.HOMOGENEOUS_LITERALS):
        errors += validate_homogeneous_literals(checked)
    if env.has(Feature.LITERAL_VALIDATORS):
        errors += validate_duration_literals(checked)
        errors += validate_timestamp_literals(checked)
        errors += validate_regex_literals(checked, env.regex_error)
    if not _FORMAT_OPTIONS.isdisjoint(env.options):
        errors += validate_format_calls(checked)
    return errors


_UNDECLARED_FUNCTION = (
    r"^undeclared reference to '([A-Za-z_][A-Za-z0-9_]*)' \(in container '[^']*'\)$")
_PROBE_OVERLOAD = "dra_affinity_arity_probe"
_PROBE_MAX_ARITY = 8
MAX_ARITY_PROBES = 4
"""Probes one expression's errors may cost: each `_declared` type-checks a call up to 18
times, each twin environment (`_probe_environment`) is built from its config (a whole
environment build), and cel-cpp reports up to 20 errors. Uncapped and unshared, a short
expression of wrong-arity calls would cost far more CPU at admission than its size, which is
all the webhook's heavy-review gate looks at. Probes are shared by the errors of one function
name and arity; errors past the cap keep cel-cpp's `undeclared reference` text (as errors do
when the expression holds other errors: the twin cannot check it then). The verdict is the
same."""


def _arity_errors(env: CelEnvironment, source: str,
                  errors: Sequence[CompileProblem]) -> list[CompileProblem]:
    """cel-go's `found no matching overload` for calls of a declared function with an arity
    it has no overload for, which cel-cpp reports as `undeclared reference to 'f'`."""
    out: list[CompileProblem] = []
    declared: dict[str, bool] = {}
    twins: dict[tuple[str, bool, int], CheckedAst | None] = {}
    probes = 0
    for error in errors:
        m = re.match(_UNDECLARED_FUNCTION, error.message)
        call = _call_at(source, error.line, error.column, m.group(1)) if m else None
        replaced = None
        if m is not None and call is not None:
            name, (member, arity) = m.group(1), call
            if name not in declared and probes < MAX_ARITY_PROBES:
                probes += 1
                declared[name] = _declared(env, name)
            key = (name, member, arity)
            if declared.get(name) and key not in twins and probes < MAX_ARITY_PROBES:
                probes += 1
                twins[key] = _twin_checked(env, source, name, member, arity)
            checked = twins.get(key)
            if checked is not None:
                replaced = _no_matching_overload(checked, name, error)
        out.append(replaced or error)
    return out


def _call_at(source: str, line: int, column: int, name: str) -> tuple[bool, int] | None:
    """(receiver call?, argument count) when `name(` is written with its `(` at (line, column)."""
    lines = source.split("\n")
    if not 1 <= line <= len(lines) or column < 1:
        return None
    offset = sum(len(text) + 1 for text in lines[:line - 1]) + column - 1
    if offset >= len(source) or source[offset] != "(":
        return None
    end = offset
    while end > 0 and source[end - 1].isspace():
        end -= 1
    start = end - len(name)
    if start < 0 or source[start:end] != name or \
            (start > 0 and (source[start - 1].isalnum() or source[start - 1] == "_")):
        return None
    arity = _call_arity(source, offset)
    if arity < 0:
        return None
    member = _after_dot(source, start)
    return member, arity + (1 if member else 0)


def _declared(env: CelEnvironment, name: str) -> bool:
    """Whether the environment declares a function `name` (cel-go looks functions up by name,
    then matches overloads, receiver style or not): some call of it with `dyn` arguments
    type-checks."""
    for arity in range(_PROBE_MAX_ARITY + 1):
        args = ", ".join(["dyn(0)"] * arity)
        for text in (f"{name}({args})", f"dyn(0).{name}({args})"):
            try:
                env.checker.compile(text)
            except RuntimeError as exc:
                if f"found no matching overload for '{name}'" in str(exc):
                    return True
                continue
            return True
    return False


def _twin_checked(env: CelEnvironment, source: str, name: str, member: bool,
                  arity: int) -> CheckedAst | None:
    """`source` checked in a twin environment where `name` has a `dyn` overload of the
    call's arity; None if it does not check there either."""
    try:
        twin = _probe_environment(env, name, member, arity)
        return decode_checked_expr(twin.compile(source).serialize(), source)
    except RuntimeError:
        return None


def _no_matching_overload(checked: CheckedAst, name: str,
                          error: CompileProblem) -> CompileProblem | None:
    """The error cel-go reports, with the argument types the twin check (`_twin_checked`)
    found; None if that does not work out (the engine's error is kept)."""
    for node in checked.walk():
        if node.kind is NodeKind.CALL and node.function == name \
                and _PROBE_OVERLOAD in checked.overload_ids(node.id) \
                and checked.location(node.id) == (error.line, error.column):
            types = [format_go_type(checked.type_of(a.id)) for a in node.args]
            applied = f"({', '.join(types)})"
            if node.target is not None:
                applied = format_go_type(checked.type_of(node.target.id)) + "." + applied
            return CompileProblem(error.line, error.column,
                                f"found no matching overload for '{name}' applied to '{applied}'",
                                error.stage)
    return None


def _probe_environment(env: CelEnvironment, name: str, member: bool, arity: int) -> cel.Env:
    """The checking environment again (from its config), plus an overload `name(dyn, ...)`
    of `arity` parameters (receiver included), receiver style when `member`."""
    key = env.key
    version = key.compatibility_version if key.mode is EnvMode.NEW_EXPRESSIONS \
        else key.kubernetes_version
    extensions: list[cel.CelExtensionBase] = list(
        k8s_library.checker_config_for(version).extensions)
    if env.has(Feature.CROSS_TYPE_NUMERIC_COMPARISONS):
        extensions.append(_cross_numeric_extension())
    config = yaml.safe_load(env.checker.config().to_yaml())
    custom = {"kubernetes.lists.merged", "cel.lib.std.cross_type_numeric_comparisons"}
    config["extensions"] = [e for e in config.get("extensions", []) if e["name"] not in custom]
    dyn = {"type_name": "dyn"}
    overload: dict[str, object] = {"id": _PROBE_OVERLOAD, "return": dyn}
    if member:
        overload["target"] = dyn
    if arity - member:
        overload["args"] = [dyn] * (arity - member)
    functions = config.setdefault("functions", [])
    declared = [f for f in functions if f.get("name") == name]
    if declared:
        declared[0].setdefault("overloads", []).append(overload)
    else:
        params = [cel.Type.DYN] * arity
        extensions.append(cel.CelExtension("dra_affinity.arity_probe", [cel.FunctionDecl(
            name, [cel.Overload(_PROBE_OVERLOAD, cel.Type.DYN, params, is_member=member)])]))
    return cel.NewEnv(config=cel.NewEnvConfigFromYaml(yaml.safe_dump(config)),
                      extensions=extensions)


def _parse_stage(env: CelEnvironment, expression: str) -> ErrorStage:
    try:
        env.checker.compile(expression, disable_check=True)
    except RuntimeError:
        return ErrorStage.PARSE
    return ErrorStage.CHECK


_FORMAT_OPTIONS = frozenset(
    o.name for o in BASE_OPTIONS
    if o.extension is not None and o.extension[0] == "strings" and (o.extension[1] or 0) >= 1)
"""ext.Strings at version 1 or more: `format` and its validator (`StringsValidateFormatCalls`)."""

_TWO_VARIABLE_OPTIONS = frozenset(
    o.name for o in BASE_OPTIONS
    if o.extension is not None and o.extension[0] == "cel.lib.ext.comprev2")


def _has_two_variable_macros(env: CelEnvironment) -> bool:
    """Whether the environment has cel-go's `ext.TwoVarComprehensions` (from 1.32)."""
    return not _TWO_VARIABLE_OPTIONS.isdisjoint(env.options)


def compile_uncached(expression: str, key: EnvKey) -> CompileResult:
    """Compile in the environment of `key` without consulting the cache."""
    return compile_in(get_env(key), expression)


def compile_in(env: CelEnvironment, expression: str) -> CompileResult:
    """Compile in a given environment (see the module docstring for the steps)."""
    key = env.key
    if not expression.isascii() and re.search(_LONE_SURROGATE, expression):
        # Text that reached us as invalid UTF-8 or lone `\ud800` escapes: cel-cpp cannot take
        # it; Go's decoders would have read U+FFFD there, so the checker reads that too.
        expression = re.sub(_LONE_SURROGATE, "\ufffd", expression)
    size = len(expression)
    if size > CEL_GO_MAX_CODE_POINTS:
        message = (f"expression code point size exceeds limit: size: {size}, "
                   f"limit {CEL_GO_MAX_CODE_POINTS}")
        return _failure(expression, key, [CompileProblem(-1, 0, message, ErrorStage.PARSE)])
    escapes = [CompileProblem(line, column, "unsupported syntax: '`'", ErrorStage.PARSE)
               for line, column in escaped_identifiers(expression)]
    if escapes:
        try:
            env.checker.compile(expression, disable_check=True)
        except RuntimeError as exc:
            escapes += parse_engine_errors(str(exc), expression, ErrorStage.PARSE)
        return _failure(expression, key, escapes)
    source = alias_two_variable_exists_one(expression) if _has_two_variable_macros(env) \
        else expression
    try:
        compiled = env.checker.compile(source)
    except RuntimeError as exc:
        text = str(exc)
        if re.search(_ENGINE_DEPTH_ERROR, text):
            upstream = _upstream_depth_error(expression)
            if upstream is not None:
                return _failure(expression, key,
                                [CompileProblem(-1, 0, upstream, ErrorStage.PARSE)])
            _, detail = split_status(text)
            reason = (f"the expression nests deeper than our CEL engine's parser allows "
                      f"({ENGINE_MAX_NESTING} levels; Kubernetes allows "
                      f"{CEL_GO_MAX_RECURSION_DEPTH}): {detail.strip()}")
            return CompileResult(expression, key, False, (), None, None, None,
                                 engine_limited=True, engine_limit_reason=reason)
        stage = _parse_stage(env, source)
        engine_errors = parse_engine_errors(text, expression, stage)
        if stage is ErrorStage.CHECK:
            engine_errors = tuple(_arity_errors(env, source, engine_errors))
        return _failure(expression, key, engine_errors)

    serialized = compiled.serialize()
    checked = decode_checked_expr(serialized, expression)
    output_type = format_go_type(checked.output_type())
    errors = _validate(env, checked)
    if errors:
        return _failure(expression, key, errors, output_type, checked)
    errors = program_regex_errors(checked, env.regex_error) or program_plan_errors(checked)
    if errors:
        return _failure(expression, key, errors[:1], output_type, checked)
    conversions = checked.index.calls_of(CONVERSION_FUNCTIONS)
    folded = None
    if conversions:  # else nothing can fail to fold: the evaluator's modules stay unimported
        from .eval.runtime import bridge_for
        from .eval.runtime_cost import plan_error

        folded = plan_error(checked, bridge_for(env.runtime), nodes=conversions)
    if folded is not None:
        message, node_id = folded
        line, column = checked.location(node_id) if node_id else (-1, 0)
        where = (line, column) if line >= 1 else (-1, 0)
        return _failure(expression, key, [CompileProblem(*where, message, ErrorStage.PROGRAM)],
                        output_type, checked)
    plan = (LazyProgram(env.runtime, serialized) if env.separate_runtime
            else LazyProgram.ready(compiled))
    return CompileResult(expression, key, True, (), output_type, checked, plan)


# ------------------------------------------------------------------------------------------------
# Cache
# ------------------------------------------------------------------------------------------------


_CACHE: BoundedCache[tuple[str, EnvKey], CompileResult] = BoundedCache(
    "cel.compile", DEFAULT_CACHE_SIZE, max_bytes=CACHE_BYTES,
    weigh=lambda _key, result: result_weight(result))
"""Results by (expression, environment). Failures are cached too: compilation is deterministic
per environment. Two threads missing on one key may both compile; the later result stays."""


def compile_expression(expression: str, key: EnvKey) -> CompileResult:
    """Compile `expression` in the environment `key`, through the process-wide cache."""
    cache_key = (expression, key)
    found = _CACHE.get(cache_key)
    if found is None:
        found = compile_uncached(expression, key)
        _CACHE.put(cache_key, found)
    return found


def cache_info() -> CacheInfo:
    """Counters of the process-wide compile cache."""
    return _CACHE.info()


def clear_cache() -> None:
    """Empty the process-wide compile cache (tests; environment reloads)."""
    _CACHE.clear()
