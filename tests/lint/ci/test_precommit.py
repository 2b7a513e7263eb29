"""`.pre-commit-hooks.yaml` under the real `pre-commit` framework, through `pre-commit try-repo`.

`try-repo` is what a driver author runs to try the hooks before pinning them: it clones this
checkout at its HEAD commit (with uncommitted changes to tracked files, and staged new files,
committed into a temporary shadow clone; so in CI's fresh clone, HEAD itself), installs it into
a fresh virtualenv (`language: python`), and runs every hook of the manifest on the staged files
of the repository it is run in. It keeps nothing between calls (a fresh store in a temporary
directory, whatever `PRE_COMMIT_HOME` says), so each call pays one hook-environment install;
the suite makes one call, running the three hooks at once, and every test reads its hook's
part of that one run. The test hook needs no `args` there (try-repo cannot pass any): it runs
the suites the driver's `.dra-affinity.yaml` lists under `test: suites:`.

The driver repository holds slices (staged, unstaged, one with an error, one in a directory its
config excludes), a `.venv/` with broken JSON in it (what made `lint .` fail before), a
git-ignored directory with broken YAML, a workflow file and a suite.

A second run (`committed`) is what a driver's `.pre-commit-config.yaml` does: it pins a commit
of a snapshot of this checkout and narrows the file hooks with `exclude: ^charts/`, so the
hooks' own filename handling is tested with pre-commit's filters (one more environment install).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.cli import REPO, snapshot
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
class TryRepo:
    """One `pre-commit try-repo` run: its exit code, the rev it tried, and each hook's part."""

    code: int
    output: str
    rev: str
    hooks: dict[str, str]
    """Hook id -> its section of the output (status line, exit code, what the hook printed)."""

    def hook(self, hook_id: str) -> str:
        assert hook_id in self.hooks, self.output
        return self.hooks[hook_id]


def _driver_repo(root: Path) -> Path:
    """Slices of pool node-a in two files (one staged), a broken slice (staged), a slice under an
    excluded directory, what a walk must not read, a suite, and the driver's config."""
    write(root / "deploy" / "node-a.yaml", SLICE.format(name="meta-a", pool="node-a"))
    write(root / "deploy" / "node-a-extra.yaml", SLICE.format(name="meta-b", pool="node-a"))
    write(root / "deploy" / "node-c.yaml",
          SLICE.format(name="meta-c", pool="node-c").replace("- name: subnet", "- name: Sub Net"))
    write(root / "deploy" / "legacy" / "node-a-old.yaml", SLICE.format(name="meta-old", pool="node-a"))
    write(root / ".github" / "workflows" / "ci.yaml", "on: push\njobs: {}\n")
    write(root / "README.md", "# driver\n")
    # what a walk must not read: a virtualenv's JSON, and build output git ignores
    write(root / ".venv" / "lib" / "site-packages" / "schemas" / "draft.json", '{"broken": [\n')
    write(root / "generated" / "bad.yaml", "kind: [\n")
    write(root / ".gitignore", "generated/\n")
    suite = (REPO / "examples" / "suites" / "kep.yaml").read_text().replace(
        "resources: [../", f"resources: [{REPO}/examples/").replace(", ../", f", {REPO}/examples/")
    write(root / "tests" / "affinity.yaml", suite)
    write(root / ".dra-affinity.yaml", "exclude: [deploy/legacy/]\ntest:\n  suites: [tests/affinity.yaml]\n")
    _git(root, "init", "-q", ".")
    _git(root, "add", "README.md", ".github/workflows/ci.yaml", "deploy/node-a.yaml", "deploy/node-c.yaml")
    return root


def _sections(output: str) -> dict[str, str]:
    """Split `pre-commit run --verbose` output at each hook's status line."""
    status = re.compile(r"^dra-affinity [a-z ]+\.{3,}.*$", re.M)
    starts = [m.start() for m in status.finditer(output)] + [len(output)]
    found = {}
    for begin, end in itertools.pairwise(starts):
        part = output[begin:end]
        hook_id = re.search(r"^- hook id: (\S+)$", part, re.M)
        if hook_id:
            found[hook_id.group(1)] = part
    return found


