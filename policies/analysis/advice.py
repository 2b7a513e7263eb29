"""Static questions the advisory rules ask of a checked extractor.

These are heuristics over the checked AST, deliberately conservative: an advisory
that cries wolf on the KEP's own recommended idiom would teach users to ignore it.
So `object.apiVersion` / `object.kind` at the top level are the guard idiom, not a
risky select, and any comparison of them with a literal counts as a schema guard for
the branch it protects. An advisory that states a run-time consequence gives it only once
the evaluator has reproduced it on a config built for the purpose (below).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..cel.common.ast import CheckedAst, ConstKind, Node, NodeKind, offset_to_location
from ..cel.common.jsonvalue import try_decode_k8s_json
from ..cel.common.unparse import source_span, unparse
from ..cel.k8s_library.strings_format import oversized_clauses

if TYPE_CHECKING:  # the evaluator is loaded only when an advisory has an outcome to reproduce
    from ..cel.eval.runtime import CompiledLike

OBJECT = "object"
GUARD_FIELDS = frozenset({"apiVersion", "kind"})
_TERNARY = "_?_:_"
_AND = "_&&_"
_OR = "_||_"
_NOT = "!_"
_INDEX = "_[_]"
_OPT_SELECT = "_?._"
_OPT_INDEX = "_[?_]"
_IN = "@in"
_EQUALITIES = frozenset({"_==_", "_!=_"})

Path = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class UnguardedSelect:
    """A field of `object` read where nothing proves it exists."""

    node_id: int
    path: Path
    text: str
    line: int
    column: int
    uncovered: tuple[Path, ...] = ()
    """The prefixes of `path` read plainly with nothing proving them present, shortest first:
    any of them absent from a config is the runtime error."""


def object_path(node: Node, aliases: dict[str, Path] | None = None) -> Path | None:
    """`object.a.b` / `object["a"].b` (or a `cel.bind` alias of one) as `("a", "b")`."""
    fields: list[str] = []
    cur: Node | None = node
    while cur is not None:
        if cur.kind is NodeKind.SELECT and cur.operand is not None:
            fields.append(cur.field)
            cur = cur.operand
        elif cur.kind is NodeKind.CALL and cur.function in (_INDEX, _OPT_SELECT, _OPT_INDEX) \
                and len(cur.args) == 2 and _string_const(cur.args[1]) is not None:
            fields.append(_string_const(cur.args[1]) or "")
            cur = cur.args[0]
        elif cur.kind is NodeKind.IDENT:
            if cur.name == OBJECT:
                return tuple(reversed(fields))
            if aliases and cur.name in aliases:
                return aliases[cur.name] + tuple(reversed(fields))
            return None
        else:
            return None
    return None


def _string_const(node: Node) -> str | None:
    if node.kind is NodeKind.CONST and node.const is not None and node.const.kind is ConstKind.STRING:
        value = node.const.value
        return value if isinstance(value, str) else None
    return None


def depends_on_object(ast: CheckedAst) -> bool:
    return any(n.kind is NodeKind.IDENT and n.name == OBJECT for n in ast.walk())


def _is_bind(node: Node) -> bool:
    """`cel.bind(v, init, expr)` expands to a comprehension over an empty list."""
    rng = node.iter_range
    return (
        node.kind is NodeKind.COMPREHENSION
        and rng is not None
        and rng.kind is NodeKind.LIST
        and not rng.elements
        and node.accu_init is not None
    )


def _conjuncts(cond: Node) -> Iterator[Node]:
    if cond.kind is NodeKind.CALL and cond.function == _AND:
        for arg in cond.args:
            yield from _conjuncts(arg)
    else:
        yield cond


@dataclass(frozen=True, slots=True)
class _Facts:
    """What a condition proves inside the branch it guards."""

    present: frozenset[Path] = frozenset()
    schema_guarded: bool = False

    def merge(self, other: _Facts) -> _Facts:
        return _Facts(self.present | other.present, self.schema_guarded or other.schema_guarded)


def _mentions_schema_guard(node: Node, aliases: dict[str, Path]) -> bool:
    """A comparison of `object.apiVersion`/`object.kind` with a literal, anywhere inside."""
    stack = [node]
    while stack:
        cur = stack.pop()
        if cur.kind is NodeKind.CALL and (cur.function in _EQUALITIES or cur.function == _IN):
            for arg in cur.args:
                if arg.kind is NodeKind.CALL and arg.function == "orValue" and arg.target is not None:
                    arg = arg.target  # object.?kind.orValue("") == "K"
                path = object_path(arg, aliases)
                if path is not None and len(path) == 1 and path[0] in GUARD_FIELDS:
                    return True
        stack.extend(cur.children())
    return False


def _facts(cond: Node, aliases: dict[str, Path]) -> _Facts:
    facts = _Facts()
    for part in _conjuncts(cond):
        if part.kind is NodeKind.SELECT and part.test_only and part.operand is not None:
            base = object_path(part.operand, aliases)
            if base is not None:
                facts = facts.merge(_Facts(frozenset({(*base, part.field)})))
        elif part.kind is NodeKind.CALL and part.function == _IN and len(part.args) == 2:
            key = _string_const(part.args[0])
            base = object_path(part.args[1], aliases)
            if key is not None and base is not None:
                facts = facts.merge(_Facts(frozenset({(*base, key)})))
        if _mentions_schema_guard(part, aliases):
            facts = facts.merge(_Facts(schema_guarded=True))
    return facts


def _covered(path: Path, facts: _Facts) -> bool:
    if facts.schema_guarded:
        return True
    return any(path == known[: len(path)] for known in facts.present)


def plain_length(node: Node, aliases: Mapping[str, Path], plain: Mapping[str, int]) -> int | None:
    """How many leading fields of the chain `node` reads are plain reads (fail when absent).

    CEL's optional chaining propagates: once `a.?b` is in a chain, every later select or
    index of it yields `optional.none()` instead of failing (`object.?x.y.z` cannot raise
    "no such key"), so only the fields before the first optional step are plain. A
    `cel.bind` alias of an optional chain holds an optional value: nothing read through it
    is plain beyond the alias's own plain fields (`plain` gives them per alias).
    """
    optional: list[bool] = []
    cur: Node | None = node
    while cur is not None:
        if cur.kind is NodeKind.SELECT and cur.operand is not None and not cur.test_only:
            optional.append(False)
            cur = cur.operand
        elif cur.kind is NodeKind.CALL and cur.function in (_INDEX, _OPT_SELECT, _OPT_INDEX) \
                and len(cur.args) == 2:
            optional.append(cur.function != _INDEX)
            cur = cur.args[0]
        elif cur.kind is NodeKind.IDENT:
            if cur.name == OBJECT:
                base, optional_base = 0, False
            elif cur.name in aliases:
                base = plain.get(cur.name, len(aliases[cur.name]))
                optional_base = base < len(aliases[cur.name])
            else:
                return None
            if optional_base:
                return base
            optional.reverse()
            return base + next((i for i, opt in enumerate(optional) if opt), len(optional))
        else:
            return None
    return None


def _root(node: Node) -> Node:
    """The identifier (or other operand) a select/index chain starts from."""
    cur = node
    while True:
        if cur.kind is NodeKind.SELECT and cur.operand is not None:
            cur = cur.operand
        elif cur.kind is NodeKind.CALL and cur.function in (_INDEX, _OPT_SELECT, _OPT_INDEX) and cur.args:
            cur = cur.args[0]
        else:
            return cur


def unguarded_selects(ast: CheckedAst) -> list[UnguardedSelect]:
    """The outermost unguarded plain reads of `object` fields, one per distinct path."""
    found: dict[Path, UnguardedSelect] = {}

    def visit(node: Node, facts: _Facts, aliases: dict[str, Path], plain: dict[str, int]) -> None:
        if node.kind is NodeKind.SELECT and node.test_only:
            return  # has(): a presence test is the guard, not a read
        path = object_path(node, aliases) if _is_plain_read(node) else None
        if path:
            _report_chain(node, path, facts, aliases, plain)
            return
        if node.kind is NodeKind.CALL and node.function == _TERNARY and len(node.args) == 3:
            cond, then, other = node.args
            visit(cond, facts, aliases, plain)
            visit(then, facts.merge(_facts(cond, aliases)), aliases, plain)
            visit(other, facts, aliases, plain)
            return
        if node.kind is NodeKind.CALL and node.function == _AND and len(node.args) == 2:
            left, right = node.args
            visit(left, facts, aliases, plain)
            visit(right, facts.merge(_facts(left, aliases)), aliases, plain)
            return
        if _is_bind(node) and node.accu_init is not None and node.result is not None:
            visit(node.accu_init, facts, aliases, plain)
            bound = object_path(node.accu_init, aliases)
            inner, inner_plain = dict(aliases), dict(plain)
            if bound is not None:
                inner[node.accu_var] = bound
                length = plain_length(node.accu_init, aliases, plain)
                inner_plain[node.accu_var] = len(bound) if length is None else length
            else:
                inner.pop(node.accu_var, None)
                inner_plain.pop(node.accu_var, None)
            visit(node.result, facts, inner, inner_plain)
            return
        for child in node.children():
            visit(child, facts, aliases, plain)

    def _report_chain(node: Node, path: Path, facts: _Facts, aliases: dict[str, Path],
                      plain: dict[str, int]) -> None:
        # Walk the chain outwards-in: report the longest prefix that is not covered; the
        # fields after an optional step cannot fail, so only the plain prefixes count.
        if len(path) == 1 and path[0] in GUARD_FIELDS:
            return
        length = plain_length(node, aliases, plain)
        reads = len(path) if length is None else length
        root = _root(node)
        own = len(aliases[root.name]) if root.name in aliases else 0  # the alias's init was visited
        prefixes = [path[:i] for i in range(own + 1, reads + 1)]
        uncovered = [p for p in prefixes if not _covered(p, facts)]
        if uncovered and path not in found:
            line, column = start_location(ast, node)
            found[path] = UnguardedSelect(node.id, path, unparse(node, ast), line, column,
                                          tuple(uncovered))
        # index arguments may hide further reads: `object.m[object.k]`
        if node.kind is NodeKind.CALL:
            for arg in node.args[1:]:
                visit(arg, facts, aliases, plain)

    visit(ast.root, _Facts(), {}, {})
    return sorted(found.values(), key=lambda u: (u.line, u.column))


def start_location(ast: CheckedAst, node: Node) -> tuple[int, int]:
    """Where a human sees the sub-expression start (cel-go puts a select at its dot)."""
    span = source_span(node, ast)
    if span is not None:
        return offset_to_location(ast.expression, span[0])
    return ast.location(node.id)


def _is_plain_read(node: Node) -> bool:
    """A select or constant index; optional selects (`a.?b`) are guarded by construction."""
    if node.kind is NodeKind.SELECT:
        return not node.test_only
    return node.kind is NodeKind.CALL and node.function == _INDEX


def has_schema_guard(ast: CheckedAst) -> bool:
    """Does the expression look at `object.apiVersion` or `object.kind` at all?"""
    for node in ast.walk():
        path = object_path(node)
        if path is not None and len(path) == 1 and path[0] in GUARD_FIELDS:
            return True
        if node.kind is NodeKind.SELECT and node.test_only and node.field in GUARD_FIELDS \
                and node.operand is not None and object_path(node.operand) == ():
            return True
    return False


@dataclass(frozen=True, slots=True)
class OversizedFormat:
    """A `format` call whose literal format string has a clause too precise to render."""

    verb: str  # as written, e.g. `%.999999999f`
    precision: int
    line: int
    column: int


def oversized_format_verbs(ast: CheckedAst) -> list[OversizedFormat]:
    """Clauses of literal format strings with a precision over `MAX_RENDERED_PRECISION`:
    the output grows with the precision while the cost tracker charges the call 1."""

    found: list[OversizedFormat] = []
    for node in ast.walk():
        if node.kind is not NodeKind.CALL or node.function != "format" or node.target is None:
            continue
        text = _string_const(node.target)
        if text is None:
            continue
        line, column = start_location(ast, node.target)
        found.extend(OversizedFormat(verb, precision, line, column)
                     for verb, precision in oversized_clauses(text))
    return found


# -- consequences reproduced by evaluation ------------------------------------------------------
#
# An advisory that states what happens at run time ("aborts the pod", "returns a key for a
# config of another schema") says it only after the evaluator has produced that outcome on a
# config built for the purpose, and quotes the config: the static walk above proposes, the
# evaluation disposes. The configs are small and the evaluation bounded by the scheduler's
# per-evaluation cost limit, so this is as cheap as one extraction.

WITNESSES_PER_READ = 48
"""Configs tried at most per unguarded prefix before the advisory is dropped as unproven."""

EVALUATIONS_PER_EXPRESSION = 128
"""Evaluations at most for all of one expression's unguarded reads: an expression of a
thousand reads costs the webhook a bounded time, and leaves the rest unreported."""

FOREIGN_API_VERSION = "other.example.com/v1"
FOREIGN_KIND = "Other"
_LITERALS_PER_FIELD = 3
_ABSENT = object()
_NON_STRING = "non-string result"
_COMPARISONS = frozenset({"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"})
_SCALARS = (ConstKind.STRING, ConstKind.INT, ConstKind.UINT, ConstKind.DOUBLE, ConstKind.BOOL)


@dataclass(frozen=True, slots=True)
class Reproduced:
    """A config (the opaque parameters, as JSON) and what the extractor does with it."""

    config: Mapping[str, object]
    value: str | None
    """The string the extractor returned (None when it failed)."""
    error: str
    """The evaluator's error ("" when it returned a value)."""

    @property
    def config_text(self) -> str:
        return json.dumps(self.config, separators=(", ", ": "))


