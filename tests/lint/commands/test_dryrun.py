"""`dra-affinity dry-run` end to end: the SPEC §7 document, filters, explain, bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from dra_affinity.lint.commands.dryrun_cmd import result_to_json, spliced_result_text
from dra_affinity.lint.json_text import Rendered, write_members
from dra_affinity.policies.core.findings import PoolRef
from dra_affinity.policies.core.layers import ENV
from dra_affinity.policies.scheduler.extraction import (
    Evaluation,
    ExtractionProblem,
    ExtractionResult,
    Outcome,
    relabel,
)
from hypothesis import given, settings
from hypothesis import strategies as st

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
                                 "no-matching-device",
                                 "selector-error",
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
    assert [r["outcome"] for r in doc["results"]] == ["selector-error"]


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


def _pools_and_claim(tmp_path: Path, *, selectors: list[str], class_selector: str | None = None) -> list[str]:
    """Two pools of one driver (eth0 model a; eth0/eth1 model b), one of another, a class, a claim."""

    def pool(name: str, devices: dict[str, str], driver: str = "net.example.com") -> list[dict]:
        meta = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-meta"},
                "spec": {"driver": driver, "nodeName": name,
                         "pool": {"name": name, "generation": 1, "resourceSliceCount": 2},
                         "sharingAffinity": [{"name": "vlan", "expression":
                                              'has(object.vlan) ? "%s".format([object.vlan]) : ""'}]}}
        devs = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-devs"},
                "spec": {"driver": driver, "nodeName": name,
                         "pool": {"name": name, "generation": 1, "resourceSliceCount": 2},
                         "devices": [{"name": d, "allowMultipleAllocations": True,
                                      "attributes": {"model": {"string": m}}} for d, m in devices.items()]}}
        return [meta, devs]

    docs = [*pool("node-a", {"eth0": "a"}), *pool("node-b", {"eth0": "b", "eth1": "b"}),
            *pool("gpu-1", {"gpu0": "x"}, driver="gpu.example.com")]
    docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "nic"},
                 "spec": {"selectors": [{"cel": {"expression": class_selector or
                                                 'device.driver == "net.example.com"'}}]}})
    docs.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "pod", "namespace": "ml"},
                 "spec": {"devices": {
                     "requests": [{"name": "nic", "exactly": {
                         "deviceClassName": "nic",
                         "selectors": [{"cel": {"expression": e}} for e in selectors]}}],
                     "config": [{"requests": ["nic"], "opaque": {"driver": "net.example.com",
                                                                 "parameters": {"vlan": 7}}}]}}})
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return [str(path)]


def test_every_pool_of_the_class_driver_is_reported(tmp_path: Path) -> None:
    paths = _pools_and_claim(tmp_path, selectors=['device.attributes["net.example.com"].model == "a"'])
    found = results(*paths)
    assert sorted((r["pool"]["name"], r["outcome"]) for r in found) == [
        ("node-a", "ok"), ("node-b", "no-matching-device")]  # gpu-1: not the class's driver
    table = run("dry-run", *paths)
    assert table.code == 0  # no-matching-device is an outcome, not an authoring error
    assert ("node-b  no-matching-device  2 of 2 devices pass DeviceClass nic's selectors; "
            "request selector #0 excluded 2 devices") in table.out
    explained = run("dry-run", *paths, "--explain", "ml/pod")
    assert explained.code == 0
    assert "Claim ml/pod, request 'nic', pool net.example.com/node-b:" in explained.out
    assert "  2. Of those, selector #0 excluded 2 devices." in explained.out
    assert "=> no device of the pool passes the request's selectors" in explained.out
    # the CI formats carry it as a note at the claim's requests (it fails nothing)
    sarif = run("dry-run", "--format", "sarif", *paths)
    assert sarif.code == 0
    [note] = [r for r in json.loads(sarif.out)["runs"][0]["results"]
              if r["ruleId"] == "dry-run/no-matching-device"]
    assert note["level"] == "note" and "node-b: no-matching-device: 2 of 2 devices" in note["message"]["text"]
    assert note["locations"][0]["properties"]["field"] == "spec.devices.requests"
    github = run("dry-run", "--format", "github", *paths)
    assert github.code == 0
    assert "::notice file=" in github.out and "title=dry-run/no-matching-device::" in github.out
    junit = run("dry-run", "--format", "junit", *paths).out
    assert "<failure" not in junit and "no-matching-device: 2 of 2 devices" in junit


def test_selector_errors_are_an_outcome_on_every_pool(tmp_path: Path) -> None:
    # no has() guard: the attribute is missing on every device -> a runtime error, not a non-match
    paths = _pools_and_claim(tmp_path, selectors=['device.attributes["net.example.com"].speed == "10G"'])
    out = run("dry-run", "--format", "json", *paths)
    assert out.code == 1
    doc = out.json()
    assert sorted((r["pool"]["name"], r["outcome"]) for r in doc["results"]) == [
        ("node-a", "selector-error"), ("node-b", "selector-error")]
    assert all(r["error"]["message"].startswith("claim ml/pod: selector #0: CEL runtime error:")
               for r in doc["results"])
    assert [f["rule"] for f in doc["findings"]] == ["SA003"]
    sarif = json.loads(run("dry-run", "--format", "sarif", *paths).out)
    rules = {r["ruleId"] for r in sarif["runs"][0]["results"]}
    assert "dry-run/selector-error" in rules
    github = run("dry-run", "--format", "github", *paths).out
    assert github.count("selector-error") >= 2
    junit = run("dry-run", "--format", "junit", *paths).out
    assert junit.count("<failure") >= 2 and "selector-error" in junit
    explained = run("dry-run", *paths, "--explain", "ml/pod").out
    assert "=> selector error: the scheduler aborts scheduling of the pod" in explained


def test_a_request_whose_class_is_missing_is_an_input_error(tmp_path: Path) -> None:
    paths = _pools_and_claim(tmp_path, selectors=[])
    text = Path(paths[0]).read_text().replace("deviceClassName: nic", "deviceClassName: nic-typo")
    Path(paths[0]).write_text(text)
    out = run("dry-run", "--format", "json", *paths)
    assert out.code == 1
    doc = out.json()
    assert doc["results"] == []  # the scheduler leaves the claim pending: no pool is tried
    [finding] = doc["findings"]
    assert finding["rule"] == "SA000" and finding["field"] == "spec.devices.requests[0]"
    assert finding["message"] == ("claim ml/pod request 'nic': DeviceClass 'nic-typo' is not in the input "
                                  "(the scheduler leaves the claim pending); give the class's file, "
                                  "or fix the name")
    err = run("dry-run", *paths).err
    assert ": SA000 error: claim ml/pod request" in err and "\n    in ResourceClaim/ml/pod\n" in err
    # without any DeviceClass in the input, every pool is a candidate as before
    no_classes = run("dry-run", "examples/networking-node-a.yaml", "examples/claims.yaml")
    assert no_classes.code == 0


def test_filters_that_match_nothing_are_usage_errors() -> None:
    for option, value in (("--claim", "ml/nope"), ("--pool", "nope"), ("--request", "nope"),
                          ("--explain", "ml/nope")):
        out = run("dry-run", *NETWORK, option, value)
        assert out.code == 2, (option, out.out)
        assert f"dra-affinity dry-run: {option}: no " in out.err and repr(value) in out.err


def test_suite_outcomes_include_the_pool_outcomes(tmp_path: Path) -> None:
    _pools_and_claim(tmp_path, selectors=['device.attributes["net.example.com"].model == "a"'])
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"resources": ["input.yaml"], "cases": [
        {"name": "b has no model-a NIC", "claim": "ml/pod", "pool": "node-b",
         "expect": {"outcome": "no-matching-device"}},
        {"name": "a serves it", "claim": "ml/pod", "pool": "node-a", "expect": {"outcome": "ok"}}]}))
    out = run("test", str(suite))
    assert out.code == 0, out.out + out.err
    missing = tmp_path / "missing.yaml"
    missing.write_text("resources:\n  - input.yaml\n  - nope/\ncases:\n  - {name: x, claim: ml/pod, "
                       "expect: {outcome: ok}}\n")
    broken = run("test", str(missing))
    assert broken.code == 2
    assert f"{missing}:3:5: resources.1: nope/: no such file or directory" in broken.err


def test_streamed_json_is_the_document_the_other_path_writes(tmp_path: Path) -> None:
    """`--format json` alone is written as results are decided (10,000 claims gave
    ~390 MB of JSON held whole); with a second report the whole document is built first. Both
    give the same text and exit code, to stdout and to a file, findings and suppressed too."""
    bad = tmp_path / "bad-claim.yaml"
    bad.write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: b, namespace: ml}\n"
                   "spec: {devices: {requests: 5}}\n")
    inputs = ["examples/", str(bad), "--show-suppressed"]
    streamed = run("dry-run", *inputs, "--format", "json")
    to_file = run("dry-run", *inputs, "--format", "json", "--output", str(tmp_path / "s.json"))
    built = run("dry-run", *inputs, "--format", "json", "--output", str(tmp_path / "b.json"),
                "--format", "sarif", "--output", str(tmp_path / "b.sarif"))
    doc = json.loads(streamed.out)
    assert doc["results"] and doc["findings"] and "suppressed" in doc
    assert streamed.out == (tmp_path / "s.json").read_text() == (tmp_path / "b.json").read_text()
    assert streamed.code == to_file.code == built.code == 1
    assert streamed.err == to_file.err == built.err


def test_streamed_json_with_no_result_is_valid_and_fail_if_no_resources_holds(tmp_path: Path) -> None:
    claims = tmp_path / "claims.yaml"
    claims.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    proc = run("dry-run", str(claims), "--format", "json", "--fail-if-no-resources")
    assert proc.code == 2 and "--fail-if-no-resources" in proc.err
    assert json.loads(proc.out) == {"results": [], "findings": [],
                                    "kubernetes": {"version": "1.37", "celEnvironment": "1.37"}}
    bad = run("dry-run", "examples/", "--format", "json", "--output", str(tmp_path / "no" / "x.json"))
    assert bad.code == 2 and "cannot write the json report" in bad.err and bad.out == ""


def test_streamed_json_of_a_generated_cluster_is_the_json_modules_text(tmp_path: Path) -> None:
    """The scheduler benchmark's cluster shape (bench/gen_slices.py), small, plus claims whose extraction is
    not ok (a missing key, a non-ASCII value, two configs disagreeing, a wrong type, a request
    selector excluding every device, one failing on every device): the
    streamed text, whose shared parts are rendered once per plan item, is byte for byte the
    built path's `json.dumps(..., indent=2)` of every result."""
    from bench.gen_slices import CLUSTER_CLASS, CLUSTER_DRIVER, generate_cluster

    slices, classes, claims = generate_cluster(60, tmp_path / "cluster", seed=3, devices=40, pools=8)

    def claim(name: str, *parameters: dict[str, object], selector: str | None = None) -> dict[str, object]:
        exactly: dict[str, object] = {"deviceClassName": CLUSTER_CLASS}
        if selector is not None:
            exactly["selectors"] = [{"cel": {"expression": selector}}]
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": "odd"},
                "spec": {"devices": {
                    "requests": [{"name": "nic", "exactly": exactly}],
                    "config": [{"requests": ["nic"], "opaque": {"driver": CLUSTER_DRIVER, "parameters": {
                        "apiVersion": f"{CLUSTER_DRIVER}/v1", "kind": "NICConfig", **p}}}
                        for p in parameters]}}}

    odd = tmp_path / "odd.yaml"
    odd.write_text(yaml.safe_dump_all([
        claim("no-pkey", {"subnetID": "subnet-01"}),
        claim("non-ascii", {"subnetID": "sübnet-\u2603\"\\", "ibPKey": "0x8001"}),
        claim("disagree", {"subnetID": "subnet-01", "ibPKey": "0x8001"},
              {"subnetID": "subnet-02", "ibPKey": "0x8001"}),
        claim("wrong-type", {"subnetID": 7, "ibPKey": ["0x8001"]}),
        claim("no-device", {"subnetID": "subnet-01", "ibPKey": "0x8001"},
              selector=f'device.attributes["{CLUSTER_DRIVER}"].model == "none"'),
        claim("bad-selector", {"subnetID": "subnet-01", "ibPKey": "0x8001"},
              selector=f'device.attributes["{CLUSTER_DRIVER}"].missing == "x"'),
    ]))
    inputs = [str(slices), str(classes), str(claims), str(odd)]
    streamed = run("dry-run", *inputs, "--format", "json")
    built = run("dry-run", *inputs, "--format", "json", "--output", str(tmp_path / "b.json"),
                "--format", "sarif", "--output", str(tmp_path / "b.sarif"))
    doc = json.loads(streamed.out)
    outcomes = {r["outcome"] for r in doc["results"]}
    assert len(doc["results"]) == 66 * 8 and outcomes == {
        "ok", "not-satisfied", "claim-inconsistent", "slice-error", "no-matching-device",
        "selector-error"}, outcomes
    assert any("\\u2603" in line for line in streamed.out.splitlines())
    assert streamed.out == (tmp_path / "b.json").read_text()
    assert streamed.code == built.code


