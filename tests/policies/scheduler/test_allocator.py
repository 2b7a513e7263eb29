"""The allocator's search as `simulate` runs it: each rule of kube-scheduler's structured
allocator on a cluster small enough to read (the differential campaign covers the mixtures)."""

from __future__ import annotations

from typing import Any

from dra_affinity.policies.model.resources import DeviceClass, ResourceClaim, ResourceSlice, parse
from dra_affinity.policies.scheduler.allocator import attribute_set, lookup_attribute
from dra_affinity.policies.scheduler.lock_book import LockBook
from dra_affinity.policies.scheduler.lock_report import device_locks
from dra_affinity.policies.scheduler.locks import DeviceRef, Reason
from dra_affinity.policies.scheduler.simulation import SimulationReport, parse_order, simulate

DRIVER = "gpu.example.com"


def device(name: str, multi: bool = False, **attributes: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "attributes": {k: _attr(v) for k, v in attributes.items()}}
    if multi:
        out["allowMultipleAllocations"] = True
        out["capacity"] = {"slots": {"value": "4", "requestPolicy": {"default": "1"}}}
    return out


def _attr(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"bool": value}
    return {"int": value} if isinstance(value, int) else {"string": value}


def cluster(*pools: list[dict[str, Any]], names: list[list[str]] | None = None) -> list[ResourceSlice]:
    """One pool per argument; a pool given as several lists of devices is split over slices."""
    out = []
    for p, devices in enumerate(pools):
        slices = [devices] if not devices or isinstance(devices[0], dict) else devices
        for s, devs in enumerate(slices):
            name = names[p][s] if names else f"pool-{p}-{s}"
            doc = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": name},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": "node-1",
                    "devices": devs,
                    "pool": {"name": f"pool-{p}", "generation": 1, "resourceSliceCount": len(slices)},
                },
            }
            out.append(_model(doc))
    return out


def gpu_class(*selectors: str) -> DeviceClass:
    exprs = [f'device.driver == "{DRIVER}"', *selectors]
    return _model(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]},
        }
    )


def request(name: str = "r0", *selectors: str, cls: str = "gpu", **extra: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, **extra}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: list[dict[str, Any]] | None = None,
    results: list[dict[str, Any]] | None = None,
) -> ResourceClaim:
    devices: dict[str, Any] = {"requests": list(requests) or [request()]}
    if constraints:
        devices["constraints"] = constraints
    doc: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"devices": devices},
    }
    if results is not None:
        doc["status"] = {
            "allocation": {
                "devices": {
                    "results": [{"request": "r0", "driver": DRIVER, "pool": "pool-0", **r} for r in results]
                }
            }
        }
    return _model(doc)


def _model(doc: dict[str, Any]) -> Any:
    result = parse(doc)
    assert result.obj is not None, result.findings
    return result.obj


def run(
    slices: list[ResourceSlice],
    claims: list[ResourceClaim],
    cls: DeviceClass | None = None,
) -> SimulationReport:
    report = simulate(slices, claims, classes=[cls or gpu_class()])
    assert isinstance(report, SimulationReport)
    return report


def placed(report: SimulationReport) -> list[list[str] | None]:
    return [
        [f"{p.request}={p.device.pool}/{p.device.device}" for p in s.placements] if s.placed else None
        for s in report.steps
    ]


def test_selectors_are_decided_per_device_not_per_pool() -> None:
    """The pool has a matching device, but the first one does not match: it is not offered."""
    slices = cluster([device("a", model="x"), device("b", model="y")])
    report = run(slices, [claim("c", request("r0", f'device.attributes["{DRIVER}"].model == "y"'))])
    assert placed(report) == [["r0=pool-0/b"]]


