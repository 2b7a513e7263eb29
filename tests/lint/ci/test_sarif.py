"""`--format sarif`: valid against the official SARIF 2.1.0 schema, with real regions and rule docs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dra_affinity.policies.rules.catalog import catalog

from tests.lint.ci.support import DRY_RUN, SLICE, assert_valid_sarif, cli, write


def _sarif(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = cli(*args, "--format", "sarif", cwd=cwd, env=env)
    assert out.code in (0, 1), out.err
    log = json.loads(out.out)
    assert_valid_sarif(log)
    return log


def _regions(log: dict[str, Any]) -> dict[str, list[tuple[str, int, int]]]:
    found: dict[str, list[tuple[str, int, int]]] = {}
    for result in log["runs"][0]["results"]:
        physical = result["locations"][0]["physicalLocation"]
        region = physical["region"]
        found.setdefault(result["ruleId"], []).append(
            (physical["artifactLocation"]["uri"], region["startLine"], region["startColumn"]))
    return found


def test_examples_validate_and_point_at_the_text_reports_positions() -> None:
    log = _sarif("lint", "examples/")
    text = cli("lint", "examples/").out.splitlines()
    regions = _regions(log)
    # every text finding `file:line:col: RULE severity: ...` has the same region in SARIF
    for line in text[:-1]:
        if line.startswith(" "):
            continue
        where, rest = line.split(": ", 1)
        file, row, col = where.rsplit(":", 2)
        rule = rest.split()[0]
        assert (file, int(row), int(col)) in regions[rule], (line, regions.get(rule))
    assert ("examples/broken-slice.yaml", 19, 7) in regions["SA102"]
    run = log["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["invocations"] == [{"executionSuccessful": True}]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"].startswith("file:///")


def test_a_finding_inside_an_expression_has_its_exact_region(tmp_path: Path) -> None:
    path = write(tmp_path / "slice.yaml", SLICE.format(name="a", pool="p"))
    log = _sarif("lint", "slice.yaml", cwd=tmp_path)
    regions = _regions(log)
    assert regions["SA201"] == [("slice.yaml", 13, 24)]
    assert regions["SA202"] == [("slice.yaml", 11, 7)]
    line = path.read_text().splitlines()[12]
    assert line[23:].startswith("object.spec.subnet")
    result = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "SA201")
    location = result["locations"][0]
    assert location["logicalLocations"][0]["fullyQualifiedName"] == "ResourceSlice/a"
    assert location["properties"]["field"] == "spec.sharingAffinity[0].expression"
    assert result["level"] == "warning"


def test_rules_carry_the_catalog_docs_and_results_index_them() -> None:
    log = _sarif("lint", "examples/broken-slice.yaml")
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(catalog())
    by_id = {r["id"]: r for r in rules}
    sa105 = catalog()["SA105"]
    assert by_id["SA105"]["shortDescription"]["text"] == sa105.summary
    assert by_id["SA105"]["fullDescription"]["text"] == sa105.description
    assert sa105.bad_example.splitlines()[0] in by_id["SA105"]["help"]["markdown"]
    assert by_id["SA105"]["defaultConfiguration"]["level"] == "error"
    assert by_id["SP306"]["defaultConfiguration"]["level"] == "note"
    for result in log["runs"][0]["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_clean_run_still_has_a_results_array(tmp_path: Path) -> None:
    out = cli("lint", "--format", "sarif", "examples/suites/kep.yaml")  # a suite: nothing to lint
    log = json.loads(out.out)
    assert_valid_sarif(log)
    assert out.code == 0 and log["runs"][0]["results"] == []


def test_pool_finding_lists_every_slice_as_related_locations() -> None:
    log = _sarif("lint", "examples/pools/broken-pools.yaml")
    sp301 = next(r for r in log["runs"][0]["results"] if r["ruleId"] == "SP301")
    related = sp301["relatedLocations"]
    assert [loc["physicalLocation"]["region"]["startLine"] for loc in related] == [40]
    assert related[0]["message"]["text"] == "ResourceSlice/node-e-meta-fabric"


def test_paths_are_relative_to_the_checkout_from_a_subdirectory(tmp_path: Path) -> None:
    write(tmp_path / "deploy" / "slices" / "a slice.yaml", SLICE.format(name="a", pool="p"))
    log = _sarif("lint", "slices", cwd=tmp_path / "deploy", env={"GITHUB_WORKSPACE": str(tmp_path)})
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in log["runs"][0]["results"]}
    assert uris == {"deploy/slices/a%20slice.yaml"}
    assert log["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"] == tmp_path.as_uri() + "/"


def test_stdin_has_no_artifact_but_names_the_object(tmp_path: Path) -> None:
    out = cli("lint", "--format", "sarif", "-", stdin=SLICE.format(name="from-stdin", pool="p"))
    log = json.loads(out.out)
    assert_valid_sarif(log)
    result = log["runs"][0]["results"][0]
    assert "physicalLocation" not in result["locations"][0]
    assert result["locations"][0]["logicalLocations"][0]["name"] == "from-stdin"
    assert result["locations"][0]["properties"]["input"] == "<stdin>"


def test_usage_errors_are_tool_notifications(tmp_path: Path) -> None:
    out = cli("lint", "--format", "sarif", "examples/networking-node-a.yaml", str(tmp_path / "missing.yaml"))
    assert out.code == 2
    log = json.loads(out.out)
    assert_valid_sarif(log)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert "missing.yaml" in invocation["toolExecutionNotifications"][0]["message"]["text"]


def test_dry_run_and_test_sarif_validate(tmp_path: Path) -> None:
    write(tmp_path / "dry.yaml", DRY_RUN)
    dry = _sarif("dry-run", "dry.yaml", cwd=tmp_path)
    rules = {r["id"] for r in dry["runs"][0]["tool"]["driver"]["rules"]}
    assert {"dry-run/slice-error", "dry-run/claim-inconsistent"} <= rules
    [error] = dry["runs"][0]["results"]
    assert error["ruleId"] == "dry-run/slice-error" and error["level"] == "error"
    # located at the extractor that fails, with the claim's config as related location
    assert _regions(dry)["dry-run/slice-error"] == [("dry.yaml", 11, 7)]
    related = error["relatedLocations"][0]["physicalLocation"]
    assert (related["artifactLocation"]["uri"], related["region"]["startLine"]) == ("dry.yaml", 25)
    assert "missing field" in error["message"]["text"]
    suites = _sarif("test", "examples/suites/kep.yaml")
    assert suites["runs"][0]["results"] == []


def test_the_validators_advice_is_followed(tmp_path: Path) -> None:
    """What `sarif multitool validate` advises beyond the schema, where it applies: the tool's
    name, version and an absolute `informationUri` (SARIF2005), `$schema` (SARIF2008), result
    and notification messages as sentences ending with a period (SARIF2001)."""
    from urllib.parse import urlparse

    logs = [_sarif("lint", "examples/"), _sarif("lint", "examples/pools/broken-pools.yaml")]
    out = cli("lint", "--format", "sarif", str(tmp_path / "missing.yaml"), "examples/broken-slice.yaml")
    logs.append(json.loads(out.out))
    for log in logs:
        assert log["$schema"].startswith("https://")
        driver = log["runs"][0]["tool"]["driver"]
        assert driver["name"] == "dra-affinity" and len(driver["name"].split()) <= 3
        assert driver["version"] and driver["semanticVersion"]
        information = urlparse(driver["informationUri"])
        assert information.scheme == "https" and information.netloc, driver["informationUri"]
        invocation = log["runs"][0]["invocations"][0]
        messages = [r["message"]["text"] for r in log["runs"][0]["results"]]
        messages += [n["message"]["text"] for n in invocation.get("toolExecutionNotifications", [])]
        unfinished = [m for m in messages if not m.endswith(".")]
        assert messages and not unfinished, unfinished
    assert logs[2]["runs"][0]["invocations"][0]["toolExecutionNotifications"]
