"""The checked-AST decoder gives exactly what a plain field-by-field reading gives.

`policies.cel.common.ast_decode.decode_checked_expr` reads cel-cpp's layout inline, shares repeated values,
indexes the tree while reading it and decodes source positions lazily. The reference below is
the straightforward reading it replaced (one generator over the fields of each message, every
message copied and decoded on its own). Both are run on:

* every node and constant kind, every comprehension shape;
* every string in the tests of `tests/cel/` that cel-cpp can parse (checked where the
  environment declares what it uses, else parsed only);
* generated extractors (small to ~20 KiB) and random expressions (hypothesis);
* the same messages re-encoded in ways the fast paths do not expect (fields out of order,
  over-long varints, unpacked repeated fields, unknown fields, a singular field given twice,
  map entries with their value first);
* mutated bytes, where both must fail alike or succeed alike.

Results are compared on everything a caller can observe, through `repr` (which keeps `True`
apart from `1` and `-0.0` from `0.0`) and the navigation methods.
"""

from __future__ import annotations

import ast as python_ast
import enum
import random
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import pytest
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode, get_env
from dra_affinity.policies.cel.common.ast import (
    CheckedAst,
    Constant,
    ConstKind,
    Node,
    NodeKind,
    Reference,
    SourceInfo,
    StructEntry,
)
from dra_affinity.policies.cel.common.ast_decode import AstDecodeError, decode_checked_expr
from dra_affinity.policies.cel.common.types import (
    DYN,
    CelType,
    Primitive,
    TypeKind,
    WellKnown,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# ------------------------------------------------------------------------------------------------
# The reference decoder: the previous implementation of `decode_checked_expr`, kept verbatim
# ------------------------------------------------------------------------------------------------

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_TWO_63 = 1 << 63
_TWO_64 = 1 << 64


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise AstDecodeError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & (_TWO_64 - 1), pos
        shift += 7
        if shift >= 70:
            raise AstDecodeError("varint longer than 10 bytes")


def _fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield (field number, wire type, payload) for one message; payload is int or bytes."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise AstDecodeError("field number 0")
        if wire == _VARINT:
            value, pos = _read_varint(buf, pos)
            yield number, wire, value
        elif wire in (_FIXED64, _FIXED32):
            width = 8 if wire == _FIXED64 else 4
            if pos + width > end:
                raise AstDecodeError("truncated fixed-width field")
            yield number, wire, int.from_bytes(buf[pos:pos + width], "little")
            pos += width
        elif wire == _LEN:
            length, pos = _read_varint(buf, pos)
            if pos + length > end:
                raise AstDecodeError("truncated length-delimited field")
            yield number, wire, bytes(buf[pos:pos + length])
            pos += length
        else:
            raise AstDecodeError(f"unsupported wire type {wire}")


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
    buf, out, pos = _b(v), [], 0
    while pos < len(buf):
        u, pos = _read_varint(buf, pos)
        out.append(u - _TWO_64 if u >= _TWO_63 else u)
    return out


def _map_entry(buf: bytes) -> tuple[int | bytes | None, int | bytes | None]:
    key: int | bytes | None = None
    val: int | bytes | None = None
    for num, _, v in _fields(buf):
        if num == 1:
            key = v
        elif num == 2:
            val = v
    return key, val


def reference_decode(serialized: bytes, expression: str) -> CheckedAst:
    """The reference reading of `Expression.serialize()` output (see the module docstring)."""
    payload = _unwrap_any(serialized)
    root: Node | None = None
    types: dict[int, CelType] = {}
    refs: dict[int, Reference] = {}
    source = SourceInfo()
    macro_calls: dict[int, Node] = {}
    version = ""
    for num, _, v in _fields(payload):
        if num == 2:
            k, val = _map_entry(_b(v))
            refs[_i64(k or 0)] = _decode_reference(_b(val or b""))
        elif num == 3:
            k, val = _map_entry(_b(v))
            types[_i64(k or 0)] = _decode_type(_b(val or b""))
        elif num == 4:
            root = _decode_expr(_b(v))
        elif num == 5:
            source, macro_calls = _decode_source_info(_b(v))
        elif num == 6:
            version = _s(v)
    if root is None:
        raise AstDecodeError("CheckedExpr has no expr")
    return CheckedAst(
        root=root,
        types=MappingProxyType(types),
        references=MappingProxyType(refs),
        macro_calls=MappingProxyType(macro_calls),
        source_info=source,
        expression=expression,
        expr_version=version,
    )


def _unwrap_any(serialized: bytes) -> bytes:
    type_url = ""
    value = b""
    for num, _, v in _fields(serialized):
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


def _decode_constant(buf: bytes) -> Constant:
    for num, wire, v in _fields(buf):
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
            for n2, _, v2 in _fields(_b(v)):
                if n2 == 1:
                    seconds = _i64(v2)
                elif n2 == 2:
                    nanos = _i64(v2)
            kind = ConstKind.DURATION if num == 8 else ConstKind.TIMESTAMP
            return Constant(kind, (seconds, nanos))
    return Constant(ConstKind.NOT_SET, None)


def _decode_expr(buf: bytes) -> Node:
    node_id = 0
    body: Node | None = None
    for num, _, v in _fields(buf):
        if num == 2:
            node_id = _i64(v)
        elif num == 3:
            body = Node(0, NodeKind.CONST, const=_decode_constant(_b(v)))
        elif num == 4:
            name = ""
            for n2, _, v2 in _fields(_b(v)):
                if n2 == 1:
                    name = _s(v2)
            body = Node(0, NodeKind.IDENT, name=name)
        elif num == 5:
            body = _decode_select(_b(v))
        elif num == 6:
            body = _decode_call(_b(v))
        elif num == 7:
            body = _decode_list(_b(v))
        elif num == 8:
            body = _decode_struct(_b(v))
        elif num == 9:
            body = _decode_comprehension(_b(v))
    if body is None:
        return Node(node_id, NodeKind.NOT_SET)
    return _with_id(body, node_id)


def _with_id(n: Node, node_id: int) -> Node:
    return Node(
        node_id, n.kind, n.const, n.name, n.operand, n.field, n.test_only, n.target, n.function,
        n.args, n.elements, n.optional_indices, n.message_name, n.entries, n.iter_var,
        n.iter_var2, n.iter_range, n.accu_var, n.accu_init, n.loop_condition, n.loop_step,
        n.result,
    )


def _decode_select(buf: bytes) -> Node:
    operand: Node | None = None
    fname = ""
    test_only = False
    for num, _, v in _fields(buf):
        if num == 1:
            operand = _decode_expr(_b(v))
        elif num == 2:
            fname = _s(v)
        elif num == 3:
            test_only = _u(v) != 0
    return Node(0, NodeKind.SELECT, operand=operand, field=fname, test_only=test_only)


def _decode_call(buf: bytes) -> Node:
    target: Node | None = None
    function = ""
    args: list[Node] = []
    for num, _, v in _fields(buf):
        if num == 1:
            target = _decode_expr(_b(v))
        elif num == 2:
            function = _s(v)
        elif num == 3:
            args.append(_decode_expr(_b(v)))
    return Node(0, NodeKind.CALL, target=target, function=function, args=tuple(args))


def _decode_list(buf: bytes) -> Node:
    elements: list[Node] = []
    optional: list[int] = []
    for num, wire, v in _fields(buf):
        if num == 1:
            elements.append(_decode_expr(_b(v)))
        elif num == 2:
            optional.extend(_packed(wire, v))
    return Node(0, NodeKind.LIST, elements=tuple(elements), optional_indices=tuple(optional))


def _decode_struct(buf: bytes) -> Node:
    message_name = ""
    entries: list[StructEntry] = []
    for num, _, v in _fields(buf):
        if num == 1:
            message_name = _s(v)
        elif num == 2:
            entries.append(_decode_entry(_b(v)))
    return Node(0, NodeKind.STRUCT, message_name=message_name, entries=tuple(entries))


def _decode_entry(buf: bytes) -> StructEntry:
    entry_id = 0
    field_key = ""
    key: Node | None = None
    value: Node | None = None
    optional = False
    for num, _, v in _fields(buf):
        if num == 1:
            entry_id = _i64(v)
        elif num == 2:
            field_key = _s(v)
        elif num == 3:
            key = _decode_expr(_b(v))
        elif num == 4:
            value = _decode_expr(_b(v))
        elif num == 5:
            optional = _u(v) != 0
    if value is None:
        value = Node(0, NodeKind.NOT_SET)
    return StructEntry(entry_id, value, key, field_key, optional)


def _decode_comprehension(buf: bytes) -> Node:
    parts: dict[int, Node] = {}
    names: dict[int, str] = {}
    for num, _, v in _fields(buf):
        if num in (1, 3, 8):
            names[num] = _s(v)
        elif num in (2, 4, 5, 6, 7):
            parts[num] = _decode_expr(_b(v))
    return Node(
        0, NodeKind.COMPREHENSION,
        iter_var=names.get(1, ""), iter_var2=names.get(8, ""), accu_var=names.get(3, ""),
        iter_range=parts.get(2), accu_init=parts.get(4), loop_condition=parts.get(5),
        loop_step=parts.get(6), result=parts.get(7),
    )


def _decode_reference(buf: bytes) -> Reference:
    name = ""
    overloads: list[str] = []
    value: Constant | None = None
    for num, _, v in _fields(buf):
        if num == 1:
            name = _s(v)
        elif num == 3:
            overloads.append(_s(v))
        elif num == 4:
            value = _decode_constant(_b(v))
    return Reference(name, tuple(overloads), value)


def _decode_type(buf: bytes) -> CelType:
    result: CelType | None = None
    for num, _, v in _fields(buf):
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
            for n2, _, v2 in _fields(_b(v)):
                if n2 == 1:
                    elem = _decode_type(_b(v2))
            result = CelType(TypeKind.LIST, params=(elem,))
        elif num == 7:
            key = val = DYN
            for n2, _, v2 in _fields(_b(v)):
                if n2 == 1:
                    key = _decode_type(_b(v2))
                elif n2 == 2:
                    val = _decode_type(_b(v2))
            result = CelType(TypeKind.MAP, params=(key, val))
        elif num == 8:
            res = DYN
            fargs: list[CelType] = []
            for n2, _, v2 in _fields(_b(v)):
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
            for n2, _, v2 in _fields(_b(v)):
                if n2 == 1:
                    aname = _s(v2)
                elif n2 == 2:
                    aparams.append(_decode_type(_b(v2)))
            result = CelType(TypeKind.ABSTRACT, name=aname, params=tuple(aparams))
    return result if result is not None else DYN


def _primitive(v: int) -> Primitive:
    return Primitive(v) if 0 <= v <= 6 else Primitive.UNSPECIFIED


def _decode_source_info(buf: bytes) -> tuple[SourceInfo, dict[int, Node]]:
    location = ""
    line_offsets: list[int] = []
    positions: dict[int, int] = {}
    macros: dict[int, Node] = {}
    for num, wire, v in _fields(buf):
        if num == 2:
            location = _s(v)
        elif num == 3:
            line_offsets.extend(_packed(wire, v))
        elif num == 4:
            k, val = _map_entry(_b(v))
            positions[_i64(k or 0)] = _i64(val or 0)
        elif num == 5:
            k, val = _map_entry(_b(v))
            macros[_i64(k or 0)] = _decode_expr(_b(val or b""))
    info = SourceInfo(location, tuple(line_offsets), MappingProxyType(positions))
    return info, macros


# ------------------------------------------------------------------------------------------------
# Observing a decoded AST, producing serialized ASTs
# ------------------------------------------------------------------------------------------------

KEY = EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS)
Decoder = Callable[[bytes, str], CheckedAst]


