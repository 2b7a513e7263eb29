"""`dra-affinity locks` and `explain`, end to end through the console script: files and a live stand-in."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.cli import REPO, run
from tests.lint.commands.test_simulate import _STATE
from tests.webhook.fake_apiserver import FakeApiServer

DUMP = "examples/cluster/dump.yaml"
_DEVICE = {"type": "object", "required": ["driver", "pool", "device"]}
LOCKS_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["devices", "pools", "metrics", "findings"],
    "properties": {
        "devices": {"type": "array", "items": {**_STATE, "required": [*_STATE["required"], "node", "left"]}},
        "pools": {"type": "array", "items": {"type": "object", "required": [
            "pool", "node", "tracked", "devices", "states", "locks", "lockedFree"]}},
        "metrics": {"type": "object", "required": ["sharing_affinity_locked_devices",
                                                   "sharing_affinity_unreconstructable_devices"]},
    },
}
EXPLAIN_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["claim", "schedulable", "allocations", "unschedulable", "candidates"],
    "properties": {
        "schedulable": {"type": "boolean"},
        "allocations": {"type": "array", "items": {"type": "object", "required": ["request", "device"],
                                                   "properties": {"device": _DEVICE}}},
        "candidates": {"type": "array"},
    },
}


def items() -> list[dict[str, Any]]:
    return list(yaml.safe_load((REPO / DUMP).read_text())["items"])


def write(tmp_path: Path, objects: list[dict[str, Any]]) -> str:
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}))
    return str(path)


def locks_json(*args: str, code: int = 0) -> dict[str, Any]:
    out = run("locks", "--format", "json", *args)
    assert out.code == code, out.out + out.err
    doc = out.json()
    jsonschema.validate(doc, LOCKS_SCHEMA)
    return doc


def by_device(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{d['device']['pool']}/{d['device']['device']}": d for d in doc["devices"]}


def test_every_device_of_every_affinity_pool_with_state_lock_holders_and_capacity_left() -> None:
    doc = locks_json(DUMP)
    devices = by_device(doc)
    assert set(devices) == {"node-1/eth0", "node-1/eth1", "node-2/eth0", "node-2/eth1"}
    eth0 = devices["node-1/eth0"]
    assert eth0["state"] == "locked" and eth0["lock"] == {"subnet": "subnet-a"}
    assert [(h["claim"], h["request"], h["consumed"]) for h in eth0["holders"]] == [
        ("team-a/a", "nic", {"nic.example.com/vfs": "1"}), ("team-a/b", "nic", {"nic.example.com/vfs": "1"})]
    assert eth0["left"] == {"nic.example.com/vfs": "6"} and eth0["node"] == "node-1"
    legacy = devices["node-1/eth1"]
    assert legacy["state"] == "unreconstructable" and legacy["lock"] is None
    assert "team-b/legacy" in legacy["reason"] and "subnet" in legacy["reason"]
    # no consumedCapacity in the result: the request's default (1) is what it holds
    assert legacy["left"] == {"nic.example.com/vfs": "7"}
    assert doc["metrics"]["sharing_affinity_locked_devices"] == 3
    assert doc["metrics"]["sharing_affinity_unreconstructable_devices"] == 1
    pools = {p["pool"]["name"]: p for p in doc["pools"]}
    assert set(pools) == {"node-1", "node-2"}  # the GPU pool keeps no lock: only with --all
    assert pools["node-2"]["states"]["locked"] == 2
    assert pools["node-2"]["locks"] == [{"lock": {"subnet": "subnet-c"}, "devices": 2}]
    assert pools["node-2"]["lockedFree"] == {"capacity": {"nic.example.com/vfs": "13"}, "devices": 2}


def test_all_lists_untracked_devices_and_filters_select() -> None:
    every = by_device(locks_json(DUMP, "--all"))
    assert every["node-3/gpu-0"]["state"] == "untracked"
    assert set(by_device(locks_json(DUMP, "--pool", "node-2"))) == {"node-2/eth0", "node-2/eth1"}
    assert set(by_device(locks_json(DUMP, "--node", "node-1"))) == {"node-1/eth0", "node-1/eth1"}
    assert set(by_device(locks_json(DUMP, "--state", "unreconstructable"))) == {"node-1/eth1"}
    claimed = locks_json(DUMP, "--claim", "team-a/b")
    assert set(by_device(claimed)) == {"node-1/eth0"}
    # totals stay the cluster's whatever the filter
    assert claimed["metrics"]["sharing_affinity_locked_devices"] == 3


def test_table_names_the_reason_and_the_pool_summary() -> None:
    out = run("locks", DUMP)
    assert out.code == 0, out.err
    assert "nic.example.com/node-1/eth1: unreconstructable: claim team-b/legacy request 'nic': " \
           "no value extracted for subnet" in out.out
    assert "subnet=subnet-c (2)" in out.out and "nic.example.com/vfs 13" in out.out


def test_prometheus_text_has_the_kep_gauges_and_labelled_series() -> None:
    out = run("locks", DUMP, "--format", "prometheus")
    assert out.code == 0, out.err
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(out.out) for s in family.samples}
    assert samples[("sharing_affinity_locked_devices", ())] == 3
    assert samples[("sharing_affinity_unreconstructable_devices", ())] == 1
    assert samples[("sharing_affinity_devices", (("state", "clean"),))] == 0
    labels = (("driver", "nic.example.com"), ("node", "node-1"), ("pool", "node-1"))
    assert samples[("sharing_affinity_pool_devices", (*labels, ("state", "unreconstructable")))] == 1
    assert samples[("sharing_affinity_pool_lock_devices",
                    (("driver", "nic.example.com"), ("lock", "subnet=subnet-a"), ("node", "node-1"),
                     ("pool", "node-1")))] == 1
    assert samples[("sharing_affinity_pool_locked_free_capacity",
                    (("capacity", "nic.example.com/vfs"), *labels))] == 6


MEMORY = "nic.example.com/memory"


def with_memory(tmp_path: Path) -> str:
    """The example cluster with a memory capacity: written `80Gi` on node-1's devices and on
    node-2/eth0, in plain bytes on node-2/eth1; team-a/a holds 32Gi, team-c/c 16Gi."""
    written = {("node-1-nic-0", "eth0"): "80Gi", ("node-1-nic-0", "eth1"): "80Gi",
               ("node-2-nic-0", "eth0"): "80Gi", ("node-2-nic-0", "eth1"): str(80 * 2**30)}
    held = {"a": "32Gi", "c": "16Gi"}
    objects = items()
    for obj in objects:
        name = obj["metadata"]["name"]
        for device in obj["spec"].get("devices", []) if obj["kind"] == "ResourceSlice" else []:
            if (name, device["name"]) in written:
                device["capacity"][MEMORY] = {"value": written[name, device["name"]],
                                              "requestPolicy": {"default": "16Gi"}}
        if obj["kind"] == "ResourceClaim" and name in held:
            (result,) = obj["status"]["allocation"]["devices"]["results"]
            result["consumedCapacity"][MEMORY] = held[name]
    return write(tmp_path, objects)


def test_capacities_keep_the_units_the_slice_wrote(tmp_path: Path) -> None:
    """`80Gi` left after 32Gi is `48Gi` (as `simulate` prints consumption), not 51539607552;
    a capacity written in bytes stays in bytes, and a decimal one is unchanged."""
    dump = with_memory(tmp_path)
    doc = locks_json(dump)
    devices = by_device(doc)
    eth0 = devices["node-1/eth0"]
    assert eth0["capacity"][MEMORY] == "80Gi"
    assert eth0["consumed"] == {MEMORY: "32Gi", "nic.example.com/vfs": "2"}
    assert eth0["left"] == {MEMORY: "48Gi", "nic.example.com/vfs": "6"}
    assert [h["consumed"] for h in eth0["holders"]] == [
        {MEMORY: "32Gi", "nic.example.com/vfs": "1"}, {"nic.example.com/vfs": "1"}]
    assert devices["node-1/eth1"]["left"][MEMORY] == "80Gi"
    assert devices["node-2/eth1"]["left"][MEMORY] == str(80 * 2**30)
    pools = {p["pool"]["name"]: p["lockedFree"]["capacity"] for p in doc["pools"]}
    assert pools["node-1"] == {MEMORY: "48Gi", "nic.example.com/vfs": "6"}
    # 64Gi left on eth0 plus 80Gi written in bytes on eth1: the sum in the first device's units
    assert pools["node-2"] == {MEMORY: "144Gi", "nic.example.com/vfs": "13"}

    table = run("locks", dump)
    assert table.code == 0, table.err
    assert f"{MEMORY} 48Gi/80Gi, nic.example.com/vfs 6/8" in table.out
    assert f"{MEMORY} 48Gi, nic.example.com/vfs 6" in table.out
    assert f"{MEMORY} 144Gi, nic.example.com/vfs 13" in table.out
    assert str(48 * 2**30) not in table.out and str(32 * 2**30) not in table.out

    page = run("locks", dump, "--format", "html")
    assert page.code == 0, page.err
    assert f"{MEMORY} 32Gi/80Gi" in page.out and str(32 * 2**30) not in page.out

    # the gauge is a number whatever the units
    metrics = run("locks", dump, "--format", "prometheus")
    samples = {(s.name, s.labels.get("capacity"), s.labels.get("pool")): s.value
               for family in text_string_to_metric_families(metrics.out) for s in family.samples}
    assert samples[("sharing_affinity_pool_locked_free_capacity", MEMORY, "node-1")] == 48 * 2**30


def test_disagreeing_claims_and_missing_devices(tmp_path: Path) -> None:
    objects = items()
    for obj in objects:
        if obj["metadata"]["name"] == "b":
            obj["spec"]["devices"]["config"][0]["opaque"]["parameters"]["subnet"] = "subnet-z"
    objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": "ghost", "namespace": "x"},
                    "spec": {"devices": {"requests": [{"name": "nic", "exactly": {
                        "deviceClassName": "nic.example.com"}}]}},
                    "status": {"allocation": {"devices": {"results": [
                        {"request": "nic", "driver": "nic.example.com", "pool": "node-9",
                         "device": "eth0"}]}}}})
    doc = locks_json(write(tmp_path, objects))
    eth0 = by_device(doc)["node-1/eth0"]
    assert eth0["state"] == "unreconstructable"
    assert "bound claims disagree" in eth0["reason"] and "subnet-z" in eth0["reason"]
    assert any("x/ghost" in n and "node-9/eth0" in n for n in doc["notes"])


def test_bad_input_is_a_clear_error_never_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: ResourceClaim\napiVersion: resource.k8s.io/v1\nmetadata: {name: x}\nspec: 7\n")
    out = run("locks", str(bad))
    assert out.code == 1 and "bad.yaml" in out.err
    assert run("locks", "missing.yaml").code == 2
    assert run("locks", "--kubeconfig", "k").code == 2  # only with --cluster


# -- explain ----------------------------------------------------------------------------------


def explain_json(*args: str, code: int = 0) -> dict[str, Any]:
    out = run("explain", *args, "--format", "json")
    assert out.code == code, out.out + out.err
    doc = out.json()
    jsonschema.validate(doc, EXPLAIN_SCHEMA)
    return doc


def test_explain_a_pending_pod_through_its_template_claim() -> None:
    doc = explain_json("pod/web/frontend", DUMP)  # a report: exit 0 though unschedulable
    assert doc["pod"] == "web/frontend" and doc["claim"] == "web/frontend-nic-x7k2p"
    assert doc["schedulable"] is False and doc["allocations"] == []
    assert doc["unschedulable"]["reasons"] == ["lock mismatch", "unknown lock state"]
    states = {f"{c['device']['pool']}/{c['device']['device']}": c["rejections"][0]["reason"]
              for c in doc["candidates"]}
    assert states == {"node-1/eth0": "lock mismatch", "node-1/eth1": "unknown lock state",
                      "node-2/eth0": "lock mismatch", "node-2/eth1": "lock mismatch"}
    pool = doc["pools"][0]
    assert pool["candidate"] and pool["extraction"]["affinity"] == {"subnet": "subnet-b"}
    assert pool["extraction"]["evaluations"][0] == {"extractor": "subnet", "config": 0, "type": "string",
                                                    "value": "subnet-b", "error": None}
    assert "device nic.example.com/node-1/eth0 is locked to incompatible affinity values (subnet=subnet-a)" \
        in doc["events"]
    assert "device nic.example.com/node-1/eth1 has unknown affinity state due to legacy or invalid active " \
           "claims" in doc["events"]
    assert ("nic.example.com/node-1/eth0: release team-a/a and team-a/b (all of them: releasing fewer is not "
            "enough); then 'nic' goes on nic.example.com/node-1/eth0") in doc["hints"]


def test_explain_a_schedulable_claim_says_where_it_would_go() -> None:
    doc = explain_json("team-c/e", DUMP, code=0)
    assert doc["schedulable"] is True
    assert doc["allocations"][0]["device"] == {"driver": "nic.example.com", "pool": "node-2",
                                               "device": "eth0"}
    assert doc["allocations"][0]["reused"] is True
    wanted = "2 device(s) in pool nic.example.com/node-2 would accept it"
    assert any(wanted in h for h in doc["hints"])


def test_explain_an_allocated_claim_shows_its_lock_and_who_shares_it() -> None:
    doc = explain_json("team-a/a", DUMP, code=0)
    assert doc["allocated"] and doc["schedulable"] and doc["unschedulable"] is None
    assert doc["allocations"] == [{"request": "nic", "device": {"driver": "nic.example.com", "pool": "node-1",
                                                                "device": "eth0"},
                                   "state": "locked", "lock": {"subnet": "subnet-a"}, "reason": None,
                                   "sharedWith": ["team-a/b"]}]
    text = run("explain", "team-b/legacy", DUMP)
    assert text.code == 0 and "unreconstructable: claim team-b/legacy" in text.out


def test_explain_no_keys_extracted_names_the_key(tmp_path: Path) -> None:
    objects = items()
    for obj in objects:
        if obj["metadata"]["name"] == "e":
            obj["spec"]["devices"]["config"][0]["opaque"]["parameters"] = {"mtu": 1500}
    doc = explain_json("team-c/e", write(tmp_path, objects))
    assert doc["unschedulable"]["reasons"][0] == "no keys extracted"
    assert any("no config yields key `subnet`" in h for h in doc["hints"])
    assert any(e.startswith("claim's opaque configs produced no non-empty key under any sharingAffinity "
                            "extractor on slice node-1-nic-meta") for e in doc["events"])


def test_explain_a_missing_class_gives_the_schedulers_reason_on_every_pool(tmp_path: Path) -> None:
    """A request naming a DeviceClass the input does not hold: no pool is a candidate (the allocator
    offers none), each pool and the verdict give `candidates.missing_class`'s one reason."""
    objects = items()
    for obj in objects:
        if obj["kind"] == "ResourceClaim" and obj["metadata"]["name"] == "e":
            obj["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nic-typo"
    doc = explain_json("team-c/e", write(tmp_path, objects))
    reason = ("request 'nic': DeviceClass 'nic-typo' is not in the input "
              "(the scheduler leaves the claim pending)")
    assert doc["pools"] and all(not p["candidate"] and p["whyNot"] == reason for p in doc["pools"])
    assert doc["unschedulable"]["message"] == reason


def test_explain_names_capacity_in_the_units_the_slice_wrote(tmp_path: Path) -> None:
    """A request policy's refusal speaks the capacity's units (`72Gi`, `64Gi`), as the
    not-enough-left message does, never bytes."""
    memory = "accel.example.com/memory"
    doc = yaml.safe_load((REPO / "examples" / "memory" / "dump.yaml").read_text())
    for obj in doc["items"]:
        for device in obj["spec"].get("devices", []) if obj["kind"] == "ResourceSlice" else []:
            device["capacity"][memory]["requestPolicy"] = {
                "validRange": {"min": "8Gi", "step": "8Gi", "max": "64Gi"}}
    for name, capacity in (("big", {"requests": {memory: "65Gi"}}), ("whole", None)):
        request = {"deviceClassName": "accel.example.com", **({"capacity": capacity} if capacity else {})}
        doc["items"].append({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "serving"},
            "spec": {"devices": {"requests": [{"name": "accel", "exactly": request}], "config": [
                {"opaque": {"driver": "accel.example.com",
                            "parameters": {"kind": "ModelConfig", "model": "llama-70b"}}}]}}})
    (tmp_path / "dump.yaml").write_text(yaml.safe_dump(doc))
    dump = str(tmp_path / "dump.yaml")

    def messages(claim: str) -> set[str]:
        """Each candidate's rejection, without the device it names first."""
        found = explain_json(claim, dump)
        return {r["message"].split(": ", 1)[1] for c in found["candidates"] for r in c["rejections"]}

    assert messages("serving/big") == {"requested 65Gi (rounded to 72Gi) exceeds the policy's maximum 64Gi"}
    assert messages("serving/whole") == {
        "the request takes the whole capacity 80Gi, which its request policy does not allow (maximum 64Gi)"}
    text = run("explain", "serving/big", dump)
    assert "requested 65Gi (rounded to 72Gi) exceeds the policy's maximum 64Gi" in text.out, text.err
    assert str(64 * 2**30) not in text.out


