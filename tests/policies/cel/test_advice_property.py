"""Advisories SA201, SA203, SA205 and SA206 checked against evaluation on generated extractors.

Each advisory that states a run-time outcome quotes the config it happens on; here that
config is run through the project's evaluator and, when present, upstream's (the
`celoracle` of `shared/oracle`, cel-go with the Kubernetes libraries), and the outcome
must be the one stated. Configs of another schema must not be declined where SA206 says
they are not. The long run is `DRA_ADVICE_EXAMPLES=5000 pytest tests/policies/cel/test_advice_property.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dra_affinity.policies.analysis.advice import FOREIGN_API_VERSION, run_extractor
from dra_affinity.policies.analysis.expression import ExpressionAnalysis, analyse
from dra_affinity.policies.core.limits import limits_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ORACLE = Path(__file__).resolve().parents[3].parent / "shared" / "oracle" / "celoracle"
EXAMPLES = int(os.environ.get("DRA_ADVICE_EXAMPLES", "150"))
VERSION = limits_for().kubernetes_version
FIELDS = ("a", "b", "net")
LITERALS = ('""', '"x"', '"Net"')


def _chain(draw: Any) -> str:
    steps = draw(st.lists(st.tuples(st.sampled_from(FIELDS), st.booleans()), min_size=1, max_size=3))
    text = "object" + "".join((".?" if optional else ".") + name for name, optional in steps)
    if any(optional for _, optional in steps):
        text += f".orValue({draw(st.sampled_from(LITERALS))})"
    return text


@st.composite
def extractors(draw: Any, depth: int = 2) -> str:
    kinds = ["literal", "chain"] + (["has", "not-has", "equals", "kind", "format", "bind"] if depth else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "literal":
        return str(draw(st.sampled_from(LITERALS)))
    if kind == "chain":
        return _chain(draw)
    if kind == "format":
        return f'"%s".format([{draw(extractors(depth - 1))}])'
    if kind == "bind":
        return f'cel.bind(v, {_chain(draw)}, v == {draw(st.sampled_from(LITERALS))} ? "" : v)'
    then, other = draw(extractors(depth - 1)), draw(extractors(depth - 1))
    if kind == "kind":
        cond = 'object.kind == "Net"'
    elif kind == "equals":
        cond = f"{_chain(draw)} == {draw(st.sampled_from(LITERALS))}"
    else:
        path = ".".join(draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=2)))
        cond = ("!" if kind == "not-has" else "") + f"has(object.{path})"
    return f"({cond} ? {then} : {other})"


def _analysed(expression: str) -> ExpressionAnalysis | None:
    analysis = analyse(expression, VERSION)
    if not analysis.ok or analysis.compiled.output_type not in {"string", "dyn"}:
        return None
    return analysis


class _Oracle:
    """One celoracle process answering JSON lines (memory-limited, as its README asks)."""

    def __init__(self) -> None:
        limit = ["prlimit", "--as=3221225472"] if shutil.which("prlimit") else []
        self.proc = subprocess.Popen([*limit, str(ORACLE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)

    def run(self, expression: str, config: object) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"expr": expression, "object": config, "mode": "stored"}) + "\n")
        self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def oracle() -> Iterator[_Oracle]:
    if not ORACLE.is_file():
        pytest.skip(f"upstream CEL oracle not found at {ORACLE}")
    try:
        subprocess.run([str(ORACLE)], input='{"expr": "1", "object": {}}\n', capture_output=True,
                       text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"upstream CEL oracle at {ORACLE} cannot run here: {exc}")
    found = _Oracle()
    yield found
    found.close()


def _claims(analysis: ExpressionAnalysis) -> Iterator[tuple[str, dict[str, object], str | None, str]]:
    """(rule, config, stated value, stated error) for every advisory stating an outcome."""
    for read, witness in analysis.unguarded_reads:
        assert read.uncovered, read
        yield "SA201", dict(witness.config), None, witness.error
    outcome = analysis.foreign_outcome
    if outcome is not None:
        yield "SA206", dict(outcome.config), outcome.value, outcome.error
    if analysis.non_string is not None:
        yield "SA203", dict(analysis.non_string.config), None, analysis.non_string.error
    constant = analysis.constant_outcome
    if constant is not None:  # SA205: the same outcome for every config, {} and another alike
        yield "SA205", {}, constant.value, constant.error
        yield "SA205", {"apiVersion": FOREIGN_API_VERSION, "kind": "Other", "a": {"b": "x"}}, \
            constant.value, constant.error


_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@_SETTINGS
@given(extractors())
def test_stated_outcomes_are_what_the_evaluator_gives(expression: str) -> None:
    analysis = _analysed(expression)
    if analysis is None:
        return
    for rule, config, value, error in _claims(analysis):
        got = run_extractor(analysis.compiled, config, 1_000_000)
        if rule == "SA201":
            assert got.error.split(". Consider")[0] == error, (expression, config, got)
        elif rule == "SA203":
            assert got.error == error and error.startswith("non-string result of type "), (expression, got)
        else:
            assert (got.value, got.error) == (value, error), (expression, config, got)
    if analysis.foreign_outcome is not None:  # SA206: neither config of another schema is declined
        assert run_extractor(analysis.compiled, {}, 1_000_000).value != ""


@_SETTINGS
@given(extractors(), st.dictionaries(st.sampled_from(("zz", "other")), st.sampled_from(("", "x"))))
def test_stated_outcomes_are_upstreams(oracle: _Oracle, expression: str, unrelated: dict[str, str]) -> None:
    """Upstream cel-go gives the outcome each advisory states, and SA206's "another schema"
    holds for any config without the fields the expression names."""
    analysis = _analysed(expression)
    if analysis is None:
        return
    for rule, config, value, error in _claims(analysis):
        answer = oracle.run(expression, config)
        if rule == "SA201":
            assert answer.get("evalError") == error, (expression, config, answer)
        elif rule == "SA203":
            stated = error.removeprefix("non-string result of type ")
            assert "evalError" not in answer and answer.get("valueType") == stated, (expression, answer)
        elif value is not None:
            assert answer.get("value") == {"t": "string", "v": value}, (expression, config, answer)
        else:
            assert answer.get("evalError") or answer.get("valueType") != "string", (expression, answer)
    if analysis.foreign_outcome is not None:
        foreign = {"apiVersion": "other.example.com/v1", "kind": "Other", **unrelated}
        answer = oracle.run(expression, foreign)
        assert answer.get("value") != {"t": "string", "v": ""}, (expression, foreign, answer)


@pytest.mark.parametrize("expression", [
    "object.?interface.vrf.name",
    'object.?interface.vrf.name.orValue("")',
    '"%s".format([object.?net.vrf.orValue("")])',
])
def test_optional_chains_state_no_outcome(expression: str) -> None:
    """The two false advisories seen on a real driver: an optional chain cannot fail, and a
    format of an optional's "" default returns ""."""
    analysis = analyse(expression, VERSION)
    assert analysis.unguarded_reads == ()
    if expression.startswith('"%s"'):
        assert analysis.foreign_outcome is None
