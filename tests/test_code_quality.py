"""ruff and mypy are part of the test suite, so `.ci/run` keeps the code base clean."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.cli import REPO

BIN = Path(sys.executable).parent


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean() -> None:
    proc = _run(str(BIN / "ruff"), "check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean() -> None:
    proc = _run(str(BIN / "mypy"), "--cache-dir", str(REPO / ".mypy_cache"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


_ISSUE = re.compile(r"\b[Ii]ssues? #?\d+")
_SCANNED = ("policies", "lint", "webhook", "kube", "sources", "exporter", "bench", "tests", "deploy", "docs")
_FIGURES_LOG = Path("docs/performance.md")
"""The one page that records measurements with what prompted them."""


def test_no_code_or_reference_page_names_a_tracker_issue() -> None:
    """Code and reference pages say why; an issue number points to a tracker a reader of the
    code does not have (docs/performance.md, the figures log, may name what was measured for)."""
    named = []
    for folder in _SCANNED:
        for path in sorted((REPO / folder).rglob("*")):
            rel = path.relative_to(REPO)
            if path.suffix not in {".py", ".md", ".toml", ".yaml"} or rel == _FIGURES_LOG:
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if _ISSUE.search(line):
                    named.append(f"{rel}:{number}: {line.strip()}")
    for top in ("pyproject.toml", "setup.py", "ARCHITECTURE.md", "README.md"):
        for number, line in enumerate((REPO / top).read_text().splitlines(), 1):
            if _ISSUE.search(line):
                named.append(f"{top}:{number}: {line.strip()}")
    assert not named, "\n".join(named)
