"""SPEC §6: lock states and transitions, viability, reconstruction, device choice, gate, metrics."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from dra_affinity.policies.core.findings import PoolRef
from dra_affinity.policies.model.resources import Device, DeviceRequest, ResourceClaim, ResourceSlice, parse
from dra_affinity.policies.scheduler import capacity, locks
from dra_affinity.policies.scheduler.diagnostics import Diagnostic
from dra_affinity.policies.scheduler.extraction import ExtractionProblem, ExtractionResult, Outcome
from dra_affinity.policies.scheduler.locks import (
    CLEAN,
    UNTRACKED,
    DeviceRef,
    DeviceState,
    Holder,
    LockStatus,
    Mode,
    Option,
    PoolFilterVerdict,
    Reason,
    Rejection,
)
from dra_affinity.policies.scheduler.simulation import (
    Action,
    SimulationProblem,
    SimulationReport,
    Step,
    parse_order,
    simulate,
)

DRIVER = "nic.example.com"
POOL = PoolRef(DRIVER, "node-e")
REF = DeviceRef(DRIVER, "node-e", "eth1")
SUBNET = 'object.?kind.orValue("") == "NICConfig" ? object.?subnetID.orValue("") : ""'
X = {"subnet": "X"}
Y = {"subnet": "Y"}


def holder(claim: str, request: str = "nic", consumed: dict[str, int] | None = None) -> Holder:
    return Holder(claim, request, {k: Fraction(v) for k, v in (consumed or {}).items()})


def result(outcome: Outcome, affinity: dict[str, str] | None = None, **kw: Any) -> ExtractionResult:
    return ExtractionResult("ns/c", "nic", POOL, outcome, affinity=affinity, **kw)


def device(caps: dict[str, Any] | None = None, *, shared: bool = True) -> Device:
    """`caps`: name -> value, or name -> (value, requestPolicy)."""
    from dra_affinity.policies.model.resources import Capacity

    built = {k: Capacity(v) if isinstance(v, str) else Capacity(v[0], v[1]) for k, v in (caps or {}).items()}
    return Device(0, "eth1", shared, {}, built)


def request(**capacity_requests: str) -> DeviceRequest:
    return DeviceRequest("nic", None, "nic.example.com", capacity_requests=capacity_requests)


# -- transitions ------------------------------------------------------------------------------


def test_allocating_on_a_clean_device_sets_the_lock() -> None:
    after = locks.allocate(CLEAN, holder("ns/a"), X)
    assert isinstance(after, DeviceState)
    assert (after.status, after.lock, [h.claim for h in after.holders]) == (LockStatus.LOCKED, X, ["ns/a"])


def test_a_matching_claim_joins_the_lock_and_a_different_one_is_rejected() -> None:
    locked = locks.allocate(CLEAN, holder("ns/a"), X)
    assert isinstance(locked, DeviceState)
    joined = locks.allocate(locked, holder("ns/b"), dict(X))
    assert isinstance(joined, DeviceState)
    assert joined.lock == X and [h.claim for h in joined.holders] == ["ns/a", "ns/b"]
    refused = locks.allocate(joined, holder("ns/c"), Y, str(REF))
    assert isinstance(refused, Rejection)
    assert refused.reason is Reason.LOCK_MISMATCH and refused.diagnostic is Diagnostic.LOCK_MISMATCH
    assert "subnet=X" in refused.message and "subnet=Y" in refused.message
    assert str(REF) in refused.message


def test_a_lock_with_another_key_set_does_not_match() -> None:
    locked = DeviceState(LockStatus.LOCKED, X, (holder("ns/a"),))
    refused = locks.allocate(locked, holder("ns/b"), {**X, "pkey": "1"})
    assert isinstance(refused, Rejection) and refused.reason is Reason.LOCK_MISMATCH


def test_unreconstructable_devices_take_no_new_claims() -> None:
    unknown = DeviceState(LockStatus.UNRECONSTRUCTABLE, None, (holder("ns/legacy"),), "legacy claim")
    refused = locks.allocate(unknown, holder("ns/a"), X)
    assert isinstance(refused, Rejection)
    assert refused.diagnostic is Diagnostic.UNKNOWN_LOCK_STATE
    assert "legacy claim" in refused.message


def test_a_tracked_device_needs_an_affinity_map() -> None:
    refused = locks.allocate(CLEAN, holder("ns/a"), None)
    assert isinstance(refused, Rejection) and refused.reason is Reason.NO_KEYS_EXTRACTED


def test_untracked_devices_keep_holders_and_no_lock() -> None:
    after = locks.allocate(UNTRACKED, holder("ns/a"), None)
    assert isinstance(after, DeviceState)
    assert (after.status, after.lock, len(after.holders)) == (LockStatus.UNTRACKED, None, 1)
    assert locks.release(after, "ns/a") == UNTRACKED


def test_releasing_the_last_claim_clears_the_lock() -> None:
    state = DeviceState(LockStatus.LOCKED, X, (holder("ns/a"), holder("ns/b"), holder("ns/a", "other")))
    one_left = locks.release(state, "ns/a")
    assert (one_left.status, one_left.lock, [h.claim for h in one_left.holders]) == (
        LockStatus.LOCKED, X, ["ns/b"])
    assert locks.release(one_left, "ns/b") == CLEAN
    assert locks.release(one_left, "ns/unknown") == one_left


def test_unreconstructable_stays_until_every_claim_drains() -> None:
    state = DeviceState(LockStatus.UNRECONSTRUCTABLE, None, (holder("ns/a"), holder("ns/b")), "disagree")
    partly = locks.release(state, "ns/a")
    assert partly.status is LockStatus.UNRECONSTRUCTABLE and partly.reason == "disagree"
    assert locks.release(partly, "ns/b") == CLEAN


# -- reconstruction ---------------------------------------------------------------------------


def test_reconstruction_of_agreeing_claims_locks() -> None:
    state = locks.reconstruct([(holder("ns/a"), result(Outcome.OK, X)),
                               (holder("ns/b"), result(Outcome.OK, dict(X)))])
    assert (state.status, state.lock, len(state.holders)) == (LockStatus.LOCKED, X, 2)
    assert locks.reconstruct([]) == CLEAN


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        (result(Outcome.NOT_SATISFIED, unsatisfied=("subnet",)), "no value extracted for subnet"),
        (result(Outcome.SLICE_ERROR, error=ExtractionProblem("missing field", "no such key: subnetID")),
         "slice-error: no such key: subnetID"),
        (result(Outcome.CLAIM_INCONSISTENT, error=ExtractionProblem("claim self-inconsistent", "two values")),
         "claim-inconsistent: two values"),
    ],
)
def test_reconstruction_fails_closed_on_any_extraction_problem(bad: ExtractionResult, fragment: str) -> None:
    state = locks.reconstruct([(holder("ns/good"), result(Outcome.OK, X)), (holder("ns/bad"), bad)])
    assert state.status is LockStatus.UNRECONSTRUCTABLE and state.lock is None
    assert "claim ns/bad" in state.reason and fragment in state.reason
    assert [h.claim for h in state.holders] == ["ns/good", "ns/bad"]


def test_reconstruction_of_disagreeing_claims_is_unreconstructable() -> None:
    state = locks.reconstruct([(holder("ns/a"), result(Outcome.OK, X)),
                               (holder("ns/b"), result(Outcome.OK, Y))])
    assert state.status is LockStatus.UNRECONSTRUCTABLE
    assert "disagree" in state.reason and "subnet=X" in state.reason and "subnet=Y" in state.reason


# -- pool verdicts and per-device viability ---------------------------------------------------


def test_pool_prechecks() -> None:
    incomplete = locks.pool_precheck(declares_affinity=True, complete=False, incomplete_reason="1 of 2",
                                     feature_gate=True)
    assert incomplete is not None and incomplete.rejection is not None
    assert incomplete.rejection.reason is Reason.POOL_INCOMPLETE and "1 of 2" in incomplete.rejection.message
    gate_off = locks.pool_precheck(declares_affinity=True, complete=True, incomplete_reason="",
                                   feature_gate=False)
    assert gate_off is not None and gate_off.rejection is not None
    assert gate_off.rejection.reason is Reason.FEATURE_GATE_OFF and gate_off.pool_level
    permissive = locks.pool_precheck(declares_affinity=False, complete=True, incomplete_reason="",
                                     feature_gate=False)
    assert permissive == PoolFilterVerdict(False)
    assert locks.pool_precheck(declares_affinity=True, complete=True, incomplete_reason="",
                               feature_gate=True) is None


@pytest.mark.parametrize(
    ("outcome", "reason"),
    [
        (Outcome.NOT_SATISFIED, Reason.NO_KEYS_EXTRACTED),
        (Outcome.SLICE_ERROR, Reason.CEL_EVALUATION_FAILURE),
        (Outcome.CLAIM_INCONSISTENT, Reason.CLAIM_INCONSISTENT),
    ],
)
def test_extraction_outcomes_rule_out_the_whole_pool(outcome: Outcome, reason: Reason) -> None:
    verdict = locks.pool_verdict(result(outcome, unsatisfied=("subnet",),
                                        error=ExtractionProblem("k", "the message")))
    assert verdict.rejection is not None and verdict.rejection.reason is reason
    assert verdict.aborts == (reason is Reason.CEL_EVALUATION_FAILURE)
    assert locks.check_device(device(), REF, CLEAN, verdict, {}) == (verdict.rejection,)


def test_viable_devices() -> None:
    ok = locks.pool_verdict(result(Outcome.OK, X))
    assert ok.tracked and ok.affinity == X
    assert locks.check_device(device(), REF, CLEAN, ok, {}) == ()
    same = DeviceState(LockStatus.LOCKED, dict(X), (holder("ns/a"),))
    assert locks.check_device(device(), REF, same, ok, {}) == ()
    # permissive pool: any claim, any state of other claims, no lock
    assert locks.check_device(device(), REF, DeviceState(LockStatus.UNTRACKED, holders=(holder("ns/a"),)),
                              PoolFilterVerdict(False), {}) == ()


def test_lock_mismatch_and_unknown_lock_state() -> None:
    ok = locks.pool_verdict(result(Outcome.OK, Y))
    other = DeviceState(LockStatus.LOCKED, X, (holder("ns/a"),))
    [mismatch] = locks.check_device(device(), REF, other, ok, {})
    assert mismatch.reason is Reason.LOCK_MISMATCH and mismatch.diagnostic is Diagnostic.LOCK_MISMATCH
    unknown = DeviceState(LockStatus.UNRECONSTRUCTABLE, None, (holder("ns/a"),), "legacy")
    [why] = locks.check_device(device(), REF, unknown, ok, {})
    assert why.diagnostic is Diagnostic.UNKNOWN_LOCK_STATE and "legacy" in why.message


def test_reasons_come_in_the_keps_filter_order() -> None:
    """Capacity (1) before lock (5): the first reason is what the scheduler reports and counts."""
    dev = device({"nic.example.com/pods": ("2", {"default": "1"})})
    full = DeviceState(LockStatus.LOCKED, X, (holder("ns/a", consumed={"nic.example.com/pods": 2}),))
    wanted = capacity.demand(dev, request())
    reasons = locks.check_device(dev, REF, full, locks.pool_verdict(result(Outcome.OK, Y)), wanted)
    assert [r.reason for r in reasons] == [Reason.CAPACITY, Reason.LOCK_MISMATCH]
    assert "2 of 2 consumed" in reasons[0].message


def test_exclusive_devices_take_one_claim() -> None:
    dev = device(shared=False)
    taken = DeviceState(LockStatus.UNTRACKED, holders=(holder("ns/a"),))
    [why] = locks.check_device(dev, REF, taken, PoolFilterVerdict(False), {})
    assert why.reason is Reason.IN_USE and "ns/a" in why.message


def test_capacity_problem_from_demand_is_a_reason() -> None:
    dev = device({"nic.example.com/pods": "16"})
    wanted = capacity.demand(dev, request(**{"nic.example.com/gbps": "10"}))
    assert isinstance(wanted, capacity.CapacityProblem)
    [why] = locks.check_device(dev, REF, CLEAN, PoolFilterVerdict(False), wanted)
    assert why.reason is Reason.CAPACITY and "no capacity 'nic.example.com/gbps'" in why.message


# -- KEP-5075 capacity ------------------------------------------------------------------------


def test_unrequested_capacity_without_policy_consumes_the_whole_device() -> None:
    dev = device({"c": "4"})
    assert capacity.demand(dev, request()) == {"c": Fraction(4)}
    assert capacity.fits(dev, {"c": Fraction(4)}, {"c": Fraction(4)}) is not None
    assert capacity.fits(dev, {}, {"c": Fraction(4)}) is None


def test_policy_default_and_explicit_requests() -> None:
    dev = device({"c": ("10", {"default": "1"})})
    assert capacity.demand(dev, request()) == {"c": Fraction(1)}
    assert capacity.demand(dev, request(c="3")) == {"c": Fraction(3)}


def test_valid_values_round_up_and_reject_above_the_largest() -> None:
    dev = device({"mem": ("16Gi", {"default": "1Gi", "validValues": ["1Gi", "4Gi", "8Gi"]})})
    assert capacity.demand(dev, request(mem="2Gi")) == {"mem": Fraction(4 * 2**30)}
    assert capacity.demand(dev, request(mem="8Gi")) == {"mem": Fraction(8 * 2**30)}
    too_big = capacity.demand(dev, request(mem="9Gi"))
    assert isinstance(too_big, capacity.CapacityProblem) and "exceeds every valid value" in too_big.message


def test_valid_range_min_step_and_max() -> None:
    policy = {"default": "10", "validRange": {"min": "10", "max": "40", "step": "5"}}
    dev = device({"bw": ("100", policy)})
    assert capacity.demand(dev, request(bw="1")) == {"bw": Fraction(10)}
    assert capacity.demand(dev, request(bw="11")) == {"bw": Fraction(15)}
    assert capacity.demand(dev, request(bw="40")) == {"bw": Fraction(40)}
    over = capacity.demand(dev, request(bw="41"))
    assert isinstance(over, capacity.CapacityProblem) and "maximum 40" in over.message


def test_quantities_are_exact() -> None:
    dev = device({"c": ("1", {"default": "500m"})})
    half = capacity.demand(dev, request())
    assert half == {"c": Fraction(1, 2)}
    assert capacity.fits(dev, {"c": Fraction(1, 2)}, half) is None
    assert capacity.fits(dev, {"c": Fraction(1)}, {"c": Fraction(1, 2)}) is not None
    assert capacity.render(Fraction(3, 2)) == "1500m"
    assert capacity.render(Fraction(16)) == "16"
    assert capacity.amount("banana") is None
    bad = capacity.demand(device({"c": "1"}), request(c="lots"))
    assert isinstance(bad, capacity.CapacityProblem) and "not a quantity" in bad.message


# -- device choice ----------------------------------------------------------------------------


def test_alpha_is_first_fit_and_beta_prefers_a_compatible_lock() -> None:
    clean = Option(DeviceRef(DRIVER, "node-e", "eth1"), CLEAN, 0)
    locked = Option(DeviceRef(DRIVER, "node-e", "eth2"), DeviceState(LockStatus.LOCKED, X), 1)
    later_pool = Option(DeviceRef(DRIVER, "node-f", "eth1"), CLEAN, 2)
    unknown_pool = Option(DeviceRef(DRIVER, "node-d", "eth1"), CLEAN, 3, pool_has_unknown=True)
    options = [unknown_pool, later_pool, locked, clean]
    assert [o.position for o in locks.rank(Mode.ALPHA, options)] == [0, 1, 2, 3]
    assert [o.position for o in locks.rank(Mode.BETA, options)] == [1, 0, 2, 3]


# -- names and metrics ------------------------------------------------------------------------


def test_reasons_map_to_the_keps_four_classes() -> None:
    classes = {r: r.diagnostic for r in Reason if r.diagnostic is not None}
    assert set(classes.values()) == set(Diagnostic)
    assert Reason.CAPACITY.diagnostic is None and Reason.FEATURE_GATE_OFF.diagnostic is None


def test_metric_names_are_the_keps() -> None:
    metrics = locks.LockMetrics(1, 2, 3, 4, 5, 6).as_dict()
    assert metrics == {
        "sharing_affinity_locked_devices": 1,
        "sharing_affinity_unreconstructable_devices": 2,
        "sharing_affinity_extractor_evaluations_total": 3,
        "sharing_affinity_lock_conflict_total": 4,
        "sharing_affinity_no_keys_extracted_total": 5,
        "sharing_affinity_compatible_reuse_total": 6,
    }


# -- the simulator, end to end on model objects -----------------------------------------------


def slices(*device_names: str, expression: str = SUBNET, affinity: bool = True,
           cap: str = "16", policy: dict[str, Any] | None = None, pool: str = "node-e",
           count: int = 2) -> list[ResourceSlice]:
    spec = {"driver": DRIVER, "nodeName": pool, "pool": {"name": pool, "generation": 1,
                                                          "resourceSliceCount": count if affinity else 1}}
    capacity_entry: dict[str, Any] = {"value": cap}
    capacity_entry["requestPolicy"] = policy if policy is not None else {"default": "1"}
    devices = {**spec, "devices": [
        {"name": n, "allowMultipleAllocations": True, "capacity": {"pods": capacity_entry}}
        for n in device_names]}
    docs = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
             "metadata": {"name": f"{pool}-0"}, "spec": devices}]
    if affinity:
        docs.insert(0, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                        "metadata": {"name": f"{pool}-meta"},
                        "spec": {**spec, "sharingAffinity": [{"name": "subnet", "expression": expression}]}})
    out = [parse(d).obj for d in docs]
    assert all(isinstance(s, ResourceSlice) for s in out)
    return out  # type: ignore[return-value]


def claim(name: str, subnet: str | None, *, bound: str | None = None, pool: str = "node-e",
          requests: list[dict[str, Any]] | None = None, configs: list[dict[str, Any]] | None = None,
          consumed: dict[str, str] | None = None) -> ResourceClaim:
    params: dict[str, Any] = {"kind": "NICConfig"}
    if subnet is not None:
        params["subnetID"] = subnet
    doc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"devices": {
            "requests": requests or [{"name": "nic", "exactly": {"deviceClassName": "nic"}}],
            "config": configs if configs is not None else [
                {"opaque": {"driver": DRIVER, "parameters": params}}],
        }},
    }
    if bound:
        # as the allocator writes a share of a device that allows multiple allocations: a
        # shareID and what it consumed (the request's default 1 pod unless said otherwise)
        result_: dict[str, Any] = {"request": "nic", "driver": DRIVER, "pool": pool, "device": bound,
                                   "shareID": f"00000000-0000-0000-0000-{sum(map(ord, name)):012d}",
                                   "consumedCapacity": consumed or {"pods": "1"}}
        doc["status"] = {"allocation": {"devices": {"results": [result_]}}}
    parsed = parse(doc)
    assert isinstance(parsed.obj, ResourceClaim), parsed.findings
    return parsed.obj


def run(slices_: list[ResourceSlice], claims: list[ResourceClaim], order: str | None = None,
        **kw: Any) -> SimulationReport:
    report = simulate(slices_, claims, parse_order(order) if order is not None else None, **kw)
    assert isinstance(report, SimulationReport), report
    return report


def placed(report: SimulationReport) -> list[str | None]:
    return [s.placements[0].device.device if s.placed and s.placements else None
            for s in report.steps if s.step.action is Action.ALLOCATE]


def test_order_syntax() -> None:
    assert parse_order("a, ns/b,-a,,c") == [
        Step(Action.ALLOCATE, "a"), Step(Action.ALLOCATE, "ns/b"), Step(Action.RELEASE, "a"),
        Step(Action.ALLOCATE, "c")]


def test_story_shape_first_fit_and_metrics() -> None:
    report = run(slices("eth1", "eth2"), [claim("a", "X"), claim("b", "X"), claim("c", "Y")])
    assert placed(report) == ["eth1", "eth1", "eth2"]
    assert report.metrics.as_dict() == {
        "sharing_affinity_locked_devices": 2,
        "sharing_affinity_unreconstructable_devices": 0,
        "sharing_affinity_extractor_evaluations_total": 3,  # once per (claim, request, pool)
        "sharing_affinity_lock_conflict_total": 1,
        "sharing_affinity_no_keys_extracted_total": 0,
        "sharing_affinity_compatible_reuse_total": 1,
    }
    third = report.steps[2]
    assert [(e.device.device, e.viable) for e in third.evaluated] == [("eth1", False), ("eth2", True)]


def test_extraction_runs_once_per_claim_request_pool_however_many_devices() -> None:
    names = [f"eth{i}" for i in range(30)]
    report = run(slices(*names, cap="1"), [claim(f"c{i}", "X") for i in range(3)], mode=Mode.BETA)
    assert report.metrics.extractor_evaluations_total == 3
    assert placed(report) == ["eth0", "eth1", "eth2"]  # capacity 1: each fills a device


def test_beta_prefers_the_compatible_lock_alpha_takes_the_first() -> None:
    claims = [claim("running", "X", bound="eth2"), claim("a", "X")]
    alpha = run(slices("eth1", "eth2"), claims)
    beta = run(slices("eth1", "eth2"), claims, mode=Mode.BETA)
    assert placed(alpha) == ["eth1"] and alpha.metrics.compatible_reuse_total == 0
    assert placed(beta) == ["eth2"] and beta.metrics.compatible_reuse_total == 1
    assert beta.steps[0].placements[0].reused and beta.steps[0].placements[0].before is LockStatus.LOCKED


def test_beta_puts_pools_with_unknown_devices_last() -> None:
    both = slices("eth1", "eth2", pool="node-a") + slices("eth1", pool="node-b")
    claims = [claim("legacy", None, bound="eth2", pool="node-a"), claim("a", "X")]
    assert placed(run(both, claims)) == ["eth1"]
    beta = run(both, claims, mode=Mode.BETA)
    assert [p.device for p in beta.steps[0].placements] == [DeviceRef(DRIVER, "node-b", "eth1")]
    assert beta.metrics.unreconstructable_devices == 1


def test_reconstruction_from_bound_claims() -> None:
    claims = [claim("a", "X", bound="eth1"), claim("b", "X", bound="eth1"),
              claim("legacy", None, bound="eth2"), claim("new", "Y")]
    report = run(slices("eth1", "eth2"), claims)
    before = {d.ref.device: d.state for d in report.reconstructed}
    assert before["eth1"].status is LockStatus.LOCKED and before["eth1"].lock == X
    assert all(h.bound for h in before["eth1"].holders)
    assert before["eth2"].status is LockStatus.UNRECONSTRUCTABLE and "ns/legacy" in before["eth2"].reason
    [step] = report.steps
    assert not step.placed
    assert step.reasons == (Reason.LOCK_MISMATCH, Reason.UNKNOWN_LOCK_STATE)
    assert step.diagnostics == (Diagnostic.LOCK_MISMATCH, Diagnostic.UNKNOWN_LOCK_STATE)
    assert report.metrics.unreconstructable_devices == 1 and report.metrics.locked_devices == 1


def test_legacy_device_drains_then_locks_anew() -> None:
    claims = [claim("legacy", None, bound="eth1"), claim("new", "Y")]
    report = run(slices("eth1"), claims, "ns/new,-ns/legacy,ns/new")
    assert placed(report) == [None, "eth1"]
    assert report.steps[0].reasons == (Reason.UNKNOWN_LOCK_STATE,)
    assert [str(r) for r in report.steps[1].released] == [str(REF)]
    final = {d.ref.device: d.state for d in report.devices}
    assert final["eth1"].lock == Y


def test_bound_claims_that_disagree_make_the_device_unreconstructable() -> None:
    report = run(slices("eth1"), [claim("a", "X", bound="eth1"), claim("b", "Y", bound="eth1")])
    [device_report] = report.reconstructed
    assert device_report.state.status is LockStatus.UNRECONSTRUCTABLE
    assert "disagree" in device_report.state.reason


def test_bound_consumption_comes_from_consumed_capacity() -> None:
    claims = [claim("big", "X", bound="eth1", consumed={"pods": "15"}), claim("a", "X"), claim("b", "X")]
    report = run(slices("eth1"), claims)
    assert placed(report) == ["eth1", None]
    assert report.steps[1].reasons == (Reason.CAPACITY,)
    assert report.devices[0].consumed == {"pods": "16"}


def test_capacity_exhaustion_makes_a_compatible_device_unviable() -> None:
    report = run(slices("eth1", cap="2"), [claim(c, "X") for c in "abc"])
    assert placed(report) == ["eth1", "eth1", None]
    assert "2 of 2 consumed" in (report.steps[2].evaluated[0].rejections[0].message)


def test_feature_gate_off_makes_affinity_pools_unallocatable_and_runs_no_cel() -> None:
    both = slices("eth1", pool="node-a") + slices("eth9", affinity=False, pool="node-z")
    report = run(both, [claim("a", "X")], feature_gate=False)
    assert placed(report) == ["eth9"]  # the permissive pool still serves
    only_affinity = run(slices("eth1"), [claim("a", "X")], feature_gate=False)
    assert only_affinity.steps[0].reasons == (Reason.FEATURE_GATE_OFF,)
    assert only_affinity.metrics.extractor_evaluations_total == 0
    assert {d.state.status for d in only_affinity.devices} == {LockStatus.UNTRACKED}


def test_permissive_pools_take_any_claim_and_keep_no_lock() -> None:
    report = run(slices("eth1", affinity=False), [claim("a", "X"), claim("b", "Y"), claim("c", None)])
    assert placed(report) == ["eth1", "eth1", "eth1"]
    assert report.devices[0].state.status is LockStatus.UNTRACKED and report.devices[0].state.lock is None
    assert report.metrics.locked_devices == 0


def test_strict_gating_routes_keyless_claims_to_permissive_pools() -> None:
    both = slices("eth1", pool="node-a") + slices("eth9", affinity=False, pool="node-z")
    report = run(both, [claim("keyless", None)])
    assert placed(report) == ["eth9"]
    assert report.metrics.no_keys_extracted_total == 1
    assert report.steps[0].evaluated[0].rejections[0].diagnostic is Diagnostic.NO_KEYS_EXTRACTED


def test_a_slice_error_aborts_the_claim() -> None:
    both = slices("eth1", expression="object.subnetID", pool="node-a") + slices("eth9", affinity=False,
                                                                                pool="node-z")
    report = run(both, [claim("a", None)])
    [step] = report.steps
    assert not step.placed and step.reasons == (Reason.CEL_EVALUATION_FAILURE,)
    assert step.diagnostics == (Diagnostic.CEL_EVALUATION_FAILURE,)
    assert step.failure is not None and "missing field" in step.failure.message


def test_an_incomplete_pool_is_skipped() -> None:
    report = run(slices("eth1", count=3), [claim("a", "X")])
    assert report.steps[0].reasons == (Reason.POOL_INCOMPLETE,)
    assert report.devices[0].state.status is LockStatus.UNTRACKED


def test_a_claim_is_placed_whole_or_not_at_all() -> None:
    two = [{"name": "a", "exactly": {"deviceClassName": "nic"}},
           {"name": "b", "exactly": {"deviceClassName": "nic"}}]
    configs = [{"requests": ["a"], "opaque": {"driver": DRIVER, "parameters": {"kind": "NICConfig",
                                                                             "subnetID": "X"}}},
               {"requests": ["b"], "opaque": {"driver": DRIVER, "parameters": {"kind": "NICConfig",
                                                                             "subnetID": "Y"}}}]
    report = run(slices("eth1"), [claim("pair", None, requests=two, configs=configs)])
    [step] = report.steps
    assert not step.placed and step.failed_request == "b"
    assert step.reasons == (Reason.LOCK_MISMATCH,)  # against request a's tentative lock
    assert report.devices[0].state == CLEAN  # Unreserve: the tentative lock is rolled back
    ok = run(slices("eth1", "eth2"), [claim("pair", None, requests=two, configs=configs)])
    assert [(p.request, p.device.device, dict(p.lock or {})) for p in ok.steps[0].placements] == [
        ("a", "eth1", {"subnet": "X"}), ("b", "eth2", {"subnet": "Y"})]


def test_first_available_falls_back_and_count_takes_distinct_devices() -> None:
    sub = [{"name": "nic", "firstAvailable": [
        {"name": "big", "deviceClassName": "nic", "capacity": {"requests": {"pods": "32"}}},
        {"name": "small", "deviceClassName": "nic", "count": 2}]}]
    report = run(slices("eth1", "eth2"), [claim("a", "X", requests=sub)])
    [step] = report.steps
    assert step.placed and [(p.request, p.device.device) for p in step.placements] == [
        ("nic/small", "eth1"), ("nic/small", "eth2")]
    assert {e.request for e in step.evaluated} == {"nic/big", "nic/small"}


def test_steps_that_cannot_run_are_problems_not_reports() -> None:
    claims = [claim("bound", "X", bound="eth1"), claim("a", "X")]
    problems = simulate(slices("eth1"), claims, parse_order("nobody,ns/bound,-ns/a,ns/a"))
    assert isinstance(problems, list) and all(isinstance(p, SimulationProblem) for p in problems)
    messages = " | ".join(p.message for p in problems)
    assert "'default/nobody' is not in the input" in messages
    assert "'ns/bound' is already allocated" in messages
    assert "'ns/a' is neither allocated" in messages


def test_default_order_is_every_unallocated_claim_in_input_order() -> None:
    claims = [claim("c", "Y"), claim("bound", "X", bound="eth1"), claim("a", "X")]
    report = run(slices("eth1", "eth2"), claims)
    assert [s.step.claim for s in report.steps] == ["ns/c", "ns/a"]
    assert placed(report) == ["eth2", "eth1"]


def test_a_failed_allocation_leaves_nothing_to_release() -> None:
    report = run(slices("eth1"), [claim("a", "X"), claim("c", "Y")], "ns/a,ns/c,-ns/c")
    assert placed(report) == ["eth1", None]
    assert report.steps[2].released == ()
    assert any("holds no device" in n for n in report.notes)
