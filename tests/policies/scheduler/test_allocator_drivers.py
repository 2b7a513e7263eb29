"""Real drivers' slices with sharing affinity: every door answers as the scheduler would.

`tests/data/drivers/` holds dranet's and dra-example-driver's devices, classes and claims with
KEP-5981 extractors written as their authors would (README.md there says what comes from where).
The expected answers were worked out by hand from the KEP and upstream's allocator, and every
value an extractor yields, and every outcome an advisory states, is reproduced by evaluation
(the project's `cel check`, and the real CEL of `shared/oracle/celoracle` where it runs).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli import REPO, run

DATA = REPO / "tests" / "data" / "drivers"
DRANET = DATA / "dranet"
EXAMPLE = DATA / "dra-example-driver"
CELORACLE = REPO.parent / "shared" / "oracle" / "celoracle"


def _json(*args: str, code: int = 0) -> Any:
    done = run(*args, "--format", "json")
    assert done.code == code, done.err
    return done.json()


def _celoracle(lines: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The real CEL's answers, or None where the oracle is absent or cannot run."""
    if not CELORACLE.is_file():
        return None
    try:
        done = subprocess.run(["prlimit", "--as=3221225472", str(CELORACLE)], capture_output=True,
                              input="".join(json.dumps(x) + "\n" for x in lines).encode(), timeout=120,
                              check=False)
    except OSError:
        return None
    if done.returncode != 0:
        return None
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def _extractors(path: Path) -> dict[str, str]:
    meta = next(d for d in yaml.safe_load_all(path.read_text()) if d and d["spec"].get("sharingAffinity"))
    return {e["name"]: e["expression"] for e in meta["spec"]["sharingAffinity"]}


def _configs(path: Path) -> dict[str, Any]:
    return {f"{d['metadata']['namespace']}/{d['metadata']['name']}": d["spec"]["devices"]["config"][0]
            ["opaque"]["parameters"] for d in yaml.safe_load_all(path.read_text())
            if d and d["kind"] == "ResourceClaim" and d["spec"]["devices"].get("config")}


# -- dranet -------------------------------------------------------------------------------------


def test_dranet_lint_strict_reports_only_advisories_evaluation_reproduces() -> None:
    report = _json("lint", "--strict", str(DRANET / "slices.yaml"), code=1)
    found = sorted((f["rule"], f["field"]) for f in report["findings"])
    assert found == [("SA202", f"spec.sharingAffinity[{i}].expression") for i in range(3)] + [
        ("SA206", "spec.sharingAffinity[2].expression")]
    assert all(f["severity"] == "warning" for f in report["findings"])
    [sa206] = [f for f in report["findings"] if f["rule"] == "SA206"]
    quoted = re.search(r"on (\{.*?\}) it returns \"([^\"]*)\"", sa206["message"])
    assert quoted is not None, sa206["message"]
    obj, value = json.loads(quoted.group(1)), quoted.group(2)
    expression = _extractors(DRANET / "slices.yaml")["vrf"]
    checked = _json("cel", "check", expression, "--object", json.dumps(obj))
    assert checked["result"]["value"] == value == "default"
    real = _celoracle([{"expr": expression, "object": obj}])
    if real is not None:
        assert real[0]["value"] == {"t": "string", "v": value}


def test_dranet_issue_expressions_draw_no_false_advisory() -> None:
    """Optional chaining propagates (no missing-field abort), and `.orValue("")` can return ""."""
    for expression, obj, value in (('"%s".format([object.?net.vrf.orValue("")])', {}, ""),
                                   ('"%s".format([object.?interface.vrf.name.orValue("")])',
                                    {"interface": {"mtu": 1}}, "")):
        checked = _json("cel", "check", expression, "--object", json.dumps(obj))
        result = checked["result"]
        assert (result["value"], result["type"], result["error"]) == (value, "string", None)
        assert result["scheduler"] is None
        assert checked["verdicts"] == []


EXPECTED_DRANET = {
    "web/b": {"mtu": "1460", "subnet": "10.0.1.0/24", "vrf": "default"},
    "web/same": {"mtu": "1460", "subnet": "10.0.1.0/24", "vrf": "default"},
    "web/other": {"mtu": "1460", "subnet": "10.0.7.0/24", "vrf": "default"},
    "web/pinned": {"mtu": "9000", "subnet": "10.0.1.0/24", "vrf": "default"},
}