def test_a_selector_error_is_raised_only_when_the_search_reaches_the_device() -> None:
    """b has no `mem`: the first claim takes a and never evaluates b; the second reaches b."""
    slices = cluster([device("a", mem=16), device("b")])
    cls = gpu_class(f'device.attributes["{DRIVER}"].mem >= 8')
    report = run(slices, [claim("one"), claim("two")], cls)
    assert placed(report) == [["r0=pool-0/a"], None]
    failure = report.steps[1].failure
    assert failure is not None and failure.reason is Reason.CEL_EVALUATION_FAILURE
    assert "class gpu: selector #1" in failure.message and "no such key" in failure.message


def test_a_device_in_use_is_skipped_before_its_selectors_run() -> None:
    slices = cluster([device("a"), device("b", mem=16)])
    cls = gpu_class(f'device.attributes["{DRIVER}"].mem >= 8')
    report = run(slices, [claim("bound", results=[{"device": "a"}]), claim("new")], cls)
    assert placed(report) == [["r0=pool-0/b"]]


def test_match_attribute_backtracks_across_requests() -> None:
    """r0 would take a first (numa 0), but r1 only fits c (numa 1): the search goes back to b."""
    slices = cluster([device("a", numa=0), device("b", numa=1), device("c", numa=1, big=True)])
    c = claim(
        "c",
        request("r0"),
        request("r1", f'has(device.attributes["{DRIVER}"].big)'),
        constraints=[{"matchAttribute": f"{DRIVER}/numa"}],
    )
    assert placed(run(slices, [c])) == [["r0=pool-0/b", "r1=pool-0/c"]]


def test_distinct_attribute_scoped_to_requests() -> None:
    slices = cluster([device("a", numa=0), device("b", numa=0), device("c", numa=1)])
    scoped = claim(
        "s",
        request("r0"),
        request("r1"),
        request("r2"),
        constraints=[{"distinctAttribute": f"{DRIVER}/numa", "requests": ["r0", "r2"]}],
    )
    assert placed(run(slices, [scoped])) == [["r0=pool-0/a", "r1=pool-0/b", "r2=pool-0/c"]]


def test_a_constraint_that_cannot_hold_leaves_the_claim_pending_with_the_reason() -> None:
    slices = cluster([device("a", numa=0), device("b", numa=1)])
    c = claim(
        "c",
        request("r0", count=2, allocationMode="ExactCount"),
        constraints=[{"matchAttribute": f"{DRIVER}/numa"}],
    )
    report = run(slices, [c])
    assert placed(report) == [None]
    assert Reason.CONSTRAINT in report.steps[0].reasons


def test_all_drops_full_devices_but_fails_on_one_in_use() -> None:
    shared = cluster([device("a", multi=True), device("b", multi=True), device("c")])
    full = claim(
        "full",
        results=[
            {
                "device": "a",
                "shareID": "00000000-0000-0000-0000-000000000001",
                "consumedCapacity": {"slots": "4"},
            }
        ],
    )
    every = request("r0", allocationMode="All", capacity={"requests": {"slots": "1"}})
    report = run(shared, [full, claim("all", every)])
    assert placed(report) == [["r0=pool-0/b"]]  # a is full, c has no slots: neither is listed
    held = claim("held", results=[{"device": "c"}])
    report = run(shared, [held, claim("all", request("r0", allocationMode="All"))])
    assert placed(report) == [None]  # c is listed and in use: upstream fails the request


def test_all_plus_a_constraint_it_breaks_is_the_allocators_error() -> None:
    slices = cluster([device("a", numa=0), device("b", numa=1)])
    c = claim("c", request("r0", allocationMode="All"), constraints=[{"matchAttribute": f"{DRIVER}/numa"}])
    report = run(slices, [c])
    assert placed(report) == [None]
    failure = report.steps[0].failure
    assert failure is not None and "cannot add device gpu.example.com/pool-0/b" in failure.message


