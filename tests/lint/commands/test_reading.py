"""Every file read as `kubectl apply` sends it, through the installed console script: kubectl's
YAML typing, unknown fields, no document lost, empty input reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cli import run

PLAIN_SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: {name}
spec:
  driver: {driver}
  nodeName: node-a
  pool:
    name: {pool}
    generation: {generation}
    resourceSliceCount: 1
  sharingAffinity:
  - name: subnet
    {expression}: 'has(object.subnet) ? object.subnet : ""'
"""


def _slice(name: str = "s", driver: str = "d.example.com", pool: str = "p", generation: str = "1",
           expression: str = "expression") -> str:
    return PLAIN_SLICE.format(name=name, driver=driver, pool=pool, generation=generation,
                              expression=expression)


def _lint(tmp_path: Path, text: str, *args: str) -> tuple[int, dict[str, Any], str]:
    path = tmp_path / "input.yaml"
    path.write_text(text, encoding="utf-8")
    result = run("lint", "--format", "json", *args, str(path))
    return result.code, result.json(), result.err


def _input_errors(report: dict[str, Any]) -> list[tuple[int | None, str | None, str]]:
    return [(f.get("line"), f.get("field"), f["message"]) for f in report["findings"] if f["rule"] == "SA000"]


def test_a_misspelled_field_is_an_error_naming_it(tmp_path: Path) -> None:
    text = _slice(expression="expresion").replace("sharingAffinity:", "sharingAffnity:")
    code, report, _ = _lint(tmp_path, text, "--strict")
    assert code == 1
    assert _input_errors(report) == [
        (12, "spec.sharingAffnity",
         'unknown field "spec.sharingAffnity" (did you mean "spec.sharingAffinity"?)')]
    code, report, _ = _lint(tmp_path, _slice(expression="expresion"))
    assert code == 1
    assert _input_errors(report) == [
        (14, "spec.sharingAffinity[0].expresion", 'unknown field "spec.sharingAffinity[0].expresion" '
         '(did you mean "spec.sharingAffinity[0].expression"?)')]
    # the rest of the slice is still checked: the entry lacks its expression
    assert "SA104" in {f["rule"] for f in report["findings"]}


def test_scalars_are_typed_as_kubectl_types_them(tmp_path: Path) -> None:
    # `driver: y` is the boolean true to kubectl: a mistyped required field
    code, report, _ = _lint(tmp_path, _slice(driver="y"))
    assert code == 1
    assert _input_errors(report) == [
        (6, "spec.driver", "spec.driver: Invalid value: true: must be of type string")]
    # `pool.name: 1e5` is the number 100000
    _, report, _ = _lint(tmp_path, _slice(pool="1e5"))
    assert _input_errors(report) == [
        (9, "spec.pool.name", "spec.pool.name: Invalid value: 100000: must be of type string")]
    # `generation: 1e5`, `0X1f`, `0o17`, `1.0` are integers kubectl sends as such
    for generation in ("1e5", "0X1f", "0o17", "1.0", "1_000"):
        _, report, _ = _lint(tmp_path, _slice(generation=generation))
        assert not _input_errors(report), (generation, report)
    # past int64: the API server cannot decode it
    _, report, _ = _lint(tmp_path, _slice(generation="9223372036854775808"))
    assert _input_errors(report) == [
        (10, "spec.pool.generation", "spec.pool.generation: Invalid value: 9223372036854775808: must fit "
         "in a 64-bit integer (the API server cannot decode it into an int64)")]
    # no sexagesimal: `1:30` stays a string
    _, report, _ = _lint(tmp_path, _slice().replace("resourceSliceCount: 1", "resourceSliceCount: 1:30"))
    assert _input_errors(report) == [
        (11, "spec.pool.resourceSliceCount",
         'spec.pool.resourceSliceCount: Invalid value: "1:30": must be of type integer')]


