"""`.pre-commit-hooks.yaml`: each hook run the way pre-commit runs it, from the installed script.

pre-commit (language: python) installs the repository into a virtualenv, puts that
environment's `bin/` first on PATH, selects the staged files by `types`/`files`/`exclude`,
and runs `shlex.split(entry) + args + filenames` (filenames only with `pass_filenames`).
This test does exactly that with the console script installed in the test environment,
so a broken entry, a bad default `args` or a wrong `pass_filenames` fails here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli import REPO, SCRIPT
from tests.lint.ci.support import SLICE, cli, write

HOOKS_FILE = REPO / ".pre-commit-hooks.yaml"
README = REPO / "README.md"
# the manifest keys pre-commit knows (pre-commit/clientlib.py MANIFEST_HOOK_DICT)
KNOWN_KEYS = {
    "id", "name", "entry", "language", "alias", "files", "exclude", "types", "types_or",
    "exclude_types", "additional_dependencies", "args", "always_run", "fail_fast", "pass_filenames",
    "description", "language_version", "log_file", "minimum_pre_commit_version", "require_serial",
    "stages", "verbose",
}
_TYPE_EXTENSIONS = {"yaml": (".yaml", ".yml"), "json": (".json",), "file": ("",)}


@dataclass
class Hook:
    id: str
    entry: str
    language: str
    args: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=lambda: ["file"])
    files: str = ""
    exclude: str = "^$"
    pass_filenames: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def selects(self, path: str) -> bool:
        typed = all(path.endswith(_TYPE_EXTENSIONS[t]) for t in self.types)
        return typed and bool(re.search(self.files, path)) and not re.search(self.exclude, path)

    def command(self, staged: list[str]) -> list[str]:
        chosen = [p for p in staged if self.selects(p)] if self.pass_filenames else []
        return [*shlex.split(self.entry), *self.args, *chosen]


def _hooks(**overrides: dict[str, Any]) -> dict[str, Hook]:
    """The declared hooks, each with a user's `.pre-commit-config.yaml` overrides applied."""
    declared = yaml.safe_load(HOOKS_FILE.read_text())
    out = {}
    for item in declared:
        item = {**item, **overrides.get(item["id"], {})}
        known = {k: item[k] for k in ("id", "entry", "language", "args", "types", "files", "exclude",
                                      "pass_filenames") if k in item}
        out[item["id"]] = Hook(**known, extra={k: v for k, v in item.items() if k not in known})
    return out


