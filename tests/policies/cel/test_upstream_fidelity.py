"""Evaluation where cel-expr-python alone would disagree with cel-go, and how we close the gap.

Each test states the upstream behaviour it checks (cel-go `ext/comprehensions.go`,
`ext/strings.go`, `ext/formatting.go`, `common/types`, Kubernetes' library types) and runs the
real pipeline: compile in the Kubernetes environment, cost walk, program.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode, get_env
from dra_affinity.policies.cel.common.jsonvalue import ErrorValue, decode_k8s_json
from dra_affinity.policies.cel.compile import CompileResult, compile_expression
from dra_affinity.policies.cel.eval.runtime import EvalResult, bridge_for, evaluate, strings_error
from dra_affinity.policies.cel.eval.runtime_cost import track_cost
from dra_affinity.policies.cel.k8s_library import comprehensions, type_values
from dra_affinity.policies.cel.k8s_library.equality import RuntimeEnv, rename_calls

KEY = EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS)
OBJ = decode_k8s_json('{"kind": "Config", "spec": {"subnet": "blue", "vlan": 7}}')


def compiled(expr: str) -> CompileResult:
    result = compile_expression(expr, KEY)
    assert result.ok, result.error_text
    return result


def ev(expr: str, obj: object = OBJ) -> EvalResult:
    return evaluate(compiled(expr), {"object": obj})


def program_value(expr: str) -> Any:
    """The planned program's own value (no cost walk in between), with the run-time values of
    the library type identifiers `evaluate` binds."""
    program = compiled(expr).program
    assert program is not None
    value = program.eval(data={"object": OBJ, **type_values.activation()})
    assert value.type().name() != "ERROR", value.value()
    return value.plain_value()


# --- cel.@mapInsert ------------------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "value"), [
    ("[1, 2, 3].transformMap(i, v, v * 10)", {0: 10, 1: 20, 2: 30}),
    ("{'a': 1, 'b': 2}.transformMap(k, v, v % 2 == 0, k + '!')", {"b": "b!"}),
    ("['x', 'y'].transformMapEntry(i, v, {v: i})", {"x": 0, "y": 1}),
    ("object.spec.transformMapEntry(k, v, {k + '2': v})", {"subnet2": "blue", "vlan2": 7}),
])
def test_map_insert_runs_in_the_program_and_the_walk(expr: str, value: dict[Any, Any]) -> None:
    assert program_value(expr) == value
    result = ev(expr)
    assert result.error is None and result.value == value


def test_map_insert_duplicate_key_fails_with_cel_go_text() -> None:
    result = ev("[1, 1].transformMapEntry(i, v, {v: i})")
    assert result.error is not None
    assert result.error.message == "insert failed: key 1 already exists"
    strings = ev("['a', 'b'].transformMapEntry(i, v, {'k': v})")
    assert strings.error is not None and strings.error.message == \
        "insert failed: key k already exists"


def test_map_insert_costs_one_per_call() -> None:
    # cel-go prices `cel.@mapInsert` at 1 (no estimator). [1, 2].transformMap(i, v, v): the
    # constant list and `{}` are folded (0); per element the accumulator, i and v (1 each) and
    # the call (1); then the result reads the accumulator (1): 2 * 4 + 1.
    assert ev("[1, 2].transformMap(i, v, v)").runtime_cost == 9


def test_map_insert_accumulator_grows_in_place_without_leaking() -> None:
    # The accumulator literal `{}` is a folded constant: growing it in place must not change the
    # constant for the next evaluation.
    first = ev("[1, 2].transformMap(i, v, v)")
    second = ev("[1, 2].transformMap(i, v, v)")
    assert first.value == second.value == {0: 1, 1: 2}


@pytest.mark.parametrize(("expr", "value", "cel_type"), [
    # uint values would come back from Python as ints: the walk's value stands.
    ("type([1u].transformMap(i, v, v)[0])", "uint", "type"),
    ("[duration('2ns')].transformMap(i, v, v)[0] == duration('2ns')", True, "bool"),
    ("[1].transformMap(i, v, optional.of(v))[0].value()", 1, "int"),
    ("[true, false].transformMapEntry(i, v, {v: i}).size()", 2, "int"),
])
def test_values_python_cannot_carry_use_the_walks_value(expr: str, value: object,
                                                        cel_type: str) -> None:
    result = ev(expr)
    assert result.error is None, result.error
    assert (result.value, result.cel_type) == (value, cel_type)


def test_program_unsafe_is_reported_by_the_walk() -> None:
    checked = compiled("[1].transformMap(i, v, optional.of(v)).size()").checked
    assert checked is not None
    outcome = track_cost(checked, {"object": OBJ}, bridge_for(get_env(KEY).runtime))
    assert outcome.program_unsafe and outcome.value == 1
    plain = compiled("[1].transformMap(i, v, v).size()").checked
    assert plain is not None
    assert not track_cost(plain, {"object": OBJ}, bridge_for(get_env(KEY).runtime)).program_unsafe


@pytest.mark.parametrize("expr", [
    "[1].transformMap(i, v, optional.of(v)).size()",
    "[1].indexOf(optional.of(1))",
    "dyn([optional.none()]).indexOf(1)",
])
def test_optionals_never_reach_python_code(expr: str) -> None:
    # cel-expr-python crashes the interpreter when it hands an optional to a Python function, so
    # this runs in a child process: a crash fails the test instead of the test run.
    code = ("from dra_affinity.policies.cel.compile import compile_expression\n"
            "from dra_affinity.policies.cel.check.env import EnvKey, EnvMode\n"
            "from dra_affinity.policies.cel.eval.runtime import evaluate\n"
            f"r = compile_expression({expr!r}, EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS))\n"
            "print(evaluate(r, {'object': {}}))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert "EvalResult(" in run.stdout


def test_map_insert_calls_are_renamed_with_their_length_kept() -> None:
    env = get_env(KEY)
    serialized = bytes(env.checker.compile("[1].transformMap(i, v, v)").serialize())
    renamed = rename_calls(serialized, comprehensions.RENAMES)
    # The call is renamed; the reference map keeps the checked name.
    assert renamed.count(b"@k8s_mapInsert") == 1
    assert renamed.count(b"cel.@mapInsert") == serialized.count(b"cel.@mapInsert") - 1
    assert len(renamed) == len(serialized)
    assert renamed.replace(b"@k8s_mapInsert", b"cel.@mapInsert") == serialized
    plain = bytes(env.checker.compile("[1].map(x, x)").serialize())
    assert rename_calls(plain, comprehensions.RENAMES) is plain
    assert isinstance(env.runtime, RuntimeEnv)
    assert env.runtime.deserialize(serialized).eval().plain_value() == {0: 1}


# --- strings extension and dispatch errors ---------------------------------------------------------


@pytest.mark.parametrize(("function", "args", "message"), [
    ("charAt", ["tacocat", 30], "index out of range: 30"),
    ("charAt", ["tacocat", -1], "index out of range: -1"),
    ("charAt", ["tacocat", 7], None),  # the end itself is "" in cel-go
    ("substring", ["tacocat", 40], "index out of range: 40"),
    ("substring", ["tacocat", 1, 50], "index out of range: 50"),
    ("substring", ["tacocat", 49, 50], "index out of range: 49"),
    ("substring", ["tacocat", 4, 3], "invalid substring range. start: 4, end: 3"),
    ("substring", ["tacocat", -5, -4], "index out of range: -5"),
    ("indexOf", ["tacocat", "a", -1], "index out of range: -1"),
    ("indexOf", ["tacocat", "", -1], None),  # an empty needle returns the offset
    ("lastIndexOf", ["tacocat", "a", -2], "index out of range: -2"),
    ("charAt", ["ñandú", 6], "index out of range: 6"),  # code points, not bytes
])
def test_strings_errors_follow_cel_go(function: str, args: list[object],
                                      message: str | None) -> None:
    assert strings_error(function, args) == message


def test_strings_errors_reach_the_result() -> None:
    result = ev("'tacocat'.substring(4, 3) == ''")
    assert result.error is not None
    assert result.error.message == "invalid substring range. start: 4, end: 3"


def test_failed_dispatch_reads_no_such_overload() -> None:
    result = ev("object.spec.subnet + 1")
    assert result.error is not None and result.error.message == "no such overload"


# --- value equality of library values in the walk ----------------------------------------------


@pytest.mark.parametrize(("condition", "negated"), [
    ('quantity("1Ki") == quantity("1024")', False),
    ('quantity("1Ki") != quantity("1024")', True),
    ('quantity("1Ki") in [quantity("1024")]', False),
    ('[quantity("1000m")] == [quantity("1")]', False),
    ('semver("1.0.0+build") == semver("1.0.0")', False),
])
def test_walk_compares_quantities_and_semvers_by_value(condition: str, negated: bool) -> None:
    # cel-go compares Quantity and Semver values (1Ki == 1024). The walk must take the branch the
    # program takes: the constant one, which costs nothing beyond the condition, rather than
    # `object.kind`, which cel-go never evaluates.
    branches = '"eq" : object.kind' if not negated else 'object.kind : "eq"'
    result = ev(f"{condition} ? {branches}")
    assert result.value == "eq"
    assert result.runtime_cost == ev(condition).runtime_cost


# --- type values of library types --------------------------------------------------------------


@pytest.mark.parametrize(("expr", "value"), [
    ('type(ip("192.168.0.1")) == net.IP', True),
    ('type(cidr("192.168.0.0/24")) == net.CIDR', True),
    ('type(ip("192.168.0.1")) == string', False),
    ('type(cidr("192.168.0.0/24")) == net.IP', False),
    ('type(quantity("1")) == type(quantity("2Ki"))', True),
    ('type(quantity("1")) != type(semver("1.0.0"))', True),
    ("type(1) == int", True),
])
def test_type_values_of_library_types(expr: str, value: bool) -> None:
    assert program_value(expr) is value
    result = ev(expr)
    assert result.error is None and result.value is value


def test_a_library_type_value_as_the_result() -> None:
    result = ev('type(ip("192.168.0.1"))')
    assert (result.value, result.cel_type) == ("net.IP", "type")


# --- string.format rendering -------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "value"), [
    ('"%s".format([[2.71]])', "[2.710000]"),
    ('"%.6e".format([1052.032911275])', "1.052033×10⁰³"),
    ('"%.2f".format([1234.5])', "1,234.50"),
    ('"%s".format([{"b": 1.5, "a": "x"}])', '{"a":"x", "b":1.500000}'),
    ('"%s".format([duration("2ns")])', "0.000000002s"),  # cel-cpp renders durations
])
def test_format_renders_like_cel_go(expr: str, value: str) -> None:
    result = ev(expr)
    assert result.error is None and result.value == value


def test_format_errors_at_run_time_use_cel_go_text() -> None:
    result = ev('"%d".format([object.spec.subnet])')
    assert result.error is not None
    assert result.error.message == ("error during formatting: decimal clause can only be used "
                                    "on integers, was given string")


def test_walk_error_values_keep_their_message() -> None:
    checked = compiled('"%s %s".format(dyn([object.kind]))').checked
    assert checked is not None
    outcome = track_cost(checked, {"object": OBJ}, bridge_for(get_env(KEY).runtime))
    assert isinstance(outcome.value, ErrorValue) and outcome.value.message == "index 1 out of range"