def mentioned_fields(ast: CheckedAst) -> dict[Path, list[object]]:
    """Every `object` path the expression names (reads, `has()`, `in`), with the scalar
    literals it is compared with: the material witness configs are built from."""
    found: dict[Path, list[object]] = {}

    def note(path: Path | None, literal: object = _ABSENT) -> None:
        if not path:
            return
        values = found.setdefault(path, [])
        if literal is not _ABSENT and literal not in values and len(values) < _LITERALS_PER_FIELD:
            values.append(literal)

    for node in ast.walk():
        if node.kind is NodeKind.SELECT and node.test_only and node.operand is not None:
            base = object_path(node.operand)
            note(None if base is None else (*base, node.field))
        elif node.kind is NodeKind.CALL and node.function in (_IN, *_COMPARISONS) and len(node.args) == 2:
            left, right = node.args
            if node.function == _IN:
                key = _string_const(left)
                base = object_path(right)
                if key is not None and base is not None:
                    note((*base, key))
                path = object_path(_unwrap_or_value(left))
                for element in right.elements if right.kind is NodeKind.LIST else ():
                    note(path, _scalar(element))
            else:
                for one, other in ((left, right), (right, left)):
                    note(object_path(_unwrap_or_value(one)), _scalar(other))
        else:
            note(object_path(node))
    return found


