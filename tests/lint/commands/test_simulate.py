"""`dra-affinity simulate` and simulation suites, end to end through the console script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.cli import REPO, run

_DEVICE = {"type": "object", "required": ["driver", "pool", "device"],
           "properties": {"driver": {"type": "string"}, "pool": {"type": "string"},
                          "device": {"type": "string"}}}
_STATE = {"type": "object",
          "required": ["device", "state", "lock", "reason", "holders", "shareable", "capacity", "consumed"],
          "properties": {"device": _DEVICE,
                         "state": {"enum": ["clean", "locked", "unreconstructable", "untracked"]},
                         "lock": {"type": ["object", "null"]}}}
REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["mode", "featureGate", "reconstructed", "steps", "devices", "metrics", "notes", "findings"],
    "properties": {
        "mode": {"enum": ["alpha", "beta"]},
        "featureGate": {"type": "boolean"},
        "reconstructed": {"type": "array", "items": _STATE},
        "devices": {"type": "array", "items": _STATE},
        "steps": {"type": "array", "items": {
            "type": "object", "required": ["action", "claim"],
            "properties": {"action": {"enum": ["allocate", "release"]}}}},
        "metrics": {"type": "object", "required": [
            "sharing_affinity_locked_devices", "sharing_affinity_unreconstructable_devices",
            "sharing_affinity_extractor_evaluations_total", "sharing_affinity_lock_conflict_total",
            "sharing_affinity_no_keys_extracted_total", "sharing_affinity_compatible_reuse_total"]},
    },
}

STORY_1 = ["examples/rdma-pkey.yaml", "examples/kep-stories.yaml"]
STORY_2 = ["examples/fpga-bitstream.yaml", "examples/fpga-node-g.yaml", "examples/kep-stories.yaml"]
STORY_3 = ["examples/single-subnet-nic.yaml", "examples/kep-stories.yaml"]


def simulate(*args: str, code: int = 0) -> dict[str, Any]:
    out = run("simulate", "--format", "json", *args)
    assert out.code == code, out.out + out.err
    doc = out.json()
    jsonschema.validate(doc, REPORT_SCHEMA)
    return doc


def chosen(doc: dict[str, Any]) -> list[str | None]:
    """Per allocate step, `pool/device` of the first allocation, None when unschedulable."""
    return [f"{s['allocations'][0]['device']['pool']}/{s['allocations'][0]['device']['device']}"
            if s["placed"] else None for s in doc["steps"] if s["action"] == "allocate"]


def devices(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{d['device']['pool']}/{d['device']['device']}": d for d in doc["devices"]}


def test_story_1_rdma_pkey() -> None:
    doc = simulate(*STORY_1, "--order", "training/pod-a,training/pod-b,training/pod-c")
    assert chosen(doc) == ["node-b/mlx5-0", "node-b/mlx5-0", "node-b/mlx5-1"]
    a, b, c = doc["steps"]
    assert (a["allocations"][0]["before"], a["allocations"][0]["lock"]) == ("clean", {"pkey": "pkey-0x8001"})
    assert b["allocations"][0]["reused"] is True
    [refused] = [x for x in c["candidates"] if not x["viable"]]
    assert refused["device"]["device"] == "mlx5-0"
    assert refused["rejections"][0]["reason"] == refused["rejections"][0]["diagnostic"] == "lock mismatch"
    final = devices(doc)
    assert final["node-b/mlx5-0"]["lock"] == {"pkey": "pkey-0x8001"}
    assert [h["claim"] for h in final["node-b/mlx5-0"]["holders"]] == ["training/pod-a", "training/pod-b"]
    assert final["node-b/mlx5-0"]["consumed"] == {"rdma.example.com/vfs": "2"}
    assert final["node-b/mlx5-1"]["lock"] == {"pkey": "pkey-0x8002"}
    assert doc["metrics"]["sharing_affinity_lock_conflict_total"] == 1
    assert doc["metrics"]["sharing_affinity_compatible_reuse_total"] == 1
    assert doc["metrics"]["sharing_affinity_locked_devices"] == 2


def test_story_2_fpga_bitstream_uses_a_different_fpga_or_waits() -> None:
    order = ["--order", "inference/pod-a,inference/pod-b,inference/pod-c"]
    doc = simulate(*STORY_2, *order)
    assert chosen(doc) == ["node-c/fpga-0", "node-c/fpga-0", "node-g/fpga-0"]
    assert devices(doc)["node-g/fpga-0"]["lock"] == {"bitstream": "bitstream-crypto-v1"}
    one_fpga = simulate("examples/fpga-bitstream.yaml", "examples/kep-stories.yaml", *order)
    assert chosen(one_fpga) == ["node-c/fpga-0", "node-c/fpga-0", None]
    pending = one_fpga["steps"][2]["unschedulable"]
    assert pending["reasons"] == pending["diagnostics"] == ["lock mismatch"]
    assert pending["request"] == "fpga"


def test_story_3_single_subnet_nic() -> None:
    doc = simulate(*STORY_3, "--order", "subnets/pod-a,subnets/pod-b,subnets/pod-c")
    assert chosen(doc) == ["node-e/eth1", "node-e/eth1", "node-e/eth2"]
    assert {k: v["lock"] for k, v in devices(doc).items()} == {
        "node-e/eth1": {"subnet": "subnet-X"}, "node-e/eth2": {"subnet": "subnet-Y"}}


def test_table_output_names_devices_reasons_and_metrics() -> None:
    out = run("simulate", *STORY_1, "--order", "training/pod-a,training/pod-c,-training/pod-a")
    assert out.code == 0, out.err
    text = out.out
    assert "mode alpha, feature gate DRASharingAffinity on" in text
    assert ("→ request 'nic' on rdma.example.com/node-b/mlx5-0: was clean, now locked to "
            "pkey=pkey-0x8001") in text
    assert "- rdma.example.com/node-b/mlx5-0 [nic] not viable: lock mismatch:" in text
    assert "3. release training/pod-a: releases rdma.example.com/node-b/mlx5-0" in text
    assert "  sharing_affinity_lock_conflict_total 1" in text
    rows = {line.split()[0]: line.split()[1] for line in text.splitlines() if line.startswith("  rdma.")}
    assert rows == {"rdma.example.com/node-b/mlx5-0": "clean", "rdma.example.com/node-b/mlx5-1": "locked"}


def _bound_claim(tmp_path: Path, params: dict[str, Any], device: str) -> Path:
    doc = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "running", "namespace": "subnets"},
        "spec": {"devices": {
            "requests": [{"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}],
            "config": [{"opaque": {"driver": "nic.example.com", "parameters": params}}]}},
        "status": {"allocation": {"devices": {"results": [
            # a share, as the allocator records one on a device that allows multiple allocations
            {"request": "nic", "driver": "nic.example.com", "pool": "node-e", "device": device,
             "shareID": "3b0e7c1d-0000-4000-8000-0000000000aa"}]}}},
    }
    path = tmp_path / "bound.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_alpha_first_fit_and_beta_preference(tmp_path: Path) -> None:
    bound = _bound_claim(tmp_path, {"apiVersion": "nic.example.com/v1", "kind": "NICConfig",
                                    "subnetID": "subnet-X"}, "eth2")
    args = [*STORY_3, str(bound), "--order", "subnets/pod-a"]
    alpha = simulate(*args)
    [eth2] = [d for d in alpha["reconstructed"] if d["device"]["device"] == "eth2"]
    assert (eth2["state"], eth2["lock"]) == ("locked", {"subnet": "subnet-X"})
    assert eth2["holders"] == [{"claim": "subnets/running", "request": "nic", "bound": True}]
    assert chosen(alpha) == ["node-e/eth1"]
    beta = simulate(*args, "--mode", "beta")
    assert beta["mode"] == "beta"
    assert chosen(beta) == ["node-e/eth2"]
    assert beta["metrics"]["sharing_affinity_compatible_reuse_total"] == 1


def test_legacy_claims_make_a_device_unreconstructable(tmp_path: Path) -> None:
    bound = _bound_claim(tmp_path, {"mtu": 9000}, "eth1")
    doc = simulate(*STORY_3, str(bound), "--order", "subnets/pod-a,-subnets/running,subnets/pod-c")
    [eth1] = [d for d in doc["reconstructed"] if d["device"]["device"] == "eth1"]
    assert eth1["state"] == "unreconstructable" and "subnets/running" in eth1["reason"]
    assert chosen(doc) == ["node-e/eth2", "node-e/eth1"]
    first = doc["steps"][0]["candidates"][0]
    assert first["rejections"][0]["diagnostic"] == "unknown lock state"
    assert doc["metrics"]["sharing_affinity_unreconstructable_devices"] == 0  # drained by the release


def test_feature_gate_off_fails_closed() -> None:
    doc = simulate(*STORY_1, "--order", "training/pod-a", "--feature-gate", "off")
    assert doc["featureGate"] is False
    assert doc["steps"][0]["unschedulable"]["reasons"] == ["feature gate off"]
    assert doc["metrics"]["sharing_affinity_extractor_evaluations_total"] == 0
    assert {d["state"] for d in doc["devices"]} == {"untracked"}


def test_default_order_and_pool_filter() -> None:
    doc = simulate(*STORY_1, "examples/fpga-bitstream.yaml", "--pool", "rdma.example.com/node-b")
    assert {d["device"]["pool"] for d in doc["devices"]} == {"node-b"}
    order = [s["claim"] for s in doc["steps"]]
    assert order[:3] == ["training/pod-a", "training/pod-b", "training/pod-c"]  # file order
    assert chosen(doc)[:3] == ["node-b/mlx5-0", "node-b/mlx5-0", "node-b/mlx5-1"]
    # the FPGA and NIC claims find no device in the only candidate pool: exit 1
    assert all(s["unschedulable"]["reasons"] == ["no keys extracted"] for s in doc["steps"][3:])


def test_usage_errors_exit_2() -> None:
    out = run("simulate", *STORY_1, "--order", "training/nobody,-training/pod-a")
    assert out.code == 2
    assert "'training/nobody' is not in the input" in out.err
    assert "'training/pod-a' is neither allocated" in out.err
    assert run("simulate", "does-not-exist.yaml").code == 2
    assert run("simulate", *STORY_1, "--mode", "gamma").code == 2


def test_help_lists_simulate() -> None:
    out = run("--help")
    assert "simulate" in out.out and "affinity locks" in out.out


# -- suites --------------------------------------------------------------------------------------


def test_example_simulation_suite_passes() -> None:
    out = run("test", "examples/suites/simulation.yaml")
    assert out.code == 0, out.out
    assert out.out.strip().endswith("9 passed, 0 failed")


def _suite(tmp_path: Path, case: dict[str, Any]) -> Path:
    doc = {"name": "sim", "resources": [str(REPO / f) for f in STORY_1], "cases": [case]}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_wrong_expectation_fails_with_the_reason(tmp_path: Path) -> None:
    path = _suite(tmp_path, {
        "name": "wrong", "pools": ["node-b"],
        "allocate": [
            {"claim": "training/pod-a", "device": "mlx5-1"},
            {"claim": "training/pod-b", "unschedulable": "lock mismatch"},
            {"claim": "training/pod-c", "device": "mlx5-1", "lock": {"pkey": "pkey-0x8001"}},
        ],
        "devices": {"mlx5-0": {"state": "clean"}},
        "metrics": {"sharing_affinity_lock_conflict_total": 7},
    })
    out = run("test", "--format", "json", str(path))
    assert out.code == 1
    [case] = out.json()["cases"]
    assert case["failures"] == [
        "step 1 (training/pod-a): placed on rdma.example.com/node-b/mlx5-0, expected device mlx5-1",
        "step 2 (training/pod-b): placed on rdma.example.com/node-b/mlx5-0, expected unschedulable "
        "(lock mismatch)",
        "step 3 (training/pod-c): lock {'pkey': 'pkey-0x8002'}, expected {'pkey': 'pkey-0x8001'}",
        "device mlx5-0: state locked, expected clean",
        "metric sharing_affinity_lock_conflict_total: 1, expected 7",
    ]


def test_a_simulation_case_with_a_typo_is_a_located_usage_error(tmp_path: Path) -> None:
    path = _suite(tmp_path, {"name": "typo", "allocate": [{"claim": "training/pod-a", "devise": "mlx5-0"}]})
    out = run("test", str(path))
    assert out.code == 2
    assert "suite.yaml:" in out.err and "devise" in out.err


def test_unrunnable_steps_fail_the_case(tmp_path: Path) -> None:
    path = _suite(tmp_path, {"name": "ghost", "allocate": [{"claim": "training/ghost", "device": "x"}]})
    out = run("test", "--format", "json", str(path))
    assert out.code == 1
    assert "'training/ghost' is not in the input" in out.json()["cases"][0]["failures"][0]


def test_a_step_needs_exactly_one_expectation(tmp_path: Path) -> None:
    path = _suite(tmp_path, {"name": "neither", "allocate": [{"claim": "training/pod-a"}]})
    out = run("test", str(path))
    assert out.code == 2
    assert "cases.0.allocate.0: give either `device:`" in out.err and "suite.yaml:" in out.err


def test_unschedulable_true_accepts_any_reason(tmp_path: Path) -> None:
    path = _suite(tmp_path, {"name": "gate", "featureGate": "off", "allocate": [
        {"claim": "training/pod-a", "unschedulable": True},
        {"claim": "training/pod-b", "unschedulable": "feature gate off"}]})
    assert run("test", str(path)).code == 0


def _cluster(tmp_path: Path, claims: int, devices: int = 12, pools: int = 4) -> list[str]:
    from bench.gen_slices import generate_cluster

    return [str(p) for p in generate_cluster(claims, tmp_path, seed=3, devices=devices, pools=pools)]


def test_summary_counts_what_the_full_report_lists(tmp_path: Path) -> None:
    files = _cluster(tmp_path, 60, devices=100)
    full = simulate(*files)
    summary = simulate(*files, "--summary")
    assert summary["metrics"] == full["metrics"] and summary["devices"] == full["devices"]
    assert chosen(summary) == chosen(full)
    for long, short in zip(full["steps"], summary["steps"], strict=True):
        assert "candidates" not in short
        firsts: dict[str, int] = {}
        for c in long["candidates"]:
            if not c["viable"]:
                firsts[c["rejections"][0]["reason"]] = firsts.get(c["rejections"][0]["reason"], 0) + 1
        assert {r["reason"]: r["count"] for r in short["rejected"]} == firsts


def test_a_cluster_larger_than_its_capacity_prints_every_step(tmp_path: Path) -> None:
    """More claims than slots: the report is still printed, step by step, and the run exits 0
    (a report, written; a 10,000-claim run once printed nothing: its whole report was one string)."""
    files = _cluster(tmp_path, 250, devices=8, pools=2)  # 8 devices x 16 pods = 128 slots
    doc = simulate(*files, "--summary")
    assert len(doc["steps"]) == 250
    unplaced = [s for s in doc["steps"] if not s["placed"]]
    assert len(unplaced) >= 250 - 128
    assert all(s["unschedulable"]["reasons"] for s in unplaced)
    failing = simulate(*files, "--summary", "--only-failing")
    assert [s["claim"] for s in failing["steps"]] == [s["claim"] for s in unplaced]
    assert failing["metrics"] == doc["metrics"]
    text = run("simulate", *files, "--summary", "--only-failing")
    assert text.code == 0
    assert "device(s) [nic] not viable: lock mismatch" in text.out
    assert "UNSCHEDULABLE" in text.out and "Metrics:" in text.out


def test_a_request_whose_class_is_missing_is_an_input_error_and_stays_pending(tmp_path: Path) -> None:
    """As dry-run: an SA000 finding at the request naming it and the class, in every format."""
    docs = list(yaml.safe_load_all((REPO / "examples" / "claims.yaml").read_text()))
    claim = next(d for d in docs if d and d.get("kind") == "ResourceClaim")
    claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "nic-typo"
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(claim))
    inputs = ("examples/networking-node-a.yaml", str(path), "examples/device-classes.yaml")
    finding = (f"{path}:{_line_of(path, '- exactly:')}:7: SA000 error: "
               "claim ml/training-pod-a request 'nic': DeviceClass 'nic-typo' is not in the input")
    for extra in ((), ("--summary",), ("--only-failing",)):
        out = run("simulate", *inputs, *extra)
        assert out.code == 1, out.out  # an input error, not the pending claim, fails the run
        assert "UNSCHEDULABLE (no candidate devices)" in out.out
        assert "DeviceClass 'nic-typo' is not in the input (the scheduler leaves the claim" in out.out
        assert finding in out.err, out.err
        assert "\n    in ResourceClaim/ml/training-pod-a\n" in out.err, out.err
    doc = run("simulate", *inputs, "--format", "json").json()
    [sa000] = doc["findings"]
    assert (sa000["rule"], sa000["severity"]) == ("SA000", "error")
    assert sa000["field"] == "spec.devices.requests[0]"
    assert "request 'nic': DeviceClass 'nic-typo' is not in the input" in sa000["message"]
    assert doc["steps"][0]["unschedulable"]["reasons"] == ["no candidate devices"]
    # without DeviceClasses in the input every class is taken to exist: no finding, the claim placed
    out = run("simulate", "examples/networking-node-a.yaml", str(path))
    assert out.code == 0 and "SA000" not in out.err, out.out + out.err


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


def test_cel_evaluation_failure_and_no_keys_extracted_are_diagnosed_and_counted() -> None:
    """SPEC §6's remaining classes and counter end to end: an extractor that fails on a claim's
    config aborts that claim ("CEL evaluation failure"); a claim with no config yields no key
    under strict gating ("no keys extracted"), counted by `sharing_affinity_no_keys_extracted_total`."""
    doc = simulate("tests/data/simulate-diagnostics.yaml")
    broken, bare = doc["steps"]
    assert (broken["claim"], broken["placed"]) == ("t/broken", False)
    assert broken["unschedulable"]["diagnostic"] == "CEL evaluation failure"
    assert "no such key: subnetID" in broken["unschedulable"]["message"]
    assert (bare["claim"], bare["placed"]) == ("t/bare", False)
    assert bare["unschedulable"]["diagnostic"] == "no keys extracted"
    assert doc["metrics"]["sharing_affinity_no_keys_extracted_total"] == 1
    assert doc["metrics"]["sharing_affinity_extractor_evaluations_total"] == 1


def test_every_view_is_the_same_with_the_speed_layers_off(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`DRA_AFFINITY_SPEED_LAYERS=none` (no index, nothing remembered or shared) prints the
    same bytes as the default, in every view of one run, and so do the workload replay and
    `explain`, which run the same model."""
    files = _cluster(tmp_path, 60, devices=4, pools=2)
    cases = [(*STORY_1,), (*STORY_2,), (*STORY_3,), (*STORY_1, "--order",
                                                     "training/pod-a,training/pod-c,-training/pod-a"),
             (*files,), (*files, "--summary"), (*files, "--only-failing"), (*files, "--mode", "beta")]
    commands = [("simulate", *args) for args in cases] + [
        ("simulate", "--workload", "examples/capacity/nic-20-subnets.yaml", "examples/capacity/nic-pool.yaml",
         "--compare"),
        ("explain", "pod/web/frontend", "examples/cluster/dump.yaml"),
        ("explain", "team-c/e", "examples/cluster/dump.yaml"),
        ("explain", "team-a/a", "examples/cluster/dump.yaml")]
    for command in commands:
        for fmt in ("text", "json"):
            monkeypatch.delenv("DRA_AFFINITY_SPEED_LAYERS", raising=False)
            fast = run(*command, "--format", fmt)
            monkeypatch.setenv("DRA_AFFINITY_SPEED_LAYERS", "none")
            plain = run(*command, "--format", fmt)
            assert (plain.code, plain.out, plain.err) == (fast.code, fast.out, fast.err), command