@pytest.mark.parametrize("view", [(), ("--summary",), ("--only-failing",)],
                         ids=["all", "summary", "only-failing"])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_every_view_is_the_same_with_the_speed_layers_off(
        fmt: str, view: tuple[str, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`DRA_AFFINITY_SPEED_LAYERS=none` (each claim request decided on its own, nothing shared)
    writes the same bytes and exits the same way, input findings on stderr included."""
    bad = tmp_path / "bad-claim.yaml"
    bad.write_text("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: b, namespace: ml}\n"
                   "spec: {devices: {requests: 5}}\n")
    args = ("dry-run", "examples/", str(bad), "--format", fmt, *view)
    shared = run(*args)
    monkeypatch.setenv(ENV, "none")
    plain = run(*args)
    assert shared.out and shared.code == 1
    assert (plain.out, plain.err, plain.code) == (shared.out, shared.err, shared.code)


_TEXT = st.text(max_size=8)
_EVALUATIONS = st.builds(
    Evaluation, _TEXT, st.integers(0, 3),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | _TEXT | st.binary(max_size=4),
                 lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
                 max_leaves=8),
    _TEXT, st.integers(0, 10**6), st.none() | _TEXT, st.none() | _TEXT)
_RESULTS = st.builds(
    ExtractionResult, _TEXT, _TEXT, st.builds(PoolRef, _TEXT, _TEXT), st.sampled_from(Outcome),
    st.none() | st.dictionaries(_TEXT, _TEXT, max_size=3), st.lists(_TEXT, max_size=2).map(tuple),
    st.none() | st.builds(ExtractionProblem, _TEXT, _TEXT, st.none() | _TEXT, st.none() | st.integers(0, 3)),
    st.lists(_EVALUATIONS, max_size=3).map(tuple), st.lists(st.integers(0, 5), max_size=3).map(tuple),
    st.lists(_TEXT, max_size=2).map(tuple))


@settings(max_examples=300, deadline=None)
@given(st.lists(_RESULTS, min_size=1, max_size=4), st.lists(st.tuples(_TEXT, _TEXT, _TEXT), max_size=6))
def test_result_text_is_the_json_modules_text_of_the_result(
        results: list[ExtractionResult], others: list[tuple[str, str, str]]) -> None:
    """`spliced_result_text` (claim, request and pool written directly, the rest rendered once per
    shared result: relabelled copies, as `DryRun` yields them, hit the cache) writes what
    `json.dumps(indent=2)` writes for `result_to_json`, escapes and all."""
    every = [*results, *(relabel(results[i % len(results)], claim, PoolRef(driver, name))
                         for i, (claim, driver, name) in enumerate(others))]
    out = io.StringIO()
    write_members(iter([("results", Rendered(spliced_result_text(r) for r in every))]), out.write)
    assert out.getvalue() == json.dumps({"results": [result_to_json(r) for r in every]}, indent=2)
