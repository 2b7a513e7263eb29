"""`DryRun`: one run read by every view, and its plan-sharing layer.

With the `dry-run-plans` speed layer on, claim requests that read alike share one plan
(relabelled per claim); off, each claim request is decided on its own. Both must give the same
results in the same order, the same findings, and per claim request the same outcomes; the
quiet view keeps exactly the results whose outcome is not `QUIET`.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest
import yaml
from dra_affinity.lint.inputs import Objects, load_objects
from dra_affinity.policies.core.layers import ENV
from dra_affinity.policies.core.problems import SELECTOR_ERROR
from dra_affinity.policies.scheduler.dryrun import PLAN_SHARING, QUIET, DryRun, new_dry_run
from dra_affinity.policies.scheduler.extraction import Outcome

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _run(inputs: Objects) -> DryRun:
    return new_dry_run(inputs.slices, inputs.claims, inputs.classes)


def _views(inputs: Objects) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """(every result, the quiet view's results, each claim request's outcomes, the findings)."""
    every = list(_run(inputs).results())
    run = _run(inputs)
    kept, outcomes = [], []
    for request in run.requests():
        outcomes.append(request.outcomes)
        kept.extend(request.results(quiet=True))
    return every, kept, outcomes, run.findings


def _same_both_ways(inputs: Objects, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    monkeypatch.delenv(ENV, raising=False)  # both ways, whatever the suite runs with
    assert PLAN_SHARING.on
    shared = _views(inputs)
    monkeypatch.setenv(ENV, "none")
    assert not PLAN_SHARING.on
    plain = _views(inputs)
    monkeypatch.delenv(ENV)
    assert shared == plain
    every, kept, outcomes, _ = plain
    assert kept == [r for r in every if r.outcome not in QUIET]
    assert [(r.pool, r.outcome) for r in every] == [o for seq in outcomes for o in seq]
    return every


def test_plans_give_what_the_plain_path_gives_on_the_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _same_both_ways(load_objects([str(EXAMPLES)]), monkeypatch)


def test_plans_are_shared_by_claims_that_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.gen_slices import generate_cluster

    files = [str(f) for f in generate_cluster(300, tmp_path, seed=3, devices=60, pools=6)]
    inputs = load_objects(files)
    assert len(_same_both_ways(inputs, monkeypatch)) == 1800
    seen = {id(request.outcomes) for request in _run(inputs).requests()}
    assert len(seen) <= 80  # 20 subnets x 4 pkeys: one plan each, however many claims
    monkeypatch.setenv(ENV, "none")
    kept = [request.outcomes for request in _run(inputs).requests()]  # alive: no id is reused
    assert len({id(outcomes) for outcomes in kept}) == 300


def test_a_shared_selector_failure_names_each_claim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two claims alike whose request selector fails: one plan, but each result and each SA003
    finding names its own claim, as the plain path does."""
    from bench.gen_slices import CLUSTER_CLASS, CLUSTER_DRIVER, generate_cluster

    files = [str(f) for f in generate_cluster(4, tmp_path, seed=3, devices=8, pools=2)]
    selector = f'device.attributes["{CLUSTER_DRIVER}"].missing == "x"'
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump_all([
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": name, "namespace": "odd"},
         "spec": {"devices": {"requests": [{"name": "nic", "exactly": {
             "deviceClassName": CLUSTER_CLASS, "selectors": [{"cel": {"expression": selector}}]}}]}}}
        for name in ("one", "two")]))
    inputs = load_objects([*files, str(tmp_path / "bad.yaml")])
    every = _same_both_ways(inputs, monkeypatch)
    failed = [r for r in every if r.outcome is Outcome.SELECTOR_ERROR]
    assert {r.claim for r in failed} == {"odd/one", "odd/two"}
    assert all(r.error is not None and r.error.message.startswith(f"claim {r.claim}: ") for r in failed)
    run = _run(inputs)
    list(run.results())
    messages = [f.message for f in run.findings if f.rule == SELECTOR_ERROR.id]
    assert [m.split(":")[0] for m in messages] == ["claim odd/one", "claim odd/two"]


def test_the_gc_pause_never_spans_the_callers_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claim requests are decided with the collector paused, in batches, and handed over with it
    as the caller had it: the caller's loop body runs with GC on; the results are the same."""
    from dra_affinity.policies.core.gc_pause import GC_PAUSE

    from bench.gen_slices import generate_cluster

    if not GC_PAUSE.on:
        pytest.skip("the gc-pause speed layer is off (DRA_AFFINITY_SPEED_LAYERS): nothing is paused")

    files = generate_cluster(300, tmp_path, seed=3, devices=60, pools=6)  # 300 claim requests: batches
    inputs = load_objects([str(f) for f in files])
    expected = list(_run(inputs).results())
    planned: list[bool] = []
    run_type = type(_run(inputs))  # the plain run, or the plan-sharing layer's
    plan = run_type._plan

    def spy(self: DryRun, *args: Any) -> Any:
        planned.append(gc.isenabled())
        return plan(self, *args)

    monkeypatch.setattr(run_type, "_plan", spy)
    assert gc.isenabled()
    consumer: list[bool] = []
    for _ in _run(inputs).results():
        consumer.append(gc.isenabled())
    assert len(consumer) == len(expected) and all(consumer)
    assert len(planned) == 300 and not any(planned)
    counting: list[bool] = []
    kept = []
    for request in _run(inputs).requests():
        counting.append(gc.isenabled())
        kept.extend(request.results(quiet=True))
    assert kept == [r for r in expected if r.outcome not in QUIET]
    assert len(counting) == 300 and all(counting)
