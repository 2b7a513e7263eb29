"""Decoder of cel-expr-python's `Expression.serialize()` into the checked AST (`policies.cel.common.ast`).

Why: cel-expr-python only exposes the checked tree as a serialized `google.protobuf.Any`
wrapping `cel.expr.CheckedExpr`. No PyPI package ships those message classes and we do not want
the `protobuf` runtime, so this module reads the wire format directly (with `policies.cel.common.wire`),
using field numbers from cel-spec's `syntax.proto` and `checked.proto`. It is apart from the node
model because only compilation decodes; every analysis reads the model.

Decoding is on the cold-compile path (a 10 KiB expression is ~75 KB of AST, ~1,800 nodes), so
`_Decoder` is written for speed; see its docstring. The `protobuf` runtime (upb) would not be
faster: parsing is, but turning its messages into our nodes costs as much as reading the bytes.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TypeVar

from .ast import (
    CheckedAst,
    Constant,
    ConstKind,
    Node,
    NodeKind,
    Reference,
    SourceInfo,
    StructEntry,
)
from .types import (
    DYN,
    CelType,
    Primitive,
    TypeKind,
    WellKnown,
)
from .wire import FIXED64 as _FIXED64
from .wire import LEN as _LEN
from .wire import VARINT as _VARINT
from .wire import WireError, iter_fields, read_field, read_varint

__all__ = [
    "AstDecodeError",
    "decode_checked_expr",
]

CHECKED_EXPR_TYPE_URL = "type.googleapis.com/cel.expr.CheckedExpr"


class AstDecodeError(WireError):
    """The serialized AST could not be read. The engine produced it, so this signals a bug."""


# ------------------------------------------------------------------------------------------------
# Protobuf wire format: the generic readers are in `policies.cel.common.wire`; the decoder below reads
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
    `object.__setattr__`, the largest single cost of decoding. A builder takes plain slot
    stores, several times cheaper, and then becomes a `Node` by `__class__` assignment, which
    CPython allows between classes with identical slot layouts. Only
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
    # otherwise: a Python call per field is a large share of the decoding time. `parent` is the id
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
