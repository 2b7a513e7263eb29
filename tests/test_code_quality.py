"""ruff and mypy are part of the test suite, so `.ci/run` keeps the code base clean."""

from __future__ import annotations

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