def test_a_first_available_alternative_naming_a_missing_class_fails_the_claim() -> None:
    """The allocator validates every alternative before searching, not only the one it uses."""
    slices = cluster([device("a")])
    c = claim(
        "c",
        {
            "name": "r0",
            "firstAvailable": [
                {"name": "s0", "deviceClassName": "gpu"},
                {"name": "s1", "deviceClassName": "absent"},
            ],
        },
    )
    report = run(slices, [c])
    assert placed(report) == [None]
    failure = report.steps[0].failure
    assert failure is not None and "'absent'" in failure.message


def test_admin_access_ignores_other_claims_and_holds_nothing() -> None:
    slices = cluster([device("a")])
    report = run(
        slices,
        [
            claim("bound", results=[{"device": "a"}]),
            claim("admin", request("r0", adminAccess=True)),
            claim("next"),
        ],
    )
    assert placed(report) == [["r0=pool-0/a"], None]


def test_slices_of_a_pool_are_visited_in_name_order() -> None:
    slices = cluster([[device("z-dev")], [device("a-dev")]], names=[["slice-b", "slice-a"]])
    assert placed(run(slices, [claim("c")])) == [["r0=pool-0/a-dev"]]


def test_a_bound_result_without_share_id_holds_the_whole_device() -> None:
    """Read as kube-scheduler's allocated-device tracker reads it, whatever the slice says now."""
    slices = cluster([device("a", multi=True)])
    whole = claim("whole", results=[{"device": "a"}])
    share = claim("share", results=[{"device": "a", "shareID": "00000000-0000-0000-0000-000000000002"}])
    assert placed(run(slices, [whole, claim("new")])) == [None]
    assert placed(run(slices, [share, claim("new")])) == [["r0=pool-0/a"]]
    ref = DeviceRef(DRIVER, "pool-0", "a")
    assert device_locks(LockBook.build(slices, [whole], feature_gate=True), ref).left == {"slots": "0"}
    # a share without consumedCapacity consumes nothing
    assert device_locks(LockBook.build(slices, [share], feature_gate=True), ref).left == {"slots": "4"}


def test_attributes_as_the_constraints_read_them() -> None:
    dev = parse(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "s"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "n",
                "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [device("a", numa=1, **{"other.io/numa": 2})],
            },
        }
    ).obj
    assert isinstance(dev, ResourceSlice)
    d = dev.devices[0]
    assert lookup_attribute(d, DRIVER, f"{DRIVER}/numa") == {"int": 1}
    assert lookup_attribute(d, DRIVER, "other.io/numa") == {"int": 2}
    assert lookup_attribute(d, DRIVER, "third.io/numa") is None
    assert attribute_set({"int": 1}) == frozenset({("int", 1)})
    assert attribute_set({"strings": ["a", "b"]}) == frozenset({("string", "a"), ("string", "b")})
    assert attribute_set({}) is None


def test_the_search_of_one_claim_is_bounded(monkeypatch: Any) -> None:
    """Constraints can make the search exponential: past its budget the claim is not placed."""
    from dra_affinity.policies.scheduler import allocator

    monkeypatch.setattr(allocator, "MAX_STEPS", 5)
    slices = cluster([device(f"d{i}", numa=i) for i in range(6)])
    c = claim("c", request("r0", count=2, allocationMode="ExactCount"),
              constraints=[{"matchAttribute": f"{DRIVER}/numa"}])
    report = run(slices, [c])
    assert placed(report) == [None]
    failure = report.steps[0].failure
    assert failure is not None and "gave up after 5 device visits" in failure.message


def test_a_bound_admin_access_result_holds_nothing() -> None:
    """allocateddevices.go skips admin-access results: the device stays free for others."""
    slices = cluster([device("a")])
    admin = claim("admin", results=[{"device": "a", "adminAccess": True}])
    assert placed(run(slices, [admin, claim("new")])) == [["r0=pool-0/a"]]


def _pod(slices: list[ResourceSlice], claims: list[ResourceClaim], order: str,
         cls: DeviceClass | None = None) -> SimulationReport:
    report = simulate(slices, claims, parse_order(order), classes=[cls or gpu_class()])
    assert isinstance(report, SimulationReport)
    return report