@pytest.fixture(scope="module")
def tried(tmp_path_factory: pytest.TempPathFactory) -> TryRepo:
    """`pre-commit try-repo <this checkout>` in the driver repository, every hook at once."""
    repo = _driver_repo(tmp_path_factory.mktemp("driver"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_PROJECT", "PRE_COMMIT"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "--verbose",
                           "--color", "never"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=1200)
    rev = re.search(r"^\s+rev: (\S+)$", proc.stdout, re.M)
    assert rev, proc.stdout + proc.stderr
    return TryRepo(proc.returncode, proc.stdout + proc.stderr, rev.group(1), _sections(proc.stdout))


@pytest.mark.slow
def test_try_repo_installs_this_checkout_and_runs_every_hook(tried: TryRepo) -> None:
    declared = [h["id"] for h in yaml.safe_load(HOOKS_FILE.read_text())]
    assert sorted(tried.hooks) == sorted(declared), tried.output
    assert "[INFO] Installing environment for" in tried.output
    assert tried.code == 1, tried.output  # the broken slice and the split pool fail the commit
    head = _git(REPO, "rev-parse", "HEAD").strip()
    if not subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=REPO).returncode:
        assert tried.rev == head  # a clean checkout (CI's fresh clone): its HEAD, as it is


def test_hooks_file_declares_the_three_hooks() -> None:
    declared = yaml.safe_load(HOOKS_FILE.read_text())
    assert [h["id"] for h in declared] == ["dra-affinity-lint", "dra-affinity-pools", "dra-affinity-test"]
    for hook in declared:
        assert {"id", "name", "entry", "language"} <= set(hook), hook
        assert set(hook) <= KNOWN_KEYS, set(hook) - KNOWN_KEYS
        assert hook["language"] == "python"
        assert shlex.split(hook["entry"])[0] == "dra-affinity"


@pytest.mark.slow
def test_lint_hook_checks_only_the_staged_files(tried: TryRepo) -> None:
    out = tried.hook("dra-affinity-lint")
    assert "Failed" in out.splitlines()[0] and "- exit code: 1" in out, out
    assert "deploy/node-a.yaml:13:24: SA201 warning: " in out
    assert "deploy/node-c.yaml:10:7: SA103 error: " in out  # an error fails the commit
    assert "node-a-extra.yaml" not in out and "SP301" not in out  # not staged: not seen
    assert "in 2 objects (3 files, 1 other object skipped)" in out  # the workflow is skipped


@pytest.mark.slow
def test_pool_hook_checks_the_repository_but_not_venv_ignored_or_excluded(tried: TryRepo) -> None:
    out = tried.hook("dra-affinity-pools")
    assert "Failed" in out.splitlines()[0] and "- exit code: 1" in out, out
    assert "SP301 error: " in out and "node-a-extra.yaml" in out  # the unstaged slice of the pool
    assert "SA000" not in out and ".venv" not in out and "generated" not in out
    assert "legacy" not in out  # the config's `exclude:` holds for the hook
    # it was given the staged YAML files (the workflow among them); the rest of pool node-a
    # was read from the repository, and is no file of the report
    assert "in 2 objects (3 files, 1 other object skipped)" in out


@pytest.mark.slow
def test_test_hook_runs_the_suites_the_config_lists(tried: TryRepo) -> None:
    out = tried.hook("dra-affinity-test")
    assert "Passed" in out.splitlines()[0], out
    assert "PASS KEP-5981 examples: multi-key NIC config yields subnet and pkey" in out
    assert "6 passed, 0 failed" in out