def test_explain_usage_errors() -> None:
    assert run("explain", "nobody/none", DUMP).code == 2
    assert run("explain", "pod/web/missing", DUMP).code == 2
    assert run("explain", "pod/too/many/parts", DUMP).code == 2


# -- the live stand-in ------------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path]]:
    fake = FakeApiServer().start()
    for obj in items():
        fake.put(copy.deepcopy(obj))
    try:
        yield fake, fake.kubeconfig(tmp_path / "kubeconfig")
    finally:
        fake.stop()


def test_locks_and_explain_read_the_cluster(cluster: tuple[FakeApiServer, Path]) -> None:
    fake, kubeconfig = cluster
    files = locks_json(DUMP)
    live = locks_json("--cluster", "--kubeconfig", str(kubeconfig), "--chunk-size", "2")
    assert live["devices"] == files["devices"] and live["pools"] == files["pools"]
    assert fake.lists["resourceclaims"] >= 1 and fake.lists["deviceclasses"] >= 1
    doc = explain_json("pod/web/frontend", "--cluster", "--kubeconfig", str(kubeconfig))
    assert doc["claim"] == "web/frontend-nic-x7k2p" and doc["schedulable"] is False
    assert run("explain", "pod/web/nope", "--cluster", "--kubeconfig", str(kubeconfig)).code == 2


def test_json_findings_name_the_rule_file_line_and_field(tmp_path: Path) -> None:
    """An object of the dump the model cannot build is a finding in `findings` (SA000, with its
    place), exit 1; the rest of the dump is still reconstructed."""
    docs = list(yaml.safe_load_all((REPO / DUMP).read_text()))
    text = yaml.safe_dump_all(docs, sort_keys=False)
    broken = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": "broken", "namespace": "ns"}, "spec": "not an object"}
    path = tmp_path / "dump.yaml"
    path.write_text(text + "---\n" + yaml.safe_dump(broken, sort_keys=False))
    result = run("locks", str(path), "--format", "json")
    assert result.code == 1
    data = result.json()
    [finding] = data["findings"]
    line = path.read_text().splitlines().index("spec: not an object") + 1
    assert (finding["rule"], finding["severity"], finding["file"], finding["line"], finding["field"]) == (
        "SA000", "error", str(path), line, "spec")
    assert finding["object"] == {"kind": "ResourceClaim", "name": "broken"}
    assert finding["message"] == 'spec: Invalid value: "not an object": must be of type object'
    assert data["devices"]
