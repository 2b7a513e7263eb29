"""Hostile claims and extractors through the installed console script: every evaluation ends,
promptly, with an error (no timing is asserted: `tests.cli.run`'s own timeout is the bound).

A claim author controls the opaque parameters an extractor reads, so a quantity such as
`1e1000000000` (which apimachinery would compute exactly, a billion digits) and an extractor
that doubles a list 24 times (cel-go joins lists lazily, so its cost limit lets that pass)
must not hang or exhaust `cel check` or `dry-run` (`policies/cel/eval/runtime_steps.py`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli import run

HUGE_QUANTITY = {"size": "1e1000000000"}
DOUBLING = ("cel.bind(x, object.items, " + "cel.bind(x, x + x, " * 24 + "string(size(x))"
            + ")" * 25)
EXTRACTORS = {
    "quantity": "string(quantity(object.size).isInteger())",
    "tiny-quantity": "string(isQuantity(object.size.replace('1e', '1e-')))",
    "doubling": DOUBLING,
}


@pytest.mark.parametrize("name", sorted(EXTRACTORS))
def test_cel_check_reports_an_evaluation_error(name: str) -> None:
    obj = {"items": [1, 2, 3], **HUGE_QUANTITY}
    out = run("cel", "check", "--stored", "--format", "json", EXTRACTORS[name],
              "--object", json.dumps(obj))
    assert out.code == 1, out.err
    doc = out.json()
    assert doc["compiles"] is True
    assert doc["result"]["error"]["kind"] == "cel evaluation failed"
    assert doc["result"]["scheduler"]["kind"] == "cel evaluation failed"


def _slice_and_claim(tmp_path: Path, expression: str) -> tuple[str, str]:
    meta = yaml.safe_load(Path("examples/rdma-pkey.yaml").read_text().split("---")[0])
    meta["spec"]["pool"]["resourceSliceCount"] = 1
    meta["spec"]["sharingAffinity"] = [{"name": "pkey", "expression": expression}]
    claim = next(d for d in yaml.safe_load_all(Path("examples/kep-stories.yaml").read_text())
                 if d and d.get("kind") == "ResourceClaim"
                 and d["metadata"] == {"name": "pod-a", "namespace": "training"})
    claim["spec"]["devices"]["config"][0]["opaque"]["parameters"] = {
        "apiVersion": "rdma.example.com/v1", "kind": "RDMAConfig", "items": [1, 2, 3],
        **HUGE_QUANTITY}
    (tmp_path / "slice.yaml").write_text(yaml.safe_dump(meta))
    (tmp_path / "claim.yaml").write_text(yaml.safe_dump(claim))
    return str(tmp_path / "slice.yaml"), str(tmp_path / "claim.yaml")


@pytest.mark.parametrize("name", sorted(EXTRACTORS))
def test_dry_run_reports_a_slice_error(tmp_path: Path, name: str) -> None:
    slice_file, claim_file = _slice_and_claim(tmp_path, EXTRACTORS[name])
    out = run("dry-run", "--format", "json", slice_file, claim_file, "--claim", "training/pod-a")
    assert out.code == 1, out.err
    [result] = out.json()["results"]
    assert result["outcome"] == "slice-error"
    # the doubling's estimated cost is unbounded: the scheduler refuses it before evaluating
    expected = "cel evaluation cost exceeded" if name == "doubling" else "cel evaluation failed"
    assert result["error"]["kind"] == expected
