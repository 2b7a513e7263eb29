"""The checked CEL AST: node model, types, references and source positions.

Why: every static analysis we do (cost estimation, advisory rules, messages that point at a
sub-expression) needs the *checked* tree: node kinds, per-node types, the candidate overload ids
the checker recorded, macro call info and source positions. This module is only that model, so
the analyses depend on it alone; `policies.cel.common.ast_decode` builds it from cel-expr-python's
serialized `cel.expr.CheckedExpr`, and `policies.cel.common.unparse` renders sub-expressions as text.

Positions are code-point offsets (as in cel-go); `CheckedAst.location` turns them into the
1-based line and 1-based column cel-go prints as `<input>:L:C`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from ...core.identity_enum import IdentityEnum
from .types import DYN, CelType

__all__ = [
    "CheckedAst",
    "ConstKind",
    "Constant",
    "Node",
    "NodeKind",
    "Reference",
    "SourceInfo",
    "StructEntry",
    "offset_to_location",
]


class NodeKind(IdentityEnum):
    """Expression kinds of `cel.expr.Expr`.

    Map and message literals are both STRUCT (`message_name` is empty for maps). NOT_SET only
    appears inside macro-call records, where cel-go/cel-cpp replace already-expanded arguments
    by an id-only placeholder that refers to a node of the main tree (or another macro call).
    """

    NOT_SET = "not_set"
    CONST = "const"
    IDENT = "ident"
    SELECT = "select"
    CALL = "call"
    LIST = "list"
    STRUCT = "struct"
    COMPREHENSION = "comprehension"


class ConstKind(IdentityEnum):
    """Which `cel.expr.Constant` branch was set."""

    NULL = "null"
    BOOL = "bool"
    INT = "int"
    UINT = "uint"
    DOUBLE = "double"
    STRING = "string"
    BYTES = "bytes"
    DURATION = "duration"
    TIMESTAMP = "timestamp"
    NOT_SET = "not_set"


@dataclass(frozen=True, slots=True)
class Constant:
    """A literal value with its CEL kind.

    `value` is None (null), bool, int (int and uint), float, str, bytes, or `(seconds, nanos)`
    for the deprecated duration/timestamp constants.
    """

    kind: ConstKind
    value: object


@dataclass(frozen=True, slots=True)
class StructEntry:
    """One entry of a map literal (`key` set) or message literal (`field` set)."""

    id: int
    value: Node
    key: Node | None = None
    field: str = ""
    optional_entry: bool = False


@dataclass(frozen=True, slots=True)
class Node:
    """One expression node; only the fields of its `kind` are meaningful.

    * CONST: `const`
    * IDENT: `name`
    * SELECT: `operand`, `field`, `test_only` (True for `has(a.b)`)
    * CALL: `function`, `target` (None for a global call), `args`
    * LIST: `elements`, `optional_indices` (positions written `?e`)
    * STRUCT: `message_name` ("" for maps), `entries`
    * COMPREHENSION: `iter_var`, `iter_var2` ("" unless two-variable), `iter_range`, `accu_var`,
      `accu_init`, `loop_condition`, `loop_step`, `result`
    """

    id: int
    kind: NodeKind
    const: Constant | None = None
    name: str = ""
    operand: Node | None = None
    field: str = ""
    test_only: bool = False
    target: Node | None = None
    function: str = ""
    args: tuple[Node, ...] = ()
    elements: tuple[Node, ...] = ()
    optional_indices: tuple[int, ...] = ()
    message_name: str = ""
    entries: tuple[StructEntry, ...] = ()
    iter_var: str = ""
    iter_var2: str = ""
    iter_range: Node | None = None
    accu_var: str = ""
    accu_init: Node | None = None
    loop_condition: Node | None = None
    loop_step: Node | None = None
    result: Node | None = None

    def children(self) -> tuple[Node, ...]:
        """Direct sub-expressions in evaluation/source order."""
        k = self.kind
        if k is NodeKind.SELECT:
            return (self.operand,) if self.operand is not None else ()
        if k is NodeKind.CALL:
            return ((self.target,) if self.target is not None else ()) + self.args
        if k is NodeKind.LIST:
            return self.elements
        if k is NodeKind.STRUCT:
            out: list[Node] = []
            for e in self.entries:
                if e.key is not None:
                    out.append(e.key)
                out.append(e.value)
            return tuple(out)
        if k is NodeKind.COMPREHENSION:
            parts = (self.iter_range, self.accu_init, self.loop_condition, self.loop_step,
                     self.result)
            return tuple(p for p in parts if p is not None)
        return ()


@dataclass(frozen=True, slots=True)
class Reference:
    """Resolved reference of an ident/select (a declaration) or a call (candidate overloads)."""

    name: str
    overload_ids: tuple[str, ...] = ()
    value: Constant | None = None


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Parser source info: code-point offsets per node id and of line starts."""

    location: str = ""
    line_offsets: tuple[int, ...] = ()
    positions: Mapping[int, int] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class NodeIndex:
    """The main tree's calls and aggregate literals, each in pre-order (`CheckedAst.walk`).

    Why: the compile-time validators each look at a few kinds of node — calls of a handful of
    functions, list and map literals — and a 10 KiB expression has ~1,800 nodes; one walk
    building this index replaces a walk per validator.
    """

    calls: tuple[Node, ...]
    by_function: Mapping[str, tuple[Node, ...]]
    aggregates: tuple[Node, ...]
    """LIST nodes and STRUCT nodes of map literals (no message name)."""

    def calls_of(self, functions: Iterable[str]) -> tuple[Node, ...]:
        """Calls of any of `functions`, in pre-order."""
        wanted = frozenset(functions)
        if len(wanted) == 1:
            return self.by_function.get(next(iter(wanted)), ())
        return tuple(n for n in self.calls if n.function in wanted)