def test_test_without_suites_is_a_usage_error(tmp_path: Path) -> None:
    """No SUITE and no `test: suites:`: a run of nothing must not pass (a hook without `args`)."""
    out = cli("test", cwd=tmp_path)
    assert out.code == 2 and "give SUITE files, or list them under `test: suites:`" in out.err, out.err
    (tmp_path / ".dra-affinity.yaml").write_text("test:\n  suites: 3\n")
    out = cli("test", cwd=tmp_path)
    assert out.code == 2 and ".dra-affinity.yaml:2:3: test.suites: must be a string" in out.err, out.err


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


@dataclass(frozen=True)
class Committed:
    """One `pre-commit run` of the staged files, with a `.pre-commit-config.yaml` pinning this
    checkout (a snapshot of it committed in a temporary repository)."""

    code: int
    output: str
    hooks: dict[str, str]


_FINDING = re.compile(r"^(\S+):(\d+):(\d+): ([A-Z]+\d+) (?:error|warning|info)", re.M)


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> Committed:
    """A driver repository whose config narrows both file hooks with `exclude: ^charts/` and
    stages: a slice of pool node-a (its sibling committed before), a slice with an error, a
    file that is not YAML, and a Helm template under charts/."""
    source = snapshot(tmp_path_factory.mktemp("dra-affinity"))
    _git(source, "init", "-q", ".")
    _git(source, "add", "-A")
    _git(source, "commit", "-q", "-m", "snapshot")
    rev = _git(source, "rev-parse", "HEAD").strip()
    root = tmp_path_factory.mktemp("driver")
    write(root / "deploy" / "node-a-extra.yaml", SLICE.format(name="meta-b", pool="node-a"))
    write(root / "README.md", "# driver\n")
    _git(root, "init", "-q", ".")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "the pool's first slice")
    write(root / "deploy" / "node-a.yaml", SLICE.format(name="meta-a", pool="node-a"))
    write(root / "deploy" / "node-c.yaml",
          SLICE.format(name="meta-c", pool="node-c").replace("- name: subnet", "- name: Sub Net"))
    write(root / "deploy" / "broken.yaml", "kind: [\n")
    write(root / "charts" / "nic" / "templates" / "slice.yaml",
          "{{- range .Values.pools }}\nkind: ResourceSlice\nspec: {{ . | toYaml | nindent 2 }}\n{{- end }}\n")
    config = {"repos": [{"repo": str(source), "rev": rev, "hooks": [
        {"id": "dra-affinity-lint", "exclude": "^charts/"},
        {"id": "dra-affinity-pools", "exclude": "^charts/"}]}]}
    write(root / ".pre-commit-config.yaml", yaml.safe_dump(config))
    _git(root, "add", "-A")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_PROJECT", "PRE_COMMIT"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PRE_COMMIT_HOME"] = str(tmp_path_factory.mktemp("pre-commit-store"))
    proc = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--verbose", "--color", "never"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=1200)
    return Committed(proc.returncode, proc.stdout + proc.stderr, _sections(proc.stdout))


@pytest.mark.slow
def test_hooks_honour_the_configs_exclude(committed: Committed) -> None:
    """The Helm template under charts/ is excluded by the config: neither hook fails on it, the
    pool hook included, although it reads the repository for the rest of each pool."""
    assert sorted(committed.hooks) == ["dra-affinity-lint", "dra-affinity-pools"], committed.output
    assert "charts" not in committed.output and "toYaml" not in committed.output
    lint = committed.hooks["dra-affinity-lint"]
    assert "deploy/broken.yaml:2:1: SA000 error" in lint and "deploy/node-c.yaml:10:7: SA103 error" in lint
    # the three staged files of deploy/ and .pre-commit-config.yaml (an object of another kind)
    assert "in 2 objects (4 files, 1 other object skipped)" in lint, lint


@pytest.mark.slow
def test_the_pool_hook_completes_the_staged_files_pools_from_the_repository(committed: Committed) -> None:
    pools = committed.hooks["dra-affinity-pools"]
    assert "Failed" in pools.splitlines()[0] and "- exit code: 1" in pools, pools
    # the staged slice of node-a and its committed sibling, which was not passed to the hook
    assert "deploy/node-a.yaml" in pools and "SP301 error" in pools and "deploy/node-a-extra.yaml" in pools
    assert "SA000" not in pools and "SA103" not in pools  # the lint hook's findings


