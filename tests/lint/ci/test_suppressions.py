"""Suppressions in all three forms, each with a reason, and their audit (SA001, SA002)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dra_affinity.lint.suppressions import glob_to_regex

from tests.lint.ci.support import SLICE, cli, write

# SLICE's SA201 is at 13:24 (inside the block scalar), SA202 at 11:7 (the `expression:` key).


def _lint(tmp_path: Path, *args: str, stdin: str | None = None) -> dict[str, Any]:
    out = cli("lint", "--format", "json", "--show-suppressed", *args, cwd=tmp_path, stdin=stdin)
    assert out.code in (0, 1), out.err
    data: dict[str, Any] = json.loads(out.out)
    return data


def _rules(data: dict[str, Any], key: str = "findings") -> list[tuple[str, int | None]]:
    return sorted((f["rule"], f["line"]) for f in data[key])


def _with(line: int, text: str, slice_text: str = SLICE) -> str:
    """SLICE with `text` appended to (or, starting with a newline, inserted before) 1-based `line`."""
    lines = slice_text.format(name="a", pool="p").lstrip("\n").splitlines()
    if text.startswith("\n"):
        indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
        lines.insert(line - 1, " " * indent + text.strip())
    else:
        lines[line - 1] += text
    return "\n".join(lines) + "\n"


def test_trailing_comment_on_the_expression_line_covers_its_value(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml",
          _with(11, "  # dra-affinity: ignore SA201, SA202 -- configs always carry spec"))
    data = _lint(tmp_path, "s.yaml")
    assert _rules(data) == []
    assert _rules(data, "suppressed") == [("SA201", 13), ("SA202", 11)]
    suppression = data["suppressed"][0]["suppression"]
    assert suppression == {"kind": "comment", "reason": "configs always carry spec", "file": "s.yaml",
                           "line": 11, "column": 22}
    assert data["summary"]["suppressed"] == 2


def test_comment_alone_above_covers_the_next_node(tmp_path: Path) -> None:
    # above `- name: subnet`: the whole sharingAffinity entry, SA201 inside its expression included
    write(tmp_path / "s.yaml", _with(10, "\n# dra-affinity: ignore SA201 -- entry-wide"))
    assert _rules(_lint(tmp_path, "s.yaml")) == [("SA202", 12)]
    # above the object's first line: the whole object
    write(tmp_path / "s.yaml", "# dra-affinity: ignore SA201,SA202 -- whole object\n"
          + SLICE.format(name="a", pool="p").lstrip("\n"))
    data = _lint(tmp_path, "s.yaml")
    assert _rules(data) == [] and len(data["suppressed"]) == 2


def test_comment_lookalikes_inside_strings_do_not_suppress(tmp_path: Path) -> None:
    text = SLICE.replace('"%s".format([object.spec.subnet]) : ""',
                         '"%s".format([object.spec.subnet]) : "# dra-affinity: ignore SA201 -- no"')
    write(tmp_path / "s.yaml", text.format(name="a", pool="p"))
    data = _lint(tmp_path, "s.yaml")
    assert ("SA201", 13) in _rules(data)
    assert data["suppressed"] == []


def test_annotation_suppresses_in_its_object_only(tmp_path: Path) -> None:
    annotated = SLICE.replace(
        "  name: {name}\n",
        "  name: {name}\n  annotations:\n"
        "    dra-affinity.io/ignore: \"SA201: the driver's webhook requires spec; SA202: one kind\"\n")
    write(tmp_path / "s.yaml", annotated.format(name="a", pool="p") + "---\n"
          + SLICE.format(name="b", pool="q").lstrip("\n"))
    data = _lint(tmp_path, "s.yaml")
    assert sorted((f["rule"], f["object"]["name"]) for f in data["findings"]) == [
        ("SA201", "b"), ("SA202", "b")]
    reasons = {s["rule"]: s["suppression"]["reason"] for s in data["suppressed"]}
    assert reasons == {"SA201": "the driver's webhook requires spec", "SA202": "one kind"}
    assert data["suppressed"][0]["suppression"]["kind"] == "annotation"


def test_annotation_works_on_stdin_and_comments_too(tmp_path: Path) -> None:
    text = _with(11, "  # dra-affinity: ignore SA202 -- from a pipe")
    data = _lint(tmp_path, "-", stdin=text)
    assert _rules(data) == [("SA201", 13)]
    assert data["suppressed"][0]["suppression"]["file"] == "<stdin>"


def test_config_ignores_by_rule_path_and_object(tmp_path: Path) -> None:
    write(tmp_path / "vendor" / "chart" / "s.yaml", SLICE.format(name="vendored", pool="v"))
    write(tmp_path / "mine" / "s.yaml", SLICE.format(name="mine", pool="m"))
    write(tmp_path / ".dra-affinity.yaml", """
        ignore:
          - rules: [SA201, SA202]
            paths: ["vendor/"]
            reason: rendered upstream chart, fixed there
          - rule: SA202
            objects: ["ResourceSlice/mi*"]
            reason: single-kind driver
        """)
    data = _lint(tmp_path / "mine", ".", "../vendor")  # run from a subdirectory: globs stay config-relative
    assert [(f["rule"], f["file"]) for f in data["findings"]] == [("SA201", "s.yaml")]
    kinds = {(s["object"]["name"], s["rule"]): s["suppression"]["kind"] for s in data["suppressed"]}
    assert kinds == {("vendored", "SA201"): "config", ("vendored", "SA202"): "config",
                     ("mine", "SA202"): "config"}
    assert data["suppressed"][0]["suppression"]["file"].endswith(".dra-affinity.yaml")


def test_missing_reason_is_reported_but_still_suppresses(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", _with(11, "  # dra-affinity: ignore SA202"))
    out = cli("lint", "--format", "json", "--strict", "s.yaml", cwd=tmp_path)
    data = json.loads(out.out)
    assert _rules(data) == [("SA001", 11), ("SA201", 13)]
    sa001 = next(f for f in data["findings"] if f["rule"] == "SA001")
    assert sa001["column"] == 22 and "gives no reason" in sa001["message"]
    assert out.code == 1  # --strict: the warning fails the run


def test_unused_and_unknown_suppressions_are_reported(tmp_path: Path) -> None:
    text = _with(11, "  # dra-affinity: ignore SA202, SA205 -- SA205 never fires here")
    text = text.replace("  name: a\n",
                        "  name: a\n  annotations:\n    dra-affinity.io/ignore: \"SA299: typo\"\n")
    write(tmp_path / "s.yaml", text)
    data = _lint(tmp_path, "s.yaml")
    messages = {f["line"]: f["message"] for f in data["findings"] if f["rule"] == "SA002"}
    assert set(messages) == {6, 13}
    assert "SA299" in messages[6] and "not a rule id" in messages[6]
    assert "no SA205 finding" in messages[13] and "SA202" not in messages[13]


def test_suppressions_of_rules_that_did_not_run_are_not_unused(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", _with(10, "  # dra-affinity: ignore SP305 -- no devices in this repo"))
    with_pools = _lint(tmp_path, "s.yaml")
    assert [f["rule"] for f in with_pools["findings"] if f["rule"].startswith("SA00")] == ["SA002"]
    without_pools = _lint(tmp_path, "--no-pools", "s.yaml")
    assert not [f for f in without_pools["findings"] if f["rule"].startswith("SA00")]


def test_pool_findings_are_suppressed_from_any_slice_they_name(tmp_path: Path) -> None:
    first = SLICE.format(name="a", pool="p")
    second = SLICE.format(name="b", pool="p").replace(
        "    - name: subnet\n", "    - name: subnet  # dra-affinity: ignore SP301 -- migration, see OPS-12\n")
    write(tmp_path / "s.yaml", first + "---\n" + second.lstrip("\n"))
    data = _lint(tmp_path, "--pools-only", "s.yaml")
    assert [s["rule"] for s in data["suppressed"]] == ["SP301"]
    assert "SP301" not in [f["rule"] for f in data["findings"]]


def test_text_output_lists_suppressed_with_their_reason(tmp_path: Path) -> None:
    write(tmp_path / "s.yaml", _with(11, "  # dra-affinity: ignore SA202 -- one kind only"))
    hidden = cli("lint", "s.yaml", cwd=tmp_path).out
    assert "SA202" not in hidden and hidden.rstrip().endswith("1 suppressed")
    shown = cli("lint", "--show-suppressed", "s.yaml", cwd=tmp_path).out
    assert "s.yaml:11:7: SA202 suppressed: " in shown
    assert "by comment at s.yaml:11:22: one kind only" in shown


@pytest.mark.parametrize(("glob", "path", "hit"), [
    ("vendor/", "vendor/a/b.yaml", True),
    ("vendor", "x/vendor/b.yaml", True),
    ("*.yaml", "deep/er/b.yaml", True),
    ("deploy/*.yaml", "deploy/a/b.yaml", False),
    ("deploy/**/b.yaml", "deploy/a/c/b.yaml", True),
    ("deploy/?.yaml", "deploy/ab.yaml", False),
])
def test_path_globs_are_gitignore_like(glob: str, path: str, hit: bool) -> None:
    import re

    assert bool(re.match(glob_to_regex(glob), path)) is hit


def test_annotations_work_for_objects_without_positions() -> None:
    """A live cluster's slices have no lines: the annotation matches findings by object."""
    from dra_affinity.lint.config import Config
    from dra_affinity.lint.suppressions import audit
    from dra_affinity.policies.core.findings import Finding, Location, ObjectRef, Severity
    from dra_affinity.policies.core.source import Source
    from dra_affinity.sources.loader import LoadedDocument

    def slice_(name: str, annotations: dict[str, str]) -> LoadedDocument:
        data = {"kind": "ResourceSlice", "metadata": {"name": name, "annotations": annotations}}
        return LoadedDocument(data, Source(file="cluster:prod"), "ResourceSlice", "resource.k8s.io/v1")

    def finding(name: str) -> Finding:
        where = Location(field=("spec",), file="cluster:prod", object=ObjectRef("ResourceSlice", name))
        return Finding("SA205", Severity.WARNING, "constant", (where,))

    documents = [slice_("a", {"dra-affinity.io/ignore": "SA205: fixed in driver v2"}), slice_("b", {})]
    result = audit([finding("a"), finding("b")], documents, Config(), ran=lambda rule: True)
    assert [f.primary.object.name for f in result.findings if f.primary.object] == ["b"]
    assert [s.by.reason for s in result.suppressed] == ["fixed in driver v2"]