def observe(ast: CheckedAst) -> tuple[object, ...]:
    """Everything a caller can see of `ast`, in a strictly comparable form."""
    walk = list(ast.walk())
    assert [id(n) for n in walk] == [id(n) for n in _preorder(ast.root)]
    place = {id(n): i for i, n in enumerate(walk)}
    info = ast.source_info
    ids = sorted({n.id for n in walk} | set(ast.types) | set(ast.references)
                 | set(info.positions) | set(ast.macro_calls) | {-1, 0} | set(DECOY_IDS))
    navigation = []
    for i in ids:
        known = ast.has_node(i)
        parent = ast.parent(i)
        navigation.append((i, known, place.get(id(ast.node(i))) if known else None,
                           place.get(id(parent)) if parent is not None else None,
                           ast.offset(i), ast.location(i)))
    return (
        repr(ast.root),
        repr(list(ast.types.items())),
        repr(list(ast.references.items())),
        repr(list(ast.macro_calls.items())),
        info.location,
        info.line_offsets,
        repr(list(info.positions.items())),
        len(info.positions),
        ast.expression,
        ast.expr_version,
        navigation,
        repr(ast.output_type()),
    )


def _preorder(node: Node) -> Iterator[Node]:
    """Pre-order by `Node.children()`, the definition `CheckedAst.walk` follows."""
    yield node
    for child in node.children():
        yield from _preorder(child)


