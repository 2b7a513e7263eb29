"""Several reports in one run, the --format/--output pairing, clean stdout, and exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

from tests.lint.ci.support import DRY_RUN, SLICE, assert_valid_sarif, cli, write


def test_sarif_to_a_file_and_text_to_stdout_in_one_run(tmp_path: Path) -> None:
    write(tmp_path / "slice.yaml", SLICE.format(name="a", pool="p"))
    out = cli("lint", "--format", "sarif", "--output", "out.sarif", "--format", "text",
              "--format", "junit", "--output", "junit.xml", "slice.yaml", cwd=tmp_path)
    assert out.code == 0, out.err
    assert out.out.splitlines()[-1].startswith("0 errors, 2 warnings")
    log = json.loads((tmp_path / "out.sarif").read_text())
    assert_valid_sarif(log)
    assert {r["ruleId"] for r in log["runs"][0]["results"]} == {"SA201", "SA202"}
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    assert junit.get("tests") == "1"
    assert "\x1b[" not in (tmp_path / "out.sarif").read_text()


def test_output_pairs_with_the_format_just_before_it(tmp_path: Path) -> None:
    write(tmp_path / "slice.yaml", SLICE.format(name="a", pool="p"))
    out = cli("lint", "--format", "text", "--format", "json", "--output", "r.json", "slice.yaml",
              cwd=tmp_path)
    assert out.code == 0
    assert out.out.startswith("slice.yaml:11:7: SA202 warning: ")  # text, not JSON, on stdout
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["warnings"] == 2


def test_pairing_mistakes_are_usage_errors(tmp_path: Path) -> None:
    write(tmp_path / "slice.yaml", SLICE.format(name="a", pool="p"))
    two_on_stdout = cli("lint", "--format", "text", "--format", "json", "slice.yaml", cwd=tmp_path)
    assert two_on_stdout.code == 2 and "only one report can go to standard output" in two_on_stdout.err
    output_first = cli("lint", "--output", "x.sarif", "--format", "sarif", "slice.yaml", cwd=tmp_path)
    assert output_first.code == 2 and "must follow the --format" in output_first.err
    two_outputs = cli("lint", "--format", "sarif", "--output", "a", "--output", "b", "slice.yaml",
                      cwd=tmp_path)
    assert two_outputs.code == 2
    same_file = cli("lint", "--format", "sarif", "--output", "a", "--format", "json", "--output", "a",
                    "slice.yaml", cwd=tmp_path)
    assert same_file.code == 2 and "two reports" in same_file.err
    assert not (tmp_path / "a").exists() and not (tmp_path / "x.sarif").exists()


def test_machine_output_stays_clean_when_the_run_has_problems(tmp_path: Path) -> None:
    """Usage errors and input warnings go to stderr; stdout parses."""
    write(tmp_path / "slice.yaml", SLICE.format(name="a", pool="p"))
    for fmt in ("json", "sarif", "junit"):
        out = cli("lint", "--format", fmt, "slice.yaml", "missing.yaml", cwd=tmp_path)
        assert out.code == 2
        assert "missing.yaml" in out.err
        if fmt == "junit":
            root = ET.fromstring(out.out.split("?>", 1)[1])
            assert root.get("errors") == "1"
            assert out.out.count("<?xml") == 1
        else:
            json.loads(out.out)


def test_unwritable_output_exits_2(tmp_path: Path) -> None:
    write(tmp_path / "slice.yaml", SLICE.format(name="a", pool="p"))
    out = cli("lint", "--format", "sarif", "--output", "no/such/dir/x.sarif", "slice.yaml", cwd=tmp_path)
    assert out.code == 2 and "cannot write the sarif report" in out.err


def test_strict_makes_warnings_fail(tmp_path: Path) -> None:
    write(tmp_path / "slice.yaml", SLICE.format(name="a", pool="p"))
    assert cli("lint", "slice.yaml", cwd=tmp_path).code == 0
    assert cli("lint", "--strict", "slice.yaml", cwd=tmp_path).code == 1
    assert cli("lint", "--strict", "--fail-on", "info", "slice.yaml", cwd=tmp_path).code == 1


def test_fail_if_no_resources(tmp_path: Path) -> None:
    write(tmp_path / "other.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert cli("lint", "other.yaml", cwd=tmp_path).code == 0
    out = cli("lint", "--fail-if-no-resources", "--format", "sarif", "other.yaml", cwd=tmp_path)
    assert out.code == 2 and "no ResourceSlice" in out.err
    assert_valid_sarif(json.loads(out.out))  # the report is still written for the upload step
    write(tmp_path / "slice.yaml", SLICE.format(name="a", pool="p"))
    assert cli("lint", "--fail-if-no-resources", "slice.yaml", cwd=tmp_path).code == 0


def test_dry_run_formats_strict_and_no_resources(tmp_path: Path) -> None:
    write(tmp_path / "dry.yaml", DRY_RUN)
    table = cli("dry-run", "dry.yaml", "--format", "junit", "--output", "j.xml", "--format", "table",
                cwd=tmp_path)
    assert table.code == 1 and table.out.startswith("CLAIM")
    case = ET.parse(tmp_path / "j.xml").getroot().find("testsuite/testcase")
    assert case is not None and case.get("classname") == "ml/pod-a"
    failure = case.find("failure")
    assert failure is not None and (failure.get("message") or "").startswith("slice-error")
    write(tmp_path / "slice.yaml", SLICE.format(name="a", pool="p"))
    assert cli("dry-run", "slice.yaml", cwd=tmp_path).code == 0  # no claims: nothing fails...
    empty = cli("dry-run", "--fail-if-no-resources", "slice.yaml", cwd=tmp_path)
    assert empty.code == 2 and "no claim request" in empty.err  # ...unless that is the mistake


def test_github_is_chosen_under_actions_unless_a_format_is_given(tmp_path: Path) -> None:
    write(tmp_path / "slice.yaml", SLICE.format(name="a", pool="p"))
    actions = {"GITHUB_ACTIONS": "true"}
    auto = cli("lint", "slice.yaml", cwd=tmp_path, env=actions)
    assert auto.out.startswith("::warning file=slice.yaml,line=11,col=7,title=SA202 ")
    assert cli("lint", "--format", "json", "slice.yaml", cwd=tmp_path, env=actions).out.startswith("{")
    assert cli("lint", "slice.yaml", cwd=tmp_path, env={"GITHUB_ACTIONS": "false"}).out.startswith(
        "slice.yaml:11:7")
    suites = cli("test", "examples/suites/kep.yaml", env=actions)
    assert suites.code == 0 and suites.out.strip().endswith("passed, 0 failed")
