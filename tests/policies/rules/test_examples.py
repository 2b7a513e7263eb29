"""Every rule's examples run, as ruff runs each code's fixtures: bad raises the rule, good does not.

The examples are the ones `dra-affinity rules ID` prints; `policies.rules.base` says how a
fragment becomes the documents run here (`example_document`). They go through the installed
console script as a user would run them: one `lint` over every example (each in its own file,
with its own driver so that no two examples' pools merge), and `dry-run` for the rule whose
examples need a claim (SA003).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dra_affinity.policies.rules.base import DEVICE_CLASS_SETTING, InputRule, Rule, example_document
from dra_affinity.policies.rules.catalog import catalog

from tests.cli import run

RULES = list(catalog().values())
KINDS = ("bad", "good")


def _setting(rule: Rule) -> str:
    return rule.example_setting if isinstance(rule, InputRule) else ""


def _file(directory: Path, rule: Rule, kind: str) -> Path:
    return directory / f"{rule.id.lower()}-{kind}.yaml"


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Findings by example file (`sa101-bad.yaml`), from one lint and the dry-runs."""
    directory = tmp_path_factory.mktemp("examples")
    linted: list[str] = []
    dry_runs: list[str] = []
    for rule in RULES:
        for kind in KINDS:
            example = rule.bad_example if kind == "bad" else rule.good_example
            setting = _setting(rule)
            driver = f"{rule.id.lower()}-{kind}.example.com" if not setting else "nic.example.com"
            path = _file(directory, rule, kind)
            path.write_text(example_document(example, setting, driver=driver))
            (dry_runs if setting == DEVICE_CLASS_SETTING else linted).append(path.name)
    by_file: dict[str, list[dict[str, Any]]] = {name: [] for name in [*linted, *dry_runs]}
    runs = [("lint", *linted)] + [("dry-run", name) for name in dry_runs]
    for command, *names in runs:
        result = run(command, "--format", "json", *names, cwd=directory)
        assert result.code in (0, 1), result.err
        for finding in result.json()["findings"]:
            by_file[Path(finding["file"]).name].append(finding)
    return by_file


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_every_rule_has_both_examples(rule: Rule) -> None:
    assert rule.bad_example.strip() and rule.good_example.strip()


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_bad_example_raises_the_rule(rule: Rule, findings: dict[str, list[dict[str, Any]]]) -> None:
    got = findings[f"{rule.id.lower()}-bad.yaml"]
    assert rule.id in {f["rule"] for f in got}, [(f["rule"], f["message"]) for f in got]


@pytest.mark.parametrize("rule", RULES, ids=[r.id for r in RULES])
def test_good_example_does_not_raise_the_rule(rule: Rule, findings: dict[str, list[dict[str, Any]]]) -> None:
    got = findings[f"{rule.id.lower()}-good.yaml"]
    assert rule.id not in {f["rule"] for f in got}, [(f["rule"], f["message"]) for f in got]
    errors = [(f["rule"], f["message"]) for f in got if f["severity"] == "error"]
    assert not errors, "a good example is one the API server and the scheduler accept"


def test_examples_are_printed_as_written() -> None:
    explained = run("rules", "SP304").out
    rule = catalog()["SP304"]
    assert "Bad:\n" + "".join(f"    {line}\n" for line in rule.bad_example.splitlines()) in explained
