"""Reproducers of evaluation crashers and uncaught exceptions found by hostile-input campaigns.

Why a child process: the crashers were SIGSEGVs inside cel-expr-python after a few
evaluations in one process; run in pytest's own process, a regression would kill the whole
suite instead of failing one test. Each expression is evaluated several times in one child,
as the scheduler (and `dry-run`) evaluate one extractor many times.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.compile import compile_expression
from dra_affinity.policies.cel.eval.runtime import KIND_FAILED, evaluate

from tests.cli import SCRIPT, run

KEY = EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS)

# (expression, expected value or None, expected error message or None)
CASES: list[tuple[str, object, str | None]] = [
    # item 1: optionals (nested, behind dyn) inside lists handed to the lists library
    ("[[?optional.of(dyn(optional.none()))]].lastIndexOf([?optional.of(dyn(optional.none()))])",
     0, None),
    ("[[?optional.of(dyn(optional.none()))]].indexOf([?optional.of(dyn(optional.none()))])", 0, None),
    ("[dyn([optional.none()])].indexOf(dyn([optional.none()]))", 0, None),
    ("[optional.none()].indexOf(optional.none())", 0, None),
    ("[optional.of(1), optional.none()].lastIndexOf(optional.none())", 1, None),
    ("[[optional.of(1)]].indexOf([optional.of(2)])", -1, None),
    ("[{'a': optional.of(1)}].indexOf({'a': optional.of(1)})", 0, None),
    ("[optional.of(optional.of(1))].indexOf(optional.of(optional.of(1)))", 0, None),
    ("[optional.of(optional.none())].indexOf(optional.of(optional.none()))", 0, None),
    ("[int, int].lastIndexOf(int)", 1, None),
    ("dyn([optional.none()]).sum()", None, "no such overload"),
    ("dyn([[dyn(optional.none())]]).isSorted()", None, "no such overload"),
    ("dyn([optional.none()]).max()", None, "no such overload"),
    ("'%s'.format(dyn([[optional.none()]]))", None,
     "error during formatting: no formatting function for optional_type"),
    # found by the fuzz campaign (tests/fuzz/corpus/crash-5434db7bc920.json): `value()` and
    # `hasValue()` on a list holding an optional went to the format library's Python accessors
    ("dyn([optional.none()]).value()", None, "no such overload"),
    ("dyn([optional.none()]).hasValue()", None, "no such overload"),
    ("dyn([[optional.of(1)]]).value()", None, "no such overload"),
    # item 5: uncaught exceptions
    # (cel-go's genRange counts up to n: a negative n is an empty list, as the oracle answers)
    ("lists.range(-1)", [], None),
    ("[lists.range(-2)].size()", 1, None),
    ("'%s'.format([b'\\xff'])", None,
     "error during formatting: invalid UTF-8 in bytes, cannot convert to string"),
    ("[int, int]", ["int", "int"], None),
    ("{'a': [int]}", {"a": ["int"]}, None),
]

_CHILD = textwrap.dedent("""
    import json, sys
    from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
    from dra_affinity.policies.cel.compile import compile_expression
    from dra_affinity.policies.cel.eval.runtime import evaluate
    key = EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS)
    for expr in json.loads(sys.stdin.read()):
        compiled = compile_expression(expr, key)
        for _ in range(8):
            evaluate(compiled, {"object": {}})
    print("survived")
