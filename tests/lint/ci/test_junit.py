"""`--format junit`: one XML document, a case per object checked, failures as the exit code says."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from tests.cli import REPO
from tests.helpers import CLEAN_EXPRESSION
from tests.lint.ci.support import SLICE, cli, write


def _junit(tmp_path: Path, *args: str) -> tuple[int, ET.Element]:
    out = cli(*args, "--format", "junit", cwd=tmp_path)
    assert out.out.startswith("<?xml") and out.out.count("<?xml") == 1
    return out.code, ET.fromstring(out.out.split("?>", 1)[1])


def _cases(root: ET.Element) -> dict[str, ET.Element]:
    return {f"{c.get('classname')}::{c.get('name')}": c for c in root.iter("testcase")}


def test_a_case_per_slice_failing_only_at_the_threshold(tmp_path: Path) -> None:
    clean = SLICE.replace('has(object.spec) ?\n          "%s".format([object.spec.subnet]) : ""',
                          CLEAN_EXPRESSION)
    write(tmp_path / "a.yaml", SLICE.format(name="warned", pool="p"))
    write(tmp_path / "b.yaml", clean.format(name="clean", pool="q"))
    write(tmp_path / "c.yaml", "apiVersion: [unclosed\n")
    code, root = _junit(tmp_path, "lint", ".")
    assert code == 1  # the SA000 of c.yaml
    cases = _cases(root)
    assert set(cases) == {"a.yaml::ResourceSlice/warned", "b.yaml::ResourceSlice/clean",
                          "c.yaml::c.yaml"}
    warned = cases["a.yaml::ResourceSlice/warned"]
    assert warned.find("failure") is None  # warnings do not fail the run, so not the case either
    out = warned.findtext("system-out") or ""
    assert "a.yaml:13:24: warning SA201" in out and "a.yaml:11:7: warning SA202" in out
    assert warned.get("line") == "1"
    broken = cases["c.yaml::c.yaml"].find("failure")
    assert broken is not None and "SA000" in (broken.get("message") or "")
    assert (root.get("tests"), root.get("failures")) == ("3", "1")
    strict_code, strict = _junit(tmp_path, "lint", "--strict", ".")
    assert strict_code == 1 and strict.get("failures") == "2"
    failure = _cases(strict)["a.yaml::ResourceSlice/warned"].find("failure")
    assert failure is not None and failure.text is not None and failure.text.count("\n") == 1


def test_test_suites_keep_their_cases(tmp_path: Path) -> None:
    code, root = _junit(tmp_path, "test", str(REPO / "examples/suites/kep.yaml"))
    assert code == 0
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "KEP-5981 examples"
    assert all(c.get("line") for c in suite.iter("testcase"))
    assert root.get("failures") == "0" and int(root.get("tests") or 0) >= 6
