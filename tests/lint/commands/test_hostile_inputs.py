"""Hostile files through the CLI: every document is linted or
reported with its location, and no reader of YAML expands an alias bomb."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli import run

WRONG_KIND = """\
apiVersion: resource.k8s.io/v1
kind: [ResourceSlice]
metadata: {name: a}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: b}
spec:
  driver: [x]
  nodeName: node-1
  pool: {name: {a: 1}, generation: 1, resourceSliceCount: 1}
  sharingAffinity: [{name: k, expression: '"a"'}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: c}
spec:
  driver: d.example.com
  nodeName: node-1
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  sharingAffinity: [{name: k, expression: '1'}]
"""


def test_a_list_kind_is_reported_and_the_next_documents_are_linted(tmp_path: Path) -> None:
    path = tmp_path / "slices.yaml"
    path.write_text(WRONG_KIND)
    result = run("lint", "--format", "json", str(path))
    assert result.code == 1, result.err
    findings = result.json()["findings"]
    where = {(f["rule"], f["line"], f["field"]) for f in findings if f["rule"] == "SA000"}
    assert ("SA000", 2, "kind") in where
    assert ("SA000", 9, "spec.driver") in where
    assert ("SA000", 11, "spec.pool.name") in where
    # the third document, after both broken ones, is linted: its int extractor is SA107
    assert any(f["rule"] == "SA107" and f["line"] == 21 for f in findings)


BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def test_cel_check_object_refuses_an_alias_bomb(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BILLION_LAUGHS)
    result = run("cel", "check", "--object", str(path), 'object.?kind.orValue("x")')
    assert result.code == 2, (result.code, result.out, result.err)
    assert "alias" in result.err.lower()


def test_cel_check_object_still_reads_yaml(tmp_path: Path) -> None:
    path = tmp_path / "obj.yaml"
    path.write_text("kind: NICConfig\nsubnet: a\n")
    result = run("cel", "check", "--format", "json", "--object", str(path), "object.subnet")
    assert result.code == 0, result.err
    assert json.loads(result.out)["result"]["value"] == "a"
