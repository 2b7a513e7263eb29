"""`DryRun.results` with quiet outcomes: per claim request one shared plan, counted, not relabelled.

The plans (one per distinct class, selectors and in-scope config contents) must give exactly
what the per-pool walk gives: the same non-quiet results, labelled with the asking claim, in
the same order, the same findings, and per pool the same outcome counts.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
from dra_affinity.lint.inputs import load_objects
from dra_affinity.policies.core.findings import PoolRef
from dra_affinity.policies.scheduler.dryrun import DryRun
from dra_affinity.policies.scheduler.extraction import Outcome

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
QUIET = frozenset({Outcome.OK, Outcome.NOT_APPLICABLE})


def _both(paths: list[str]) -> None:
    inputs = load_objects(paths)
    full = DryRun(inputs.slices, inputs.claims, inputs.classes)
    every = list(full.results())
    tallied: dict[PoolRef, dict[Outcome, int]] = {}
    sequences: set[int] = set()

    def tally(outcomes: tuple[tuple[PoolRef, Outcome], ...]) -> None:
        sequences.add(id(outcomes))
        for ref, outcome in outcomes:
            pool = tallied.setdefault(ref, {})
            pool[outcome] = pool.get(outcome, 0) + 1

    summary = DryRun(inputs.slices, inputs.claims, inputs.classes)
    kept = list(summary.results(QUIET, tally))
    assert kept == [r for r in every if r.outcome not in QUIET]
    assert summary.findings == full.findings
    counted: dict[PoolRef, dict[Outcome, int]] = {}
    for r in every:
        pool = counted.setdefault(r.pool, {})
        pool[r.outcome] = pool.get(r.outcome, 0) + 1
    assert tallied == counted
    assert len(sequences) <= len(inputs.claims)


def test_plans_match_the_pool_walk_on_the_examples() -> None:
    _both([str(EXAMPLES)])


def test_plans_are_shared_by_claims_that_read_alike(tmp_path: Path) -> None:
    from bench.gen_slices import generate_cluster

    files = generate_cluster(300, tmp_path, seed=3, devices=60, pools=6)
    _both([str(f) for f in files])
    inputs = load_objects([str(f) for f in files])
    seen: set[int] = set()
    list(DryRun(inputs.slices, inputs.claims, inputs.classes).results(QUIET, lambda o: seen.add(id(o))))
    assert len(seen) <= 80  # 20 subnets x 4 pkeys: one plan each, however many claims


def test_the_gc_pause_never_spans_the_callers_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Results are decided with the collector paused, in batches, and handed over with it as the
    caller had it: the caller's loop body and `tally` run with GC on; the results are the same."""
    from bench.gen_slices import generate_cluster

    files = generate_cluster(300, tmp_path, seed=3, devices=60, pools=6)  # 1,800 results: two batches
    inputs = load_objects([str(f) for f in files])
    expected = list(DryRun(inputs.slices, inputs.claims, inputs.classes).results())
    planned: list[bool] = []
    plan = DryRun._plan

    def spy(self: DryRun, *args: Any) -> Any:
        planned.append(gc.isenabled())
        return plan(self, *args)

    monkeypatch.setattr(DryRun, "_plan", spy)
    assert gc.isenabled()
    consumer: list[bool] = []
    for _ in DryRun(inputs.slices, inputs.claims, inputs.classes).results():
        consumer.append(gc.isenabled())
    assert len(consumer) == len(expected) and all(consumer)
    assert planned and not any(planned)
    tallied: list[bool] = []
    kept = list(DryRun(inputs.slices, inputs.claims, inputs.classes).results(
        QUIET, lambda outcomes: tallied.append(gc.isenabled())))
    assert kept == [r for r in expected if r.outcome not in QUIET]
    assert len(tallied) == 300 and all(tallied)
