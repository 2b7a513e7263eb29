"""The project's CEL against the real cel-go: a regression corpus and a bounded campaign.

The reference is `../shared/oracle/celoracle` (cel-go with the Kubernetes CEL libraries, set up
as the sharing-affinity extractor environment; see `oracle.py`). Three tests:

* every case of `oracle_corpus.jsonl` (the disagreements fixed so far, each with cel-go's
  recorded answer) still agrees on every dimension (`oracle_compare.DIMENSIONS`); this runs
  everywhere, the answers being recorded;
* where the oracle runs, the recorded answers are still what it answers (re-record with
  `python -m tests.policies.cel.oracle_campaign --record-corpus tests/policies/cel/oracle_corpus.jsonl`);
* where the oracle runs, a bounded campaign (`CASES` generated cases, a few seconds) finds no
  disagreement outside `KNOWN_DIFFERENCES`, each of which says why it remains.

The long campaign is a command (figures as one JSON line, disagreements in `--out`):

    nice -n 10 .venv/bin/python -m tests.policies.cel.oracle_campaign --count 100000
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.policies.cel import oracle
from tests.policies.cel.oracle_campaign import judge, project_worker
from tests.policies.cel.oracle_cases import cases, object_json
from tests.policies.cel.oracle_compare import Disagreement, compare, project_answer

CORPUS = Path(__file__).with_name("oracle_corpus.jsonl")
CASES = 400
SEED = 22


def _corpus() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


@dataclass(frozen=True)
class KnownDifference:
    """A disagreement that remains, recognised by `applies`, with the reason it remains."""

    name: str
    reason: str
    applies: Callable[[Mapping[str, Any], Mapping[str, Any]], bool]


def _our_error(ours: Mapping[str, Any], text: str) -> bool:
    return text in str(ours.get("evalError", ""))


KNOWN_DIFFERENCES = (
    KnownDifference(
        "map keys Go cannot hash",
        "a map literal with a bytes, Semver or format key makes cel-go panic (`hash of "
        "unhashable type`), recovered as an internal error that ends the evaluation before the "
        "map's cost is charged; here it is the same `cel evaluation failed` with the map's cost.",
        lambda upstream, ours: _our_error(ours, "Invalid map key type")
        and "unhashable" in str(upstream.get("evalError", "")),
    ),
)


def _unexplained(upstream: Mapping[str, Any], ours: Mapping[str, Any]) -> bool:
    return not any(k.applies(upstream, ours) for k in KNOWN_DIFFERENCES)


@pytest.mark.parametrize("case", _corpus(), ids=lambda c: str(c["name"]))
def test_a_fixed_disagreement_stays_fixed(case: dict[str, Any]) -> None:
    ours = project_answer(case["expr"], object_json(case["object"]))
    assert compare(case["upstream"], ours) == [], (case["expr"], case["upstream"], ours)


@pytest.fixture(scope="module")
def celoracle() -> oracle.LineProcess:
    reason = oracle.unavailable()
    if reason is not None:
        pytest.skip(reason)
    return oracle.celoracle()


def test_the_corpus_holds_what_cel_go_answers(celoracle: oracle.LineProcess) -> None:
    stale = []
    for case in _corpus():
        answer = celoracle.ask({"expr": case["expr"], "object": case["object"]})
        if answer != case["upstream"]:
            stale.append((case["name"], answer))
    assert not stale, f"re-record the corpus (module docstring): {stale}"


def test_a_bounded_campaign_agrees_with_cel_go(celoracle: oracle.LineProcess) -> None:
    ours = project_worker(timeout=60.0)
    found: list[tuple[str, list[Disagreement]]] = []
    compared = 0
    try:
        for case in cases(SEED, CASES):
            status, upstream, mine, disagreements = judge(case, celoracle, ours)
            assert status not in ("hang", "traceback"), (status, case, mine)
            if status != "compared":
                continue
            compared += 1
            assert upstream is not None and mine is not None
            if disagreements and _unexplained(upstream, mine):
                found.append((case["expr"] + "  with  " + json.dumps(case["object"]),
                              disagreements))
    finally:
        ours.close()
    assert compared >= CASES * 9 // 10
    assert not found, "\n".join(f"{expr}: {d}" for expr, d in found)
