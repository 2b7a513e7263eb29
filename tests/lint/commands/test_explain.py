"""`dra-affinity explain` through the console script: one model for every door, verified hints."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.cli import run

DRIVER = "nic.example.com"
SUBNET = 'object.?subnetID.orValue("")'


def _pool(name: str, devices: list[dict[str, Any]], *, affinity: bool = True, generation: int = 1,
          meta_generation: int | None = None, meta: bool = True) -> list[dict[str, Any]]:
    spec = {"driver": DRIVER, "nodeName": name}
    count = 2 if affinity else 1
    docs = []
    if affinity and meta:
        docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                     "metadata": {"name": f"{name}-meta"},
                     "spec": {**spec, "pool": {"name": name, "generation": meta_generation or generation,
                                               "resourceSliceCount": count},
                              "sharingAffinity": [{"name": "subnet", "expression": SUBNET}]}})
    pool = {"name": name, "generation": generation, "resourceSliceCount": count}
    docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                 "metadata": {"name": f"{name}-0"}, "spec": {**spec, "pool": pool, "devices": devices}})
    return docs


def _device(name: str, pods: int = 8, *, shared: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "allowMultipleAllocations": shared}
    if shared:
        out["capacity"] = {"pods": {"value": str(pods), "requestPolicy": {"default": "1"}}}
    return out


def _claim(name: str, subnet: str | None = None, *, pods: int | None = None, params: Any = None,
           bound: str | None = None, selector: str | None = None, share: bool = True) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "nic"}
    if pods is not None:
        exactly["capacity"] = {"requests": {"pods": str(pods)}}
    if selector is not None:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if params is None:
        params = {"subnetID": subnet}
    doc: dict[str, Any] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                           "metadata": {"name": name, "namespace": "ns"},
                           "spec": {"devices": {
                               "requests": [{"name": "nic", "exactly": exactly}],
                               "config": [{"opaque": {"driver": DRIVER, "parameters": params}}]}}}
    if bound is not None:
        pool, device = bound.split("/")
        result: dict[str, Any] = {"request": "nic", "driver": DRIVER, "pool": pool, "device": device}
        if share:  # a shared allocation, as the allocator writes it (without shareID: held whole)
            result["shareID"] = f"00000000-0000-0000-0000-{name.encode().hex()[:12]:0>12}"
            result["consumedCapacity"] = {"pods": str(pods or 1)}
        doc["status"] = {"allocation": {"devices": {"results": [result]}}}
    return doc


CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "nic"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}


def _pod(*claims: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"resourceClaims": [{"name": f"c{n}", "resourceClaimName": c}
                                        for n, c in enumerate(claims)]}}


def explain(tmp_path: Path, target: str, *objects: dict[str, Any], schedulable: bool) -> dict[str, Any]:
    """The JSON answer (the file is read as kubectl reads it: a plain `Y` would be `true`, so the
    subnets here are X and Z); whether it is schedulable is read from it (the exit code says only that
    the answer was written: 0 or 1, never a usage error)."""
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([CLASS, *objects]))
    result = run("explain", target, str(path), "--format", "json")
    assert result.code in (0, 1), (result.out, result.err)
    doc: dict[str, Any] = json.loads(result.out)
    assert doc["schedulable"] is schedulable, doc
    return doc


def test_two_claims_of_a_pod_cannot_lock_one_device_two_ways(tmp_path: Path) -> None:
    doc = explain(tmp_path, "pod/ns/web", *_pool("node-1", [_device("eth0")]),
                  _claim("a", "X"), _claim("b", "Z"), _pod("a", "b"), schedulable=False)
    first, second = doc["claims"]
    assert first["schedulable"] is True
    assert first["verdict"].endswith("; the pod stays pending: ns/b cannot be placed")
    assert [a["device"]["device"] for a in first["allocations"]] == ["eth0"]
    assert second["schedulable"] is False
    assert second["unschedulable"]["reason"] == "lock mismatch"
    assert second["verdict"].endswith("(with the pod's ns/a placed first)")
    locked = "device nic.example.com/node-1/eth0 is locked to incompatible affinity values (subnet=X)"
    assert second["events"] == [locked]
    assert second["hints"][0].startswith("the pod's own ns/a took nic.example.com/node-1/eth0 first")


def test_claims_of_a_pod_share_the_capacity_they_consume(tmp_path: Path) -> None:
    doc = explain(tmp_path, "pod/ns/web", *_pool("node-1", [_device("eth0", pods=2)]),
                  _claim("a", "X", pods=2), _claim("b", "X", pods=1), _pod("a", "b"), schedulable=False)
    first, second = doc["claims"]
    assert first["schedulable"] is True and second["schedulable"] is False
    assert second["unschedulable"]["reason"] == "insufficient capacity"


def _hints(doc: dict[str, Any]) -> list[str]:
    return list(doc["hints"])


def test_a_claim_whose_own_config_yields_no_key_is_told_to_fix_the_claim(tmp_path: Path) -> None:
    """Releasing the device's legacy holders cannot help a claim that extracts nothing: the
    re-run with them released still fails, so no release is offered."""
    doc = explain(tmp_path, "ns/mine", *_pool("node-1", [_device("eth0")]),
                  _claim("legacy", params={"other": "x"}, bound="node-1/eth0"),
                  _claim("b1", "X", bound="node-1/eth0"), _claim("mine", params={"vlan": 7}),
                  schedulable=False)
    hints = _hints(doc)
    assert not [h for h in hints if ": release " in h], hints
    assert any(h.startswith("releasing every claim on its candidate devices would not help") for h in hints)
    [fix] = [h for h in hints if h.startswith("fix the claim: no config yields key `subnet`")]
    assert 'that alone is not enough (checked with {"subnetID": "v"}' in fix, fix
    assert fix.endswith("with ns/b1 and ns/legacy released as well, 'nic' goes on "
                        "nic.example.com/node-1/eth0 (checked)"), fix


def test_the_config_fix_is_checked_and_shown(tmp_path: Path) -> None:
    doc = explain(tmp_path, "ns/mine", *_pool("node-1", [_device("eth0")]),
                  _claim("mine", params={"vlan": 7}), schedulable=False)
    [fix] = _hints(doc)
    assert fix.endswith(', e.g. {"subnetID": "v"} (checked: then '
                        "'nic' goes on nic.example.com/node-1/eth0)"), fix


def test_a_device_full_and_locked_needs_both_holders_released(tmp_path: Path) -> None:
    doc = explain(tmp_path, "ns/mine", *_pool("node-1", [_device("eth0", pods=2)]),
                  _claim("kb1", "X", pods=1, bound="node-1/eth0"),
                  _claim("kb2", "X", pods=1, bound="node-1/eth0"),
                  _claim("mine", "Z", pods=1), schedulable=False)
    assert doc["unschedulable"]["reason"] == "insufficient capacity"
    assert _hints(doc) == ["nic.example.com/node-1/eth0: release ns/kb1 and ns/kb2 (all of them: releasing "
                           "fewer is not enough); then 'nic' goes on nic.example.com/node-1/eth0"]


def test_one_holder_of_a_full_device_is_enough_when_the_lock_matches(tmp_path: Path) -> None:
    doc = explain(tmp_path, "ns/mine", *_pool("node-1", [_device("eth0", pods=2)]),
                  _claim("kb1", "X", pods=1, bound="node-1/eth0"),
                  _claim("kb2", "X", pods=1, bound="node-1/eth0"),
                  _claim("mine", "X", pods=1), schedulable=False)
    assert _hints(doc) == ["nic.example.com/node-1/eth0: release ns/kb1 (ns/kb2 can stay); "
                           "then 'nic' goes on nic.example.com/node-1/eth0"]


def test_a_device_held_exclusively_names_the_release_that_frees_it(tmp_path: Path) -> None:
    doc = explain(tmp_path, "ns/mine", *_pool("node-1", [_device("eth0", shared=False)], affinity=False),
                  _claim("owner", "X", bound="node-1/eth0", share=False), _claim("mine", "X"),
                  schedulable=False)
    assert doc["unschedulable"]["reason"] == "allocated exclusively"
    assert _hints(doc) == ["nic.example.com/node-1/eth0: release ns/owner; then 'nic' goes on "
                           "nic.example.com/node-1/eth0"]


def test_a_request_selector_matching_nothing_is_blamed_not_the_class(tmp_path: Path) -> None:
    doc = explain(tmp_path, "ns/mine", *_pool("node-1", [_device("eth0"), _device("eth1")]),
                  _claim("mine", "X", selector='device.driver == "other.example.com"'), schedulable=False)
    [hint] = _hints(doc)
    assert "its own selectors match none of the 2 device(s) DeviceClass nic offers" in hint
    assert "no pool offers" not in hint


def test_a_pool_caught_mid_update_is_reported_incomplete(tmp_path: Path) -> None:
    """Metadata slice at generation 2, device slice still at 1: the scheduler skips the pool."""
    doc = explain(tmp_path, "ns/mine", *_pool("node-1", [_device("eth0")], generation=1, meta_generation=2),
                  _claim("mine", "X"), schedulable=False)
    [pool] = doc["pools"]
    assert pool["candidate"] is False
    assert pool["whyNot"].startswith("the pool is incomplete (1 of 2 slices (resourceSliceCount) present at "
                                     "generation 2; its devices are published at generation 1")
    [hint] = [h for h in _hints(doc) if "pool nic.example.com/node-1 is incomplete" in h]
    assert hint.endswith("once the driver republishes node-1-0 at generation 2 (devices unchanged), "
                         "'nic' goes on nic.example.com/node-1/eth0 (checked)"), hint


def test_a_slice_cel_error_gives_the_next_step(tmp_path: Path) -> None:
    objects = _pool("node-1", [_device("eth0")])
    objects[0]["spec"]["sharingAffinity"][0]["expression"] = "object.subnetID"
    doc = explain(tmp_path, "ns/mine", *objects, _claim("mine", params={"vlan": 7}), schedulable=False)
    assert doc["unschedulable"]["reason"] == "CEL evaluation failure"
    assert any("the driver must fix the extractor" in h for h in _hints(doc)), _hints(doc)


def test_gate_off_gives_the_next_step(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([CLASS, *_pool("node-1", [_device("eth0")]), _claim("mine", "X")]))
    result = run("explain", "ns/mine", str(path), "--feature-gate", "off", "--format", "json")
    assert result.code in (0, 1) and json.loads(result.out)["schedulable"] is False
    hints = json.loads(result.out)["hints"]
    assert any("enable the gate on kube-scheduler" in h for h in hints), hints


def test_locks_does_not_call_a_pool_without_its_metadata_slice_one_without_affinity(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([CLASS, *_pool("node-1", [_device("eth0")], meta=False)]))
    result = run("locks", str(path), "--all", "--format", "json")
    text = result.out
    assert "declares no sharingAffinity" not in text
    assert "the pool is incomplete (1 of 2 slices (resourceSliceCount) present at generation 1)" in text


def test_a_failing_selector_gives_the_next_step(tmp_path: Path) -> None:
    doc = explain(tmp_path, "ns/mine", *_pool("node-1", [_device("eth0")]),
                  _claim("mine", "X", selector='device.attributes["nic.example.com"].model == "x"'),
                  schedulable=False)
    [hint] = _hints(doc)
    assert hint.startswith("fix the selector that fails on pool nic.example.com/node-1's devices"), hint
    assert "no such key: model" in hint
