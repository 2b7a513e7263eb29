"""Decoding cel-expr-python's checked AST: node kinds, types, references, positions, unparse."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cel_expr_python import cel
from dra_affinity.policies.cel.common.ast import CheckedAst, ConstKind, Node, NodeKind
from dra_affinity.policies.cel.common.ast_decode import AstDecodeError, decode_checked_expr
from dra_affinity.policies.cel.common.types import (
    DYN,
    INT,
    STRING,
    CelType,
    Primitive,
    TypeKind,
    list_of,
    map_of,
    optional_of,
)
from dra_affinity.policies.cel.common.unparse import source_span, unparse

Compile = Callable[[str], CheckedAst]


def _only(ast: CheckedAst, kind: NodeKind) -> list[Node]:
    return [n for n in ast.walk() if n.kind is kind]


def _call(ast: CheckedAst, function: str) -> Node:
    matches = [n for n in ast.walk() if n.kind is NodeKind.CALL and n.function == function]
    assert len(matches) == 1, [n.function for n in _only(ast, NodeKind.CALL)]
    return matches[0]


# --- constants ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "kind", "value", "type_name"), [
    ("null", ConstKind.NULL, None, "null"),
    ("true", ConstKind.BOOL, True, "bool"),
    ("false", ConstKind.BOOL, False, "bool"),
    ("-42", ConstKind.INT, -42, "int"),
    ("0", ConstKind.INT, 0, "int"),
    ("9223372036854775807", ConstKind.INT, 9223372036854775807, "int"),
    ("18446744073709551615u", ConstKind.UINT, 18446744073709551615, "uint"),
    ("2.5", ConstKind.DOUBLE, 2.5, "double"),
    ("-0.125e3", ConstKind.DOUBLE, -125.0, "double"),
    ("'héllo 日本'", ConstKind.STRING, "héllo 日本", "string"),
    ("b'\\x00\\xffA'", ConstKind.BYTES, b"\x00\xffA", "bytes"),
])
def test_constants_of_every_kind(expr: str, kind: ConstKind, value: object, type_name: str,
                                 ast_affinity: Compile) -> None:
    ast = ast_affinity(expr)
    assert ast.root.kind is NodeKind.CONST
    assert ast.root.const is not None
    assert ast.root.const.kind is kind
    assert ast.root.const.value == value
    assert type(ast.root.const.value) is type(value)
    assert str(ast.output_type()) == type_name


# --- idents, selects, calls --------------------------------------------------------------------


def test_ident_and_select_chain(ast_affinity: Compile) -> None:
    ast = ast_affinity("object.spec.subnet")
    root = ast.root
    assert root.kind is NodeKind.SELECT and root.field == "subnet" and not root.test_only
    assert root.operand is not None and root.operand.field == "spec"
    ident = root.operand.operand
    assert ident is not None and ident.kind is NodeKind.IDENT and ident.name == "object"
    assert ast.references[ident.id].name == "object"
    assert ast.type_of(ident.id) == DYN and ast.output_type() == DYN


def test_has_macro_is_a_test_only_select(ast_affinity: Compile) -> None:
    ast = ast_affinity("has(object.a.b)")
    assert ast.root.kind is NodeKind.SELECT and ast.root.test_only and ast.root.field == "b"
    assert str(ast.output_type()) == "bool"
    assert unparse(ast.root, ast) == "has(object.a.b)"


def test_global_and_member_calls_with_candidate_overloads(ast_affinity: Compile) -> None:
    ast = ast_affinity('size(object.x) + "abc".size()')
    glob = [n for n in _only(ast, NodeKind.CALL) if n.function == "size" and n.target is None]
    member = [n for n in _only(ast, NodeKind.CALL) if n.function == "size" and n.target]
    assert len(glob) == 1 and len(member) == 1
    # `object.x` is dyn: the checker keeps every size overload as a candidate
    assert set(ast.overload_ids(glob[0].id)) == {"size_list", "size_map", "size_bytes",
                                                 "size_string"}
    assert ast.overload_ids(member[0].id) == ("string_size",)
    assert member[0].target is not None and member[0].target.kind is NodeKind.CONST
    assert ast.overload_ids(ast.root.id) == ("add_int64",)


def test_optional_select_is_a_call_with_a_field_name(ast_affinity: Compile) -> None:
    ast = ast_affinity('object.?spec.?subnet.orValue("")')
    outer = _call(ast, "orValue")
    selects = [n for n in _only(ast, NodeKind.CALL) if n.function == "_?._"]
    assert len(selects) == 2
    for sel in selects:
        assert sel.args[1].const is not None and sel.args[1].const.kind is ConstKind.STRING
        assert ast.overload_ids(sel.id) == ("select_optional_field",)
        assert ast.type_of(sel.id) == optional_of(DYN)
    assert str(ast.type_of(selects[0].id)) == "optional_type(dyn)"
    assert unparse(outer, ast) == 'object.?spec.?subnet.orValue("")'


def test_optional_index(ast_affinity: Compile) -> None:
    ast = ast_affinity("object[?0]")
    assert ast.root.kind is NodeKind.CALL and ast.root.function == "_[?_]"
    assert unparse(ast.root, ast) == "object[?0]"


# --- aggregates --------------------------------------------------------------------------------


def test_list_with_optional_elements(ast_affinity: Compile) -> None:
    ast = ast_affinity('[?object.?x, "a", ?optional.none()]')
    assert ast.root.kind is NodeKind.LIST
    assert len(ast.root.elements) == 3
    assert ast.root.optional_indices == (0, 2)
    assert unparse(ast.root, ast) == '[?object.?x, "a", ?optional.none()]'


def test_map_literal_with_optional_entry(ast_affinity: Compile) -> None:
    ast = ast_affinity('{?"a": object.?x, "b": 2}')
    root = ast.root
    assert root.kind is NodeKind.STRUCT and root.message_name == ""
    assert [e.optional_entry for e in root.entries] == [True, False]
    keys = [e.key for e in root.entries]
    assert all(k is not None and k.kind is NodeKind.CONST for k in keys)
    assert ast.output_type() == map_of(STRING, DYN)
    assert str(ast.output_type()) == "map(string, dyn)"


def test_message_literal_has_message_name_and_fields(ast_affinity: Compile) -> None:
    ast = ast_affinity("google.protobuf.Timestamp{seconds: 1, nanos: 2}")
    root = ast.root
    assert root.kind is NodeKind.STRUCT and root.message_name == "google.protobuf.Timestamp"
    assert [(e.field, e.key) for e in root.entries] == [("seconds", None), ("nanos", None)]
    assert str(ast.output_type()) == "timestamp"


# --- comprehensions ----------------------------------------------------------------------------


def _comprehension(ast: CheckedAst) -> Node:
    comps = _only(ast, NodeKind.COMPREHENSION)
    assert comps
    return comps[0]


def test_all_macro_layout(ast_affinity: Compile) -> None:
    ast = ast_affinity('object.x.all(v, v == "a")')
    c = _comprehension(ast)
    assert (c.iter_var, c.iter_var2, c.accu_var) == ("v", "", "@result")
    assert c.accu_init is not None and c.accu_init.const is not None
    assert c.accu_init.const.value is True
    assert c.loop_condition is not None and c.loop_condition.function == "@not_strictly_false"
    assert c.loop_step is not None and c.loop_step.function == "_&&_"
    assert c.result is not None and c.result.name == "@result"
    assert unparse(c, ast) == 'object.x.all(v, v == "a")'


def test_exists_macro_layout(ast_affinity: Compile) -> None:
    ast = ast_affinity("[1, 2].exists(x, x > 1)")
    c = _comprehension(ast)
    assert c.accu_init is not None and c.accu_init.const is not None
    assert c.accu_init.const.value is False
    cond = c.loop_condition
    assert cond is not None and cond.function == "@not_strictly_false"
    assert cond.args[0].function == "!_"
    assert c.loop_step is not None and c.loop_step.function == "_||_"
    assert unparse(c, ast) == "[1, 2].exists(x, x > 1)"


def test_exists_one_macro_layout(ast_affinity: Compile) -> None:
    ast = ast_affinity("[1].exists_one(x, x > 1)")
    c = _comprehension(ast)
    assert c.accu_init is not None and c.accu_init.const is not None
    assert c.accu_init.const.value == 0
    assert c.loop_step is not None and c.loop_step.function == "_?_:_"
    assert c.result is not None and c.result.function == "_==_"
    assert unparse(c, ast) == "[1].exists_one(x, x > 1)"


@pytest.mark.parametrize("expr", [
    "[1].map(x, x + 1)",
    "[1].filter(x, x > 1)",
    "[1].map(x, x > 0, x + 1)",
    "[1].map(x, x > 0, x)",
])
def test_map_and_filter_macro_layout(expr: str, ast_affinity: Compile) -> None:
    ast = ast_affinity(expr)
    c = _comprehension(ast)
    assert c.accu_init is not None and c.accu_init.kind is NodeKind.LIST
    assert not c.accu_init.elements
    assert c.loop_condition is not None and c.loop_condition.const is not None
    assert ast.output_type() == list_of(INT)
    assert unparse(c, ast) == expr


@pytest.mark.parametrize("expr", [
    "object.x.all(k, v, v == 'a')",
    "object.x.exists(k, v, v == 'a')",
    "object.x.existsOne(i, v, i > v)",
    "[1].transformList(i, v, v * 2)",
    "{'a': 1}.transformMap(k, v, v > 0, v * 2)",
    "{'a': 1}.transformMapEntry(k, v, {k: v})",
])
def test_two_variable_comprehensions(expr: str, ast_affinity: Compile) -> None:
    ast = ast_affinity(expr)
    c = _comprehension(ast)
    assert c.iter_var2 != ""
    assert c.accu_var == "@result"
    assert unparse(c, ast) == expr


def test_bind_layout(ast_affinity: Compile) -> None:
    ast = ast_affinity("cel.bind(v, object.spec, v.subnet)")
    c = ast.root
    assert c.kind is NodeKind.COMPREHENSION
    assert (c.iter_var, c.accu_var) == ("#unused", "v")
    assert c.iter_range is not None and c.iter_range.kind is NodeKind.LIST
    assert c.loop_condition is not None and c.loop_condition.const is not None
    assert c.loop_condition.const.value is False
    assert c.loop_step is not None and c.loop_step.name == "v"
    assert unparse(c, ast) == "cel.bind(v, object.spec, v.subnet)"


def test_sort_by_prints_as_written(ast_affinity: Compile) -> None:
    ast = ast_affinity("[3, 1].sortBy(x, -x)")
    assert ast.root.accu_var == "@__sortBy_input__"
    assert unparse(ast.root, ast) == "[3, 1].sortBy(x, -x)"


# --- tree navigation and types ------------------------------------------------------------------


def test_walk_is_preorder_and_parents_match(ast_affinity: Compile) -> None:
    ast = ast_affinity("(object.a + 1) * 2")
    order = [(n.kind, n.function or n.name or n.field) for n in ast.walk()]
    assert order[:3] == [(NodeKind.CALL, "_*_"), (NodeKind.CALL, "_+_"),
                         (NodeKind.SELECT, "a")]
    for n in ast.walk():
        for child in n.children():
            parent = ast.parent(child.id)
            assert parent is not None and parent.id == n.id
        assert ast.node(n.id) is n
    assert ast.parent(ast.root.id) is None


@pytest.mark.parametrize(("expr", "spelled"), [
    ("'a'", "string"),
    ("1", "int"),
    ("['a']", "list(string)"),
    ("{'a': object}", "map(string, dyn)"),
    ("[1].first()", "optional_type(int)"),
    ("object", "dyn"),
    ("type(1)", "type(int)"),
    ("duration('1s')", "duration"),
])
def test_output_type_spelling(expr: str, spelled: str, ast_compile: Callable[..., CheckedAst]
                              ) -> None:
    yaml = "extensions:\n  - {name: lists}\n  - {name: optional}\n"
    ast = ast_compile(expr, yaml=yaml, variables={"object": cel.Type.DYN})
    assert str(ast.output_type()) == spelled


def test_type_model_spelling() -> None:
    assert str(CelType(TypeKind.WRAPPER, primitive=Primitive.INT64)) == "wrapper(int)"
    assert str(list_of(map_of(STRING, optional_of(INT)))) == (
        "list(map(string, optional_type(int)))")
    assert str(CelType(TypeKind.MESSAGE, name="google.type.Date")) == "google.type.Date"
    assert str(CelType(TypeKind.ABSTRACT, name="net.IP")) == "net.IP"
    assert str(CelType(TypeKind.ERROR)) == "!error!"
    assert str(CelType(TypeKind.TYPE)) == "type"


# --- positions ---------------------------------------------------------------------------------


def test_positions_on_multiline_non_ascii_input(ast_affinity: Compile) -> None:
    src = '"日本" +\n  "é" + object.x'
    ast = ast_affinity(src)
    plus_outer = ast.root
    plus_inner = plus_outer.args[0]
    # cel-go prints <input>:L:C with C in code points: the inner `+` is the 6th character
    assert ast.location(plus_inner.id) == (1, 6)
    assert ast.location(plus_outer.id) == (2, 7)
    select = plus_outer.args[1]
    assert ast.location(select.id) == (2, 15)  # selects are positioned at their dot
    span = source_span(select, ast)
    assert span is not None and src[span[0]:span[1]] == "object.x"
    assert ast.source_info.line_offsets[0] == 7  # line 2 starts after 7 code points


def test_location_matches_engine_error_column(ast_compile: Callable[..., CheckedAst]) -> None:
    env = cel.NewEnv()
    with pytest.raises(RuntimeError, match=r"<input>:1:6:"):
        env.compile('"日本" + 1')
    ast = ast_compile('"日本" + "x"')
    assert ast.location(ast.root.id) == (1, 6)


def test_unparse_keeps_original_spelling_or_renders_canonically(ast_affinity: Compile) -> None:
    src = "(object.a  +  'x').size() > 1 - (2 - 3)"
    ast = ast_affinity(src)
    assert unparse(ast.root, ast) == src
    assert unparse(ast.root) == '(object.a + "x").size() > 1 - (2 - 3)'
    size_call = _call(ast, "size")
    assert unparse(size_call, ast) == "(object.a  +  'x').size()"


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("data", [b"\x12", b"\x0a\x05abc", b"\x07", b"\x22\x02\x08"])
def test_malformed_bytes_raise_decode_error(data: bytes) -> None:
    with pytest.raises(AstDecodeError):
        decode_checked_expr(data, "x")


def test_other_any_payload_is_rejected() -> None:
    payload = b"\x0a\x1btype.googleapis.com/foo.Bar\x12\x00"
    with pytest.raises(AstDecodeError, match=r"foo\.Bar"):
        decode_checked_expr(payload, "x")