def _unwrap_or_value(node: Node) -> Node:
    if node.kind is NodeKind.CALL and node.function == "orValue" and node.target is not None:
        return node.target
    return node


def _scalar(node: Node) -> object:
    if node.kind is NodeKind.CONST and node.const is not None and node.const.kind in _SCALARS:
        return node.const.value
    return _ABSENT


def _witnesses(fields: Mapping[Path, list[object]], absent: Path,
               values: tuple[object, ...] = ("v", _ABSENT), *,
               guards: bool = True) -> Iterator[dict[str, object]]:
    """Configs without `absent` (its parent present; `()`: nothing forced absent), every other
    named field varied over its literals and `values` (`_ABSENT`: left out); apiVersion and
    kind always present (`guards`), as on every config the KEP's idiom expects."""
    parents = {absent[:i] for i in range(1, len(absent))}
    paths = [p for p in fields if not (absent and p[: len(absent)] == absent) and p not in parents]
    if guards:
        paths += [(g,) for g in sorted(GUARD_FIELDS) if (g,) not in fields]
    inner = {q[:i] for q in paths for i in range(1, len(q))}
    leaves = [p for p in paths if p not in inner]
    choices: list[list[object]] = []
    for leaf in leaves:
        options = list(fields.get(leaf, ()))
        if leaf == ("apiVersion",):
            options.append(FOREIGN_API_VERSION)
        elif leaf == ("kind",):
            options.append(FOREIGN_KIND)
        else:
            options += [v for v in values if v not in options]
        choices.append(options)
    for combination in itertools.islice(itertools.product(*choices), WITNESSES_PER_READ):
        config: dict[str, object] = {}
        if len(absent) > 1:
            _put(config, absent[:-1], None)
        for leaf, value in zip(leaves, combination, strict=True):
            if value is not _ABSENT:
                _put(config, leaf, value)
        yield config