@pytest.mark.slow
def test_each_finding_is_reported_once_with_one_path_spelling(committed: Committed) -> None:
    found = _FINDING.findall(committed.output)
    assert found and len(found) == len(set(found)), found
    assert not [f for f in found if f[0].startswith("./")], found
    assert committed.code == 1


def _entry(hook_id: str) -> list[str]:
    (hook,) = [h for h in yaml.safe_load(HOOKS_FILE.read_text()) if h["id"] == hook_id]
    assert hook.get("pass_filenames", True), hook
    return [*shlex.split(hook["entry"])[1:], *hook.get("args", [])]


def test_the_pool_hooks_command_reads_only_the_given_files_pools(tmp_path: Path) -> None:
    """The pool hook's entry and args as pre-commit runs them, given one staged file, without
    pre-commit: the rest of its pool is read from the repository, any other file is not."""
    write(tmp_path / "deploy" / "node-a.yaml", SLICE.format(name="meta-a", pool="node-a"))
    write(tmp_path / "deploy" / "node-a-extra.yaml", SLICE.format(name="meta-b", pool="node-a"))
    write(tmp_path / "deploy" / "node-q.yaml", SLICE.format(name="meta-q", pool="node-q"))
    write(tmp_path / "deploy" / "node-q-extra.yaml", SLICE.format(name="meta-r", pool="node-q"))
    write(tmp_path / "charts" / "nic" / "templates" / "slice.yaml", "{{- if .Values.on }}\nkind: [\n")
    write(tmp_path / "generated" / "node-a-old.yaml", SLICE.format(name="meta-old", pool="node-a"))
    write(tmp_path / ".gitignore", "generated/\n")
    _git(tmp_path, "init", "-q", ".")
    out = cli(*_entry("dra-affinity-pools"), "deploy/node-a.yaml", "--format", "json", cwd=tmp_path)
    assert out.code == 1, out.err
    report = json.loads(out.out)
    found = {f["rule"]: f for f in report["findings"]}
    assert sorted(found) == ["SP301", "SP303"], report["findings"]  # node-a only
    for finding in found.values():
        assert finding["pool"] == {"driver": "net.example.com", "name": "node-a"}
        files = [loc["file"] for loc in finding["locations"]]
        assert files == ["deploy/node-a.yaml", "deploy/node-a-extra.yaml"]  # one spelling, no ./
    assert "2 slices are present" in found["SP303"]["message"]  # the sibling, not the git-ignored one
    assert "node-q" not in out.out and "charts" not in out.out and "generated" not in out.out
    assert report["summary"]["files"] == 1 and report["summary"]["objects"] == 1
    # a broken given file is the lint hook's to report; the pool hook passes over it
    write(tmp_path / "deploy" / "broken.yaml", "kind: [\n")
    quiet = cli(*_entry("dra-affinity-pools"), "deploy/broken.yaml", "--format", "json", cwd=tmp_path)
    assert quiet.code == 0 and json.loads(quiet.out)["findings"] == [], quiet.out
    loud = cli(*_entry("dra-affinity-lint"), "deploy/broken.yaml", "--format", "json", cwd=tmp_path)
    assert loud.code == 1 and [f["rule"] for f in json.loads(loud.out)["findings"]] == ["SA000"]


def test_pools_from_needs_files_and_the_pool_rules(tmp_path: Path) -> None:
    for args in (["--pools-from", "."], ["--pools-from", ".", "--no-pools", "a.yaml"]):
        out = cli("lint", *args, cwd=tmp_path)
        assert out.code == 2, out.err
        assert "--pools-from reads the rest of the pools of the FILES given" in out.err, out.err
    out = cli("lint", "--pools-from", "missing", "a.yaml", cwd=tmp_path)
    assert out.code == 2 and "'missing' does not exist" in out.err, out.err
