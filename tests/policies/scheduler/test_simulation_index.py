"""The profile-indexed Filter (`Detail.COUNTS`) decides exactly what the device walk decides.

`Detail.DEVICES` visits every device in first-fit order (the readable oracle); `Detail.COUNTS`
answers from per-pool profiles. On random clusters and step sequences both must place the
same claims on the same devices, fail the same ones for the same reasons, count the same
rejections and end with the same states and metrics.
"""

from __future__ import annotations

import os
from typing import Any

from dra_affinity.policies.core import layers
from dra_affinity.policies.core.limits import limits_for
from dra_affinity.policies.model.resources import ResourceClaim, ResourceSlice, parse
from dra_affinity.policies.scheduler.claim_steps import ClaimSteps, RejectionCount
from dra_affinity.policies.scheduler.locks import Mode
from dra_affinity.policies.scheduler.simulation import (
    Action,
    Detail,
    SimulationReport,
    Step,
    StepResult,
    new_run,
    simulate,
)
from hypothesis import given, settings
from hypothesis import strategies as st

DRIVER = "nic.example.com"
SUBNET = 'object.?subnetID.orValue("")'


def _slices(pools: list[dict[str, Any]]) -> list[ResourceSlice]:
    docs: list[dict[str, Any]] = []
    for n, pool in enumerate(pools):
        name = f"node-{n}"
        spec = {"driver": DRIVER, "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 2 if pool["affinity"] else 1}}
        if pool["affinity"]:
            docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                         "metadata": {"name": f"{name}-meta"},
                         "spec": {**spec, "sharingAffinity": [{"name": "subnet", "expression": SUBNET}]}})
        devices = [{"name": f"eth{d}", "allowMultipleAllocations": shared,
                    "capacity": {"pods": {"value": str(cap), "requestPolicy": {"default": "1"}}}}
                   for d, (cap, shared) in enumerate(pool["devices"])]
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                     "metadata": {"name": f"{name}-0"}, "spec": {**spec, "devices": devices}})
    out = [parse(d).obj for d in docs]
    assert all(isinstance(s, ResourceSlice) for s in out)
    return out  # type: ignore[return-value]


def _claim(n: int, subnet: str | None, pods: int | None, bound: tuple[int, int] | None) -> ResourceClaim:
    params = {"subnetID": subnet} if subnet else {"other": "x"}
    exactly: dict[str, Any] = {"deviceClassName": "nic"}
    if pods is not None:
        exactly["capacity"] = {"requests": {"pods": str(pods)}}
    doc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": f"c{n}", "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "nic", "exactly": exactly}],
                             "config": [{"opaque": {"driver": DRIVER, "parameters": params}}]}},
    }
    if bound is not None:
        doc["status"] = {"allocation": {"devices": {"results": [
            {"request": "nic", "driver": DRIVER, "pool": f"node-{bound[0]}", "device": f"eth{bound[1]}"}]}}}
    parsed = parse(doc)
    assert isinstance(parsed.obj, ResourceClaim)
    return parsed.obj


_pool = st.fixed_dictionaries({
    "affinity": st.booleans(),
    "devices": st.lists(st.tuples(st.integers(1, 3), st.booleans()), min_size=1, max_size=4),
})
_claims = st.lists(st.tuples(st.sampled_from(["X", "Y", "Z", None]), st.sampled_from([None, None, 1, 2, 5]),
                             st.booleans()), min_size=1, max_size=12)


def _outcome(s: StepResult) -> tuple[Any, ...]:
    return (s.step, s.placed, s.placements, s.failure, s.failed_request, s.released, s.reasons,
            tuple(r for r in s.rejected))


def _same(a: SimulationReport, b: SimulationReport) -> None:
    assert [_outcome(s) for s in a.steps] == [_outcome(s) for s in b.steps]
    assert a.metrics == b.metrics
    assert [(d.ref, d.state) for d in a.devices] == [(d.ref, d.state) for d in b.devices]
    assert a.notes == b.notes


@settings(max_examples=150, deadline=None)
@given(pools=st.lists(_pool, min_size=1, max_size=3), claims=_claims, mode=st.sampled_from(list(Mode)),
       releases=st.lists(st.integers(0, 11), max_size=4), data=st.data())
def test_counts_decide_as_the_device_walk(pools: list[dict[str, Any]], claims: list[tuple[Any, ...]],
                                          mode: Mode, releases: list[int], data: st.DataObject) -> None:
    slices = _slices(pools)
    objects = []
    for n, (subnet, pods, is_bound) in enumerate(claims):
        bound = None
        if is_bound and n % 3 == 0:
            p = data.draw(st.integers(0, len(pools) - 1))
            bound = (p, data.draw(st.integers(0, len(pools[p]["devices"]) - 1)))
        objects.append(_claim(n, subnet, pods, bound))
    free = [c.qualified_name for c in objects if not c.allocation]
    steps = [Step(Action.ALLOCATE, name) for name in free]
    for r in releases:  # release a claim allocated earlier, then allocate it again
        if r < len(free):
            steps += [Step(Action.RELEASE, free[r]), Step(Action.ALLOCATE, free[r])]
    walk = simulate(slices, objects, steps, mode=mode)
    counted = simulate(slices, objects, steps, mode=mode, detail=Detail.COUNTS)
    assert isinstance(walk, SimulationReport) and isinstance(counted, SimulationReport)
    _same(walk, counted)
    assert all(not s.evaluated for s in counted.steps)


