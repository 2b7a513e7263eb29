"""Runtime cost of evaluations, against the upstream vectors.

* cel-go `interpreter/runtimecost_test.go` (`TestRuntimeCost`): built without `OptOptimize`,
  with Kubernetes' `PresenceTestHasCost(false)` variant where the test has one;
* Kubernetes `library/cost_test.go` runtime column (reference §5.6), whose harness also builds
  programs without `OptOptimize` but prices calls with `library.CostEstimator`;
* the production setting (`OptOptimize` on, as every Kubernetes program), where constant
  literals and conversions are folded.

Variables are declared with the types the upstream tests declare, so the checker records the
same overload candidates cel-go's planner sees.
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping
from typing import Any

import pytest
from cel_expr_python import cel
from dra_affinity.policies.cel.common.ast_decode import decode_checked_expr
from dra_affinity.policies.cel.common.jsonvalue import ErrorValue, Opaque, UInt
from dra_affinity.policies.cel.eval.cost_k8s_runtime import call_cost, go_overload_id, traversal_cost
from dra_affinity.policies.cel.eval.runtime import bridge_for
from dra_affinity.policies.cel.eval.runtime_cost import COST_LIMIT_EXCEEDED, CostOutcome, track_cost

_EXTENSIONS = """
extensions:
- {name: optional}
- {name: strings, version: 2}
- {name: bindings}
- {name: sets}
- {name: lists}
- {name: cel.lib.ext.comprev2}
"""

T = cel.Type
_ENVS: dict[tuple[tuple[str, str], ...], Any] = {}


def _env(decls: dict[str, Any]) -> Any:
    key = tuple(sorted((k, v.name()) for k, v in decls.items()))
    if key not in _ENVS:
        _ENVS[key] = cel.NewEnv(config=cel.NewEnvConfigFromYaml(_EXTENSIONS), variables=decls)
    return _ENVS[key]


def run(expr: str, decls: dict[str, Any] | None = None, values: Mapping[str, object] | None = None,
        *, optimize: bool = False, limit: int = 1_000_000, kubernetes: bool = True,
        max_steps: int | None = None) -> CostOutcome:
    env = _env(decls or {})
    program = env.compile(expr)
    checked = decode_checked_expr(program.serialize(), expr)
    return track_cost(checked, values or {}, bridge_for(env), limit=limit, optimize=optimize,
                      kubernetes=kubernetes, max_steps=max_steps)


def cost(expr: str, decls: dict[str, Any] | None = None,
         values: Mapping[str, object] | None = None, **kw: Any) -> int:
    outcome = run(expr, decls, values, **kw)
    assert outcome.status == "ok", outcome
    return outcome.cost


def _rand(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters) for _ in range(n))


LIST_INT = T.List(T.INT)
LIST_DYN = T.List(T.DYN)
MAP_SS = T.Map(T.STRING, T.STRING)
NESTED_MAP = T.Map(T.STRING, T.Map(T.STRING, T.DYN))


# --- cel-go interpreter/runtimecost_test.go --------------------------------------------------

CEL_GO_VECTORS: list[tuple[str, dict[str, Any], dict[str, object], int]] = [
    ('"Hello World!"', {}, {}, 0),
    ("input", {"input": LIST_INT}, {"input": [1, 2]}, 1),
    ("input['key']", {"input": MAP_SS}, {"input": {"key": "v"}}, 2),
    ("input[0]", {"input": T.List(T.STRING)}, {"input": ["v"]}, 2),
    ("input['ke' + 'y']", {"input": MAP_SS}, {"input": {"key": "v"}}, 3),
    ("input[3-3]", {"input": T.List(T.STRING)}, {"input": ["v"]}, 3),
    ("has(input.testAttr.nestedAttr)", {"input": NESTED_MAP},
     {"input": {"testAttr": {"nestedAttr": "0"}}}, 2),
    ("[1, 2, 3]", {}, {}, 10),
    ('{"a": 1, "b": 2, "c": 3}', {}, {}, 30),
    ("input.all(x, true)", {"input": LIST_DYN}, {"input": []}, 2),
    ("input.all(x, x.all(y, true))", {"input": T.List(LIST_DYN)}, {"input": []}, 2),
    ("[1, 2, 3].all(x, true)", {}, {}, 20),
    ("input.matches('[0-9]')", {"input": T.STRING}, {"input": _rand(500, 1)}, 103),
    ("'123'.matches('[0-9]')", {}, {}, 2),
    ("false || false", {}, {}, 0),
    ("true || false", {}, {}, 0),
    ("true && false", {}, {}, 0),
    ("false && true", {}, {}, 0),
    ("a || b || c || d", dict.fromkeys("abcd", T.BOOL), dict.fromkeys("abcd", False), 4),
    ("a && b && c && d", dict.fromkeys("abcd", T.BOOL), dict.fromkeys("abcd", True), 4),
    ("1 < 2", {}, {}, 1),
    ("1 <= 2", {}, {}, 1),
    ("1 == 2", {}, {}, 1),
    ("2 > 1", {}, {}, 1),
    ("2 >= 1", {}, {}, 1),
    ("2 in [1, 2, 3]", {}, {}, 13),
    ("1 + 1", {}, {}, 1),
    ("1 - 1", {}, {}, 1),
    ("1 / 1", {}, {}, 1),
    ("1 * 1", {}, {}, 1),
    ("1 % 1", {}, {}, 1),
    ("true ? 1 : 2", {}, {}, 0),
    ('size("123")', {}, {}, 1),
    ("'12345678901234567890' == '123456789012345678901234567890'", {}, {}, 2),
    ("string(input)", {"input": T.BYTES}, {"input": _rand(500, 2).encode()}, 51),
    ("bytes(input)", {"input": T.STRING}, {"input": _rand(500, 3)}, 51),
    ("string(1)", {}, {}, 1),
    ("input.contains(arg1)", {"input": T.STRING, "arg1": T.STRING},
     {"input": _rand(500, 4), "arg1": _rand(500, 5)}, 2502),
    ("input.matches('\\\\d+a\\\\d+b')", {"input": T.STRING}, {"input": _rand(500, 6)}, 103),
    # cel-go v0.26 prices startsWith/endsWith by the receiver at run time (reference §5.4).
    ("input.startsWith(arg1)", {"input": T.STRING, "arg1": T.STRING},
     {"input": "idc", "arg1": _rand(500, 7)}, 3),
    ("input.endsWith(arg1)", {"input": T.STRING, "arg1": T.STRING},
     {"input": "idc", "arg1": _rand(500, 8)}, 3),
    ("input.size()", {"input": T.STRING}, {"input": "500"}, 2),
    ("size(input)", {"input": T.STRING}, {"input": "500"}, 2),
    ("(x > 2 ? input1 : input2).all(y, true)",
     {"x": T.INT, "input1": LIST_DYN, "input2": LIST_DYN},
     {"x": 1, "input1": [{}], "input2": [{}]}, 6),
    ("true ? false : 1 > 3", {}, {}, 0),
    ("false ? false : 1 > 3", {}, {}, 1),
    ("input.all(k, input[k].single_int32 > 3)", {"input": NESTED_MAP},
     {"input": {"val": {"single_int32": 0}}}, 9),
    ("input.all(k, input[k].all(x, true))", {"input": NESTED_MAP}, {"input": {}}, 2),
    ("input.all(k, k.contains(k))", {"input": NESTED_MAP}, {"input": {}}, 2),
    ("input.all(k, input[k].all(k, true) && k.contains(k))", {"input": NESTED_MAP},
     {"input": {}}, 2),
    ("(list1 + list2).all(x, true)", {"list1": LIST_INT, "list2": LIST_INT},
     {"list1": [], "list2": []}, 4),
    ('"abcdefg".contains(str1 + str2)', {"str1": T.STRING, "str2": T.STRING},
     {"str1": "val1", "str2": "val2222222"}, 6),
    ("(1 > 2 ? 5 : 3) > 1", {}, {}, 2),
    ("(1 > 2 || 2 > 1) == true", {}, {}, 3),
    ("[{'k1': 1}, {'k2': 2}].all(x, true)", {}, {}, 77),
    ("[1,2,3,4,5].filter(x, x % 2 == 0)", {}, {}, 62),
    ("[1,2,3,4,5].map(x, x)", {}, {}, 86),
    ("[1,2,3,4,5].map(x, x).filter(x, x % 2 == 0)", {}, {}, 138),
    ("[1,2,3,4,5].map(x, x).exists(x, x == 5) == true", {}, {}, 118),
    ("[1,2,3,4,5].map(x, x).map(x, x)", {}, {}, 162),
    ("[1,2,3,4,5].map(x, [x, x]).filter(z, z.size() == 2)", {}, {}, 232),
    ("[1,2,3,4,5].map(x, [x, x]).all(y, y.all(y, y == 1))", {}, {}, 171),
    ("[1,2,3,4,5].map(x, x).map(x, x) + [1]", {}, {}, 173),
    ("[1,2,3].all(i, i in [1,2,3].map(j, j + j))", {}, {}, 86),
]


@pytest.mark.parametrize(("expr", "decls", "values", "want"), CEL_GO_VECTORS,
                         ids=[v[0] for v in CEL_GO_VECTORS])
def test_cel_go_runtime_vectors(expr: str, decls: dict[str, Any], values: dict[str, object],
                                want: int) -> None:
    assert cost(expr, decls, values, kubernetes=False) == want


def test_limit_is_exclusive_like_cel_go() -> None:
    decls = {"str1": T.STRING, "str2": T.STRING}
    values = {"str1": "val1", "str2": "val2222222"}
    expr = '"abcdefg".contains(str1 + str2)'
    assert run(expr, decls, values, limit=6).status == "ok"
    over = run(expr, decls, values, limit=5)
    assert over.status == "cost_exceeded"
    assert over.message == COST_LIMIT_EXCEEDED == "operation cancelled: actual cost limit exceeded"
    assert over.cost == 6  # the first running total above the limit


# --- Kubernetes library/cost_test.go, runtime column (built-in functions) ---------------------

STRING_50 = "'01234567890123456789012345678901234567890123456789'"
K8S_VECTORS: list[tuple[str, int]] = [
    ("'ABCDEFGHIJ abcdefghij'.lowerAscii()", 3),
    ("'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()", 9),
    ("'ABCDEFGHIJ abcdefghij'.upperAscii()", 3),
    ("'ABCDEFGHIJ abcdefghij'.upperAscii() == 'abcdefghij ABCDEFGHIJ'.upperAscii()", 9),
    ("strings.quote('ABCDEFGHIJ abcdefghij')", 3),
    ("strings.quote('ABCDEFGHIJ abcdefghij') == strings.quote('ABCDEFGHIJ abcdefghij')", 9),
    ("'abc 123 def 123'.replace('123', '456')", 3),
    ("'abc 123 def 123'.replace('', 'x')", 3),
    ("'abc 123 def 123'.replace('123', '')", 3),
    ("'abc 123 def 123'.replace('123', '456', 1)", 3),
    ("'abc 123 def 123'.split(' ')", 3),
    ("'abc 123 def 123'.split(' ', 1)", 3),
    ("'abc 123 def 123'.substring(5)", 2),
    ("'abc 123 def 123'.substring(5, 8)", 2),
    ("'  abc 123 def 123  '.trim()", 2),
    ("['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join(' ')", 15),
    ("['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join()", 13),
    (f"{STRING_50}.indexOf('123')", 5),
    (f"{STRING_50}.lastIndexOf('123')", 5),
    ("sets.contains([], [])", 21),
    ("sets.contains([1], [])", 21),
    ("sets.contains([1], [1])", 22),
    ("sets.contains([1], [1, 1])", 23),
    ("sets.contains([1, 1], [1])", 23),
    ("sets.contains([2, 1], [1])", 23),
    ("sets.contains([1, 2, 3, 4], [2, 3])", 29),
    ("sets.contains([1], [1.0, 1])", 23),
    ("sets.contains([1, 2], [2u, 2.0])", 25),
    ("sets.contains([1, 2u], [2, 2.0])", 25),
    ("sets.contains([1, 2.0, 3u], [1.0, 2u, 3])", 30),
    ("sets.contains([[1], [2, 3]], [[2, 3.0]])", 53),
    ("!sets.contains([1], [2])", 23),
    ("!sets.contains([1], [1, 2])", 24),
    ("!sets.contains([1], [\"1\", 1])", 24),
    ("!sets.contains([1], [1.1, 1u])", 24),
    ("sets.equivalent([], [])", 21),
    ("sets.equivalent([1], [1])", 23),
    ("sets.equivalent([1], [1, 1])", 25),
    ("sets.equivalent([1, 1], [1])", 25),
    ("sets.equivalent([1], [1u, 1.0])", 25),
    ("sets.equivalent([1, 2, 3], [3u, 2.0, 1])", 39),
    ("sets.equivalent([[1.0], [2, 3]], [[1], [2, 3.0]])", 69),
    ("!sets.equivalent([2, 1], [1])", 26),
    ("!sets.equivalent([1], [1, 2])", 26),
    ("!sets.equivalent([1, 2], [2u, 2, 2.0])", 34),
    ("!sets.equivalent([1, 2], [1u, 2, 2.3])", 34),
    ("sets.intersects([1], [1])", 22),
    ("sets.intersects([1], [1, 1])", 23),
    ("sets.intersects([1, 1], [1])", 23),
    ("sets.intersects([2, 1], [1])", 23),
    ("sets.intersects([1], [1, 2])", 23),
    ("sets.intersects([1], [1.0, 2])", 23),
    ("sets.intersects([1, 2], [2u, 2, 2.0])", 27),
    ("sets.intersects([1, 2], [1u, 2, 2.3])", 27),
    ("sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]])", 65),
    ("!sets.intersects([], [])", 22),
    ("!sets.intersects([1], [])", 22),
    ("!sets.intersects([1], [2])", 23),
    ("!sets.intersects([1], [\"1\", 2])", 24),
    ("!sets.intersects([1], [1.1, 2u])", 24),
    ("{'a': 1, 'b': 2}.all(k, v, v > 0)", 41),
    ("{'a': 1, 'b': 2}.exists(k, v, v > 0)", 40),
    ("{'a': 1, 'b': 2}.existsOne(k, v, v > 0)", 40),
    ("[1, 2].all(i, v, v > 0)", 21),
    ("[1, 2].exists(i, v, v > 0)", 20),
    ("[1, 2].existsOne(i, v, v > 0)", 20),
    ("[1, 2].transformList(i, v, v + 1)", 49),
    ("[1, 2].transformList(i, v, v < 5, v + 1)", 53),
]


@pytest.mark.parametrize(("expr", "want"), K8S_VECTORS, ids=[v[0] for v in K8S_VECTORS])
def test_kubernetes_cost_test_runtime_column(expr: str, want: int) -> None:
    assert cost(expr) == want


def test_kubernetes_pricing_is_what_changes_the_string_vectors() -> None:
    # Without Kubernetes' estimator every string extension call is a flat 1.
    assert cost("'ABCDEFGHIJ abcdefghij'.lowerAscii()", kubernetes=False) == 1
    assert cost(f"{STRING_50}.indexOf('123')", kubernetes=False) == 1


# --- production programs: OptOptimize folds constants ---------------------------------------


@pytest.mark.parametrize(("expr", "optimized", "plain"), [
    ("[1, 2, 3]", 0, 10),
    ('{"a": 1}', 0, 30),
    ("sets.contains([], [])", 1, 21),
    ("2 in [1, 2, 3]", 0, 13),         # a set lookup; the constant list is not even sized
    ("x in [1, 2, 3]", 1, 14),
    ("x in []", 0, 11),                # folded to `false`: x is never evaluated
    ("string(1) + 'a'", 1, 2),          # string(1) folded
    ("[uint(1), uint(2)].size()", 1, 13),
    ("cel.bind(v, x, v + v)", 4, 14),   # the empty iteration range is a constant list
])
def test_optimize_folds_constants(expr: str, optimized: int, plain: int) -> None:
    decls, values = {"x": T.INT}, {"x": 2}
    assert cost(expr, decls, values, optimize=True) == optimized
    assert cost(expr, decls, values, optimize=False) == plain


def test_failing_constant_conversion_is_a_plan_error_under_optimize() -> None:
    outcome = run('false ? int("x") : 1', optimize=True)
    assert outcome.status == "plan_error"
    assert run('false ? int("x") : 1', optimize=False).value == 1


# --- attribute rules ---------------------------------------------------------------------------

OBJ = T.DYN


@pytest.mark.parametrize(("expr", "want"), [
    ("object.spec.subnet", 3),                 # variable + 2 qualifiers, also on dyn
    ("object.spec.missing", 3),                # the failing qualifier is charged
    ("object.nope.subnet", 2),                 # ... but not the ones after it
    ("has(object.spec)", 1),                   # presence: qualifier only
    ("has(object.spec.subnet)", 2),
    ("object.?spec.?subnet.orValue('')", 3),   # orValue is free
    ("object.?nope.?subnet.orValue('')", 1),   # absent optional qualifiers are free
    ("true ? object.spec.subnet : ''", 2),     # a ternary branch's variable is free
    ("object.items[0]", 3),
    ("object.items[i]", 3),                    # an attribute index: only its qualifier
    ("object.items[i + 0]", 5),                # a computed index: its own cost
    ("object.items[?5].orValue('none')", 2),
])
def test_attribute_costs(expr: str, want: int) -> None:
    obj = {"spec": {"subnet": "blue"}, "items": ["a", "b"]}
    assert cost(expr, {"object": OBJ, "i": T.INT}, {"object": obj, "i": 1}) == want


def test_errors_absorbed_by_logical_operators_are_still_charged() -> None:
    decls, values = {"object": OBJ}, {"object": {"a": "x"}}
    outcome = run("object.missing == 'x' || true", decls, values)
    assert outcome.status == "ok" and outcome.value is True
    assert outcome.cost == 3  # object + .missing + the `==` on an error
    assert cost("true || object.missing == 'x'", decls, values) == 0
    and_outcome = run("object.missing == 'x' && false", decls, values)
    assert and_outcome.value is False and and_outcome.cost == 3


def test_three_argument_call_stopping_at_an_error_is_not_priced() -> None:
    decls = {"s": T.DYN}
    # The receiver fails: cel-go never evaluates the other arguments nor prices the call.
    assert cost("s.x.replace('a', 'b') == 'x' || true", decls, {"s": {}}) == 3
    # The last argument fails: every argument is on cel-go's stack, the call is priced.
    assert cost("'abc'.replace('a', s.x) == 'x' || true", decls, {"s": {}}) == 4


# --- bounded work --------------------------------------------------------------------------


def test_lists_range_beyond_the_budget_is_refused_before_it_is_built() -> None:
    outcome = run("lists.range(100000000).size() > 0")
    assert outcome.status == "cost_exceeded"
    assert outcome.cost == 100000000 + 11


def test_loops_stop_at_the_limit() -> None:
    outcome = run("lists.range(5000).map(x, lists.range(5000).map(y, x + y)).size()")
    assert outcome.status == "cost_exceeded"
    assert 1_000_000 < outcome.cost <= 1_000_000 + 5011  # at most one inner range past it


def test_zero_cost_loops_are_bounded_by_the_step_budget() -> None:
    outcome = run("lists.range(20000).exists_one(x, false)", max_steps=5_000)
    assert outcome.status == "work_exceeded"


# --- pricing units -----------------------------------------------------------------------------


def test_overload_ids_as_cel_go_plans_them() -> None:
    assert go_overload_id("_==_", ("equals",)) == "equals"
    assert go_overload_id("_+_", ("add_int64", "add_string")) == ""
    assert go_overload_id("lists.range", ("list_range",)) == "lists_range"


def test_kubernetes_equality_of_library_objects_costs_one() -> None:
    quantity = Opaque("kubernetes.Quantity", "1Mi")
    assert call_cost("_==_", "equals", [quantity, quantity], True) == 1
    assert call_cost("_==_", "equals", ["a" * 30, "b" * 40], False) == 3


def test_traversal_cost_counts_utf8_bytes_and_containers() -> None:
    assert traversal_cost("é" * 10) == 2  # 20 bytes * 0.1
    assert traversal_cost(["a" * 12] * 5) == 5
    assert traversal_cost({"ab": [1, 2]}) == 2
    assert traversal_cost(UInt(3)) == 1


def test_flatten_with_negative_depth_wraps_like_go() -> None:
    # uint64(float64(-1)) wraps to 2^64-1; adding callCost + list creation wraps again.
    assert call_cost("flatten", "list_flatten_int", [[[1]], -1], ErrorValue("x")) == 10


@pytest.mark.parametrize(("function", "overload", "args", "result", "want"), [
    ("containsIP", "cidr_contains_ip_ip", [Opaque("net.CIDR", "1"), Opaque("net.IP", "2")],
     True, 1),
    ("containsIP", "cidr_contains_ip_string", [Opaque("net.CIDR", "1"), "192.0.0.1"], True, 2),
    ("containsCIDR", "cidr_contains_cidr", [Opaque("net.CIDR", "1"), Opaque("net.CIDR", "2")],
     True, 3),
    ("fieldSelector", "", [Opaque("x"), "spec.nodeName=example-node-name.fully.qualified.domain"
                                         ".name.example.com"], None, 1818),
    ("check", "", [Opaque("x"), "get"], None, 350_000),
    ("find", "string_find_string", ["abc 123 def 123", "123"], "123", 2),
    ("ip", "cidr_ip", [Opaque("net.CIDR", "1")], None, 1),
    ("ip", "string_to_ip", ["2001:db8:3333:4444:5555:6666:7777:8888"], None, 4),
    ("ip.isCanonical", "ip_is_canonical", ["2001:db8:3333:4444:5555:6666:7777:8888"], True, 8),
    ("quantity", "string_to_quantity", ["12Mi"], None, 1),
    ("semver", "string_to_semver", ["1234.56789012345.67890123456789"], None, 4),
    ("sum", "list_int_sum_int", [[1, 2, 3, 4, 5]], 15, 5),
    ("max", "list_string_max_string", [["012345678901"] * 5], "0", 5),
])
def test_kubernetes_library_prices(function: str, overload: str, args: list[object],
                                   result: object, want: int) -> None:
    assert call_cost(function, overload, args, result) == want


# --- Kubernetes library/cost_test.go, runtime column (Kubernetes library functions) ---------

INT_LIST = "[1, 2, 3, 4, 5]"
UINT_LIST = "[uint(1), uint(2), uint(3), uint(4), uint(5)]"
DOUBLE_LIST = "[1.0, 2.0, 3.0, 4.0, 5.0]"
BOOL_LIST = "[false, true, false, true, false]"
STRING_LIST = "['012345678901', '012345678901', '012345678901', '012345678901', '012345678901']"
BYTES_LIST = ("[bytes('012345678901'), bytes('012345678901'), bytes('012345678901'), "
              "bytes('012345678901'), bytes('012345678901')]")
DURATION_LIST = "[duration('1s'), duration('2s'), duration('3s'), duration('4s'), duration('5s')]"
TIMESTAMP_LIST = ("[timestamp('2011-01-01T00:00:00.000+01:00'), "
                  "timestamp('2011-01-02T00:00:00.000+01:00'), "
                  "timestamp('2011-01-03T00:00:00.000+01:00'), "
                  "timestamp('2011-01-04T00:00:00.000+01:00'), "
                  "timestamp('2011-01-05T00:00:00.000+01:00')]")
IPV4, IPV6 = "ip('192.168.0.1')", "ip('2001:db8:3333:4444:5555:6666:7777:8888')"
CIDR4, CIDR6 = "cidr('192.168.0.0/16')", "cidr('2001:db8::/32')"
URL = "url('https:://kubernetes.io/')"

K8S_LIBRARY_VECTORS: list[tuple[str, int]] = [
    *[(f"{INT_LIST}{op}", 15) for op in (".sum()", ".isSorted()", ".max()", ".min()")],
    *[(f"{UINT_LIST}{op}", 20) for op in (".sum()", ".isSorted()", ".max()", ".min()")],
    *[(f"{DOUBLE_LIST}{op}", 15) for op in (".sum()", ".isSorted()", ".max()", ".min()")],
    *[(f"{DURATION_LIST}{op}", 20) for op in (".sum()", ".isSorted()", ".max()", ".min()")],
    *[(f"{BOOL_LIST}{op}", 15) for op in (".isSorted()", ".max()", ".min()")],
    *[(f"{STRING_LIST}{op}", 15) for op in (".isSorted()", ".max()", ".min()")],
    *[(f"{BYTES_LIST}{op}", 25) for op in (".isSorted()", ".max()", ".min()")],
    *[(f"{TIMESTAMP_LIST}{op}", 20) for op in (".isSorted()", ".max()", ".min()")],
    *[(f"{lst}.{fn}({arg})", want) for fn in ("indexOf", "lastIndexOf") for lst, arg, want in (
        (INT_LIST, "3", 15), (UINT_LIST, "uint(3)", 21), (DOUBLE_LIST, "3.0", 15),
        (BOOL_LIST, "true", 15), (STRING_LIST, "'x'", 15), (BYTES_LIST, "bytes('x')", 26),
        (DURATION_LIST, "duration('3s')", 21),
        (TIMESTAMP_LIST, "timestamp('2011-01-03T00:00:00.000+01:00')", 21))],
    *[(f"{URL}.{getter}()", 4) for getter in ("getScheme", "getHostname", "getHost", "getPort",
                                               "getEscapedPath", "getQuery")],
    (f"{URL} == url('https:://kubernetes.io/')", 7),
    (f"{URL} == url('http://x.b')", 5),
    (IPV4, 2), (IPV6, 4),
    *[(f"{ip}.{m}()", base + 1) for ip, base in ((IPV4, 2), (IPV6, 4))
      for m in ("family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
                "isLinkLocalUnicast", "isGlobalUnicast")],
    (f"{IPV4} == ip('192.168.0.1')", 5), (f"{IPV6} == ip('192.168.0.1')", 7),
    ("ip.isCanonical('192.168.0.1')", 3),
    ("ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')", 8),
    ("ip.isCanonical('2001:db8::abcd')", 3),
    (CIDR4, 2), (CIDR6, 2),
    *[(f"{c}.{m}()", 3) for c in (CIDR4, CIDR6) for m in ("ip", "prefixLength", "masked")],
    *[(f"{c} == cidr('2001:db8::/32')", 5) for c in (CIDR4, CIDR6)],
    *[(f"{CIDR4}.containsCIDR({arg})", 7) for arg in (
        "cidr('192.0.0.0/30')", "cidr('192.168.0.0/16')", "'192.0.0.0/30'", "'192.168.0.0/16'")],
    (f"{CIDR4}.containsIP(ip('192.0.0.1'))", 4),
    (f"{CIDR4}.containsIP(ip('192.169.0.1'))", 5),
    (f"{CIDR4}.containsIP(ip('192.169.169.250'))", 5),
    (f"{CIDR4}.containsIP('192.0.0.1')", 4),
    (f"{CIDR4}.containsIP('192.169.0.1')", 5),
    *[(f"{CIDR6}.containsCIDR({arg})", 7) for arg in (
        "cidr('2001:db8::/126')", "cidr('2001:db8::/32')", "'2001:db8::/126'", "'2001:db8::/32'")],
    (f"{CIDR6}.containsIP(ip('2001:db8:3333:4444:5555:6666:7777:8888'))", 7),
    (f"{CIDR6}.containsIP(ip('2001:db8::1'))", 5),
    (f"{CIDR6}.containsIP('2001:db8:3333:4444:5555:6666:7777:8888')", 7),
    (f"{CIDR6}.containsIP('2001:db8::1')", 5),
    ("'abc 123 def 123'.find('123')", 2),
    ("'abc 123 def 123'.findAll('123')", 2),
    ("'abc 123 def 123'.findAll('123', 1)", 2),
    ('quantity("12Mi")', 1),
    ('isQuantity("20")', 1),
    ('isQuantity("20M")', 1),
    ('quantity("200M") == quantity("200M")', 3),
    ('quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")', 6),
    ('quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && '
     'quantity("0.002G") == quantity("2000k")', 9),
    ('quantity("50M").isLessThan(quantity("50Mi"))', 3),
    ('quantity("50Mi").isGreaterThan(quantity("50M"))', 3),
    ('quantity("200M").compareTo(quantity("0.2G")) > 0', 4),
    ('quantity("50k").add(quantity("20")) == quantity("50.02k")', 5),
    ('quantity("50k").sub(quantity("20")) == quantity("49.98k")', 5),
    ('quantity("50k").sub(20) == quantity("49980")', 4),
    ('quantity("50k").add(20).sub(quantity("100k")).asInteger() > 0', 6),
    ('quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() > 0', 7),
    ('quantity("50k").asInteger() > 0', 3),
    ('quantity("50").isInteger()', 2),
    ('quantity("50.703k").asApproximateFloat() > 0.0', 3),
    ('format.named("dns1123subdomain")', 1),
    ('format.named("dns1123Subdomain").value().validate("my-name")', 17),
    ('format.named("dns1123Label").value().validate("my-name")', 10),
    ('format.named("dns1123Label").value() == format.named("dns1123Label").value()', 5),
    ('semver("1.0.0")', 1),
    ('semver("1234.56789012345.67890123456789")', 4),
    ('isSemver("1.0.0")', 1),
    ('isSemver("1234.56789012345.67890123456789")', 4),
    ('semver("1.2.3").major()', 2),
    ('semver("1.2.3").minor()', 2),
    ('semver("1.2.3").patch()', 2),
    ('semver("1.0.0").isLessThan(semver("1.1.0"))', 3),
    ('semver("1.1.0").isGreaterThan(semver("1.0.0"))', 3),
    ('semver("1.0.0").compareTo(semver("1.2.3"))', 3),
]


@pytest.mark.parametrize(("expr", "want"), K8S_LIBRARY_VECTORS,
                         ids=[v[0][:80] for v in K8S_LIBRARY_VECTORS])
def test_kubernetes_library_cost_test_runtime_column(expr: str, want: int) -> None:
    from dra_affinity.policies.cel.check.env import EnvKey, EnvMode, get_env
    from dra_affinity.policies.cel.compile import compile_expression

    key = EnvKey((1, 37), EnvMode.STORED_EXPRESSIONS)
    compiled = compile_expression(expr, key)
    assert compiled.ok and compiled.checked is not None, compiled.error_text
    outcome = track_cost(compiled.checked, {}, bridge_for(get_env(key).runtime), optimize=False)
    assert outcome.status == "ok", outcome
    assert not isinstance(outcome.value, ErrorValue), outcome.value
    assert outcome.cost == want
