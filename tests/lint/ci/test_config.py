"""The settings file: discovery, pyproject, --config, precedence flags > config > defaults, errors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.lint.ci.support import SLICE, assert_valid_sarif, cli, write


def _repo(tmp_path: Path) -> Path:
    write(tmp_path / "deploy" / "slice.yaml", SLICE.format(name="a", pool="p"))
    return tmp_path


def test_discovered_upward_from_a_subdirectory(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    write(repo / ".dra-affinity.yaml", """
        fail-on: warning
        rules:
          severity: {SA202: info}
        """)
    out = cli("lint", "slice.yaml", cwd=repo / "deploy")
    assert out.code == 1  # fail-on warning from the file: SA201 is a warning
    assert "SA202 info: " in out.out and "SA201 warning: " in out.out


def test_pyproject_tool_table(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    write(repo / "pyproject.toml", """
        [project]
        name = "driver"

        [tool.dra-affinity]
        strict = true

        [tool.dra-affinity.rules]
        disable = ["SA2"]

        [[tool.dra-affinity.ignore]]
        rules = ["SA000"]
        paths = ["charts/*/templates/"]
        reason = "Helm templates are not YAML until rendered"
        """)
    out = cli("lint", "--format", "json", "deploy", cwd=repo)
    data = json.loads(out.out)
    # SA201/SA202 disabled by prefix; the ignore matched no file of the run, so it is not "unused"
    assert [f["rule"] for f in data["findings"]] == []
    assert out.code == 0
    # a pyproject.toml without the table is not a config: discovery goes on upward
    write(repo / "deploy" / "pyproject.toml", "[project]\nname = 'x'\n")
    assert json.loads(cli("lint", "--format", "json", ".", cwd=repo / "deploy").out)["findings"] == []


def test_yaml_wins_over_pyproject_in_the_same_directory(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    write(repo / "pyproject.toml", "[tool.dra-affinity]\nfail-on = 'warning'\n")
    write(repo / ".dra-affinity.yaml", "fail-on: error\n")
    assert cli("lint", "deploy", cwd=repo).code == 0


def test_flags_beat_the_config_which_beats_defaults(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    write(repo / ".dra-affinity.yaml", """
        fail-on: warning
        lint:
          format: [json, {format: sarif, output: reports/lint.sarif}]
        """)
    (repo / "reports").mkdir()
    from_config = cli("lint", "deploy", cwd=repo)
    assert from_config.code == 1 and json.loads(from_config.out)["summary"]["warnings"] == 2
    assert_valid_sarif(json.loads((repo / "reports" / "lint.sarif").read_text()))
    from_flags = cli("lint", "--fail-on", "error", "--format", "text", "deploy", cwd=repo)
    assert from_flags.code == 0 and from_flags.out.startswith("deploy/slice.yaml:")
    # --no-strict undoes strict: true; the flag form of a boolean beats the file too
    write(repo / ".dra-affinity.yaml", "strict: true\n")
    assert cli("lint", "deploy", cwd=repo).code == 1
    assert cli("lint", "--no-strict", "deploy", cwd=repo).code == 0


def test_config_format_beats_the_github_default(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    write(repo / ".dra-affinity.yaml", "format: text\n")
    out = cli("lint", "deploy", cwd=repo, env={"GITHUB_ACTIONS": "true"})
    assert out.out.startswith("deploy/slice.yaml:11:7: SA202 warning: ")


def test_explicit_config_and_kubernetes_version(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    write(repo / "ci" / "strict.yaml", "kubernetes-version: \"1.37\"\nstrict: true\n")
    assert cli("lint", "--config", "ci/strict.yaml", "deploy", cwd=repo).code == 1
    assert cli("lint", "deploy", cwd=repo).code == 0  # not discovered: it is not named .dra-affinity.yaml
    write(repo / "ci" / "old.yaml", "kubernetes-version: \"1.20\"\n")
    out = cli("lint", "--config", "ci/old.yaml", "deploy", cwd=repo)
    assert out.code == 2 and "ci/old.yaml:1:1: kubernetes-version: Kubernetes 1.20 has no" in out.err
    # a broken file is an error even when a flag overrides the broken value
    overridden = cli("lint", "--config", "ci/old.yaml", "--kubernetes-version", "1.37", "deploy", cwd=repo)
    assert overridden.code == 2


def test_errors_name_file_line_and_key(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    cases = {
        "rules:\n  disabel: [SA201]\n": ("2:3", 'unknown field "rules.disabel" '
                                        '(did you mean "rules.disable"?)'),
        "rules:\n  disable: [SA9]\n": ("2:13", "'SA9' is neither a rule id"),
        "kubernetes-version: 1.30\n": ("1:1", "quote the version"),
        "ignore:\n  - rules: SA201\n    reason: 7\n": ("3:5", "ignore[0].reason: must be a string"),
        "lint:\n  format: [xml]\n": (None, "format 'xml' is not one of"),
        "fail-on: [error\n": ("2:1", "YAML syntax error"),
    }
    for text, (where, message) in cases.items():
        (repo / ".dra-affinity.yaml").write_text(text)
        out = cli("lint", "deploy", cwd=repo)
        assert out.code == 2, text
        assert message in out.err, (text, out.err)
        if where:
            assert f".dra-affinity.yaml:{where}" in out.err, (text, out.err)
    out = cli("lint", "--config", "nope.yaml", "deploy", cwd=repo)
    assert out.code == 2 and "nope.yaml: no such config file" in out.err


def test_enable_and_disable_flags_replace_the_config_selection(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    write(repo / ".dra-affinity.yaml", "rules:\n  disable: [SA201]\n")
    rules = lambda *a: sorted(f["rule"] for f in json.loads(  # noqa: E731
        cli("lint", "--format", "json", *a, "deploy", cwd=repo).out)["findings"])
    assert rules() == ["SA202"]
    assert rules("--disable", "SA202") == ["SA201"]
    assert rules("--enable", "SA201") == ["SA201"]
    assert cli("lint", "--enable", "XX", "deploy", cwd=repo).code == 2
