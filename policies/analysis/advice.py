"""Static questions the advisory rules ask of a checked extractor.

These are heuristics over the checked AST, deliberately conservative: an advisory
that cries wolf on the KEP's own recommended idiom would teach users to ignore it.
So `object.apiVersion` / `object.kind` at the top level are the guard idiom, not a
risky select, and any comparison of them with a literal counts as a schema guard for
the branch it protects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dra_affinity.policies.cel.common.ast import CheckedAst, ConstKind, Node, NodeKind, offset_to_location
from dra_affinity.policies.cel.common.unparse import source_span, unparse
from dra_affinity.policies.cel.k8s_library.strings_format import oversized_clauses

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


def unguarded_selects(ast: CheckedAst) -> list[UnguardedSelect]:
    """The outermost unguarded reads of `object` fields, one per distinct path."""
    found: dict[Path, UnguardedSelect] = {}

    def visit(node: Node, facts: _Facts, aliases: dict[str, Path]) -> None:
        if node.kind is NodeKind.SELECT and node.test_only:
            return  # has(): a presence test is the guard, not a read
        path = object_path(node, aliases) if _is_plain_read(node) else None
        if path:
            _report_chain(node, path, facts, aliases)
            return
        if node.kind is NodeKind.CALL and node.function == _TERNARY and len(node.args) == 3:
            cond, then, other = node.args
            visit(cond, facts, aliases)
            visit(then, facts.merge(_facts(cond, aliases)), aliases)
            visit(other, facts, aliases)
            return
        if node.kind is NodeKind.CALL and node.function == _AND and len(node.args) == 2:
            left, right = node.args
            visit(left, facts, aliases)
            visit(right, facts.merge(_facts(left, aliases)), aliases)
            return
        if _is_bind(node) and node.accu_init is not None and node.result is not None:
            visit(node.accu_init, facts, aliases)
            bound = object_path(node.accu_init, aliases)
            inner = dict(aliases)
            if bound is not None:
                inner[node.accu_var] = bound
            else:
                inner.pop(node.accu_var, None)
            visit(node.result, facts, inner)
            return
        for child in node.children():
            visit(child, facts, aliases)

    def _report_chain(node: Node, path: Path, facts: _Facts, aliases: dict[str, Path]) -> None:
        # Walk the chain outwards-in: report the longest prefix that is not covered.
        if len(path) == 1 and path[0] in GUARD_FIELDS:
            return
        prefixes = [path[:i] for i in range(1, len(path) + 1)]
        uncovered = [p for p in prefixes if not _covered(p, facts)]
        if uncovered and path not in found:
            line, column = start_location(ast, node)
            found[path] = UnguardedSelect(node.id, path, unparse(node, ast), line, column)
        # index arguments may hide further reads: `object.m[object.k]`
        if node.kind is NodeKind.CALL:
            for arg in node.args[1:]:
                visit(arg, facts, aliases)

    visit(ast.root, _Facts(), {})
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


def result_leaves(ast: CheckedAst) -> list[Node]:
    """The sub-expressions whose value can become the result (through ?:, bind, orValue)."""
    leaves: list[Node] = []
    stack = [ast.root]
    while stack:
        node = stack.pop()
        if node.kind is NodeKind.CALL and node.function == _TERNARY and len(node.args) == 3:
            stack.extend(node.args[1:])
        elif _is_bind(node) and node.result is not None:
            stack.append(node.result)
        elif node.kind is NodeKind.CALL and node.function == "orValue" and node.args:
            stack.append(node.args[0])
            leaves.append(node)
        else:
            leaves.append(node)
    return leaves


def can_decline(ast: CheckedAst) -> bool:
    """Can the expression return `""` by construction (a literal `""` among its results)?"""
    return any(_string_const(leaf) == "" for leaf in result_leaves(ast))


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
