"""`dra-affinity dry-run` end to end: the SPEC §7 document, filters, explain, bad input."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from tests.cli import run

RESULT_SCHEMA = {
    "type": "object",
    "required": ["results"],
    "properties": {"results": {"type": "array", "items": {
        "type": "object",
        "required": ["claim", "request", "pool", "outcome", "affinity", "unsatisfied", "error"],
        "properties": {
            "claim": {"type": "string", "pattern": "^[^/]+/[^/]+$"},
            "request": {"type": "string"},
            "pool": {"type": "object", "required": ["driver", "name"]},
            "outcome": {"enum": ["ok", "not-satisfied", "claim-inconsistent", "slice-error",
                                 "not-applicable", "pool-incomplete"]},
            "affinity": {"type": ["object", "null"], "additionalProperties": {"type": "string"}},
            "unsatisfied": {"type": "array", "items": {"type": "string"}},
            "error": {"oneOf": [{"type": "null"}, {
                "type": "object", "required": ["kind", "extractor", "config", "message"]}]},
            "evaluations": {"type": "array"},
        },
    }}},
}

NETWORK = ["examples/networking-node-a.yaml", "examples/claims.yaml", "examples/kep-stories.yaml"]


def results(*args: str) -> list[dict]:
    out = run("dry-run", "--format", "json", *args)
    doc = out.json()
    jsonschema.validate(doc, RESULT_SCHEMA)
    return doc["results"]


def test_kep_multi_key_example() -> None:
    found = results(*NETWORK, "--claim", "ml/training-pod-a")
    [result] = found
    assert result["outcome"] == "ok"
    assert result["affinity"] == {"pkey": "0x8001", "subnet": "subnet-A"}
    assert result["pool"] == {"driver": "networking.example.com", "name": "node-a"}
    assert [(e["extractor"], e["config"], e["value"]) for e in result["evaluations"]] == [
        ("subnet", 0, "subnet-A"), ("pkey", 0, "0x8001")]
    assert all(e["runtimeCost"] > 0 for e in result["evaluations"])


def test_template_claims_are_named_namespace_slash_template() -> None:
    found = results("examples/fpga-bitstream.yaml", "examples/claims.yaml", "--claim",
                    "serving/inference-fpga")
    assert [(r["claim"], r["request"], r["outcome"]) for r in found] == [
        ("serving/inference-fpga", "fpga", "ok")]


def test_filters_and_exit_code_without_authoring_errors() -> None:
    out = run("dry-run", *NETWORK, "--pool", "node-a", "--request", "nic")
    assert out.code == 0, out.out
    assert "ml/training-pod-a" in out.out and "ok" in out.out


def test_slice_error_sets_exit_code_1(tmp_path: Path) -> None:
    meta = yaml.safe_load(Path("examples/rdma-pkey.yaml").read_text().split("---")[0])
    meta["spec"]["sharingAffinity"] = [{"name": "pkey", "expression": "object.pkey"}]
    (tmp_path / "slice.yaml").write_text(yaml.safe_dump(meta))
    out = run("dry-run", "--format", "json", str(tmp_path / "slice.yaml"),
              "examples/kep-stories.yaml", "--claim", "training/pod-a")
    assert out.code == 0  # not an authoring error of the slice or the claim
    [result] = out.json()["results"]
    assert result["outcome"] == "pool-incomplete"  # one slice of two: the scheduler skips it
    meta["spec"]["pool"]["resourceSliceCount"] = 1
    (tmp_path / "slice.yaml").write_text(yaml.safe_dump(meta))
    out = run("dry-run", "--format", "json", str(tmp_path / "slice.yaml"),
              "examples/kep-stories.yaml", "--claim", "training/pod-a")
    assert out.code == 1
    [result] = out.json()["results"]
    assert result["outcome"] == "slice-error"
    assert result["error"]["kind"] == "missing field"
    assert result["error"]["extractor"] == "pkey"
    assert result["error"]["config"] == 0


def test_explain_prints_every_step() -> None:
    out = run("dry-run", *NETWORK, "--explain", "web/subnet-b")
    assert "config[0], config[1]" in out.out
    assert 'returned "" (declines this config)' in out.out
    assert '=> every extractor is satisfied; affinity map {"pkey": "0x8001", "subnet": "subnet-B"}' in out.out


def test_bad_claims_are_located_and_others_still_evaluated(tmp_path: Path) -> None:
    bad = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "bad", "namespace": "ns"},
        "spec": {"devices": {
            "requests": [{"name": "nic", "exactly": {"deviceClassName": "x"}}],
            "config": [
                {"requests": ["nope"], "opaque": {"driver": "networking.example.com",
                                                  "parameters": {"subnetID": "s"}}},
                {"requests": ["nic"]},
            ],
        }},
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad, sort_keys=False))
    out = run("dry-run", "--format", "json", str(path), *NETWORK)
    doc = out.json()
    messages = {f["field"]: f["message"] for f in doc["findings"]}
    assert "must be the name of a request in the claim" in messages["spec.devices.config[0].requests[0]"]
    assert messages["spec.devices.config[1].opaque"] == "spec.devices.config[1].opaque: Required value"
    assert all(f["file"].endswith("bad.yaml") and f["line"] for f in doc["findings"])
    assert {r["claim"] for r in doc["results"]} >= {"ml/training-pod-a", "ns/bad"}
    assert out.code == 1


def test_device_classes_restrict_candidate_pools() -> None:
    found = results(*NETWORK, "examples/fpga-bitstream.yaml", "examples/device-classes.yaml",
                    "--claim", "ml/training-pod-a")
    assert {r["pool"]["driver"] for r in found} == {"networking.example.com"}


def test_failing_selector_is_a_located_finding_not_a_traceback(tmp_path: Path) -> None:
    broken = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
              "metadata": {"name": "nic.networking.example.com"},
              "spec": {"selectors": [{"cel": {"expression":
                       'device.attributes["networking.example.com"].model == "x"'}}]}}
    path = tmp_path / "class.yaml"
    path.write_text(yaml.safe_dump(broken))
    out = run("dry-run", "--format", "json", *NETWORK, str(path), "--claim", "ml/training-pod-a")
    assert out.code == 1
    doc = out.json()
    [finding] = [f for f in doc["findings"] if f["rule"] == "SA003"]
    assert finding["message"].startswith("class nic.networking.example.com: selector #0: CEL runtime error:")
    assert finding["file"].endswith("class.yaml")
    assert doc["results"] == []


def test_non_string_results_of_every_kind_are_reported_not_crashed_on(tmp_path: Path) -> None:
    """A non-string result is a slice error; its value is shown as cel-go would print it, in
    JSON and in text, whatever its type (timestamps, durations, bytes, library values, maps
    holding optionals)."""
    meta = yaml.safe_load(Path("examples/rdma-pkey.yaml").read_text().split("---")[0])
    meta["spec"]["pool"]["resourceSliceCount"] = 1
    expected = {
        "timestamp('2020-01-01T00:00:00.5Z')": "2020-01-01T00:00:00.5Z",
        "duration('1.5s')": "1.5s",
        "b'xy'": "xy",
        "semver('1.2.3')": None,  # a library string type: converts, so it is a key, not an error
        "{'a': optional.none()}": {"a": None},
    }
    for expression, shown in expected.items():
        meta["spec"]["sharingAffinity"] = [{"name": "pkey", "expression": expression}]
        (tmp_path / "slice.yaml").write_text(yaml.safe_dump(meta))
        args = (str(tmp_path / "slice.yaml"), "examples/kep-stories.yaml", "--claim", "training/pod-a")
        out = run("dry-run", "--format", "json", *args)
        assert "Traceback" not in out.err, (expression, out.err)
        [result] = out.json()["results"]
        if shown is None:
            assert result["outcome"] == "ok" and result["affinity"] == {"pkey": "1.2.3"}, expression
            continue
        assert result["outcome"] == "slice-error", expression
        assert result["error"]["kind"] == "cel expression returned non-string", expression
        assert [e["value"] for e in result["evaluations"]] == [shown], expression
        text = run("dry-run", "--explain", "training/pod-a", *args)
        assert text.code == 1 and "Traceback" not in text.err, (expression, text.err)


def test_summary_counts_every_outcome_and_keeps_only_the_others() -> None:
    full = run("dry-run", "--format", "json", *NETWORK).json()["results"]
    out = run("dry-run", "--format", "json", "--summary", *NETWORK)
    doc = out.json()
    jsonschema.validate(doc, RESULT_SCHEMA)
    every: dict[str, int] = {}
    for r in full:
        every[r["outcome"]] = every.get(r["outcome"], 0) + 1
    assert doc["summary"]["results"] == len(full) and doc["summary"]["outcomes"] == every
    assert sum(sum(p["outcomes"].values()) for p in doc["summary"]["pools"]) == len(full)
    assert doc["results"] == [r for r in full if r["outcome"] not in ("ok", "not-applicable")]
    assert any(r["outcome"] == "ok" for r in full) and doc["results"]
    failing = run("dry-run", "--format", "json", "--only-failing", *NETWORK).json()
    assert failing["results"] == doc["results"] and "summary" not in failing
    text = run("dry-run", "--summary", *NETWORK)
    assert text.code == out.code
    assert "total" in text.out and f"ok {every['ok']}" in text.out