def outcome(decode: Decoder, data: bytes, text: str) -> tuple[object, ...]:
    """("ok", observation) or ("error", exception type, message)."""
    try:
        return ("ok", observe(decode(data, text)))
    except (AstDecodeError, RecursionError) as exc:
        return ("error", type(exc).__name__, str(exc))


def assert_same(data: bytes, text: str) -> tuple[object, ...]:
    expected = outcome(reference_decode, data, text)
    assert outcome(decode_checked_expr, data, text) == expected
    return expected


def _varint_bytes(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
    return _varint_bytes(number << 3 | _LEN) + _varint_bytes(len(payload)) + payload


def _any(payload: bytes, name: str = "cel.expr.CheckedExpr") -> bytes:
    return _len_field(1, f"type.googleapis.com/{name}".encode()) + _len_field(2, payload)


def _unwrap(serialized: bytes) -> bytes:
    return next(_b(v) for num, _, v in _fields(serialized) if num == 2)


def _engine_readable(text: str) -> bool:
    """cel-expr-python takes UTF-8 text only; our compile path refuses the rest before it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def checked(text: str) -> bytes | None:
    """cel-cpp's checked AST in the sharing-affinity environment, or None."""
    if not _engine_readable(text):
        return None
    try:
        return get_env(KEY).checker.compile(text).serialize()
    except RuntimeError:
        return None


def parsed(text: str) -> bytes | None:
    """cel-cpp's parsed AST rewrapped as a CheckedExpr without types or references, or None.

    Reaches every expression that parses, whatever identifiers and functions it uses.
    """
    if not _engine_readable(text):
        return None
    try:
        serialized = get_env(KEY).checker.compile(text, disable_check=True).serialize()
    except RuntimeError:
        return None
    renumber = {2: 4, 3: 5}  # ParsedExpr{expr = 2, source_info = 3}
    payload = b"".join(_len_field(renumber[num], _b(v))
                       for num, _, v in _fields(_unwrap(serialized)) if num in renumber)
    return _any(payload)


def serialized(text: str) -> bytes:
    data = checked(text) or parsed(text)
    assert data is not None, text
    return data


# ------------------------------------------------------------------------------------------------
# Corpora
# ------------------------------------------------------------------------------------------------

NODE_KINDS = [
    "null", "true", "false", "0", "-42", "9223372036854775807", "-9223372036854775808",
    "18446744073709551615u", "0u", "2.5", "-0.0", "1e300", "-0.125e3", "''", "'héllo 日本'",
    "b''", "b'\\x00\\xffA'", "'\\u00e9\\n\\t\\\\'", "r'raw\\d'", '"""multi\nline"""',
    "object", "object.spec.subnet", "has(object.a.b)", "object['k']", "object[?0]",
    "object.?a.?b.orValue('')", "size(object.x) + 'abc'.size()",
    "[?object.?x, 'a', ?optional.none()]", "[]", "[[], [[]]]", "{}", "{?'a': object.?x, 'b': 2}",
    "{1: 'a', 2u: 'b', true: 'c'}", "google.protobuf.Timestamp{seconds: 1, nanos: 2}",
    "google.protobuf.Duration{}", "object.x.all(v, v == 'a')", "[1, 2].exists(x, x > 1)",
    "[1].exists_one(x, x > 1)", "[1].map(x, x + 1)", "[1].filter(x, x > 1)",
    "[1].map(x, x > 0, x + 1)", "object.x.all(k, v, v == 'a')", "object.x.exists(k, v, v == 1)",
    "object.x.existsOne(i, v, i > v)", "[1].transformList(i, v, v * 2)",
    "{'a': 1}.transformMap(k, v, v > 0, v * 2)", "{'a': 1}.transformMapEntry(k, v, {k: v})",
    "cel.bind(v, object.spec, v.subnet)", "[3, 1].sortBy(x, -x)",
    "object.a ? 1 : 2", "!(object.a) || -object.b < 3 && object.c in [1, 2]",
    "type(1) == int && type(object) != string", "duration('1s') + duration('2m')",
    "timestamp('2020-01-01T00:00:00Z') - duration('1h')", "dyn(1) == 1.0 && 1u < 2",
    "object.a.b.c.d.e.f.g.h", "[1, 2, 3][0] + [1][0] * 7 % 3 / 1 - 0",
    '"日本" +\n  "é" + object.x +\r\n "z"', "lists.range(3).sum() + [1, 2].min()",
    "'a,b'.split(',').join('-').lowerAscii().upperAscii().trim()",
    "sets.contains([1], [1]) && sets.equivalent([1], [1]) && sets.intersects([1], [1])",
    "object.x.matches('^[a-z]+$') && 'ab'.contains('a') && 'ab'.startsWith('a')",
    "url('https://a.example/p').getHost() + ip('10.0.0.1').family().string()",
    "quantity('1Gi').isLessThan(quantity('2Gi')) && cidr('10.0.0.0/8').containsIP('10.1.2.3')",
    "x.y.z + undeclared(1, 2)",
]


def _strings_in_cel_tests() -> list[str]:
    """Every string constant in the test modules of tests/cel (candidates for expressions)."""
    found: set[str] = set()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        try:
            tree = python_ast.parse(path.read_text(encoding="utf-8"))
        except SyntaxError:  # a module being edited: its strings are not needed here
            continue
        for node in python_ast.walk(tree):
            if (isinstance(node, python_ast.Constant) and isinstance(node.value, str)
                    and 0 < len(node.value) <= 4000):
                found.add(node.value)
    return sorted(found)


_FIELDS_ = ("subnetID", "rack", "zone", "pciRoot", "vlan", "ibPKey")


def extractor(seed: int, branches: int) -> str:
    """A guarded multi-kind extractor with `branches` branches (about 250 characters each)."""
    r = random.Random(seed)
    parts = []
    for i in range(branches):
        f, g = r.sample(_FIELDS_, 2)
        value = r.choice((
            f'object.?spec.?{f}.orValue("")',
            f'string(object.spec.{f}) + "/" + string(object.spec.{g})',
            f'object.spec.?items.orValue([]).filter(x, has(x.{f})).map(x, string(x.{f}))'
            f'.join(",")',
            f'cel.bind(s, object.spec, string(s.{f}).lowerAscii() + "-" + string(s.{g}))',
            f'object.spec.ports.exists(p, p.name == "p{i}") ? "p{i}" : string(object.spec.{g})',
            f'{{"a": string(object.spec.{f}), "b": "{i}"}}[string(object.spec.{g})]',
        ))
        parts.append(f'object.?apiVersion.orValue("") == "g{r.randint(1, 9)}.example.com/v1"\n'
                     f'  && object.?kind.orValue("") == "Kind{i}" ? ({value}) : ""')
    return "[\n" + ",\n".join(parts) + '\n].filter(s, s != "").join(",")'


# ------------------------------------------------------------------------------------------------
# Tests on what cel-cpp produces
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", NODE_KINDS)
def test_every_node_kind(text: str) -> None:
    data = serialized(text)
    result = assert_same(data, text)
    assert result[0] == "ok"


def test_every_node_and_constant_kind_is_covered() -> None:
    kinds: set[NodeKind] = set()
    consts: set[ConstKind] = set()
    for text in NODE_KINDS:
        ast = decode_checked_expr(serialized(text), text)
        for node in ast.walk():
            kinds.add(node.kind)
            if node.const is not None:
                consts.add(node.const.kind)
    assert kinds == set(NodeKind) - {NodeKind.NOT_SET}
    assert consts >= set(ConstKind) - {ConstKind.NOT_SET, ConstKind.DURATION,
                                       ConstKind.TIMESTAMP}


def test_expressions_of_the_cel_tests() -> None:
    compared = 0
    for text in _strings_in_cel_tests():
        data = checked(text) or parsed(text)
        if data is None:
            continue
        assert outcome(decode_checked_expr, data, text) == outcome(reference_decode, data, text), (
            text)
        compared += 1
    assert compared >= 300  # the cel tests hold several hundred expressions


@pytest.mark.parametrize(("seed", "branches"), [(1, 1), (2, 4), (3, 20), (4, 80)])
def test_generated_extractors(seed: int, branches: int) -> None:
    text = extractor(seed, branches)
    data = checked(text)
    assert data is not None
    assert assert_same(data, text)[0] == "ok"


_ATOMS = st.sampled_from([
    "object", "object.a", "object.?b", "object['k']", "1", "-7", "2u", "3.5", "'s'", "b'x'",
    "true", "null", "[1, 2]", "{'k': 1}", "[]", "{}", "has(object.c)", "x",
])


def _combine(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||", "in"])
    return st.one_of(
        st.tuples(inner, binary, inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.tuples(inner, inner).map(lambda t: f"{{{t[0]}: {t[1]}, ?'o': optional.of({t[1]})}}"),
        inner.map(lambda e: f"size({e})"),
        inner.map(lambda e: f"({e}).orValue(1)"),
        inner.map(lambda e: f"!({e})"),
        inner.map(lambda e: f"-({e})"),
        inner.map(lambda e: f"[{e}].all(x, x == {e})"),
        inner.map(lambda e: f"[{e}].map(i, v, [i, v])"),
        inner.map(lambda e: f"cel.bind(v, {e}, [v, v])"),
        inner.map(lambda e: f"object[?{e}]"),
        inner.map(lambda e: f"string({e}).size()"),
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.recursive(_ATOMS, _combine, max_leaves=10))
def test_random_expressions(text: str) -> None:
    data = checked(text) or parsed(text)
    if data is not None:
        assert_same(data, text)


def test_positions_read_later_behave_as_a_mapping() -> None:
    text = '"日本" +\n  "é" + object.x'
    data = serialized(text)  # (cel-cpp's map order varies from one compilation to the next)
    ast = decode_checked_expr(data, text)
    ref = reference_decode(data, text)
    positions, expected = ast.source_info.positions, ref.source_info.positions
    assert isinstance(positions, Mapping)
    assert positions == expected and expected == positions
    assert ast.source_info == ref.source_info
    assert repr(positions) == repr(expected)
    assert list(positions) == list(expected) and len(positions) == len(expected)
    first = next(iter(expected))
    assert first in positions and -5 not in positions
    assert positions[first] == expected[first] and positions.get(-5, "none") == "none"
    with pytest.raises(KeyError):
        positions[-5]
    assert list(reversed(positions)) == list(reversed(expected))
    copied = positions.copy()  # type: ignore[attr-defined]  # (as MappingProxyType has)
    assert copied == dict(expected) and type(copied) is dict
    with pytest.raises(TypeError):
        hash(positions)


# ------------------------------------------------------------------------------------------------
# Re-encoded messages: what the fast paths leave to the general one
# ------------------------------------------------------------------------------------------------

SUBMESSAGES: Mapping[str, Mapping[int, str]] = {
    "CheckedExpr": {2: "ReferenceEntry", 3: "TypeEntry", 4: "Expr", 5: "SourceInfo"},
    "ReferenceEntry": {2: "Reference"},
    "TypeEntry": {2: "Type"},
    "Reference": {4: "Constant"},
    "Constant": {8: "Pair", 9: "Pair"},
    "Type": {1: "Empty", 6: "ListType", 7: "MapType", 8: "FunctionType", 11: "Type",
             12: "Empty", 14: "AbstractType"},
    "ListType": {1: "Type"},
    "MapType": {1: "Type", 2: "Type"},
    "FunctionType": {1: "Type", 2: "Type"},
    "AbstractType": {2: "Type"},
    "Expr": {3: "Constant", 4: "Ident", 5: "Select", 6: "Call", 7: "CreateList",
             8: "CreateStruct", 9: "Comprehension"},
    "Select": {1: "Expr"},
    "Call": {1: "Expr", 3: "Expr"},
    "CreateList": {1: "Expr"},
    "CreateStruct": {2: "Entry"},
    "Entry": {3: "Expr", 4: "Expr"},
    "Comprehension": {2: "Expr", 4: "Expr", 5: "Expr", 6: "Expr", 7: "Expr"},
    "SourceInfo": {4: "PositionEntry", 5: "MacroEntry"},
    "MacroEntry": {2: "Expr"},
}
"""Sub-message fields of the cel.expr messages (cel-spec syntax.proto and checked.proto)."""

ID_FIELDS = {("Expr", 2), ("Entry", 1), ("ReferenceEntry", 1), ("TypeEntry", 1),
             ("PositionEntry", 1), ("MacroEntry", 1)}
PACKED_FIELDS = {("CreateList", 2), ("SourceInfo", 3)}
SINGULAR_MESSAGES = {("CheckedExpr", 4), ("Select", 1), ("Call", 1), ("Entry", 3), ("Entry", 4),
                     *(("Comprehension", n) for n in (2, 4, 5, 6, 7))}
DECOY_IDS = range(424_242, 424_242 + 200)
"""Ids of decoys: expressions that a later value of the same singular field replaces."""


def _decoy_expr(decoy_id: int) -> bytes:
    return _varint_bytes(2 << 3) + _varint_bytes(decoy_id) + _len_field(4, _len_field(1, b"decoy"))


def _decoy_body(decoy_id: int) -> bytes:
    """An expression kind (a call with one argument) that a later kind of the same Expr replaces."""
    return _len_field(6, _len_field(2, b"decoy") + _len_field(3, _decoy_expr(decoy_id)))


class Recode(enum.Enum):
    """One way of re-encoding a message that a protobuf reader must read the same."""

    REVERSED = "field groups in reverse order (the id after the kind, map values first)"
    OVERLONG = "tags, lengths and varint values padded to non-minimal varints"
    UNPACKED = "packed repeated integers written one field each"
    UNKNOWN = "an unknown field of each wire type at the start of every message"


@dataclass(frozen=True)
class Recoding:
    """How `recode` rewrites: any `Recode` ways, and changes that alter the AST.

    `shift` is added to every id and offset; fields in `drop` are left out; `decoy_at` puts a
    decoy before each value of that singular field (`("Expr", 0)`: before each expression kind).
    """

    ways: frozenset[Recode] = frozenset()
    shift: int = 0
    drop: frozenset[tuple[str, int]] = frozenset()
    decoy_at: tuple[str, int] | None = None


def _pad(varint: bytes) -> bytes:
    return varint if len(varint) >= 9 else varint[:-1] + bytes([varint[-1] | 0x80, 0x00])


def recode(data: bytes, message: str, r: Recoding, decoys: Iterator[int] | None = None) -> bytes:
    """`data`, a `message`, re-encoded as `r` says."""
    decoys = iter(DECOY_IDS) if decoys is None else decoys
    v = _pad if Recode.OVERLONG in r.ways else (lambda b: b)
    groups: dict[int, list[tuple[int, int | bytes]]] = {}
    for num, wire, value in _fields(data):
        groups.setdefault(num, []).append((wire, value))
    order = list(groups)
    if Recode.REVERSED in r.ways:
        order.reverse()
    out = bytearray()
    if Recode.UNKNOWN in r.ways:
        out += _varint_bytes(1000 << 3 | _VARINT) + _varint_bytes(7)
        out += _varint_bytes(1001 << 3 | _FIXED32) + b"\x01\x02\x03\x04"
        out += _varint_bytes(1002 << 3 | _FIXED64) + bytes(8)
        out += _len_field(1003, b"xyz")
    subs = SUBMESSAGES.get(message, {})
    for num in order:
        if (message, num) in r.drop:
            continue
        for wire, value in groups[num]:
            key = v(_varint_bytes(num << 3 | wire))
            if wire == _LEN:
                payload = _b(value)
                if num in subs:
                    payload = recode(payload, subs[num], r, decoys)
                    if r.decoy_at == (message, num):
                        out += _len_field(num, _decoy_expr(next(decoys)))
                    elif r.decoy_at == (message, 0) == ("Expr", 0):
                        out += _decoy_body(next(decoys))
                if Recode.UNPACKED in r.ways and (message, num) in PACKED_FIELDS:
                    for item in _packed(_LEN, payload):
                        out += _varint_bytes(num << 3 | _VARINT) + _varint_bytes(item)
                    continue
                out += key + v(_varint_bytes(len(payload))) + payload
            elif wire == _VARINT:
                number = _u(value)
                if (message, num) in ID_FIELDS or (message, num) == ("PositionEntry", 2):
                    number = _i64(number) + r.shift
                out += key + v(_varint_bytes(number))
            else:
                width = 8 if wire == _FIXED64 else 4
                out += key + _u(value).to_bytes(width, "little")
    return bytes(out)


_RECODED = ["object.a.b == 'x' ? [object.c, 2][0] : object.d", *NODE_KINDS, extractor(5, 6)]


@pytest.mark.parametrize("how", list(Recode))
def test_recoded_messages_read_the_same(how: Recode) -> None:
    for text in _RECODED:
        payload = _unwrap(serialized(text))
        result = assert_same(_any(recode(payload, "CheckedExpr", Recoding(frozenset([how])))),
                             text)
        assert result[0] == "ok", (text, result)
        assert result == outcome(reference_decode, _any(payload), text), text


@pytest.mark.parametrize("shift", [20_000, 3_000_000, -(1 << 40)])
def test_ids_and_offsets_beyond_two_bytes(shift: int) -> None:
    for text in _RECODED:
        payload = recode(_unwrap(serialized(text)), "CheckedExpr", Recoding(shift=shift))
        assert assert_same(_any(payload), text)[0] == "ok"


@pytest.mark.parametrize("ways", [frozenset(), frozenset([Recode.OVERLONG])])
@pytest.mark.parametrize("place", sorted(SINGULAR_MESSAGES | {("Expr", 0)}))
def test_singular_fields_given_twice(place: tuple[str, int], ways: frozenset[Recode]) -> None:
    decoyed = 0
    for text in _RECODED:
        payload = _unwrap(serialized(text))
        recoded = recode(payload, "CheckedExpr", Recoding(ways, decoy_at=place))
        assert assert_same(_any(recoded), text)[0] == "ok"
        decoyed += recoded != recode(payload, "CheckedExpr", Recoding(ways))
    assert decoyed > 0


def test_ids_after_overlong_kinds() -> None:
    ways = frozenset([Recode.REVERSED, Recode.OVERLONG])
    for text in _RECODED:
        payload = _unwrap(serialized(text))
        result = assert_same(_any(recode(payload, "CheckedExpr", Recoding(ways))), text)
        assert result == outcome(reference_decode, _any(payload), text), text


@pytest.mark.parametrize("dropped", [("Entry", 4), ("Entry", 3), ("Select", 1), ("Call", 1),
                                     ("Comprehension", 7), ("Entry", 1), ("Ident", 1)])
def test_missing_fields(dropped: tuple[str, int]) -> None:
    for text in ("{'a': object.b, 'c': [1].all(x, x > 0)}", "object.a.size()"):
        payload = recode(_unwrap(serialized(text)), "CheckedExpr",
                         Recoding(drop=frozenset([dropped])))
        assert assert_same(_any(payload), text)[0] == "ok"


def test_bare_and_legacy_wrappers() -> None:
    text = "object.a + 1"
    payload = _unwrap(serialized(text))
    for data in (payload, _any(payload, "google.api.expr.v1alpha1.CheckedExpr"),
                 bytearray(_any(payload)), memoryview(_any(payload))):
        assert assert_same(bytes(data), text)[0] == "ok"
        assert observe(decode_checked_expr(data, text)) == observe(  # type: ignore[arg-type]
            reference_decode(bytes(data), text))


# ------------------------------------------------------------------------------------------------
# Mutated bytes
# ------------------------------------------------------------------------------------------------


def _mutations(data: bytes, rng: random.Random, count: int) -> Iterator[bytes]:
    for _ in range(count):
        i = rng.randrange(len(data))
        kind = rng.randrange(5)
        if kind == 0:
            yield data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
        elif kind == 1:
            yield data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
        elif kind == 2:
            yield data[:i]
        elif kind == 3:
            yield data[:i] + bytes([rng.randrange(256)]) + data[i:]
        else:
            j = min(len(data), i + rng.randrange(1, 16))
            yield data[:i] + data[j:]


@pytest.mark.parametrize("text", [
    "object.a.b == 'x' ? [object.c, 2u][0] : object.d",
    "{?'a': object.?x, 'b': 2.5}.all(k, v, k != '') && has(object.z)",
    "[1, 2].map(x, x * 2).exists(y, y > duration('1s').getSeconds())",
    "google.protobuf.Timestamp{seconds: 1} < timestamp('2021-01-01T00:00:00Z')",
])
def test_mutated_bytes_fail_or_succeed_alike(text: str) -> None:
    data = _unwrap(serialized(text))
    rng = random.Random(text)
    failures = 0
    for mutated in _mutations(data, rng, 300):
        expected = assert_same(mutated, text)
        failures += expected[0] == "error"
    assert failures > 0  # the mutations reach the error paths too


def test_reference_types_are_the_public_ones() -> None:
    """The reference builds the public dataclasses, so comparing reprs compares values."""
    ast = reference_decode(serialized("[1].map(x, x)"), "[1].map(x, x)")
    assert isinstance(ast.root, Node) and isinstance(ast.source_info, SourceInfo)
    assert all(isinstance(t, CelType) for t in ast.types.values())
    assert all(isinstance(r, Reference) for r in ast.references.values())
    assert isinstance(ast.source_info.positions, MappingProxyType)