""")


def test_no_crasher_kills_the_process() -> None:
    exprs = [expr for expr, _, _ in CASES]
    proc = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(exprs),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.strip() == "survived"


@pytest.mark.parametrize(("expr", "value", "message"), CASES)
def test_crashers_evaluate_as_upstream(expr: str, value: object, message: str | None) -> None:
    compiled = compile_expression(expr, KEY)
    assert compiled.ok, compiled.error_text
    result = evaluate(compiled, {"object": {}})
    if message is not None:
        assert result.error is not None and result.error.kind == KIND_FAILED
        assert result.error.message == message
    elif value is not None:
        assert result.error is None, result.error
        assert result.value == value


def test_dry_run_survives_an_optional_extractor(tmp_path: object) -> None:
    """The reported path: `lint` accepted the slice, `dry-run` died with exit 139."""
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    expr = ("string([[?optional.of(dyn(optional.none()))]].lastIndexOf("
            "[?optional.of(dyn(optional.none()))]))")
    slice_doc = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "s1"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                 "pool": {"name": "p1", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "d0"}],
                 "sharingAffinity": [{"name": "k", "expression": expr}]},
    }
    claim = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c1", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {
            "deviceClassName": "gpu", "opaqueParameters": {"driver": "gpu.example.com"}}}]}},
    }
    (tmp_path / "slice.json").write_text(json.dumps(slice_doc))
    (tmp_path / "claim.json").write_text(json.dumps(claim))
    result = run("dry-run", "--format", "json", str(tmp_path / "slice.json"),
                 str(tmp_path / "claim.json"))
    assert result.code in (0, 1), (result.code, result.err)
    assert "lastIndexOf" in result.out or result.json() is not None


def test_invalid_utf8_on_the_command_line_is_a_usage_error() -> None:
    proc = subprocess.run([bytes(SCRIPT), b"cel", b"check", b'"\xff"'], capture_output=True,
                          timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert b"Traceback" not in proc.stderr
    assert b"not valid UTF-8" in proc.stderr


def test_lone_surrogates_compile_as_go_reads_them() -> None:
    compiled = compile_expression('"' + chr(0xD800) + '" + "a"', KEY)
    assert compiled.ok, compiled.error_text
    assert evaluate(compiled, {"object": {}}).value == "\ufffda"


def test_depth_estimate_work_is_linear_in_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """`'f(' * 3405 + 'x' + ')' * 3405` (10,224 bytes) took 9.45 s because
    every token re-summed the whole bracket stack. Counted in frame visits, not seconds."""
    from dra_affinity.policies.cel import compile as compile_module

    visits = 0
    original = compile_module._Frame.listener_terms

    def counting(self: compile_module._Frame) -> tuple[int, int, int, int]:
        nonlocal visits
        visits += 1
        return original(self)

    monkeypatch.setattr(compile_module._Frame, "listener_terms", counting)
    text = "f(" * 3405 + "x" + ")" * 3405
    depth = compile_module.estimate_depth(text)
    assert depth.listener == 3406
    assert visits <= 4 * len(text)
    result = compile_expression(text, KEY)
    assert not result.ok
    assert result.errors[0].message == "expression recursion limit exceeded: 250"


def test_a_huge_format_precision_is_refused_quickly() -> None:
    """`'%.999999999f'.format([-0.0])` built a 1 GB string in 42 s."""
    result = evaluate(compile_expression("'%.999999999f'.format([-0.0])", KEY), {"object": {}})
    assert result.error is not None
    assert "%.999999999f" in result.error.message
    ok = evaluate(compile_expression("'%.1000f'.format([-0.0])", KEY), {"object": {}})
    # "0." and 1,000 zeros: a negative zero is written without its sign, as cel-go writes it
    assert ok.error is None and isinstance(ok.value, str) and len(ok.value) == 1002


# Values only the engine can hold: optionals, nested or inside lists and
# maps, type values, and `dyn` wrappers of them. Each is handed to every function of the
# Kubernetes libraries, as receiver and as every argument, behind `dyn` so the checker lets
# the call through and dispatch happens at run time, where the crashes were.
ENGINE_ONLY_VALUES = (
    "optional.none()",
    "optional.of(optional.none())",
    "optional.of(dyn(optional.of(1)))",
    "[optional.none()]",
    "[[?optional.of(dyn(optional.none()))]]",
    "{'a': optional.of(1)}",
    "int",
    "[int, string]",
    "dyn(type(1))",
)


def _library_calls() -> list[str]:
    """One call per (library function, member or global, arity) and engine-only value."""
    from dra_affinity.policies.cel.k8s_library import LIBRARIES

    shapes = sorted({(d.function, d.target is not None, len(d.args))
                     for lib in LIBRARIES for d in lib.declarations})
    calls = []
    for function, member, arity in shapes:
        for value in ENGINE_ONLY_VALUES:
            args = ", ".join([f"dyn({value})"] * arity)
            calls.append(f"dyn({value}).{function}({args})" if member else f"{function}({args})")
    return calls


def test_every_library_function_survives_engine_only_values() -> None:
    """No call of a library function on such values kills the process or raises out of
    `evaluate`: each is a value or a classified evaluation error, eight times in one child
    (the crashers needed several evaluations in one process)."""
    calls = _library_calls()
    compiled = [c for c in calls if compile_expression(c, KEY).ok]
    assert len(compiled) >= len(calls) // 2  # the calls reach the runtime, not the checker
    evaluation = '        evaluate(compiled, {"object": {}})'
    assert evaluation in _CHILD
    child = _CHILD.replace(evaluation, "        result = " + evaluation.strip() + "\n"
                           "        assert result.error is None or result.error.kind, (expr, result)")
    proc = subprocess.run([sys.executable, "-c", child], input=json.dumps(compiled),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    assert proc.stdout.strip() == "survived"
