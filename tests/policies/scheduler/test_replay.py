"""Workload replay: the lock model of `simulate` run over time, with retries and fragmentation."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from dra_affinity.policies.model.resources import ResourceClaim, ResourceSlice, parse
from dra_affinity.policies.scheduler import extraction
from dra_affinity.policies.scheduler.locks import LockStatus, Mode
from dra_affinity.policies.scheduler.replay import ReplayReport, replay
from dra_affinity.policies.scheduler.simulation import Action, SimulationReport, Step, simulate
from dra_affinity.policies.scheduler.workload import (
    Lifetime,
    LifetimeKind,
    TemplateSpec,
    Vary,
    Workload,
    arrivals,
    variants,
)

from tests.helpers import requires_layers

EXPRESSION = 'object.?kind.orValue("") == "NICConfig" ? "%s".format([object.?subnetID.orValue("")]) : ""'


def pool_slices(nodes: int, nics: int, pods: int) -> list[dict[str, Any]]:
    docs = []
    for n in range(nodes):
        common = {
            "driver": "nic.example.com",
            "nodeName": f"n{n}",
            "pool": {"name": f"n{n}", "generation": 1, "resourceSliceCount": 2},
        }
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"m{n}"},
                "spec": {**common, "sharingAffinity": [{"name": "subnet", "expression": EXPRESSION}]},
            }
        )
        docs.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"d{n}"},
                "spec": {
                    **common,
                    "devices": [
                        {
                            "name": f"eth{i}",
                            "allowMultipleAllocations": True,
                            "capacity": {"pods": {"value": str(pods), "requestPolicy": {"default": "1"}}},
                        }
                        for i in range(nics)
                    ],
                },
            }
        )
    return docs


def claim_doc(
    name: str = "nic-pod", subnet: str = "s0", kind: str = "ResourceClaimTemplate"
) -> dict[str, Any]:
    spec = {
        "devices": {
            "requests": [{"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}],
            "config": [
                {
                    "requests": ["nic"],
                    "opaque": {
                        "driver": "nic.example.com",
                        "parameters": {"kind": "NICConfig", "subnetID": subnet},
                    },
                }
            ],
        }
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"spec": spec} if kind == "ResourceClaimTemplate" else spec,
    }


def model(docs: list[dict[str, Any]]) -> tuple[list[ResourceSlice], list[ResourceClaim]]:
    objs = [parse(d).obj for d in docs]
    return (
        [o for o in objs if isinstance(o, ResourceSlice)],
        [o for o in objs if isinstance(o, ResourceClaim)],
    )


def nic_workload(n: int, values: list[str], lifetime: Lifetime, seed: int = 5, rate: float = 1.0) -> Workload:
    return Workload(
        "t",
        seed,
        n,
        rate,
        (TemplateSpec("ml/nic-pod", 1.0, lifetime, (Vary(("subnetID",), tuple((v, 1.0) for v in values)),)),),
    )


def done(result: ReplayReport | list[Any]) -> ReplayReport:
    assert isinstance(result, ReplayReport), result
    return result


@pytest.mark.parametrize("mode", [Mode.ALPHA, Mode.BETA])
def test_without_departures_it_places_as_simulate_does(mode: Mode) -> None:
    """The same arrivals as explicit claims through `simulate`: same devices, locks and counters."""
    slices, templates = model([*pool_slices(3, 3, 8), claim_doc()])
    workload = nic_workload(30, ["s1", "s2", "s3", "s4"], Lifetime(LifetimeKind.NEVER))
    got = done(replay(slices, templates, workload, mode=mode))
    built = variants(workload, {c.qualified_name: c for c in templates})
    assert not isinstance(built, list)
    found, index = built
    copies = []
    for a in arrivals(workload, index):
        doc = claim_doc(f"nic-pod-{a.index + 1}", found[a.variant].values[0], "ResourceClaim")
        copies.append(doc)
    _, claims = model(copies)
    want = simulate(slices, claims, [Step(Action.ALLOCATE, c.qualified_name) for c in claims], mode=mode)
    assert isinstance(want, SimulationReport) and not want.unplaced
    assert got.placed == 30 and got.pending == 0
    assert [
        (d.ref, d.state.status, d.state.lock, sorted(h.claim for h in d.state.holders)) for d in got.devices
    ] == [
        (d.ref, d.state.status, d.state.lock, sorted(h.claim for h in d.state.holders)) for d in want.devices
    ]
    assert got.metrics == want.metrics


def test_alpha_and_beta_differ_as_the_kep_says() -> None:
    """Beta joins a compatibly locked device before a clean one; alpha takes the first that fits."""
    slices, templates = model([*pool_slices(2, 4, 4), claim_doc()])
    workload = nic_workload(400, [f"s{k}" for k in range(6)], Lifetime(LifetimeKind.EXPONENTIAL, 6.0))
    alpha = done(replay(slices, templates, workload, mode=Mode.ALPHA))
    beta = done(replay(slices, templates, workload, mode=Mode.BETA))
    assert alpha.arrivals == beta.arrivals == 400
    assert beta.metrics.compatible_reuse_total >= alpha.metrics.compatible_reuse_total
    assert beta.peak_locked <= alpha.peak_locked


def test_pending_claims_retry_when_a_departure_frees_a_device() -> None:
    """One device for one pod at a time: every claim waits its turn, none is lost, none overlaps."""
    slices, templates = model([*pool_slices(1, 1, 1), claim_doc()])
    workload = nic_workload(20, ["s1"], Lifetime(LifetimeKind.FIXED, 5.0), rate=1.0)
    got = done(replay(slices, templates, workload))
    assert got.placed + got.pending == 20
    assert got.waits.max > 0 and got.waits.placed == got.placed
    assert got.departed == got.placed - 1 or got.departed == got.placed  # the last may still run
    assert got.metrics.locked_devices == (1 if got.placed > got.departed else 0)
    [device] = got.devices
    assert len(device.state.holders) <= 1


def test_a_claim_waits_behind_its_lock_and_the_free_capacity_is_stranded() -> None:
    """eth0 is bound to subnet a (status.allocation) with 1 of 2 pods free; subnet b fills eth1 and
    the third b waits: the free pod on eth0 is stranded (25 % of 4), and raw capacity holds it."""
    bound = claim_doc("bound-a", "a", "ResourceClaim")
    bound["status"] = {
        "allocation": {
            "devices": {
                "results": [{"request": "nic", "driver": "nic.example.com", "pool": "n0", "device": "eth0",
                             "shareID": "00000000-0000-0000-0000-000000000001",
                             "consumedCapacity": {"pods": "1"}}]
            }
        }
    }
    slices, claims = model([*pool_slices(1, 2, 2), claim_doc(), bound])
    got = done(replay(slices, claims, nic_workload(3, ["b"], Lifetime(LifetimeKind.NEVER))))
    assert (got.placed, got.pending) == (2, 1)
    assert got.final.stranded_percent == 25.0
    assert got.final.pending_fit == 1
    assert dict(got.final.by_value) == {"subnet=a": 1, "subnet=b": 1}
    assert got.pending_reasons == (("lock mismatch", 1),)
    states = {d.ref.device: d.state for d in got.devices}
    assert states["eth0"].status is LockStatus.LOCKED and states["eth0"].lock == {"subnet": "a"}
    assert [h.claim for h in states["eth0"].holders] == ["ml/bound-a"]


def test_nothing_is_stranded_while_nothing_waits() -> None:
    slices, templates = model([*pool_slices(2, 2, 8), claim_doc()])
    got = done(replay(slices, templates, nic_workload(10, ["a", "b", "c"], Lifetime(LifetimeKind.NEVER))))
    assert got.pending == 0 and got.final.stranded_percent == 0.0 and got.final.pending_fit == 0
    assert got.final.in_use_percent == pytest.approx(100 * 10 / 32)


@requires_layers("extraction-memo", "simulate-claim-plans", "simulate-shared-verdicts")
def test_copies_never_extract_or_compile_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Extraction runs once per (value combination, request, extractor set), whatever the arrivals;
    no copy compiles anything."""
    from dra_affinity.policies.analysis import scheduler_cel

    extracted: list[str] = []
    compiled: list[str] = []
    real_extract = extraction.extract
    real_compile = scheduler_cel.compile_expression

    def counting_extract(*args: Any, **kwargs: Any) -> Any:
        extracted.append(args[1])
        return real_extract(*args, **kwargs)

    def counting_compile(expression: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(expression)
        return real_compile(expression, *args, **kwargs)

    monkeypatch.setattr(extraction, "extract", counting_extract)
    monkeypatch.setattr(scheduler_cel, "compile_expression", counting_compile)
    slices, templates = model([*pool_slices(5, 2, 16), claim_doc()])
    values = [f"s{k}" for k in range(4)]
    small = done(replay(slices, templates, nic_workload(50, values, Lifetime(LifetimeKind.EXPONENTIAL, 5.0))))
    assert len(extracted) == 4  # 5 pools with the same extractor: shared
    before = len(compiled)
    extracted.clear()
    large = done(
        replay(slices, templates, nic_workload(2000, values, Lifetime(LifetimeKind.EXPONENTIAL, 5.0)))
    )
    assert len(extracted) == 4 and len(compiled) == before
    # what the scheduler itself would evaluate: once per copy and candidate pool
    assert large.metrics.extractor_evaluations_total == 2000 * 5
    assert small.metrics.extractor_evaluations_total == 50 * 5


def test_an_unknown_claim_is_a_problem_not_a_crash() -> None:
    slices, templates = model([*pool_slices(1, 1, 1), claim_doc()])
    workload = Workload(
        "t",
        1,
        5,
        1.0,
        (TemplateSpec("ml/missing", 1.0, Lifetime(LifetimeKind.NEVER), path=("templates", 0)),),
    )
    problems = replay(slices, templates, workload)
    assert isinstance(problems, list) and problems[0].path == ("templates", 0, "claim")


def test_same_workload_same_report() -> None:
    slices, templates = model([*pool_slices(2, 2, 4), claim_doc()])
    workload = nic_workload(200, ["a", "b", "c"], Lifetime(LifetimeKind.EXPONENTIAL, 8.0))
    one = done(replay(slices, templates, workload, mode=Mode.BETA))
    two = done(replay(slices, templates, copy.deepcopy(workload), mode=Mode.BETA))
    assert (one.placed, one.pending, one.series, one.metrics) == (
        two.placed,
        two.pending,
        two.series,
        two.metrics,
    )


@pytest.mark.parametrize("mode", [Mode.ALPHA, Mode.BETA])
def test_a_selector_that_splits_a_pool_is_applied_per_device_as_simulate_does(mode: Mode) -> None:
    """A request selector that takes only some devices of each pool: every copy lands on a
    device it selects (the allocator's per-device selectors), where and as `simulate` places it."""
    docs = pool_slices(2, 4, 6)
    for doc in docs:
        for i, device in enumerate(doc["spec"].get("devices", ())):
            device["attributes"] = {"nic.example.com/index": {"int": i}}
    selector = {"cel": {"expression": 'device.attributes["nic.example.com"].index % 2 == 1'}}
    device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                    "metadata": {"name": "nic.example.com"},
                    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "nic.example.com"'}}]}}

    def with_selector(doc: dict[str, Any]) -> dict[str, Any]:
        spec = doc["spec"]["spec"] if doc["kind"] == "ResourceClaimTemplate" else doc["spec"]
        spec["devices"]["requests"][0]["exactly"]["selectors"] = [selector]
        return doc

    parsed = [parse(d).obj for d in (*docs, device_class)]
    slices = [o for o in parsed if isinstance(o, ResourceSlice)]
    classes = [o for o in parsed if not isinstance(o, ResourceSlice)]
    _, templates = model([with_selector(claim_doc())])
    workload = nic_workload(12, ["s1", "s2"], Lifetime(LifetimeKind.NEVER))
    got = done(replay(slices, templates, workload, mode=mode, classes=classes))  # type: ignore[arg-type]
    built = variants(workload, {c.qualified_name: c for c in templates})
    assert not isinstance(built, list)
    found, index = built
    _, claims = model([with_selector(claim_doc(f"nic-pod-{a.index + 1}", found[a.variant].values[0],
                                               "ResourceClaim")) for a in arrivals(workload, index)])
    want = simulate(slices, claims, [Step(Action.ALLOCATE, c.qualified_name) for c in claims], mode=mode,
                    classes=classes)  # type: ignore[arg-type]
    assert isinstance(want, SimulationReport)
    held = [d for d in got.devices if d.state.holders]
    assert held and all(int(d.ref.device.removeprefix("eth")) % 2 == 1 for d in held)

    def seen(devices: Any) -> list[Any]:
        return [(d.ref, d.state.status, d.state.lock, sorted(h.claim for h in d.state.holders))
                for d in devices]

    assert seen(got.devices) == seen(want.devices)
    assert (got.placed, got.pending) == (12, 0) and not want.unplaced
    assert got.metrics == want.metrics


@pytest.mark.parametrize("mode", [Mode.ALPHA, Mode.BETA])
@pytest.mark.parametrize("speed_layers", ["-simulate-claim-plans", "none"])
def test_the_copies_plans_change_nothing(mode: Mode, speed_layers: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Copies that wait, retry on departures and are refused for their lock report the same
    placements, waits, series, devices and counters (the evaluations counted per copy) whether
    a copy finds its spec's shared verdicts by identity (`simulate-claim-plans`) or reads its
    configs again, and with every speed layer off."""
    slices, templates = model([*pool_slices(2, 2, 3), claim_doc()])
    workload = nic_workload(120, ["a", "b", "c"], Lifetime(LifetimeKind.EXPONENTIAL, 9.0))
    monkeypatch.delenv("DRA_AFFINITY_SPEED_LAYERS", raising=False)
    fast = done(replay(slices, templates, workload, mode=mode))
    monkeypatch.setenv("DRA_AFFINITY_SPEED_LAYERS", speed_layers)
    plain = done(replay(slices, templates, workload, mode=mode))
    assert fast.pending and fast.metrics.lock_conflict_total and fast.waits.max > 0  # the case is exercised
    assert dataclasses.replace(plain, elapsed=0.0) == dataclasses.replace(fast, elapsed=0.0)