@dataclass(frozen=True, eq=False)
class CheckedAst:
    """A type-checked expression: tree, types, references, macro calls and positions.

    `macro_calls` is what the engine recorded; cel-expr-python 0.1.3 records none, so code
    that needs the macro a comprehension came from should use `unparse`, which also recognises
    the expansions' layout. Instances compare by identity (the maps are not hashable).
    """

    root: Node
    types: Mapping[int, CelType]
    references: Mapping[int, Reference]
    macro_calls: Mapping[int, Node]
    source_info: SourceInfo
    expression: str
    expr_version: str = ""
    _nodes: Mapping[int, Node] = field(init=False, repr=False, compare=False)
    _parents: Mapping[int, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        nodes: dict[int, Node] = {}
        parents: dict[int, int] = {}
        stack = [self.root]
        while stack:
            n = stack.pop()
            nodes[n.id] = n
            for c in n.children():
                parents[c.id] = n.id
                stack.append(c)
        object.__setattr__(self, "_nodes", MappingProxyType(nodes))
        object.__setattr__(self, "_parents", MappingProxyType(parents))

    def type_of(self, node_id: int) -> CelType:
        """Checked type of a node; nodes the checker left out of the type map are `dyn`."""
        return self.types.get(node_id, DYN)

    def output_type(self) -> CelType:
        """Checked type of the whole expression."""
        return self.type_of(self.root.id)

    def overload_ids(self, node_id: int) -> tuple[str, ...]:
        """Candidate overload ids recorded for a call node (empty when none)."""
        ref = self.references.get(node_id)
        return ref.overload_ids if ref is not None else ()

    def walk(self) -> Iterator[Node]:
        """Pre-order iteration over the main tree (macro-call records are not visited)."""
        stack = [self.root]
        pop, push, extend = stack.pop, stack.append, stack.extend
        call, select, leaves = NodeKind.CALL, NodeKind.SELECT, (NodeKind.CONST, NodeKind.IDENT)
        while stack:
            n = pop()
            yield n
            # `children()` reversed, without building it for the commonest kinds
            kind = n.kind
            if kind is call:
                if n.args:
                    extend(n.args[::-1])
                if n.target is not None:
                    push(n.target)
            elif kind is select:
                if n.operand is not None:
                    push(n.operand)
            elif kind not in leaves:
                extend(reversed(n.children()))

    @cached_property
    def index(self) -> NodeIndex:
        """Calls and aggregate literals of the main tree (built on first use, by one walk)."""
        calls: list[Node] = []
        by_function: dict[str, list[Node]] = {}
        aggregates: list[Node] = []
        call, list_kind, struct = NodeKind.CALL, NodeKind.LIST, NodeKind.STRUCT
        for n in self.walk():
            kind = n.kind
            if kind is call:
                calls.append(n)
                by_function.setdefault(n.function, []).append(n)
            elif kind is list_kind or (kind is struct and not n.message_name):
                aggregates.append(n)
        return NodeIndex(tuple(calls), MappingProxyType({k: tuple(v) for k, v in by_function.items()}),
                         tuple(aggregates))

    @property
    def node_count(self) -> int:
        """How many nodes the tree has (what its memory grows with)."""
        return len(self._nodes)

    def node(self, node_id: int) -> Node:
        """Node of the main tree by id (KeyError if absent)."""
        return self._nodes[node_id]

    def has_node(self, node_id: int) -> bool:
        """Whether the main tree contains a node with this id."""
        return node_id in self._nodes

    def parent(self, node_id: int) -> Node | None:
        """Parent node in the main tree; None for the root or an unknown id."""
        pid = self._parents.get(node_id)
        return self._nodes[pid] if pid is not None else None

    def offset(self, node_id: int) -> int | None:
        """Code-point offset of a node, falling back to the closest ancestor that has one."""
        nid: int | None = node_id
        for _ in range(len(self._parents) + 1):  # bounded: a corrupt AST may repeat ids in a cycle
            if nid is None:
                break
            pos = self.source_info.positions.get(nid)
            if pos is not None:
                return pos
            nid = self._parents.get(nid)
        return None

    def location(self, node_id: int) -> tuple[int, int]:
        """1-based (line, column) in code points, as cel-go prints `<input>:L:C`.

        (0, 0) when neither the node nor any ancestor has a recorded position.
        """
        pos = self.offset(node_id)
        if pos is None:
            return (0, 0)
        return offset_to_location(self.expression, pos)


def offset_to_location(text: str, offset: int) -> tuple[int, int]:
    """Map a code-point offset of `text` to a 1-based (line, column)."""
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    line = text.count("\n", 0, offset) + 1
    return line, offset - line_start + 1