def _put(config: dict[str, object], path: Path, value: object) -> None:
    """Set `path` in `config`, making the maps on the way (`None`: just the maps)."""
    cur = config
    for name in path[:-1]:
        nxt = cur.get(name)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[name] = nxt
        cur = nxt
    if value is None:
        if not isinstance(cur.get(path[-1]), dict):
            cur[path[-1]] = {}
    elif not isinstance(cur.get(path[-1]), dict):
        cur[path[-1]] = value


def run_extractor(compiled: CompiledLike, config: Mapping[str, object], cost_limit: int) -> Reproduced:
    """The extractor on one config, decoded as the scheduler decodes opaque parameters."""
    from ..cel.eval.runtime import evaluate

    value, problem = try_decode_k8s_json(json.dumps(config))
    if problem is not None:
        return Reproduced(config, None, problem)
    result = evaluate(compiled, {"object": value}, cost_limit=cost_limit)
    if result.error is not None:
        return Reproduced(config, None, result.error.message)
    if result.cel_type != "string" or not isinstance(result.value, str):
        return Reproduced(config, None, f"{_NON_STRING} of type {result.cel_type}")
    return Reproduced(config, result.value, "")


def missing_field_witness(compiled: CompiledLike, read: UnguardedSelect, fields: Mapping[Path, list[object]],
                          cost_limit: int, budget: list[int]) -> Reproduced | None:
    """A config on which the read fails with "no such key" for one of its unguarded prefixes,
    or None when none of the configs tried makes it fail (the advisory is then not given).
    `budget[0]`: evaluations left for the whole expression, spent here."""
    for absent in read.uncovered:
        expected = f"no such key: {absent[-1]}"
        for config in _witnesses(fields, absent):
            if budget[0] <= 0:
                return None
            budget[0] -= 1
            outcome = run_extractor(compiled, config, cost_limit)
            if outcome.error == expected or outcome.error.startswith(expected + "."):
                return Reproduced(outcome.config, None, expected)
    return None


