"""`dra-affinity policy export` and the policy shipped in deploy/policy/."""

from __future__ import annotations

from pathlib import Path

import yaml
from dra_affinity.policies.rules.vap import POLICY_NAME, render_policy, structural_policy

from tests.cli import run
from tests.deploy.manifests import DEPLOY

SHIPPED = DEPLOY / "policy" / "structural-policy.yaml"
REGENERATE = "dra-affinity policy export --output deploy/policy/structural-policy.yaml"


def test_shipped_policy_is_not_stale() -> None:
    expected = render_policy(structural_policy())
    assert SHIPPED.read_text(encoding="utf-8") == expected, f"stale: run `{REGENERATE}`"


def test_export_prints_what_is_shipped_and_writes_it_atomically(tmp_path: Path) -> None:
    printed = run("policy", "export")
    assert printed.code == 0, printed.err
    assert printed.out == SHIPPED.read_text(encoding="utf-8")
    target = tmp_path / "sub" / "policy.yaml"
    written = run("policy", "export", "--output", str(target))
    assert written.code == 0 and written.out == ""
    assert f"wrote {target}" in written.err
    assert target.read_text(encoding="utf-8") == printed.out
    assert [p.name for p in target.parent.iterdir()] == ["policy.yaml"]  # no temporary left over


def test_export_options_shape_the_binding() -> None:
    result = run("policy", "export", "--action", "Warn", "--action", "Audit", "--name", "trial")
    assert result.code == 0, result.err
    vap, binding = yaml.safe_load_all(result.out)
    assert vap["metadata"]["name"] == "trial" == binding["spec"]["policyName"]
    assert binding["spec"]["validationActions"] == ["Warn", "Audit"]
    default = list(yaml.safe_load_all(SHIPPED.read_text(encoding="utf-8")))
    assert default[1]["spec"] == {"policyName": POLICY_NAME, "validationActions": ["Deny"]}


def test_export_rejects_what_the_api_server_would() -> None:
    both = run("policy", "export", "--action", "Deny", "--action", "Warn")
    assert both.code == 2 and "Deny and Warn cannot be combined" in both.err
    old = run("policy", "export", "--kubernetes-version", "1.36")
    assert old.code == 2 and "no ResourceSlice.spec.sharingAffinity" in old.err


def test_show_cost_reports_every_expression() -> None:
    result = run("policy", "export", "--show-cost")
    assert result.code == 0, result.err
    rows = [line for line in result.err.splitlines() if line.startswith("spec.")]
    assert len(rows) == len(list(structural_policy().expressions()))
    assert "per expression" in result.err.splitlines()[-1]


def test_policy_is_listed_in_help() -> None:
    result = run("--help")
    assert result.code == 0
    assert any(line.split()[:1] == ["policy"] for line in result.out.splitlines())
