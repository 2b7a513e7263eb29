"""Reporters: each a function from a run to text. Chosen by `--format` (several at once).

`text` and `json` render a lint `Report` (`get_reporter`); the CI formats — `sarif`,
`junit`, `github` — render any command's `RunResult` (`render_ci`), so `lint`,
`dry-run` and `test` share them. Modules are imported on use: a pre-commit run of
`lint` in text format never loads the SARIF or XML code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..report import Report
    from .run import RunResult

FORMATS = ("text", "json")
"""The lint report formats of `get_reporter` (SPEC §7)."""
CI_FORMATS = ("sarif", "junit", "github")
LINT_FORMATS = (*FORMATS, *CI_FORMATS)

_CI_MODULES = {
    "sarif": "dra_affinity.lint.reporters.sarif_reporter",
    "junit": "dra_affinity.lint.reporters.junit_reporter",
    "github": "dra_affinity.lint.reporters.github_reporter",
}


def get_reporter(name: str) -> Callable[[Report], str]:
    if name == "json":
        from .json_reporter import render as render_json

        return render_json
    from .text_reporter import render as render_text

    return render_text


def render_ci(name: str, run: RunResult) -> str:
    """`sarif`, `junit` or `github` output for any command's run."""
    render: Callable[[RunResult], str] = importlib.import_module(_CI_MODULES[name]).render
    return render(run)