def test_dranet_dry_run_extracts_what_the_real_cel_does() -> None:
    report = _json("dry-run", str(DRANET / "slices.yaml"), str(DRANET / "claims.yaml"))
    got = {r["claim"]: r["affinity"] for r in report["results"]}
    assert got == EXPECTED_DRANET
    assert all(r["outcome"] == "ok" for r in report["results"])
    extractors = _extractors(DRANET / "slices.yaml")
    configs = _configs(DRANET / "claims.yaml")
    lines = [{"expr": e, "object": configs[c]} for c in EXPECTED_DRANET for e in extractors.values()]
    real = _celoracle(lines)
    if real is not None:
        values = iter(r["value"]["v"] for r in real)
        assert {c: {k: next(values) for k in extractors} for c in EXPECTED_DRANET} == EXPECTED_DRANET


def test_dranet_locks_read_the_bound_share() -> None:
    report = _json("locks", str(DRANET / "slices.yaml"), str(DRANET / "claims.yaml"))
    devices = {d["device"]["device"]: d for d in report["devices"]}
    assert devices["eth1"]["state"] == "locked"
    assert devices["eth1"]["lock"] == EXPECTED_DRANET["web/b"]
    assert [h["claim"] for h in devices["eth1"]["holders"]] == ["web/b"]
    assert devices["eth1"]["left"] == {"dra.net/pods": "7"}  # the bound consumedCapacity, read
    assert devices["eth2"]["state"] == "clean"


@pytest.mark.parametrize(("claim", "device", "lock"), [
    ("web/same", "eth1", EXPECTED_DRANET["web/same"]),  # joins eth1's lock
    ("web/other", "eth2", EXPECTED_DRANET["web/other"]),  # eth1 is locked to another subnet
])
def test_dranet_explain_places_as_the_scheduler_would(claim: str, device: str, lock: dict[str, str]) -> None:
    report = _json("explain", claim, str(DRANET / "slices.yaml"), str(DRANET / "claims.yaml"))
    assert report["schedulable"] is True
    [placed] = report["allocations"]
    assert placed["device"]["device"] == device and placed["lock"] == lock


def test_dranet_explain_pinned_claim_names_the_release_that_works() -> None:
    """Its selector allows only eth1, locked to MTU 1460; it asks for 9000: releasing b works."""
    report = _json("explain", "web/pinned", str(DRANET / "slices.yaml"), str(DRANET / "claims.yaml"))
    assert report["schedulable"] is False
    assert report["unschedulable"]["reasons"] == ["lock mismatch"]
    [release] = report["releases"]
    assert release["release"] == ["web/b"] and release["allocations"][0]["device"]["device"] == "eth1"


# -- dra-example-driver -------------------------------------------------------------------------


def test_example_driver_lint_strict_is_clean() -> None:
    report = _json("lint", "--strict", str(EXAMPLE / "slices.yaml"))
    assert report["findings"] == []


def test_example_driver_dry_run() -> None:
    report = _json("dry-run", str(EXAMPLE / "slices.yaml"), str(EXAMPLE / "claims.yaml"))
    got = {r["claim"].split("/")[1]: (r["outcome"], r["affinity"]) for r in report["results"]}
    ts = {"sharing": "TimeSlicing/Long"}
    assert got == {"shared-gpu-pod0": ("ok", ts), "shared-gpu-pod1": ("ok", ts),
                   "space-partitioned": ("ok", {"sharing": "SpacePartitioning/10"}),
                   "no-config": ("not-satisfied", None), "big": ("ok", ts)}


