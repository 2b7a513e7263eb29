"""What `lint DIR` (and every command that walks) reads: hidden entries, .gitignore, --exclude.

And what happens with no PATH at all: stdin is read only when it is not a terminal and
not empty, so `dra-affinity lint $UNSET` in CI cannot pass by reading nothing.
"""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest

from tests.cli import SCRIPT, run
from tests.lint.ci.support import SLICE, write


def _slice(path: Path, name: str, pool: str | None = None) -> Path:
    return write(path, SLICE.format(name=name, pool=pool or name))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A git work tree with manifests, a virtualenv, node_modules, ignored and re-included files."""
    (tmp_path / ".git").mkdir()  # what marks a work tree's root (git itself is not needed)
    _slice(tmp_path / "deploy" / "a.yaml", "a")
    _slice(tmp_path / "deploy" / "gen" / "b.yaml", "b")
    _slice(tmp_path / "deploy" / "gen" / "keep.yaml", "keep")
    _slice(tmp_path / "deploy" / "vendor" / "c.yaml", "c")
    write(tmp_path / ".venv" / "lib" / "jsonschema" / "schemas" / "draft.json", '{"a": [\n')
    write(tmp_path / "node_modules" / "pkg" / "package.json", '{"name": \n')
    write(tmp_path / ".gitlab-ci.yml", "stages: [\n")
    write(tmp_path / ".gitignore", "node_modules/\n")
    write(tmp_path / "deploy" / ".gitignore", "gen/*\n!gen/keep.yaml\n")
    return tmp_path


def test_walk_skips_hidden_and_git_ignored_and_says_so(tree: Path) -> None:
    out = run("lint", "--format", "json", ".", cwd=tree)
    assert out.code == 0, out.out + out.err
    data = out.json()
    files = {f["file"] for f in data["findings"]}
    assert not any(".venv" in f or "node_modules" in f or "gitlab" in f for f in files), files
    assert data["summary"]["objects"] == 3  # a, keep (re-included by `!`), c
    # .git, .venv, .gitignore's siblings .gitlab-ci.yml; node_modules/ and gen/b.yaml by .gitignore
    assert data["summary"]["notRead"] == {"hidden": 3, "git-ignored": 2, "excluded": 0}
    text = run("lint", ".", cwd=tree)
    assert "in 3 objects (3 files, 0 other objects skipped; not read: 3 hidden, 2 git-ignored)" in text.out


def test_exclude_flag_and_config_exclude(tree: Path) -> None:
    out = run("lint", "--format", "json", "--exclude", "vendor/", "deploy", cwd=tree)
    assert out.json()["summary"]["objects"] == 2
    assert out.json()["summary"]["notRead"]["excluded"] == 1
    # the config's patterns are relative to its directory, whatever the working directory
    write(tree / ".dra-affinity.yaml", "exclude: ['deploy/vendor', '*.json']\n")
    inside = run("lint", "--format", "json", ".", cwd=tree / "deploy")
    assert inside.json()["summary"]["objects"] == 2
    # an exclude pattern holds for files named explicitly too (pre-commit passes file names)
    named = run("lint", "--format", "json", "vendor/c.yaml", "a.yaml", cwd=tree / "deploy")
    assert named.json()["summary"]["objects"] == 1


def test_named_hidden_or_ignored_paths_are_read(tree: Path) -> None:
    out = run("lint", ".gitlab-ci.yml", "deploy/gen/b.yaml", cwd=tree)
    assert out.code == 1
    assert ".gitlab-ci.yml:2:1: SA000 error: YAML syntax error" in out.out
    assert "in 1 object" in out.out


def test_no_git_work_tree_no_gitignore(tmp_path: Path) -> None:
    _slice(tmp_path / "gen" / "b.yaml", "b")
    write(tmp_path / ".gitignore", "gen/\n")
    assert run("lint", "--format", "json", ".", cwd=tmp_path).json()["summary"]["objects"] == 1


def test_other_commands_walk_the_same_way(tree: Path) -> None:
    pools = run("pools", "--format", "json", ".", "--exclude", "vendor", cwd=tree)
    assert pools.code == 0, pools.err
    assert {p["name"] for p in pools.json()["pools"]} == {"a", "keep"}
    dry = run("dry-run", "--format", "json", ".", cwd=tree)
    assert dry.code == 0 and "SA000" not in dry.out, dry.out + dry.err


def test_no_path_and_a_terminal_is_a_usage_error(tmp_path: Path) -> None:
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.run([str(SCRIPT), "lint"], stdin=secondary, capture_output=True, text=True,
                              cwd=tmp_path, timeout=60)
    finally:
        os.close(primary)
        os.close(secondary)
    assert proc.returncode == 2
    assert "standard input is a terminal" in proc.stderr and "or - to read standard input" in proc.stderr
    assert proc.stdout == ""  # nothing was read: no report, no "0 errors" summary


@pytest.mark.parametrize("command", ["lint", "pools", "dry-run", "simulate"])
def test_no_path_and_empty_stdin_is_a_usage_error(command: str, tmp_path: Path) -> None:
    out = run(command, stdin="", cwd=tmp_path)
    assert out.code == 2, out.out + out.err
    assert "no PATH given and standard input is empty" in out.err
    assert out.out == "", out.out  # nothing was read: no report
    # an explicit `-` reads stdin as asked; stdin with a slice is read as before
    assert run("lint", "-", stdin="", cwd=tmp_path).code == 0
    assert run(command, stdin=SLICE.format(name="a", pool="a"), cwd=tmp_path).code == 0
