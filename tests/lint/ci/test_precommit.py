"""`.pre-commit-hooks.yaml` under the real `pre-commit` framework.

pre-commit clones the hook repository at a commit, installs it into its own virtualenv
(`language: python`), selects the staged files by `types`, and runs each hook. Here the
hook repository is a snapshot commit of this checkout (tracked and new files, as
`pre-commit try-repo` makes one), and a temporary driver repository holds slices, a
`.venv/` with JSON in it (what made `lint .` fail before) and a git-ignored directory.
The hook environment is installed once per module (`PRE_COMMIT_HOME`): installing it
takes minutes, and `try-repo` would reinstall it for every call into a temporary store.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.cli import REPO
from tests.lint.ci.support import SLICE, cli, write

HOOKS_FILE = REPO / ".pre-commit-hooks.yaml"
DOCS = REPO / "docs"
# the manifest keys pre-commit knows (pre-commit/clientlib.py MANIFEST_HOOK_DICT)
KNOWN_KEYS = {
    "id", "name", "entry", "language", "alias", "files", "exclude", "types", "types_or",
    "exclude_types", "additional_dependencies", "args", "always_run", "fail_fast", "pass_filenames",
    "description", "language_version", "log_file", "minimum_pre_commit_version", "require_serial",
    "stages", "verbose",
}
_GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main",
        "-c", "commit.gpgsign=false"]


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run([*_GIT, *args], cwd=cwd, check=True, capture_output=True, text=True,
                          timeout=60).stdout


@dataclass(frozen=True)
class HookSource:
    """The hook repository as pre-commit sees it: a path and a commit."""

    path: Path
    rev: str
    home: Path


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> HookSource:
    """A commit holding this checkout as it is now, like `pre-commit try-repo` makes."""
    snapshot = tmp_path_factory.mktemp("hook-repo")
    files = _git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, files):
        origin = REPO / name
        if origin.is_file():
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, snapshot / name)
    _git(snapshot, "init", "-q", ".")
    _git(snapshot, "add", "-A")
    _git(snapshot, "commit", "-q", "-m", "snapshot")
    return HookSource(snapshot, _git(snapshot, "rev-parse", "HEAD").strip(),
                      tmp_path_factory.mktemp("pre-commit-home"))


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """A driver repository: two slices of one pool in two files, declaring the same key."""
    write(tmp_path / "deploy" / "node-a.yaml", SLICE.format(name="meta-a", pool="node-a"))
    write(tmp_path / "deploy" / "node-a-extra.yaml", SLICE.format(name="meta-b", pool="node-a"))
    write(tmp_path / ".github" / "workflows" / "ci.yaml", "on: push\njobs: {}\n")
    write(tmp_path / "README.md", "# driver\n")
    # what a walk must not read: a virtualenv's JSON, and build output git ignores
    write(tmp_path / ".venv" / "lib" / "site-packages" / "schemas" / "draft.json", '{"broken": [\n')
    write(tmp_path / "generated" / "bad.yaml", "kind: [\n")
    write(tmp_path / ".gitignore", "generated/\n")
    suite = (REPO / "examples" / "suites" / "kep.yaml").read_text().replace(
        "resources: [../", f"resources: [{REPO}/examples/").replace(", ../", f", {REPO}/examples/")
    write(tmp_path / "tests" / "affinity.yaml", suite)
    _git(tmp_path, "init", "-q", ".")
    yield tmp_path


def _pre_commit(source: HookSource, repo: Path, hooks: list[dict[str, object]], *args: str
                ) -> subprocess.CompletedProcess[str]:
    config = {"repos": [{"repo": str(source.path), "rev": source.rev, "hooks": hooks}]}
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_PROJECT", "PRE_COMMIT"))}
    env["PRE_COMMIT_HOME"] = str(source.home)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--verbose", "--color", "never", *args],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)


def test_hooks_file_declares_the_three_hooks() -> None:
    declared = yaml.safe_load(HOOKS_FILE.read_text())
    assert [h["id"] for h in declared] == ["dra-affinity-lint", "dra-affinity-pools", "dra-affinity-test"]
    for hook in declared:
        assert {"id", "name", "entry", "language"} <= set(hook), hook
        assert set(hook) <= KNOWN_KEYS, set(hook) - KNOWN_KEYS
        assert hook["language"] == "python"
        assert shlex.split(hook["entry"])[0] == "dra-affinity"


def test_lint_hook_checks_only_the_staged_files(source: HookSource, repo: Path) -> None:
    _git(repo, "add", "README.md", ".github/workflows/ci.yaml", "deploy/node-a.yaml")
    result = _pre_commit(source, repo, [{"id": "dra-affinity-lint"}])
    out = result.stdout
    assert result.returncode == 0, out + result.stderr  # warnings only; the workflow is skipped
    assert "deploy/node-a.yaml:13:24: warning SA201" in out
    assert "node-a-extra.yaml" not in out and "SP301" not in out  # not staged: not seen
    assert "in 1 object (2 files, 1 other object skipped)" in out


def test_lint_hook_fails_the_commit_on_an_error(source: HookSource, repo: Path) -> None:
    broken = SLICE.format(name="meta-c", pool="node-c").replace("- name: subnet", "- name: Sub Net")
    write(repo / "deploy" / "node-c.yaml", broken)
    _git(repo, "add", "deploy/node-c.yaml")
    result = _pre_commit(source, repo, [{"id": "dra-affinity-lint"}])
    assert result.returncode == 1, result.stdout + result.stderr
    assert "deploy/node-c.yaml:10:7: error SA103" in result.stdout


def test_pool_hook_checks_the_repository_but_not_venv_or_ignored(source: HookSource, repo: Path) -> None:
    _git(repo, "add", "deploy/node-a.yaml")
    result = _pre_commit(source, repo, [{"id": "dra-affinity-pools"}])
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "error SP301" in out and "node-a-extra.yaml" in out  # the unstaged slice of the pool
    assert "SA000" not in out and ".venv" not in out and "generated" not in out
    # .git, .github, .venv, .pre-commit-config.yaml; generated/ by .gitignore
    assert "not read: 4 hidden, 1 git-ignored" in out
    # a user's `exclude:` in the config file holds for the hook too
    write(repo / ".dra-affinity.yaml", "exclude: [deploy/node-a-extra.yaml]\n")
    result = _pre_commit(source, repo, [{"id": "dra-affinity-pools"}])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 excluded" in result.stdout


def test_test_hook_runs_the_suites_named_in_args(source: HookSource, repo: Path) -> None:
    _git(repo, "add", "deploy/node-a.yaml")
    result = _pre_commit(source, repo, [{"id": "dra-affinity-test", "args": ["tests/affinity.yaml"]}])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed, 0 failed" in result.stdout
    # without args the hook is a usage error, not a silent pass
    bare = _pre_commit(source, repo, [{"id": "dra-affinity-test"}])
    assert bare.returncode == 1 and "exit code: 2" in bare.stdout, bare.stdout


def _readme_blocks(language: str) -> list[str]:
    pages = [DOCS / "pre-commit.md", DOCS / "configuration.md", REPO / "README.md"]
    fence = re.compile(rf"```{language}\n(.*?)```", flags=re.S)
    return [block for page in pages for block in fence.findall(page.read_text())]


def test_readme_pre_commit_config_uses_the_declared_hooks() -> None:
    declared = {h["id"] for h in yaml.safe_load(HOOKS_FILE.read_text())}
    configs = [yaml.safe_load(b) for b in _readme_blocks("yaml") if b.lstrip().startswith(
        "# .pre-commit-config.yaml")]
    assert configs, "the docs have a copy-paste .pre-commit-config.yaml"
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
