"""`dra-affinity test`: suites pass and fail as expected; text, json and junit output."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import yaml

from tests.cli import REPO, run


def test_kep_suite_passes() -> None:
    out = run("test", "examples/suites/kep.yaml")
    assert out.code == 0, out.out
    assert out.out.strip().endswith("6 passed, 0 failed")


def _suite(tmp_path: Path, cases: list[dict], **extra: object) -> Path:
    doc = {"name": "t", "resources": [str(REPO / "examples/networking-node-a.yaml"),
                                      str(REPO / "examples/claims.yaml")], "cases": cases, **extra}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_failing_case_reports_why_and_exits_1(tmp_path: Path) -> None:
    path = _suite(tmp_path, [
        {"name": "right", "claim": "ml/training-pod-a", "pool": "node-a", "expect": {"outcome": "ok"}},
        {"name": "wrong", "claim": "ml/training-pod-a", "pool": "node-a",
         "expect": {"outcome": "ok", "affinity": {"subnet": "subnet-Z"}}},
        {"name": "missing", "claim": "ml/nobody", "expect": {"outcome": "ok"}},
    ])
    out = run("test", "--format", "json", str(path))
    assert out.code == 1
    cases = {c["name"]: c for c in out.json()["cases"]}
    assert cases["right"]["passed"] is True
    assert cases["wrong"]["passed"] is False
    assert "expected {'subnet': 'subnet-Z'}" in cases["wrong"]["failures"][0]
    assert "no result for claim 'ml/nobody'" in cases["missing"]["failures"][0]
    assert out.json()["summary"] == {"passed": 1, "failed": 2}


def test_junit_output(tmp_path: Path) -> None:
    path = _suite(tmp_path, [
        {"name": "wrong", "claim": "ml/training-pod-a", "expect": {"outcome": "slice-error"}},
    ])
    out = run("test", "--format", "junit", str(path))
    assert out.code == 1
    root = ET.fromstring(out.out.split("?>", 1)[1])
    case = root.find("testsuite/testcase")
    assert case is not None and case.get("name") == "wrong"
    assert case.find("failure") is not None


def test_inline_objects(tmp_path: Path) -> None:
    claim = yaml.safe_load(Path(REPO / "examples/claims.yaml").read_text().split("---")[0])
    claim["metadata"]["name"] = "inline"
    doc = {"resources": [str(REPO / "examples/networking-node-a.yaml")], "objects": [claim],
           "cases": [{"name": "inline claim", "claim": "ml/inline", "expect": {"outcome": "ok"}}]}
    path = tmp_path / "inline.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert run("test", str(path)).code == 0


def test_unusable_suite_is_a_located_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text("cases:\n  - name: x\n    claim: a/b\n    expect: {outcome: ok, afinity: {}}\n")
    out = run("test", str(path))
    assert out.code == 2
    assert "typo.yaml:4:" in out.err
    assert "afinity" in out.err
    assert run("test", str(tmp_path / "none.yaml")).code == 2


def test_workload_cases_check_the_fragmentation_report(tmp_path: Path) -> None:
    passing = run("test", "examples/suites/capacity.yaml")
    assert passing.code == 0, passing.out
    assert "2 passed, 0 failed" in passing.out
    suite = tmp_path / "suite.yaml"
    workload = REPO / "examples/capacity/nic-20-subnets.yaml"
    suite.write_text(f"resources: [{REPO / 'examples/capacity/nic-pool.yaml'}]\ncases:\n"
                     f"  - name: alpha must not strand\n    workload: {workload}\n"
                     "    expect: [alpha.peakStranded <= 5%, pending <= 0, placed >= 1]\n")
    failing = run("test", str(suite))
    assert failing.code == 1
    assert "alpha.peakStranded <= 5%: alpha.peakStranded is 69.27%, not <= 5%" in failing.out
    assert "pending <= 0: alpha.pending is 1, not <= 0" in failing.out
    suite.write_text(suite.read_text().replace("placed >= 1", "beta.placed >= alpha.plced"))
    unusable = run("test", str(suite))
    assert unusable.code == 2 and f"{suite}:5:" in unusable.err and "unknown metric 'plced'" in unusable.err