def test_example_driver_simulate_shares_by_setting_and_capacity() -> None:
    """pod0 and pod1 (one pod) share gpu-0 (TimeSlicing/Long, 32Gi of 80Gi); the space-partitioned
    claim cannot join that lock and takes gpu-1; `big` (70Gi) fits on neither; no-config has no
    key, so no GPU of the pool is viable (strict gating)."""
    order = ",".join(["gpu-sharing/shared-gpu-pod0+gpu-sharing/shared-gpu-pod1",
                      "gpu-sharing/space-partitioned", "gpu-sharing/no-config", "gpu-sharing/big"])
    report = _json("simulate", str(EXAMPLE / "slices.yaml"), str(EXAMPLE / "claims.yaml"), "--order", order,
                   code=0)
    steps = {s["claim"].split("/")[1]: s for s in report["steps"]}
    assert [p["device"]["device"] for p in steps["shared-gpu-pod0"]["allocations"]] == ["gpu-0"]
    assert [p["device"]["device"] for p in steps["shared-gpu-pod1"]["allocations"]] == ["gpu-0"]
    assert [p["device"]["device"] for p in steps["space-partitioned"]["allocations"]] == ["gpu-1"]
    assert steps["no-config"]["unschedulable"]["reasons"] == ["no keys extracted"]
    assert steps["big"]["unschedulable"]["reasons"] == ["insufficient capacity"]
    devices = {d["device"]["device"]: d for d in report["devices"]}
    assert devices["gpu-0"]["consumed"] == {"memory": "32Gi", "compute": "40"}


def test_example_driver_explain_pod_and_the_fix_for_a_claim_without_config() -> None:
    inputs = (str(EXAMPLE / "slices.yaml"), str(EXAMPLE / "claims.yaml"))
    both = _json("explain", "pod/gpu-sharing/pod01", *inputs)
    assert [c["allocations"][0]["device"]["device"] for c in both["claims"]] == ["gpu-0", "gpu-0"]
    alone = _json("explain", "gpu-sharing/no-config", *inputs)
    assert alone["schedulable"] is False
    assert any(h.startswith("fix the claim: no config yields key `sharing`")
               and "(checked: then 'gpu' goes on" in h for h in alone["hints"])


def test_example_driver_pod_whose_search_moves_a_claim_and_joins_its_tentative_lock(tmp_path: Path) -> None:
    """x (time slicing) would take gpu-0 first; y (space partitioning) may only use gpu-0. As one
    pod, the search moves x to gpu-1, y takes gpu-0, and z (time slicing) joins x's tentative
    lock on gpu-1, reported as such."""
    docs = [d for d in yaml.safe_load_all((EXAMPLE / "claims.yaml").read_text()) if d]
    by_name = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ResourceClaim"}
    x, y, z = (json.loads(json.dumps(by_name[n])) for n in ("shared-gpu-pod0", "space-partitioned",
                                                            "shared-gpu-pod1"))
    x["metadata"]["name"], y["metadata"]["name"], z["metadata"]["name"] = "pod-x", "pod-y", "pod-z"
    y["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": 'device.attributes["gpu.example.com"].index == 0'}}]
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump_all([x, y, z]))
    apart = _json("simulate", str(EXAMPLE / "slices.yaml"), str(path), "--order",
                  "gpu-sharing/pod-x,gpu-sharing/pod-y,gpu-sharing/pod-z")
    assert [s["placed"] for s in apart["steps"]] == [True, False, True]
    together = _json("simulate", str(EXAMPLE / "slices.yaml"), str(path), "--order",
                     "gpu-sharing/pod-x+gpu-sharing/pod-y+gpu-sharing/pod-z")
    got = [(s["allocations"][0]["device"]["device"], s["allocations"][0]["before"],
            s["allocations"][0]["reused"]) for s in together["steps"]]
    assert got == [("gpu-1", "clean", False), ("gpu-0", "clean", False), ("gpu-1", "locked", True)]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "gpu-sharing", "name": "xyz"},
           "spec": {"containers": [{"name": "c", "image": "i"}],
                    "resourceClaims": [{"name": n, "resourceClaimName": f"pod-{n}"} for n in "xyz"]}}
    path.write_text(yaml.safe_dump_all([x, y, z, pod]))
    explained = _json("explain", "pod/gpu-sharing/xyz", str(EXAMPLE / "slices.yaml"), str(path))
    assert [(c["schedulable"], c["allocations"][0]["device"]["device"]) for c in explained["claims"]] == [
        (True, "gpu-1"), (True, "gpu-0"), (True, "gpu-1")]