def test_counts_keep_the_walk_order_of_reasons() -> None:
    slices = _slices([{"affinity": True, "devices": [(1, True), (2, True), (2, True)]}])
    claims = [_claim(0, "X", None, None), _claim(1, "Y", None, None), _claim(2, "Z", None, None),
              _claim(3, "X", 1, None)]
    report = simulate(slices, claims, detail=Detail.COUNTS)
    assert isinstance(report, SimulationReport)
    last = report.steps[-1]
    assert not last.placed
    assert [r.value for r in last.reasons] == ["insufficient capacity", "lock mismatch"]
    capacity, mismatch = last.reasons
    assert last.rejected == (RejectionCount("nic", capacity, 1), RejectionCount("nic", mismatch, 2))


def _drive(run: ClaimSteps, steps: list[Step], speed_layers: str = "all") -> list[StepResult]:
    """The steps run with `speed_layers` in effect (`DRA_AFFINITY_SPEED_LAYERS`)."""
    before = os.environ.get(layers.ENV)
    os.environ[layers.ENV] = speed_layers
    try:
        return [run.allocate(s) if s.action is Action.ALLOCATE else run.release(s) for s in steps]
    finally:
        if before is None:
            del os.environ[layers.ENV]
        else:
            os.environ[layers.ENV] = before


@settings(max_examples=100, deadline=None)
@given(pools=st.lists(_pool, min_size=1, max_size=2), claims=_claims, mode=st.sampled_from(list(Mode)),
       detail=st.sampled_from(list(Detail)), releases=st.lists(st.integers(0, 11), max_size=4))
def test_remembered_failures_decide_as_a_fresh_filter(pools: list[dict[str, Any]],
                                                      claims: list[tuple[Any, ...]], mode: Mode,
                                                      detail: Detail, releases: list[int]) -> None:
    """A claim that fails as an earlier one did, with no device changed since, reuses that
    outcome, and a device checked again in the same state reuses its check; both must be what
    Filter would decide again (the same devices looked at, reasons and metrics)."""
    objects = [_claim(n, subnet, pods, None) for n, (subnet, pods, _) in enumerate(claims)]
    _same_without(_slices(pools), objects, releases, mode, detail, "-simulate-remembered-failures")


def test_a_full_cluster_fails_each_further_claim_once() -> None:
    """Claims of one template after the last slot is taken: decided once, then reused until a
    release changes a device (the next claim is then placed)."""
    slices = _slices([{"affinity": True, "devices": [(1, True)]}])
    objects = [_claim(n, "X", None, None) for n in range(4)]
    run = new_run(slices, objects, mode=Mode.ALPHA, feature_gate=True, limits=limits_for(),
                  detail=Detail.COUNTS)
    names = [c.qualified_name for c in objects]
    steps = [Step(Action.ALLOCATE, names[0]), Step(Action.ALLOCATE, names[1]),
             Step(Action.ALLOCATE, names[2]), Step(Action.RELEASE, names[0]),
             Step(Action.ALLOCATE, names[3])]
    results = _drive(run, steps)
    assert [s.placed for s in results] == [True, False, False, True, True]
    assert results[1].failure is results[2].failure  # the second failure reused the first
    assert results[1].rejected == (RejectionCount("nic", results[1].reasons[0], 1),)
    assert results[4].placements[0].device == results[0].placements[0].device


_LAYERS = st.sampled_from(["none", "-simulate-count-index",
                           "-simulate-shared-verdicts", "-simulate-remembered-failures",
                           "-simulate-device-checks", "-simulate-selector-matches", "-simulate-demands",
                           "-simulate-pool-prechecks"])


@settings(max_examples=100, deadline=None)
@given(pools=st.lists(_pool, min_size=1, max_size=3), claims=_claims, mode=st.sampled_from(list(Mode)),
       detail=st.sampled_from(list(Detail)), releases=st.lists(st.integers(0, 11), max_size=4),
       speed_layers=_LAYERS)
def test_the_plain_path_decides_as_the_speed_layers(pools: list[dict[str, Any]],
                                                    claims: list[tuple[Any, ...]], mode: Mode, detail: Detail,
                                                    releases: list[int], speed_layers: str) -> None:
    """Every check computed again (layers off, or one of them off) places, fails, counts and
    ends exactly as the speed layers do."""
    objects = [_claim(n, subnet, pods, (0, 0) if bound and n % 4 == 0 else None)
               for n, (subnet, pods, bound) in enumerate(claims)]
    _same_without(_slices(pools), objects, releases, mode, detail, speed_layers)


def _same_without(slices: list[ResourceSlice], objects: list[ResourceClaim], releases: list[int], mode: Mode,
                  detail: Detail, speed_layers: str) -> None:
    """Each free claim allocated, then the `releases` released and allocated again: the same
    steps, outcomes, devices looked at, counters, states and notes with `speed_layers` as with
    every layer on."""
    free = [c.qualified_name for c in objects if not c.allocation]
    steps = [Step(Action.ALLOCATE, name) for name in free]
    for r in releases:
        if r < len(free):
            steps += [Step(Action.RELEASE, free[r]), Step(Action.ALLOCATE, free[r])]
    runs = [new_run(slices, objects, mode=mode, feature_gate=True, limits=limits_for(), detail=detail)
            for _ in range(2)]
    fast = _drive(runs[0], steps)
    plain = _drive(runs[1], steps, speed_layers)
    assert [(_outcome(s), s.evaluated) for s in fast] == [(_outcome(s), s.evaluated) for s in plain]
    assert runs[0].counters == runs[1].counters
    assert runs[0].states.states == runs[1].states.states
    assert runs[0].notes == runs[1].notes
