"""How CI formats name files: relative to the checkout, whatever the working directory.

GitHub resolves annotation files and SARIF URIs against the repository root, GitLab
against the project directory; a run from a subdirectory (`working-directory:`)
prints paths relative to itself. So paths are re-based on `$GITHUB_WORKSPACE` or
`$CI_PROJECT_DIR` when the working directory is inside it, else on the working
directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

_ROOT_VARIABLES = ("GITHUB_WORKSPACE", "CI_PROJECT_DIR")


def checkout_root(environ: Mapping[str, str] | None = None, cwd: str | None = None) -> str:
    env = os.environ if environ is None else environ
    here = os.path.abspath(cwd or os.getcwd())
    for variable in _ROOT_VARIABLES:
        root = env.get(variable)
        if root:
            root = os.path.abspath(root)
            if here == root or here.startswith(root.rstrip(os.sep) + os.sep):
                return root
    return here


@dataclass
class PathNamer:
    """Names input files relative to the checkout root; None for inputs that are not files."""

    root: str = field(default_factory=checkout_root)
    _cache: dict[str, str | None] = field(default_factory=dict)

    def relative(self, file: str | None) -> str | None:
        if file is None:
            return None
        if file not in self._cache:
            self._cache[file] = self._name(file)
        return self._cache[file]

    def _name(self, file: str) -> str | None:
        if not os.path.isfile(file):
            return None  # <stdin>, cluster:<context>, or gone
        absolute = os.path.abspath(file)
        try:
            relative = os.path.relpath(absolute, self.root)
        except ValueError:
            return Path(absolute).as_posix()
        if relative.startswith(".." + os.sep) or relative == "..":
            return Path(absolute).as_posix()
        return Path(relative).as_posix()
