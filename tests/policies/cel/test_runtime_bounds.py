"""`runtime_bounds`: what a call takes and builds, measured before it runs, and the walk's use of it."""

from __future__ import annotations

from dra_affinity.policies.cel.check.env import EnvKey, EnvMode, get_env
from dra_affinity.policies.cel.compile import compile_expression
from dra_affinity.policies.cel.eval.runtime import (
    KIND_COST_EXCEEDED,
    KIND_FAILED,
    EvalResult,
    bridge_for,
    evaluate,
)
from dra_affinity.policies.cel.eval.runtime_bounds import (
    MAX_HANDLED_CHARS,
    MAX_HANDLED_ELEMENTS,
    bulky,
    handled_size,
    output_bound,
)
from dra_affinity.policies.cel.eval.runtime_cost import PROGRAM_MAX_ITERATIONS, track_cost

KEY = EnvKey((1, 37), EnvMode.STORED_EXPRESSIONS)


def test_shared_values_count_every_reference_but_are_measured_once() -> None:
    leaf = ["ab", 1]
    shared: list[object] = leaf
    for _ in range(10):
        shared = [shared, shared]
    assert handled_size([shared]) == (2 ** 11 - 2 + 2 ** 10 * 2, 2 ** 10 * 2)
    # far past the bound: the measure stops early instead of walking 2^40 references
    for _ in range(30):
        shared = [shared, shared]
    elements, _ = handled_size([shared])
    assert elements > MAX_HANDLED_ELEMENTS


def test_maps_count_entries_keys_and_values() -> None:
    assert handled_size([{"key": "value", "n": [1, 2]}]) == (4, 3 + 5 + 1)


def test_only_containers_and_long_text_are_bulky() -> None:
    assert not bulky(["short", 1, 2.0, None, True])
    assert bulky(["x" * 300])
    assert bulky([[1]])


def test_output_bounds_of_the_growing_calls() -> None:
    text = "a" * 1000
    assert output_bound("replace", [text, "a", "bb"], 0, 1003) == (0, 2000)
    assert output_bound("replace", [text, "", "b"], 0, 1001) == (0, 1000 + 1001)
    assert output_bound("replace", [text, "a", "bb", 3], 0, 1003) == (0, 1003)
    assert output_bound("split", [text, ""], 0, 1000) == (1000, 1000)
    assert output_bound("split", ["a,b,c", ","], 0, 6) == (3, 5)
    assert output_bound("findAll", [text, "a*"], 0, 1002) == (1001, 1000)
    assert output_bound("join", [["ab", "cd"], "--"], 2, 6) == (0, 6 + 4)
    assert output_bound("strings.quote", ['a"b'], 0, 3) == (0, 6)
    assert output_bound("size", [text], 0, 1000) is None


def _eval(expression: str, obj: object = None) -> EvalResult:
    compiled = compile_expression(expression, KEY)
    assert compiled.ok, compiled.error_text
    return evaluate(compiled, {"object": obj if obj is not None else {}})


def test_a_call_over_the_bound_is_an_evaluation_error_naming_it() -> None:
    text = "a" * 100_000
    result = _eval("string(object.s.replace('a', object.s).size())", {"s": text})
    assert result.error is not None and result.error.kind == KIND_FAILED
    assert result.error.message == (f"evaluation stopped: replace() would hold more than "
                                    f"{MAX_HANDLED_CHARS:,} characters")


def test_a_price_known_from_the_arguments_stops_the_call_as_cel_go_does() -> None:
    """cel-go computes the sum, then charges 999,000 past the limit: the same outcome and cost."""
    result = _eval("string(lists.range(999000).sum())")
    assert result.error is not None and result.error.kind == KIND_COST_EXCEEDED
    assert result.runtime_cost == (999_000 + 11) + 999_000


def test_size_of_a_shared_list_is_read_off_the_value() -> None:
    nested = "cel.bind(x, [1, 2], " + "cel.bind(x, [x, x], " * 22 + "string(x.size())" + ")" * 23
    result = _eval(nested)
    assert result.error is None and result.value == "2"


def test_the_program_is_not_run_after_many_iterations() -> None:
    compiled = compile_expression("string(object.items.map(x, x).size())", KEY)
    checked = compiled.checked
    assert checked is not None
    bridge = bridge_for(get_env(KEY).runtime)
    small = track_cost(checked, {"object": {"items": [0] * 10}}, bridge)
    large = track_cost(checked, {"object": {"items": [0] * 5000}}, bridge)
    assert small.program_affordable and small.iterations == 10
    assert large.iterations == 5000 > PROGRAM_MAX_ITERATIONS and not large.program_affordable
    result = evaluate(compiled, {"object": {"items": [0] * 5000}})
    assert result.error is None and result.value == "5000"
