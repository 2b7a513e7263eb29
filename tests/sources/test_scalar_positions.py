"""Findings inside an expression point at the exact file line and column."""

from __future__ import annotations

from pathlib import Path

import pytest
from dra_affinity.policies.core.source import Position
from dra_affinity.sources.scalar_positions import locate_in_scalar

from tests.cli import run

SLICE = '''apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: pos
spec:
  driver: d.example.com
  nodeName: node-1
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  sharingAffinity:
    - name: a
      expression: |
        object.kind == "K"
          ? "x" + object.subnet : ""
    - name: b
      expression: 'has(object.a) ? object.b : \'\'\'\''
    - name: c
      expression: "object.kind == \\"K\\" ? object.x. : \\"\\""
    - name: d
      expression: object.?a.orValue(object.b)
'''


def test_cli_points_into_expressions(tmp_path: Path) -> None:
    path = tmp_path / "pos.yaml"
    path.write_text(SLICE)
    lines = SLICE.splitlines()
    found = run("lint", "--format", "json", str(path)).json()["findings"]
    at = {(f["rule"], f["field"]): (f["line"], f["column"]) for f in found}

    def text_at(pos: tuple[int, int], length: int) -> str:
        line, column = pos
        return lines[line - 1][column - 1 : column - 1 + length]

    assert text_at(at[("SA108", "spec.sharingAffinity[0].expression")], 13) == "object.subnet"
    assert text_at(at[("SA201", "spec.sharingAffinity[1].expression")], 8) == "object.b"
    assert text_at(at[("SA201", "spec.sharingAffinity[3].expression")], 8) == "object.b"
    assert at[("SA106", "spec.sharingAffinity[2].expression")][0] == 17


@pytest.mark.parametrize(
    ("line", "value", "inner", "expected"),
    [
        ("k: 'a''b'", (1, 4), (1, 3), (1, 8)),
        ('k: "a\\"b"', (1, 4), (1, 3), (1, 8)),
        ("k: abc", (1, 4), (1, 2), (1, 5)),
    ],
)
def test_flow_scalars(line: str, value: tuple[int, int], inner: tuple[int, int],
                      expected: tuple[int, int]) -> None:
    assert locate_in_scalar([line], Position(*value), Position(*inner)) == Position(*expected)


def test_folded_and_out_of_range_give_up() -> None:
    assert locate_in_scalar(["k: >", "  a b"], Position(1, 4), Position(1, 1)) is None
    assert locate_in_scalar(["k: a"], Position(3, 1), Position(1, 1)) is None
    assert locate_in_scalar(["k: 'a'"], Position(1, 4), Position(2, 1)) is None
