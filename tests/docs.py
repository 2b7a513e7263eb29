"""Command blocks of README.md and docs/*.md, run as written.

A ```sh block runs in bash from the repository root with the installed console script on PATH;
its exit code is 0, or N when the block says `# exit N`. The ```text block right after it, if
any, is its output: every line (`...` skips any number of lines) appears in stdout, in order.
A block right after `<!-- not run: WHY -->` is not run here; WHY names what tests it instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.cli import REPO

DOCS = REPO / "docs"
_BLOCK = re.compile(r"```sh\n(.*?)\n```(?:\n\n```text\n(.*?)\n```)?", re.DOTALL)
_NOT_RUN = re.compile(r"<!-- not run: (.+?) -->\n$")


@dataclass(frozen=True)
class Block:
    script: str
    expected: str | None
    not_run: str | None
    """Why the block is not run here (and what runs it instead), or None."""


def page_blocks(text: str) -> list[Block]:
    found = []
    for m in _BLOCK.finditer(text):
        reason = _NOT_RUN.search(text[:m.start()])
        found.append(Block(m.group(1), m.group(2), reason.group(1) if reason else None))
    return found


def blocks(name: str, text: str | None = None) -> list[tuple[str, str | None]]:
    found = [(b.script, b.expected) for b in page_blocks(text or (DOCS / name).read_text())]
    assert found, f"no command block in {name}"
    return found


def run_block(script: str, expected: str | None, env: dict[str, str] | None = None,
              cwd: Path = REPO) -> None:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env={**os.environ, **(env or {}), "PATH": path})
    code = re.search(r"# exit (\d+)", script)
    assert proc.returncode == (int(code.group(1)) if code else 0), f"{script}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    if expected is None:
        return
    lines = proc.stdout.splitlines()
    at = 0
    for want in expected.splitlines():
        if want.strip() == "...":
            continue
        while at < len(lines) and lines[at].rstrip() != want.rstrip():
            at += 1
        assert at < len(lines), f"{script}: line not in the output (in order): {want!r}\n{proc.stdout}"
        at += 1