def test_an_annotation_given_as_a_list_is_refused_as_kubectl_refuses_it(tmp_path: Path) -> None:
    text = _slice().replace("  name: s\n", "  name: s\n  annotations: [a]\n")
    code, report, _ = _lint(tmp_path, text)
    assert code == 1
    assert _input_errors(report) == [
        (5, "metadata.annotations",
         'metadata.annotations: Invalid value: ["a"]: must be of type object (a map of strings)')]


def test_a_control_character_loses_only_its_own_document(tmp_path: Path) -> None:
    documents = [_slice(name=f"s{i}", pool=f"p{i}") for i in range(5)]
    documents[1] = documents[1].replace('object.subnet : ""', "object.subnet +")  # SA106
    for bad in ("\x0c", "\x0b", "\x1b"):
        broken = list(documents)
        broken[3] = broken[3].replace("name: s3", f"name: s{bad}3")
        _, report, _ = _lint(tmp_path, "---\n".join(broken))
        assert report["summary"]["objects"] == 4
        assert [(f["line"], f["message"].split(":")[0])
                for f in report["findings"] if f["rule"] == "SA000"] == [
            (49, f"unacceptable character #x{ord(bad):04x}")]
        assert {f["object"]["name"] for f in report["findings"] if f["rule"] == "SA106"} == {"s1"}


def test_a_list_inside_a_list_is_reported(tmp_path: Path) -> None:
    text = ("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: []\n"
            "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n")
    code, report, _ = _lint(tmp_path, text)
    assert code == 1
    assert _input_errors(report) == [
        (4, None, "item 0 of the List is itself a List: a list inside a list is not read; put its items in "
         "the outer list")]


def test_a_suite_whose_resource_cannot_be_read_fails(tmp_path: Path) -> None:
    (tmp_path / "slices.yaml").write_text(_slice() + "---\nkind: [\n", encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: s\nresources: [slices.yaml]\ncases:\n- name: c\n  claim: x\n"
                     "  expect: {outcome: ok}\n", encoding="utf-8")
    result = run("test", str(suite))
    assert result.code == 2
    assert f"{suite}: resources cannot be read: {tmp_path / 'slices.yaml'}:" in result.err
    suite.write_text("name: s\nresources: [slices.yaml]\ncases:\n- name: c\n  claim: x\n"
                     "  expct: {outcome: ok}\n", encoding="utf-8")
    result = run("test", str(suite))
    assert result.code == 2
    assert f'{suite}:6:3: unknown field "cases[0].expct" (did you mean "cases[0].expect"?)' in result.err


def test_empty_input_is_reported_and_fails_with_fail_if_no_resources(tmp_path: Path) -> None:
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    deployment = tmp_path / "deploy.yaml"
    deployment.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n", encoding="utf-8")
    slices = tmp_path / "slices.yaml"
    slices.write_text(_slice(), encoding="utf-8")
    for command in ("lint", "pools", "dry-run", "locks", "simulate"):
        result = run(command, "-", stdin="")
        assert "warning: standard input (-) held no ResourceSlice" in result.err, (command, result.err)
    result = run("lint", str(empty_dir), str(deployment), str(slices))
    assert result.code == 0, result.err
    for path in (empty_dir, deployment):
        assert f"warning: {path}: no ResourceSlice, ResourceClaim, ResourceClaimTemplate or DeviceClass" \
            in result.err
    assert f"{slices}:" not in result.err
    result = run("lint", "--fail-if-no-resources", str(empty_dir), str(slices))
    assert result.code == 2
    assert f"{empty_dir}: nothing read (--fail-if-no-resources)" in result.err
    result = run("lint", "--fail-if-no-resources", "-", stdin="")
    assert result.code == 2
    # a file named twice is read once: the second naming is not an empty input
    for command in ("lint", "pools"):
        result = run(command, str(slices), str(slices))
        assert "warning" not in result.err, (command, result.err)
