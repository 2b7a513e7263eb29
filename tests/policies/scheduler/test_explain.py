"""`explain` answers from the same simulation as `simulate`.

On generated clusters (affinity and plain pools, shared and exclusive devices with capacity,
bound claims) and pods of one to three pending claims, `explain_pod` must place each claim
exactly where `simulate` of the pod's claims places it, and fail the others for the same
reason on the same request: a pod's claims are allocated together, each one's tentative
locks and consumed capacity visible to the next. The long run is
`DRA_EXPLAIN_EXAMPLES=3000 pytest tests/policies/scheduler/test_explain.py`.
"""

from __future__ import annotations

import os
from typing import Any

from dra_affinity.policies.model.resources import DeviceClass, ResourceClaim, ResourceSlice, parse
from dra_affinity.policies.scheduler.explain import explain_pod
from dra_affinity.policies.scheduler.lock_book import LockBook
from dra_affinity.policies.scheduler.locks import Mode
from dra_affinity.policies.scheduler.simulation import Action, SimulationReport, Step, simulate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.policies.scheduler.test_simulation_index import DRIVER, _slices

EXAMPLES = int(os.environ.get("DRA_EXPLAIN_EXAMPLES", "120"))


def _parsed(doc: dict[str, Any]) -> Any:
    result = parse(doc)
    assert result.obj is not None, result.findings
    return result.obj


def _claim(name: str, subnet: str | None, pods: int | None, count: int,
           bound: tuple[int, int] | None = None) -> ResourceClaim:
    params = {"subnetID": subnet} if subnet else {"other": "x"}
    exactly: dict[str, Any] = {"deviceClassName": "nic", "count": count}
    if pods is not None:
        exactly["capacity"] = {"requests": {"pods": str(pods)}}
    doc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "nic", "exactly": exactly}],
                             "config": [{"opaque": {"driver": DRIVER, "parameters": params}}]}},
    }
    if bound is not None:
        doc["status"] = {"allocation": {"devices": {"results": [
            {"request": "nic", "driver": DRIVER, "pool": f"node-{bound[0]}", "device": f"eth{bound[1]}"}]}}}
    claim: ResourceClaim = _parsed(doc)
    return claim


CLASS: DeviceClass = _parsed({
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "nic"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})

_pool = st.fixed_dictionaries({
    "affinity": st.booleans(),
    "devices": st.lists(st.tuples(st.integers(1, 3), st.booleans()), min_size=1, max_size=3),
})
_subnet = st.sampled_from(["X", "Y", None])
_pods = st.sampled_from([None, 1, 2, 3])


def _pod_steps(names: list[str]) -> list[Step]:
    """The pod's claims as one `simulate` step (allocated together)."""
    return [Step(Action.ALLOCATE, n, with_next=i < len(names) - 1) for i, n in enumerate(names)]


def _summary(report: SimulationReport) -> dict[str, tuple[object, ...]]:
    out: dict[str, tuple[object, ...]] = {}
    for step in report.steps:
        placements = tuple((p.request, str(p.device)) for p in step.placements)
        failure = step.failure.reason if step.failure is not None else None
        out[step.step.claim] = (step.placed, placements, failure, step.failed_request)
    return out


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    pools=st.lists(_pool, min_size=1, max_size=3),
    bound=st.lists(st.tuples(_subnet, _pods, st.integers(0, 2), st.integers(0, 2)), max_size=4),
    pod=st.lists(st.tuples(_subnet, _pods, st.integers(1, 2)), min_size=1, max_size=3),
    mode=st.sampled_from(list(Mode)),
)
def test_explain_and_simulate_agree_on_a_pod(pools: list[dict[str, Any]], bound: list[Any], pod: list[Any],
                                             mode: Mode) -> None:
    slices = _slices(pools)
    claims = [_claim(f"b{n}", subnet, pods, 1, (p % len(pools), d % len(pools[p % len(pools)]["devices"])))
              for n, (subnet, pods, p, d) in enumerate(bound)]
    names = [f"ns/p{n}" for n in range(len(pod))]
    claims += [_claim(f"p{n}", subnet, pods, count) for n, (subnet, pods, count) in enumerate(pod)]
    report = simulate(slices, claims, _pod_steps(names), mode=mode, classes=[CLASS])
    assert isinstance(report, SimulationReport)
    expected = _summary(report)
    book = LockBook.build(slices, claims, [CLASS], focus=names)
    for explanation in explain_pod(book, names, mode=mode):
        step = explanation.step
        assert step is not None
        got = (step.placed, tuple((p.request, str(p.device)) for p in step.placements),
               step.failure.reason if step.failure is not None else None, step.failed_request)
        assert got == expected[explanation.claim], (explanation.claim, explanation.verdict)
        assert explanation.schedulable is step.placed
        # every verdict that leaves the pod pending comes with a next step
        assert step.placed or explanation.hints, (explanation.claim, explanation.verdict)