def test_a_pods_claims_are_one_search_that_moves_an_earlier_claim() -> None:
    """Alone, `any` takes a and `big` finds nothing; as one pod (`a+b`), the search moves `any`
    to b so that `big` gets a, as kube-scheduler's one Allocate call for the pod does."""
    slices = cluster([device("a", big=True), device("b")])
    claims = [claim("any"), claim("big", request("r0", f'has(device.attributes["{DRIVER}"].big)'))]
    assert placed(_pod(slices, claims, "ns/any,ns/big")) == [["r0=pool-0/a"], None]
    together = _pod(slices, claims, "ns/any+ns/big")
    assert placed(together) == [["r0=pool-0/b"], ["r0=pool-0/a"]]
    assert {str(d.ref.device): [h.claim for h in d.state.holders] for d in together.devices} == {
        "a": ["ns/big"], "b": ["ns/any"]}


def test_a_pod_that_cannot_be_placed_whole_holds_nothing() -> None:
    """Two claims, one device: the scheduler reserves a pod's claims only together."""
    slices = cluster([device("a")])
    report = _pod(slices, [claim("one"), claim("two")], "ns/one+ns/two")
    assert [s.placed for s in report.steps] == [True, False]
    assert all(not d.state.holders for d in report.devices)
    assert any("none of them is allocated" in note for note in report.notes)


def test_a_devices_taken_whole_by_one_claim_is_taken_for_the_pods_other_claims() -> None:
    slices = cluster([device("a"), device("b")])
    report = _pod(slices, [claim("one"), claim("two")], "ns/one+ns/two")
    assert placed(report) == [["r0=pool-0/a"], ["r0=pool-0/b"]]


def test_the_joint_search_keeps_each_claims_constraints_to_itself() -> None:
    """`pair` needs two devices of one numa, `lone` any one. First fit gives `lone` a, leaving
    `pair` b and c (numas 0 and 1); the pod's search moves `lone` to c so that `pair`'s
    constraint holds on a and b, while `lone` is not bound by it."""
    slices = cluster([device("a", numa=0), device("b", numa=0), device("c", numa=1)])
    lone = claim("lone")
    pair = claim("pair", request("r0", count=2, allocationMode="ExactCount"),
                 constraints=[{"matchAttribute": f"{DRIVER}/numa"}])
    assert placed(_pod(slices, [lone, pair], "ns/lone,ns/pair")) == [["r0=pool-0/a"], None]
    assert placed(_pod(slices, [lone, pair], "ns/lone+ns/pair")) == [
        ["r0=pool-0/c"], ["r0=pool-0/a", "r0=pool-0/b"]]


def test_a_device_an_admin_access_claim_takes_is_in_use_for_the_pods_other_claims() -> None:
    """Within one Allocate call an admin-access request's device is allocating: the pod's other
    claim skips it (before its selectors run); claim by claim it would be free again."""
    slices = cluster([device("a"), device("b", mem=16)])
    admin = claim("admin", request("r0", adminAccess=True))
    other = claim("other", request("r0", f'device.attributes["{DRIVER}"].mem >= 8'))
    apart = _pod(slices, [admin, other], "ns/admin,ns/other")  # other evaluates a: no `mem`
    assert placed(apart) == [["r0=pool-0/a"], None]
    failure = apart.steps[1].failure
    assert failure is not None and failure.reason is Reason.CEL_EVALUATION_FAILURE
    assert placed(_pod(slices, [admin, other], "ns/admin+ns/other")) == [["r0=pool-0/a"], ["r0=pool-0/b"]]
    slices = cluster([device("a", mem=16), device("b", mem=32)])
    assert placed(_pod(slices, [admin, other], "ns/admin,ns/other")) == [["r0=pool-0/a"], ["r0=pool-0/a"]]
    assert placed(_pod(slices, [admin, other], "ns/admin+ns/other")) == [["r0=pool-0/a"], ["r0=pool-0/b"]]

