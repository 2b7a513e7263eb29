"""What a directory walk leaves out: hidden entries, what git ignores, and `--exclude` patterns.

A driver repository holds far more than manifests: `.git/`, a `.venv/` full of JSON
schemas, `node_modules/`, build output. Walking into those made `lint .` (the pool
pre-commit hook) read thousands of files and fail on JSON that is no Kubernetes input.
So, as ruff, yamllint and kube-linter do, a walk skips

* hidden files and directories (a name starting with `.`);
* what git ignores, inside a git work tree: every `.gitignore` from the work tree's root
  down to the directory walked, and `.git/info/exclude` — matched by `pathspec`'s
  `GitIgnoreSpec`, which follows git's own rules (last match wins, `!` re-includes,
  a deeper `.gitignore` overrides a shallower one);
* paths matching an `--exclude` pattern or the config file's `exclude:` list
  (gitignore syntax, relative to the working directory or the config file's directory).

A path named on the command line is read even if hidden or git-ignored (the user asked for
it), but an exclude pattern applies to it too, so `exclude:` in the config also holds for
the files pre-commit passes. Every skip is counted by reason for the run's summary.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pathspec is heavy to import, and a one-file lint walks nothing
    from pathspec import GitIgnoreSpec


class SkipReason(Enum):
    HIDDEN = "hidden"
    GITIGNORED = "git-ignored"
    EXCLUDED = "excluded"


@dataclass(frozen=True, slots=True)
class ExcludePatterns:
    """Gitignore-style patterns and the directory they are relative to."""

    patterns: tuple[str, ...]
    root: str
    _spec: GitIgnoreSpec | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def spec(self) -> GitIgnoreSpec:
        """The compiled patterns, built on first use (a path that is never matched costs nothing)."""
        if self._spec is None:
            from pathspec import GitIgnoreSpec

            object.__setattr__(self, "_spec", GitIgnoreSpec.from_lines(self.patterns))
        assert self._spec is not None
        return self._spec

    def matches(self, path: str, *, is_dir: bool) -> bool:
        if not self.patterns:
            return False
        relative = os.path.relpath(os.path.abspath(path), os.path.abspath(self.root))
        if relative == "." or relative.startswith(os.pardir + os.sep) or relative == os.pardir:
            return False
        relative = relative.replace(os.sep, "/")
        return self.spec.match_file(relative + ("/" if is_dir else ""))


@dataclass(slots=True)
class _Ignores:
    """The `.gitignore` files that govern one directory, shallowest first."""

    layers: tuple[tuple[str, GitIgnoreSpec], ...]

    def ignored(self, path: str, *, is_dir: bool) -> bool:
        for base, spec in reversed(self.layers):  # the deepest file that has a say decides
            relative = os.path.relpath(path, base).replace(os.sep, "/") + ("/" if is_dir else "")
            verdict = spec.check_file(relative).include
            if verdict is not None:
                return verdict
        return False


@dataclass(slots=True)
class WalkFilter:
    """One run's walking policy, and what it skipped (by reason)."""

    excludes: Sequence[ExcludePatterns] = ()
    skipped: dict[SkipReason, int] = field(default_factory=dict)
    _ignores: dict[str, _Ignores | None] = field(default_factory=dict)

    def skip_argument(self, path: str, *, is_dir: bool) -> bool:
        """Whether a path named on the command line is excluded (hidden/ignored ones are read)."""
        if any(e.matches(path, is_dir=is_dir) for e in self.excludes):
            self._count(SkipReason.EXCLUDED)
            return True
        return False

    def skip_entry(self, directory: str, name: str, *, is_dir: bool) -> bool:
        """Whether the walk leaves out `name`, found in `directory`; counted if so."""
        path = os.path.join(directory, name)
        reason: SkipReason | None = None
        if name.startswith("."):
            reason = SkipReason.HIDDEN
        elif any(e.matches(path, is_dir=is_dir) for e in self.excludes):
            reason = SkipReason.EXCLUDED
        else:
            ignores = self._governing(os.path.abspath(directory))
            if ignores is not None and ignores.ignored(os.path.abspath(path), is_dir=is_dir):
                reason = SkipReason.GITIGNORED
        if reason is None:
            return False
        self._count(reason)
        return True

    def _count(self, reason: SkipReason) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def _governing(self, directory: str) -> _Ignores | None:
        """The ignore files for `directory` (absolute), or None outside a git work tree."""
        if directory in self._ignores:
            return self._ignores[directory]
        parent = os.path.dirname(directory)
        if _is_work_tree_root(directory):
            layers = tuple(
                (directory, spec)
                for spec in (_read_spec(os.path.join(directory, ".git", "info", "exclude")),
                             _read_spec(os.path.join(directory, ".gitignore")))
                if spec is not None
            )
            found: _Ignores | None = _Ignores(layers)
        elif parent == directory:
            found = None
        else:
            above = self._governing(parent)
            own = _read_spec(os.path.join(directory, ".gitignore")) if above is not None else None
            found = above if own is None or above is None else _Ignores((*above.layers, (directory, own)))
        self._ignores[directory] = found
        return found


def _is_work_tree_root(directory: str) -> bool:
    """A `.git` directory, or a `.git` file (a worktree or submodule), marks a work tree's root."""
    return os.path.exists(os.path.join(directory, ".git"))


def _read_spec(path: str) -> GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec.from_lines(lines) if lines else None


def describe(skipped: dict[SkipReason, int]) -> str:
    """`2 hidden, 1 git-ignored, 1 excluded` (reasons in a fixed order), or "" for none."""
    return ", ".join(f"{skipped[r]} {r.value}" for r in SkipReason if skipped.get(r))