def _placed_after(slices: list[ResourceSlice], claims: list[ResourceClaim], release: Any, names: list[str],
                  claim: str, mode: Mode) -> tuple[bool, tuple[tuple[str, str], ...]]:
    steps = [Step(Action.RELEASE, r) for r in release] + _pod_steps(names)
    report = simulate(slices, claims, steps, mode=mode, classes=[CLASS])
    assert isinstance(report, SimulationReport)
    [result] = [s for s in report.steps if s.step.claim == claim and s.step.action is Action.ALLOCATE]
    return result.placed, tuple((p.request, str(p.device)) for p in result.placements)


@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    pools=st.lists(_pool, min_size=1, max_size=2),
    bound=st.lists(st.tuples(_subnet, _pods, st.integers(0, 1), st.integers(0, 2)), min_size=1, max_size=5),
    pod=st.lists(st.tuples(_subnet, _pods, st.just(1)), min_size=1, max_size=2),
    mode=st.sampled_from(list(Mode)),
)
def test_every_release_hint_works_in_simulate(pools: list[dict[str, Any]], bound: list[Any], pod: list[Any],
                                              mode: Mode) -> None:
    """Each release `explain` offers places the claim where it says when `simulate` runs the
    releases before the pod; one marked the fewest fails with any of its claims kept; and
    "would not help" is what simulate finds with every blocking holder released."""
    slices = _slices(pools)
    claims = [_claim(f"b{n}", subnet, pods, 1, (p % len(pools), d % len(pools[p % len(pools)]["devices"])))
              for n, (subnet, pods, p, d) in enumerate(bound)]
    names = [f"ns/p{n}" for n in range(len(pod))]
    claims += [_claim(f"p{n}", subnet, pods, count) for n, (subnet, pods, count) in enumerate(pod)]
    book = LockBook.build(slices, claims, [CLASS], focus=names)
    before = dict(book.states)
    explanations = explain_pod(book, names, mode=mode)
    assert book.states == before  # every what-if was undone
    for explanation in explanations:
        for release in explanation.releases:
            wanted = tuple((p.request, str(p.device)) for p in release.placements)
            after = _placed_after(slices, claims, release.claims, names, explanation.claim, mode)
            assert after == (True, wanted)
            if release.fewest:
                for kept in release.claims:
                    fewer = [c for c in release.claims if c != kept]
                    placed, _ = _placed_after(slices, claims, fewer, names, explanation.claim, mode)
                    assert not placed, (release, kept)
        if any(h.startswith("releasing every claim on its candidate devices would not help")
               for h in explanation.hints):
            holders = sorted({h.claim for e in (explanation.step.evaluated if explanation.step else ())
                              for h in book.states[e.device].holders if h.claim not in names})
            placed, _ = _placed_after(slices, claims, holders, names, explanation.claim, mode)
            assert not placed