def _run_hook(hook: Hook, repo: Path, staged: list[str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_PROJECT"))}
    env["PATH"] = f"{SCRIPT.parent}{os.pathsep}{env.get('PATH', '')}"  # the hook env's bin first
    return subprocess.run(hook.command(staged), cwd=repo, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A driver repository: two slices of one pool in two files, declaring the same key."""
    write(tmp_path / "deploy" / "node-a.yaml", SLICE.format(name="meta-a", pool="node-a"))
    write(tmp_path / "deploy" / "node-a-extra.yaml", SLICE.format(name="meta-b", pool="node-a"))
    write(tmp_path / ".github" / "workflows" / "ci.yaml", "on: push\njobs: {}\n")
    write(tmp_path / "README.md", "# driver\n")
    suite = (REPO / "examples" / "suites" / "kep.yaml").read_text().replace(
        "resources: [../", f"resources: [{REPO}/examples/").replace(", ../", f", {REPO}/examples/")
    write(tmp_path / "tests" / "affinity.yaml", suite)
    return tmp_path


def test_hooks_file_declares_the_three_hooks() -> None:
    declared = yaml.safe_load(HOOKS_FILE.read_text())
    assert [h["id"] for h in declared] == ["dra-affinity-lint", "dra-affinity-pools", "dra-affinity-test"]
    for hook in declared:
        assert {"id", "name", "entry", "language"} <= set(hook), hook
        assert set(hook) <= KNOWN_KEYS, set(hook) - KNOWN_KEYS
        assert hook["language"] == "python"
        assert shlex.split(hook["entry"])[0] == "dra-affinity"
    by_id = {h["id"]: h for h in declared}
    assert by_id["dra-affinity-lint"].get("pass_filenames", True) is True
    assert by_id["dra-affinity-pools"]["pass_filenames"] is False
    assert by_id["dra-affinity-test"]["pass_filenames"] is False


def test_lint_hook_gets_the_staged_yaml_files(repo: Path) -> None:
    hook = _hooks()["dra-affinity-lint"]
    staged = ["README.md", ".github/workflows/ci.yaml", "deploy/node-a.yaml"]
    assert hook.command(staged) == ["dra-affinity", "lint", ".github/workflows/ci.yaml", "deploy/node-a.yaml"]
    result = _run_hook(hook, repo, staged)
    assert result.returncode == 0, result.stdout + result.stderr  # warnings only; the workflow is skipped
    assert "deploy/node-a.yaml:13:24: warning SA201" in result.stdout
    assert "1 other object skipped" in result.stdout


def test_lint_hook_fails_the_commit_on_an_error(repo: Path) -> None:
    broken = SLICE.format(name="meta-c", pool="node-c").replace("- name: subnet", "- name: Sub Net")
    write(repo / "deploy" / "node-c.yaml", broken)
    result = _run_hook(_hooks()["dra-affinity-lint"], repo, ["deploy/node-c.yaml", "deploy/node-a.yaml"])
    assert result.returncode == 1
    assert "deploy/node-c.yaml:10:7: error SA103" in result.stdout


def test_pool_hook_checks_the_whole_repository(repo: Path) -> None:
    # committing one file: the lint hook cannot see the other slice of the pool...
    lint = _run_hook(_hooks()["dra-affinity-lint"], repo, ["deploy/node-a.yaml"])
    assert "SP301" not in lint.stdout
    # ...the pool hook (no filenames, default args: the repository) can
    pools = _hooks()["dra-affinity-pools"]
    assert pools.command(["deploy/node-a.yaml"]) == ["dra-affinity", "lint", "--pools-only", "."]
    result = _run_hook(pools, repo, ["deploy/node-a.yaml"])
    assert result.returncode == 1
    assert "error SP301" in result.stdout and "node-a-extra.yaml" in result.stdout
    scoped = _run_hook(_hooks(**{"dra-affinity-pools": {"args": ["deploy/"]}})["dra-affinity-pools"],
                       repo, [])
    assert scoped.returncode == 1 and "deploy/node-a.yaml" in scoped.stdout


def test_test_hook_runs_the_suites_named_in_args(repo: Path) -> None:
    hook = _hooks(**{"dra-affinity-test": {"args": ["tests/affinity.yaml"]}})["dra-affinity-test"]
    assert hook.command(["deploy/node-a.yaml"]) == ["dra-affinity", "test", "tests/affinity.yaml"]
    result = _run_hook(hook, repo, ["deploy/node-a.yaml"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("passed, 0 failed")
    # without args the hook is a usage error, not a silent pass
    bare = _run_hook(_hooks()["dra-affinity-test"], repo, [])
    assert bare.returncode == 2


def _readme_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_pre_commit_config_uses_the_declared_hooks() -> None:
    declared = {h["id"] for h in yaml.safe_load(HOOKS_FILE.read_text())}
    configs = [yaml.safe_load(b) for b in _readme_blocks("yaml") if b.lstrip().startswith(
        "# .pre-commit-config.yaml")]
    assert configs, "README has a copy-paste .pre-commit-config.yaml"
    used = {hook["id"] for config in configs for repo in config["repos"] for hook in repo["hooks"]}
    assert used == declared


def test_readme_config_examples_are_valid(tmp_path: Path) -> None:
    yaml_example = next(b for b in _readme_blocks("yaml") if b.startswith("# .dra-affinity.yaml"))
    toml_example = next(b for b in _readme_blocks("toml") if "[tool.dra-affinity]" in b)
    write(tmp_path / "deploy" / "slice.yaml", SLICE.format(name="a", pool="p"))
    (tmp_path / "reports").mkdir()
    (tmp_path / ".dra-affinity.yaml").write_text(yaml_example)
    out = cli("lint", "deploy", cwd=tmp_path)
    assert out.code == 0, out.err
    assert (tmp_path / "reports" / "dra-affinity.sarif").is_file()
    (tmp_path / ".dra-affinity.yaml").unlink()
    (tmp_path / "pyproject.toml").write_text(toml_example)
    assert cli("lint", "deploy", cwd=tmp_path).code == 1  # strict = true: the SA202 warning fails