def non_string_witness(compiled: CompiledLike, fields: Mapping[Path, list[object]],
                       cost_limit: int) -> Reproduced | None:
    """A config on which a `dyn` expression returns something other than a string (the
    scheduler then aborts the pod), the named fields tried as numbers and lists first; None
    when no config tried does."""
    for config in _witnesses(fields, (), (1, ["v"], "v", _ABSENT)):
        outcome = run_extractor(compiled, config, cost_limit)
        if outcome.error.startswith(_NON_STRING):
            return outcome
    return None


def foreign_outcome(compiled: CompiledLike, fields: Mapping[Path, list[object]],
                    cost_limit: int) -> Reproduced | None:
    """What the extractor does with a config of another schema, when it does not decline it.

    Two configs stand for "another schema": one with an apiVersion and kind the expression
    does not name and no other field, and `{}`. None when either yields `""` (the extractor
    declines it); else the first's outcome (a key, or an error).
    """
    named = {v for p in (("apiVersion",), ("kind",)) for v in fields.get(p, ())}
    api_version = next(v for v in (FOREIGN_API_VERSION, "other2.example.com/v1", "x/v0") if v not in named)
    kind = next(v for v in (FOREIGN_KIND, "Other2", "X") if v not in named)
    first: Reproduced | None = None
    for config in ({"apiVersion": api_version, "kind": kind}, {}):
        outcome = run_extractor(compiled, config, cost_limit)
        if outcome.value == "":
            return None
        first = first or outcome
    return first


def config_yielding(compiled: CompiledLike, fields: Mapping[Path, list[object]],
                    cost_limit: int) -> Reproduced | None:
    """A config on which the extractor returns a non-empty key (the named fields varied over
    the expression's literals and a plain string), or None when no config tried does: what
    `explain` adds to a claim whose configs yield no key, to check that fixing the claim works."""
    for config in _witnesses(fields, (), ("v", _ABSENT), guards=False):
        outcome = run_extractor(compiled, config, cost_limit)
        if outcome.value:
            return outcome
    return None
