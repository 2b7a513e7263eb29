"""Decoded checked CEL AST (from cel-expr-python's `Expression.serialize()`).

Why: every static analysis we do (cost estimation, advisory rules, messages that point at a
sub-expression) needs the *checked* tree: node kinds, per-node types, the candidate overload ids
the checker recorded, macro call info and source positions. cel-expr-python only exposes that as
a serialized `google.protobuf.Any` wrapping `cel.expr.CheckedExpr`. No PyPI package ships those
message classes and we do not want the `protobuf` runtime, so this module reads the wire format
directly (with `policies.cel.wire`), using field numbers from cel-spec's `syntax.proto` and
`checked.proto`.

Decoding is on the cold-compile path (a 10 KiB expression is ~75 KB of AST, ~1,800 nodes), so
`_Decoder` is written for speed; see its docstring. The `protobuf` runtime (upb) would not be
faster: parsing is, but turning its messages into our nodes costs as much as reading the bytes.

Positions are code-point offsets (as in cel-go); `CheckedAst.location` turns them into the
1-based line and 1-based column cel-go prints as `<input>:L:C`.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TypeVar

from policies.cel.types import (
    DYN,
    CelType,
    Primitive,
    TypeKind,
    WellKnown,
)
from policies.cel.wire import FIXED64 as _FIXED64
from policies.cel.wire import LEN as _LEN
from policies.cel.wire import VARINT as _VARINT
from policies.cel.wire import WireError, iter_fields, read_field, read_varint
from policies.identity_enum import IdentityEnum

__all__ = [
    "AstDecodeError",
    "CheckedAst",
    "ConstKind",
    "Constant",
    "Node",
    "NodeKind",
    "Reference",
    "SourceInfo",
    "StructEntry",
    "decode_checked_expr",
    "offset_to_location",
    "source_span",
    "unparse",
]

CHECKED_EXPR_TYPE_URL = "type.googleapis.com/cel.expr.CheckedExpr"


class AstDecodeError(WireError):
    """The serialized AST could not be read. The engine produced it, so this signals a bug."""


# ------------------------------------------------------------------------------------------------
# Protobuf wire format: the generic readers are in `policies.cel.wire`; the decoder below reads
# the tags cel-cpp writes inline and comes to them for anything else (other wire types, unknown
# fields, over-long tags), so that every input is treated the same way whichever path reads it.
# ------------------------------------------------------------------------------------------------

_TWO_63 = 1 << 63
_TWO_64 = 1 << 64


def _span(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """[start, stop) of the length-delimited payload whose length varint is at `pos`."""
    if pos < end and buf[pos] < 0x80:
        length = buf[pos]
        pos += 1
    elif pos + 1 < end and buf[pos + 1] < 0x80:  # two-byte lengths (128 B to 16 KiB) are common
        length = (buf[pos] & 0x7F) | (buf[pos + 1] << 7)
        pos += 2
    else:
        length, pos = read_varint(buf, pos, end)
    stop = pos + length
    if stop > end:
        raise AstDecodeError("truncated length-delimited field")
    return pos, stop


def _b(v: int | bytes) -> bytes:
    if not isinstance(v, bytes):
        raise AstDecodeError("expected a length-delimited field")
    return v


def _u(v: int | bytes) -> int:
    if isinstance(v, bytes):
        raise AstDecodeError("expected a scalar field")
    return v


def _i64(v: int | bytes) -> int:
    u = _u(v)
    return u - _TWO_64 if u >= _TWO_63 else u


def _s(v: int | bytes) -> str:
    try:
        return _b(v).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AstDecodeError("invalid UTF-8 in string field") from exc


def _packed(wire: int, v: int | bytes) -> list[int]:
    if wire == _VARINT:
        return [_i64(v)]
    buf = _b(v)
    out: list[int] = []
    pos, end = 0, len(buf)
    while pos < end:
        u, pos = read_varint(buf, pos, end)
        out.append(u - _TWO_64 if u >= _TWO_63 else u)
    return out


def _map_key(k: int | bytes | None) -> int:
    """Key of a map<int64, _> entry as read by `_entry` (absent or empty: 0)."""
    if type(k) is int and k < _TWO_63:
        return k
    return _i64(k or 0)


def _entry(buf: bytes, pos: int, end: int) -> tuple[int | bytes | None, int | bytes | None]:
    """(key, value) of one map entry; each is the last field 1 / field 2 payload, or None."""
    key: int | bytes | None = None
    value: int | bytes | None = None
    while pos < end:
        tag = buf[pos]
        if tag == 0x08 or tag == 0x10:
            pos += 1
            if pos < end and buf[pos] < 0x80:
                v: int = buf[pos]
                pos += 1
            else:
                v, pos = read_varint(buf, pos, end)
            if tag == 0x08:
                key = v
            else:
                value = v
        elif tag == 0x12:
            start, pos = _span(buf, pos + 1, end)
            value = buf[start:pos]
        else:
            num, _, payload, pos = read_field(buf, pos, end)
            if num == 1:
                key = payload
            elif num == 2:
                value = payload
    return key, value


# ------------------------------------------------------------------------------------------------
# Public node model
# ------------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------------
# Decoding
# ------------------------------------------------------------------------------------------------


def decode_checked_expr(serialized: bytes, expression: str) -> CheckedAst:
    """Decode `Expression.serialize()` output (an Any, or a bare CheckedExpr) for `expression`."""
    if not isinstance(serialized, bytes):
        serialized = bytes(memoryview(serialized))
    try:
        return _Decoder().checked_expr(_unwrap_any(serialized), expression)
    except UnicodeDecodeError as exc:
        raise AstDecodeError("invalid UTF-8 in string field") from exc
    except AstDecodeError:
        raise
    except WireError as exc:  # from the generic readers: one error type for callers
        raise AstDecodeError(*exc.args) from exc


def _unwrap_any(serialized: bytes) -> bytes:
    type_url = ""
    value = b""
    for num, _, v in iter_fields(serialized):
        if num == 1 and isinstance(v, bytes):
            try:
                type_url = v.decode("utf-8")
            except UnicodeDecodeError:
                return serialized
        elif num == 2 and isinstance(v, bytes):
            value = v
    if type_url.endswith("cel.expr.CheckedExpr") or type_url.endswith(
            "google.api.expr.v1alpha1.CheckedExpr"):
        return value
    if type_url:
        raise AstDecodeError(f"unexpected Any type {type_url!r}")
    return serialized


class _NodeBuilder:
    """Mutable twin of `Node` (the same slots in the same order) used while decoding.

    Why: `Node` is frozen, so its generated `__init__` stores each of its 22 fields through
    `object.__setattr__` (about 2.3 µs a node, the largest single cost of decoding). A builder
    takes plain slot stores and then becomes a `Node` by `__class__` assignment, which CPython
    allows between classes with identical slot layouts: about 0.3 µs a node. Only
    `_Decoder.expr` turns builders into nodes; no builder escapes this module.
    """

    __slots__ = Node.__slots__

    def __init__(self, kind: NodeKind) -> None:
        self.id = 0
        self.kind = kind
        self.const: Constant | None = None
        self.name = ""
        self.operand: Node | None = None
        self.field = ""
        self.test_only = False
        self.target: Node | None = None
        self.function = ""
        self.args: tuple[Node, ...] = ()
        self.elements: tuple[Node, ...] = ()
        self.optional_indices: tuple[int, ...] = ()
        self.message_name = ""
        self.entries: tuple[StructEntry, ...] = ()
        self.iter_var = ""
        self.iter_var2 = ""
        self.iter_range: Node | None = None
        self.accu_var = ""
        self.accu_init: Node | None = None
        self.loop_condition: Node | None = None
        self.loop_step: Node | None = None
        self.result: Node | None = None


_CONST, _IDENT, _SELECT, _CALL = NodeKind.CONST, NodeKind.IDENT, NodeKind.SELECT, NodeKind.CALL
_LIST, _STRUCT, _COMPREHENSION = NodeKind.LIST, NodeKind.STRUCT, NodeKind.COMPREHENSION


class _Decoder:
    """One decoding of a CheckedExpr, read in place (offsets into one buffer, few copies).

    Three things make it fast, each keeping the result identical to a plain field-by-field
    reading of the message (which `_field` still does for anything unexpected):

    * the tags and one- or two-byte lengths cel-cpp writes are read inline;
    * messages that repeat verbatim — types, references, constants, identifier bodies — are
      decoded once per distinct encoding and shared (they are immutable; a 10 KiB expression
      has ~1,800 typed nodes but a few dozen distinct types);
    * the node and parent indexes of `CheckedAst` are filled while the tree is read, instead of
      by a second walk. Should the input be anything but a plain tree with unique ids (a
      singular field given twice, an id after the node's kind, a repeated id), `clean` turns
      False and `CheckedAst` builds its indexes itself, as for any other tree.
    """

    __slots__ = ("clean", "consts", "count", "idents", "nodes", "parents", "refs", "types")

    def __init__(self, memos: _Decoder | None = None) -> None:
        self.types: dict[bytes, CelType] = {} if memos is None else memos.types
        self.refs: dict[bytes, Reference] = {} if memos is None else memos.refs
        self.consts: dict[bytes, Constant] = {} if memos is None else memos.consts
        self.idents: dict[bytes, str] = {} if memos is None else memos.idents
        self.nodes: dict[int, Node] = {}
        self.parents: dict[int, int] = {}
        self.count = 0
        self.clean = True

    def checked_expr(self, buf: bytes, expression: str) -> CheckedAst:
        root: Node | None = None
        types: dict[int, CelType] = {}
        refs: dict[int, Reference] = {}
        source = SourceInfo()
        macro_calls: dict[int, Node] = {}
        version = ""
        type_memo, ref_memo = self.types, self.refs
        pos, end = 0, len(buf)
        while pos < end:
            tag = buf[pos]
            if tag == 0x1A or tag == 0x12:  # type_map / reference_map entries
                if tag == 0x1A:
                    pos = _memo_entries(buf, pos, end, 0x1A, types, type_memo, _decode_type)
                else:
                    pos = _memo_entries(buf, pos, end, 0x12, refs, ref_memo, _decode_reference)
                if pos < end and buf[pos] == tag:  # an entry not in cel-cpp's layout
                    start, pos = _span(buf, pos + 1, end)
                    k, v = _entry(buf, start, pos)
                    data = _b(v or b"")
                    if tag == 0x1A:
                        types[_map_key(k)] = _memoized(type_memo, data, _decode_type)
                    else:
                        refs[_map_key(k)] = _memoized(ref_memo, data, _decode_reference)
            elif tag == 0x22:
                start, pos = _span(buf, pos + 1, end)
                root = self.main_tree(root, buf, start, pos)
            elif tag == 0x2A:
                start, pos = _span(buf, pos + 1, end)
                source, macro_calls = self.source_info(buf, start, pos)
            elif tag == 0x32:
                start, pos = _span(buf, pos + 1, end)
                version = buf[start:pos].decode("utf-8")
            else:
                num, _, payload, pos = read_field(buf, pos, end)
                if num in (2, 3):
                    k, v = _entry(*_whole(_b(payload)))
                    data = _b(v or b"")
                    if num == 2:
                        refs[_map_key(k)] = _decode_reference(data)
                    else:
                        types[_map_key(k)] = _decode_type(data)
                elif num == 4:
                    root = self.main_tree(root, *_whole(_b(payload)))
                elif num == 5:
                    source, macro_calls = self.source_info(*_whole(_b(payload)))
                elif num == 6:
                    version = _s(payload)
        if root is None:
            raise AstDecodeError("CheckedExpr has no expr")
        fields = {
            "root": root,
            "types": MappingProxyType(types),
            "references": MappingProxyType(refs),
            "macro_calls": MappingProxyType(macro_calls),
            "source_info": source,
            "expression": expression,
            "expr_version": version,
        }
        if not self.clean or len(self.nodes) != self.count:
            return CheckedAst(**fields)  # type: ignore[arg-type]
        # What `CheckedAst.__post_init__` would compute, already at hand.
        ast = object.__new__(CheckedAst)
        vars(ast).update(fields, _nodes=MappingProxyType(self.nodes),
                         _parents=MappingProxyType(self.parents))
        return ast

    def main_tree(self, previous: Node | None, buf: bytes, pos: int, end: int) -> Node:
        """The `expr` of the CheckedExpr (a second one replaces the first, as in protobuf)."""
        if previous is not None:
            self.clean = False
        return self.expr(buf, pos, end, None)

    # --- expressions ----------------------------------------------------------------------------

    # The loops below read a field's one-byte length inline (the common case) and call `_span`
    # otherwise: a Python call per field was a fifth of the decoding time. `parent` is the id
    # of the node being built around this one (None for a root).

    def expr(self, buf: bytes, pos: int, end: int, parent: int | None) -> Node:
        node_id = 0
        b: _NodeBuilder | None = None
        while pos < end:
            tag = buf[pos]
            if tag == 0x10:  # id, almost always below 16384: one or two bytes
                pos += 1
                if pos < end and buf[pos] < 0x80:
                    node_id = buf[pos]
                    pos += 1
                elif pos + 1 < end and buf[pos + 1] < 0x80:
                    node_id = (buf[pos] & 0x7F) | (buf[pos + 1] << 7)
                    pos += 2
                else:
                    node_id, pos = read_varint(buf, pos, end)
                    if node_id >= _TWO_63:
                        node_id -= _TWO_64
                if b is not None:  # its children were indexed under the previous id
                    self.clean = False
                continue
            if tag & 7 != _LEN or not 0x1A <= tag <= 0x4A:  # not the expr_kind oneof (3-9)
                num, _, payload, pos = read_field(buf, pos, end)
                if 2 <= num <= 9 and b is not None:
                    self.clean = False
                if num == 2:
                    node_id = _i64(payload)
                elif 3 <= num <= 9:
                    b = self.body(num, *_whole(_b(payload)), node_id)
                continue
            if b is not None:  # a second kind replaces the first, already indexed
                self.clean = False
            if pos + 1 < end and buf[pos + 1] < 0x80:
                start = pos + 2
                pos = start + buf[pos + 1]
                if pos > end:
                    raise AstDecodeError("truncated length-delimited field")
            else:
                start, pos = _span(buf, pos + 1, end)
            if tag == 0x32:
                b = self.call(buf, start, pos, node_id)
            elif tag == 0x2A:
                b = self.select(buf, start, pos, node_id)
            elif tag == 0x22:
                b = _NodeBuilder(_IDENT)
                data = buf[start:pos]
                name = self.idents.get(data)
                b.name = name if name is not None else self.ident_name(data)
            elif tag == 0x1A:
                b = _NodeBuilder(_CONST)
                data = buf[start:pos]
                c = self.consts.get(data)
                b.const = c if c is not None else _memoized(self.consts, data, _decode_constant)
            else:
                b = self.body(tag >> 3, buf, start, pos, node_id)
        if b is None:
            b = _NodeBuilder(NodeKind.NOT_SET)
        b.id = node_id
        b.__class__ = Node  # type: ignore[assignment]
        self.nodes[node_id] = b  # type: ignore[assignment]
        self.count += 1
        if parent is not None:
            self.parents[node_id] = parent
        return b  # type: ignore[return-value]

    def ident_name(self, data: bytes) -> str:
        name = ""
        for num, _, v in iter_fields(data):
            if num == 1:
                name = _s(v)
        self.idents[data] = name
        return name

    def body(self, num: int, buf: bytes, pos: int, end: int, node_id: int) -> _NodeBuilder:
        if num == 6:
            return self.call(buf, pos, end, node_id)
        if num == 5:
            return self.select(buf, pos, end, node_id)
        if num == 3:
            b = _NodeBuilder(_CONST)
            data = buf[pos:end]
            b.const = _memoized(self.consts, data, _decode_constant)
            return b
        if num == 4:
            b = _NodeBuilder(_IDENT)
            data = buf[pos:end]
            name = self.idents.get(data)
            b.name = name if name is not None else self.ident_name(data)
            return b
        if num == 7:
            return self.list(buf, pos, end, node_id)
        if num == 9:
            return self.comprehension(buf, pos, end, node_id)
        return self.struct(buf, pos, end, node_id)

    def select(self, buf: bytes, pos: int, end: int, node_id: int) -> _NodeBuilder:
        b = _NodeBuilder(_SELECT)
        while pos < end:
            tag = buf[pos]
            if tag == 0x0A or tag == 0x12:
                if pos + 1 < end and buf[pos + 1] < 0x80:
                    start = pos + 2
                    pos = start + buf[pos + 1]
                    if pos > end:
                        raise AstDecodeError("truncated length-delimited field")
                else:
                    start, pos = _span(buf, pos + 1, end)
                if tag == 0x12:
                    b.field = buf[start:pos].decode("utf-8")
                    continue
                if b.operand is not None:
                    self.clean = False
                b.operand = self.expr(buf, start, pos, node_id)
                continue
            num, _, v, pos = read_field(buf, pos, end)
            if num == 1:
                if b.operand is not None:
                    self.clean = False
                b.operand = self.expr(*_whole(_b(v)), node_id)
            elif num == 2:
                b.field = _s(v)
            elif num == 3:
                b.test_only = _u(v) != 0
        return b

    def call(self, buf: bytes, pos: int, end: int, node_id: int) -> _NodeBuilder:
        b = _NodeBuilder(_CALL)
        args: list[Node] = []
        while pos < end:
            tag = buf[pos]
            if tag == 0x1A or tag == 0x12 or tag == 0x0A:
                if pos + 1 < end and buf[pos + 1] < 0x80:
                    start = pos + 2
                    pos = start + buf[pos + 1]
                    if pos > end:
                        raise AstDecodeError("truncated length-delimited field")
                else:
                    start, pos = _span(buf, pos + 1, end)
                if tag == 0x1A:
                    args.append(self.expr(buf, start, pos, node_id))
                elif tag == 0x12:
                    b.function = buf[start:pos].decode("utf-8")
                else:
                    if b.target is not None:
                        self.clean = False
                    b.target = self.expr(buf, start, pos, node_id)
                continue
            num, _, v, pos = read_field(buf, pos, end)
            if num == 1:
                if b.target is not None:
                    self.clean = False
                b.target = self.expr(*_whole(_b(v)), node_id)
            elif num == 2:
                b.function = _s(v)
            elif num == 3:
                args.append(self.expr(*_whole(_b(v)), node_id))
        b.args = tuple(args)
        return b

    def list(self, buf: bytes, pos: int, end: int, node_id: int) -> _NodeBuilder:
        b = _NodeBuilder(_LIST)
        elements: list[Node] = []
        optional: list[int] = []
        while pos < end:
            if buf[pos] == 0x0A:
                start, pos = _span(buf, pos + 1, end)
                elements.append(self.expr(buf, start, pos, node_id))
                continue
            num, wire, v, pos = read_field(buf, pos, end)
            if num == 1:
                elements.append(self.expr(*_whole(_b(v)), node_id))
            elif num == 2:
                optional.extend(_packed(wire, v))
        b.elements = tuple(elements)
        b.optional_indices = tuple(optional)
        return b

    def struct(self, buf: bytes, pos: int, end: int, node_id: int) -> _NodeBuilder:
        b = _NodeBuilder(_STRUCT)
        entries: list[StructEntry] = []
        while pos < end:
            tag = buf[pos]
            if tag == 0x12:
                start, pos = _span(buf, pos + 1, end)
                entries.append(self.entry(buf, start, pos, node_id))
            elif tag == 0x0A:
                start, pos = _span(buf, pos + 1, end)
                b.message_name = buf[start:pos].decode("utf-8")
            else:
                num, _, v, pos = read_field(buf, pos, end)
                if num == 1:
                    b.message_name = _s(v)
                elif num == 2:
                    entries.append(self.entry(*_whole(_b(v)), node_id))
        b.entries = tuple(entries)
        return b

    def entry(self, buf: bytes, pos: int, end: int, node_id: int) -> StructEntry:
        entry_id = 0
        field_key = ""
        key: Node | None = None
        value: Node | None = None
        optional = False
        while pos < end:
            tag = buf[pos]
            if tag == 0x1A or tag == 0x22:
                start, pos = _span(buf, pos + 1, end)
                part = self.expr(buf, start, pos, node_id)
                num = tag >> 3
            else:
                num, _, v, pos = read_field(buf, pos, end)
                if num == 1:
                    entry_id = _i64(v)
                elif num == 2:
                    field_key = _s(v)
                elif num == 5:
                    optional = _u(v) != 0
                if num != 3 and num != 4:
                    continue
                part = self.expr(*_whole(_b(v)), node_id)
            if num == 3:
                if key is not None:
                    self.clean = False
                key = part
            else:
                if value is not None:
                    self.clean = False
                value = part
        if value is None:
            value = Node(0, NodeKind.NOT_SET)
            self.clean = False  # a node of the tree that `expr` did not index
        return StructEntry(entry_id, value, key, field_key, optional)

    def comprehension(self, buf: bytes, pos: int, end: int, node_id: int) -> _NodeBuilder:
        b = _NodeBuilder(_COMPREHENSION)
        while pos < end:
            tag = buf[pos]
            if tag & 7 == _LEN and 0x0A <= tag <= 0x42:  # fields 1-8, all length-delimited
                num = tag >> 3
                start, pos = _span(buf, pos + 1, end)
                if num == 1 or num == 3 or num == 8:
                    _set_comprehension_name(b, num, buf[start:pos].decode("utf-8"))
                else:
                    self.comprehension_part(b, num, self.expr(buf, start, pos, node_id))
                continue
            num, _, v, pos = read_field(buf, pos, end)
            if num == 1 or num == 3 or num == 8:
                _set_comprehension_name(b, num, _s(v))
            elif 2 <= num <= 7:
                self.comprehension_part(b, num, self.expr(*_whole(_b(v)), node_id))
        return b

    def comprehension_part(self, b: _NodeBuilder, num: int, part: Node) -> None:
        slot = _COMPREHENSION_PARTS[num]
        if getattr(b, slot) is not None:
            self.clean = False
        setattr(b, slot, part)

    # --- source info --------------------------------------------------------------------------

    def source_info(self, buf: bytes, pos: int, end: int) -> tuple[SourceInfo, dict[int, Node]]:
        location = ""
        line_offsets: list[int] = []
        positions: dict[int, int] = {}
        pending: bytes | None = None  # one run of canonical position entries, decoded lazily
        macros: dict[int, Node] = {}
        while pos < end:
            tag = buf[pos]
            if tag == 0x22:
                run = _POSITION_RUN.match(buf, pos, end)
                if run is not None:
                    if pending is None and not positions:
                        pending = buf[pos:run.end()]
                    else:
                        if pending is not None:
                            positions.update(_decode_positions(pending))
                            pending = None
                        positions.update(_decode_positions(buf[pos:run.end()]))
                    pos = run.end()
                    continue
            num, wire, payload, pos = read_field(buf, pos, end)
            if num == 2:
                location = _s(payload)
            elif num == 3:
                line_offsets.extend(_packed(wire, payload))
            elif num == 4:
                if pending is not None:
                    positions.update(_decode_positions(pending))
                    pending = None
                k, v = _entry(*_whole(_b(payload)))
                positions[_map_key(k)] = _i64(v or 0)
            elif num == 5:
                k, v = _entry(*_whole(_b(payload)))
                macro = _Decoder(self).expr(*_whole(_b(v or b"")), None)
                macros[_map_key(k)] = macro
        lazy = _LazyPositions(pending) if pending is not None else MappingProxyType(positions)
        return SourceInfo(location, tuple(line_offsets), lazy), macros


_COMPREHENSION_PARTS = {2: "iter_range", 4: "accu_init", 5: "loop_condition", 6: "loop_step",
                        7: "result"}


def _set_comprehension_name(b: _NodeBuilder, num: int, name: str) -> None:
    if num == 1:
        b.iter_var = name
    elif num == 3:
        b.accu_var = name
    else:
        b.iter_var2 = name


_V = TypeVar("_V")


def _memo_entries(buf: bytes, pos: int, end: int, tag: int, out: dict[int, _V],
                  memo: dict[bytes, _V], decode: Callable[[bytes], _V]) -> int:
    """Read the run of map<int64, message> entries at `pos` that are in cel-cpp's layout,
    `<tag> <len> 08 <key: 1-2 bytes> 12 <len: 1 byte> <value>`, into `out`; return where the
    run stops (at anything else, left to the general path). Values are decoded once per
    distinct encoding, through `memo`."""
    while pos + 6 <= end and buf[pos] == tag and buf[pos + 2] == 0x08:
        stop = pos + 2 + buf[pos + 1]
        key = buf[pos + 3]
        j = pos + 4
        if key >= 0x80:
            if buf[j] >= 0x80:
                break
            key = (key & 0x7F) | (buf[j] << 7)
            j += 1
        if (buf[pos + 1] >= 0x80 or stop > end or j + 2 > stop or buf[j] != 0x12
                or buf[j + 1] != stop - j - 2):
            break
        data = buf[j + 2:stop]
        value = memo.get(data)
        out[key] = value if value is not None else _memoized(memo, data, decode)
        pos = stop
    return pos


def _memoized(memo: dict[bytes, _V], data: bytes, decode: Callable[[bytes], _V]) -> _V:
    value = memo.get(data)
    if value is None:
        value = memo[data] = decode(data)
    return value


def _whole(data: bytes) -> tuple[bytes, int, int]:
    """A copied payload as (buffer, start, end) for the in-place decoders."""
    return data, 0, len(data)


# --- source positions ---------------------------------------------------------------------------

_SMALL_VARINT = {1: rb"[\x00-\x7f]", 2: rb"[\x80-\xff][\x00-\x7f]",
                 3: rb"[\x80-\xff][\x80-\xff][\x00-\x7f]"}
_POSITION_RUN = re.compile(b"(?:" + b"|".join(
    bytes([0x22, 2 + key_len + value_len, 0x08]) + _SMALL_VARINT[key_len] + b"\x10"
    + _SMALL_VARINT[value_len]
    for key_len in (1, 2, 3) for value_len in (1, 2, 3)) + b")+", re.DOTALL)
"""A run of `positions` map entries as cel-cpp writes them: `22 <len> 08 <id> 10 <offset>`
with ids and offsets below 2**21 and the length byte matching. Such a run cannot fail to
decode, so it can be decoded later."""

_POSITION_ENTRY = re.compile(
    rb"\x22[\x04-\x08]\x08([\x80-\xff]{0,2}[\x00-\x7f])\x10([\x80-\xff]{0,2}[\x00-\x7f])",
    re.DOTALL)


def _small_varint(data: bytes) -> int:
    if len(data) == 1:
        return data[0]
    if len(data) == 2:
        return (data[0] & 0x7F) | (data[1] << 7)
    return (data[0] & 0x7F) | ((data[1] & 0x7F) << 7) | (data[2] << 14)


def _decode_positions(run: bytes) -> dict[int, int]:
    """Entries of a run matched by `_POSITION_RUN`, in order (a repeated id: the last wins)."""
    return {_small_varint(k): _small_varint(v) for k, v in _POSITION_ENTRY.findall(run)}


class _LazyPositions(Mapping[int, int]):
    """`SourceInfo.positions` of one canonical run of entries, decoded on first use.

    Why: positions only serve messages (where an error or an advisory points); a compile that
    reports nothing never reads them, and reading them eagerly was about a seventh of decoding.
    The run was matched by `_POSITION_RUN` when the AST was decoded, so decoding it later
    cannot fail, and the result is what an eager decoding gives.
    """

    __slots__ = ("_decoded", "_run")

    def __init__(self, run: bytes) -> None:
        self._run = run
        self._decoded: dict[int, int] | None = None

    def _map(self) -> dict[int, int]:
        # Threads racing here each decode the same bytes to an equal dict; any of them may win.
        decoded = self._decoded
        if decoded is None:
            decoded = self._decoded = _decode_positions(self._run)
        return decoded

    def __getitem__(self, node_id: int) -> int:
        return self._map()[node_id]

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._map()

    def __iter__(self) -> Iterator[int]:
        return iter(self._map())

    def __len__(self) -> int:
        return len(self._map())

    def __reversed__(self) -> Iterator[int]:
        return reversed(self._map())

    def copy(self) -> dict[int, int]:
        """A dict of the positions (as `MappingProxyType.copy`)."""
        return dict(self._map())

    def __repr__(self) -> str:
        return f"mappingproxy({self._map()!r})"


def _decode_constant(buf: bytes) -> Constant:
    for num, wire, v in iter_fields(buf):
        if num == 1:
            return Constant(ConstKind.NULL, None)
        if num == 2:
            return Constant(ConstKind.BOOL, _u(v) != 0)
        if num == 3:
            return Constant(ConstKind.INT, _i64(v))
        if num == 4:
            return Constant(ConstKind.UINT, _u(v))
        if num == 5:
            if wire != _FIXED64:
                raise AstDecodeError("double constant is not fixed64")
            return Constant(ConstKind.DOUBLE, struct.unpack("<d", _u(v).to_bytes(8, "little"))[0])
        if num == 6:
            return Constant(ConstKind.STRING, _s(v))
        if num == 7:
            return Constant(ConstKind.BYTES, _b(v))
        if num in (8, 9):
            seconds = nanos = 0
            for n2, _, v2 in iter_fields(_b(v)):
                if n2 == 1:
                    seconds = _i64(v2)
                elif n2 == 2:
                    nanos = _i64(v2)
            kind = ConstKind.DURATION if num == 8 else ConstKind.TIMESTAMP
            return Constant(kind, (seconds, nanos))
    return Constant(ConstKind.NOT_SET, None)


def _decode_reference(buf: bytes) -> Reference:
    name = ""
    overloads: list[str] = []
    value: Constant | None = None
    for num, _, v in iter_fields(buf):
        if num == 1:
            name = _s(v)
        elif num == 3:
            overloads.append(_s(v))
        elif num == 4:
            value = _decode_constant(_b(v))
    return Reference(name, tuple(overloads), value)


def _decode_type(buf: bytes) -> CelType:
    result: CelType | None = None
    for num, _, v in iter_fields(buf):
        if num == 1:
            result = CelType(TypeKind.DYN)
        elif num == 2:
            result = CelType(TypeKind.NULL)
        elif num == 3:
            result = CelType(TypeKind.PRIMITIVE, primitive=_primitive(_u(v)))
        elif num == 4:
            result = CelType(TypeKind.WRAPPER, primitive=_primitive(_u(v)))
        elif num == 5:
            wk = _u(v)
            result = CelType(TypeKind.WELL_KNOWN,
                             well_known=WellKnown(wk) if wk <= 3 else WellKnown.UNSPECIFIED)
        elif num == 6:
            elem = DYN
            for n2, _, v2 in iter_fields(_b(v)):
                if n2 == 1:
                    elem = _decode_type(_b(v2))
            result = CelType(TypeKind.LIST, params=(elem,))
        elif num == 7:
            key = val = DYN
            for n2, _, v2 in iter_fields(_b(v)):
                if n2 == 1:
                    key = _decode_type(_b(v2))
                elif n2 == 2:
                    val = _decode_type(_b(v2))
            result = CelType(TypeKind.MAP, params=(key, val))
        elif num == 8:
            res = DYN
            fargs: list[CelType] = []
            for n2, _, v2 in iter_fields(_b(v)):
                if n2 == 1:
                    res = _decode_type(_b(v2))
                elif n2 == 2:
                    fargs.append(_decode_type(_b(v2)))
            result = CelType(TypeKind.FUNCTION, params=(res, *fargs))
        elif num == 9:
            result = CelType(TypeKind.MESSAGE, name=_s(v))
        elif num == 10:
            result = CelType(TypeKind.TYPE_PARAM, name=_s(v))
        elif num == 11:
            inner = _b(v)
            result = CelType(TypeKind.TYPE, params=(_decode_type(inner),) if inner else ())
        elif num == 12:
            result = CelType(TypeKind.ERROR)
        elif num == 14:
            aname = ""
            aparams: list[CelType] = []
            for n2, _, v2 in iter_fields(_b(v)):
                if n2 == 1:
                    aname = _s(v2)
                elif n2 == 2:
                    aparams.append(_decode_type(_b(v2)))
            result = CelType(TypeKind.ABSTRACT, name=aname, params=tuple(aparams))
    return result if result is not None else DYN


def _primitive(v: int) -> Primitive:
    return Primitive(v) if 0 <= v <= 6 else Primitive.UNSPECIFIED


# ------------------------------------------------------------------------------------------------
# Unparsing
# ------------------------------------------------------------------------------------------------

_BINARY = {
    "_||_": ("||", 7), "_&&_": ("&&", 6),
    "_==_": ("==", 5), "_!=_": ("!=", 5), "_<_": ("<", 5), "_<=_": ("<=", 5),
    "_>_": (">", 5), "_>=_": (">=", 5), "@in": ("in", 5),
    "_+_": ("+", 4), "_-_": ("-", 4),
    "_*_": ("*", 3), "_/_": ("/", 3), "_%_": ("%", 3),
}
_UNARY = {"!_": "!", "-_": "-"}
_CONDITIONAL = "_?_:_"
_INDEX = "_[_]"
_OPT_INDEX = "_[?_]"
_OPT_SELECT = "_?._"


def _precedence(n: Node) -> int:
    """cel-go operator precedence (lower binds tighter); 0 for non-operators."""
    if n.kind is not NodeKind.CALL or n.target is not None:
        return 0
    if n.function == _CONDITIONAL:
        return 8
    if n.function in _BINARY:
        return _BINARY[n.function][1]
    if n.function in _UNARY:
        return 2
    return 0


def unparse(node: Node, ast: CheckedAst | None = None) -> str:
    """Render a sub-expression as CEL text.

    Comprehensions produced by macros are printed as the macro call the author wrote
    (`l.all(x, p)`, `cel.bind(v, i, e)`, ...): from the macro-call records when present, else
    recognised from the expansion's shape (cel-expr-python does not record macro calls). When
    `ast` is given and the original source spells the same tokens, the source text itself is
    returned (keeping the author's spacing and quotes); otherwise a canonical rendering in the
    style of cel-go's unparser is returned.
    """
    text = _Unparser(ast).render(node)
    if ast is not None:
        span = _source_span(ast, node, text)
        if span is not None:
            return ast.expression[span[0]:span[1]]
    return text


def source_span(node: Node, ast: CheckedAst) -> tuple[int, int] | None:
    """Code-point [start, end) of the source text that spells `node`, when it can be found.

    cel-go records one position per node (the operator or `.` for selects and calls), not a
    range; messages that quote or point at a sub-expression want where it *starts*.
    """
    return _source_span(ast, node, _Unparser(ast).render(node))


_ACCUMULATORS = ("@result", "__result__")


def _is_ident(n: Node | None, name: str) -> bool:
    return n is not None and n.kind is NodeKind.IDENT and n.name == name


def _is_const(n: Node | None, kind: ConstKind, value: object) -> bool:
    return (n is not None and n.kind is NodeKind.CONST and n.const is not None
            and n.const.kind is kind and n.const.value == value and
            type(n.const.value) is type(value))


def _is_call(n: Node | None, function: str, nargs: int) -> bool:
    return (n is not None and n.kind is NodeKind.CALL and n.target is None
            and n.function == function and len(n.args) == nargs)


class _Unparser:
    def __init__(self, ast: CheckedAst | None) -> None:
        self.ast = ast

    def _resolve(self, n: Node) -> Node:
        """Macro-call arguments may be id-only placeholders: find the node they stand for."""
        if n.kind is not NodeKind.NOT_SET or self.ast is None:
            return n
        if n.id in self.ast.macro_calls:
            return self.ast.macro_calls[n.id]
        if self.ast.has_node(n.id):
            return self.ast.node(n.id)
        return n

    def render(self, n: Node) -> str:
        n = self._resolve(n)
        if self.ast is not None and n.id in self.ast.macro_calls:
            call = self.ast.macro_calls[n.id]
            if call.kind is NodeKind.CALL:
                return self._call(call)
        k = n.kind
        if k is NodeKind.CONST:
            return _const(n.const)
        if k is NodeKind.IDENT:
            return n.name
        if k is NodeKind.SELECT:
            assert n.operand is not None
            inner = f"{self._nested(n.operand)}.{n.field}"
            return f"has({inner})" if n.test_only else inner
        if k is NodeKind.CALL:
            return self._call(n)
        if k is NodeKind.LIST:
            opt = set(n.optional_indices)
            items = [("?" if i in opt else "") + self.render(e) for i, e in enumerate(n.elements)]
            return "[" + ", ".join(items) + "]"
        if k is NodeKind.STRUCT:
            parts = []
            for e in n.entries:
                key = e.field if e.key is None else self.render(e.key)
                parts.append(("?" if e.optional_entry else "") + f"{key}: {self.render(e.value)}")
            return f"{n.message_name}{{" + ", ".join(parts) + "}"
        if k is NodeKind.COMPREHENSION:
            macro = self._macro(n)
            if macro is not None:
                return macro
            pieces = [n.iter_var] + ([n.iter_var2] if n.iter_var2 else []) + [n.accu_var]
            pieces += [self.render(x) if x is not None else "" for x in
                       (n.iter_range, n.accu_init, n.loop_condition, n.loop_step, n.result)]
            return "__comprehension__(" + ", ".join(pieces) + ")"
        return f"<expr #{n.id}>"

    # --- macro recognition -------------------------------------------------------------------

    def _written_name(self, n: Node) -> str:
        """Identifier just before the macro's `(` in the source (macros are positioned there)."""
        if self.ast is None:
            return ""
        pos = self.ast.source_info.positions.get(n.id)
        text = self.ast.expression
        if pos is None or not 0 <= pos < len(text) or text[pos] != "(":
            return ""
        end = pos
        while end > 0 and text[end - 1].isspace():
            end -= 1
        start = end
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        return text[start:end]

    def _macro(self, n: Node) -> str | None:
        """Print a comprehension as the macro call that produces its exact layout, if any."""
        rng, init, step, res = n.iter_range, n.accu_init, n.loop_step, n.result
        if rng is None or init is None or step is None or res is None:
            return None
        acc = n.accu_var
        if (rng.kind is NodeKind.LIST and not rng.elements
                and _is_const(n.loop_condition, ConstKind.BOOL, False)
                and acc not in _ACCUMULATORS and _is_ident(step, acc)):
            return self._bind_like(acc, init, res)
        if acc not in _ACCUMULATORS or (not _is_ident(res, acc)
                                        and not _is_call(res, "_==_", 2)):
            return None
        target = self._nested(rng)
        ivars = n.iter_var + (f", {n.iter_var2}" if n.iter_var2 else "")
        written = self._written_name(n)
        if _is_ident(res, acc):
            simple = self._simple_macro(n, acc, init, step, ivars, written)
            if simple is not None:
                return f"{target}.{simple}"
            return None
        # exists_one: p ? acc + 1 : acc, result acc == 1
        if (_is_call(res, "_==_", 2) and _is_ident(res.args[0], acc)
                and _is_const(res.args[1], ConstKind.INT, 1)
                and _is_const(init, ConstKind.INT, 0) and _is_call(step, _CONDITIONAL, 3)
                and _is_call(step.args[1], "_+_", 2) and _is_ident(step.args[2], acc)):
            name = written if written in ("exists_one", "existsOne") else (
                "existsOne" if n.iter_var2 else "exists_one")
            return f"{target}.{name}({ivars}, {self.render(step.args[0])})"
        return None

    def _simple_macro(self, n: Node, acc: str, init: Node, step: Node, ivars: str,
                      written: str) -> str | None:
        if _is_call(step, "_&&_", 2) and _is_ident(step.args[0], acc) and _is_const(
                init, ConstKind.BOOL, True):
            return f"all({ivars}, {self.render(step.args[1])})"
        if _is_call(step, "_||_", 2) and _is_ident(step.args[0], acc) and _is_const(
                init, ConstKind.BOOL, False):
            return f"exists({ivars}, {self.render(step.args[1])})"
        pred: Node | None = None
        body = step
        if _is_call(step, _CONDITIONAL, 3) and _is_ident(step.args[2], acc):
            pred, body = step.args[0], step.args[1]
        pred_text = f"{self.render(pred)}, " if pred is not None else ""
        if init.kind is NodeKind.LIST and not init.elements:
            if not (_is_call(body, "_+_", 2) and _is_ident(body.args[0], acc)
                    and body.args[1].kind is NodeKind.LIST and len(body.args[1].elements) == 1):
                return None
            elem = body.args[1].elements[0]
            if n.iter_var2:
                return f"transformList({ivars}, {pred_text}{self.render(elem)})"
            if pred is not None and _is_ident(elem, n.iter_var) and written != "map":
                return f"filter({ivars}, {pred_text.rstrip(', ')})"
            return f"map({ivars}, {pred_text}{self.render(elem)})"
        if init.kind is NodeKind.STRUCT and not init.entries and not init.message_name:
            if not (body.kind is NodeKind.CALL and body.function == "cel.@mapInsert"
                    and body.args and _is_ident(body.args[0], acc)):
                return None
            if len(body.args) == 3:
                return f"transformMap({ivars}, {pred_text}{self.render(body.args[2])})"
            if len(body.args) == 2:
                return f"transformMapEntry({ivars}, {pred_text}{self.render(body.args[1])})"
        return None

    def _bind_like(self, var: str, init: Node, res: Node) -> str:
        """`cel.bind(v, init, expr)`, or `l.sortBy(x, key)` whose expansion is a bind."""
        if (var == "@__sortBy_input__" and res.kind is NodeKind.CALL
                and res.function == "@sortByAssociatedKeys" and len(res.args) == 1
                and res.args[0].kind is NodeKind.COMPREHENSION):
            mapping = res.args[0]
            step = mapping.loop_step
            if (_is_call(step, "_+_", 2) and step is not None
                    and step.args[1].kind is NodeKind.LIST and len(step.args[1].elements) == 1):
                key = step.args[1].elements[0]
                return f"{self._nested(init)}.sortBy({mapping.iter_var}, {self.render(key)})"
        return f"cel.bind({var}, {self.render(init)}, {self.render(res)})"

    # --- calls -------------------------------------------------------------------------------

    def _nested(self, n: Node) -> str:
        """Operand of a select/index/member call: parenthesize any operator expression."""
        r = self._resolve(n)
        text = self.render(r)
        return f"({text})" if _precedence(r) > 1 else text

    def _call(self, n: Node) -> str:
        f = n.function
        args = [self._resolve(a) for a in n.args]
        if n.target is None:
            if f in _BINARY and len(args) == 2:
                op, prec = _BINARY[f]
                left_assoc = f not in ("_&&_", "_||_")
                lhs, rhs = args
                lp = _precedence(lhs) > prec
                rp = _precedence(rhs) > prec or (left_assoc and _precedence(rhs) == prec)
                return f"{self._paren(lhs, lp)} {op} {self._paren(rhs, rp)}"
            if f in _UNARY and len(args) == 1:
                return _UNARY[f] + self._paren(args[0], _precedence(args[0]) > 2)
            if f == _CONDITIONAL and len(args) == 3:
                c, t, e = args
                return (f"{self._paren(c, _precedence(c) >= 8)} ? "
                        f"{self._paren(t, _precedence(t) >= 8)} : {self.render(e)}")
            if f in (_INDEX, _OPT_INDEX) and len(args) == 2:
                q = "?" if f == _OPT_INDEX else ""
                return f"{self._nested(args[0])}[{q}{self.render(args[1])}]"
            if f == _OPT_SELECT and len(args) == 2:
                fld = args[1]
                name = (fld.const.value if fld.const is not None
                        and fld.const.kind is ConstKind.STRING else self.render(fld))
                return f"{self._nested(args[0])}.?{name}"
            return f"{f}(" + ", ".join(self.render(a) for a in args) + ")"
        return (f"{self._nested(n.target)}.{f}("
                + ", ".join(self.render(a) for a in args) + ")")

    def _paren(self, n: Node, wrap: bool) -> str:
        text = self.render(n)
        return f"({text})" if wrap else text


def _const(c: Constant | None) -> str:
    if c is None:
        return "<const>"
    k, v = c.kind, c.value
    if k is ConstKind.NULL:
        return "null"
    if k is ConstKind.BOOL:
        return "true" if v else "false"
    if k is ConstKind.INT:
        return str(v)
    if k is ConstKind.UINT:
        return f"{v}u"
    if k is ConstKind.DOUBLE:
        assert isinstance(v, float)
        if math.isinf(v) or math.isnan(v):
            return f'double("{"NaN" if math.isnan(v) else ("-" if v < 0 else "") + "Infinity"}")'
        text = repr(v)
        return text if any(ch in text for ch in ".eE") else text + ".0"
    if k is ConstKind.STRING:
        assert isinstance(v, str)
        return _quote(v)
    if k is ConstKind.BYTES:
        assert isinstance(v, bytes)
        return "b" + _quote_bytes(v)
    if k in (ConstKind.DURATION, ConstKind.TIMESTAMP):
        assert isinstance(v, tuple)
        fn = "duration" if k is ConstKind.DURATION else "timestamp"
        return f"{fn}({v[0]})"
    return "<const>"


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\a": "\\a",
            "\b": "\\b", "\f": "\\f", "\v": "\\v"}


def _quote(s: str) -> str:
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _quote_bytes(b: bytes) -> str:
    out = []
    for byte in b:
        ch = chr(byte)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\x{byte:02x}")
    return '"' + "".join(out) + '"'


def _subtree_ids(ast: CheckedAst, n: Node) -> Iterator[int]:
    stack = [n]
    while stack:
        cur = stack.pop()
        yield cur.id
        if cur.id in ast.macro_calls:
            call = ast.macro_calls[cur.id]
            yield call.id
            for c in call.children():
                stack.append(_resolve_placeholder(ast, c))
        stack.extend(cur.children())


def _resolve_placeholder(ast: CheckedAst, n: Node) -> Node:
    if n.kind is NodeKind.NOT_SET:
        if n.id in ast.macro_calls:
            return ast.macro_calls[n.id]
        if ast.has_node(n.id):
            return ast.node(n.id)
    return n


def _source_span(ast: CheckedAst, node: Node, canonical: str) -> tuple[int, int] | None:
    """Return the span of source text spelling exactly `canonical`'s tokens, if there is one.

    The sub-expression starts at or before the smallest recorded position in its subtree
    (parenthesized operands may start earlier); we scan from a few candidate starts and accept
    the first slice whose non-blank characters equal the canonical rendering's.
    """
    positions = ast.source_info.positions
    offsets = [positions[i] for i in _subtree_ids(ast, node) if i in positions]
    if not offsets:
        return None
    text = ast.expression
    want = "".join(canonical.split())
    if not want:
        return None
    first = min(offsets)
    # The macro/receiver may begin before the node's own offset (e.g. `a.b` is positioned at the
    # dot in some parsers); try starts from the earliest plausible place forward.
    for start in range(first, max(-1, first - 64), -1):
        if text[start:start + 1].isspace():
            continue
        end = _match_tokens(text, start, want)
        if end is not None:
            return start, end
    return None


def _match_tokens(text: str, start: int, want: str) -> int | None:
    i, j = start, 0
    while j < len(want):
        if i >= len(text):
            return None
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch != want[j] and not (ch == "'" and want[j] == '"'):
            return None
        i += 1
        j += 1
    return i
