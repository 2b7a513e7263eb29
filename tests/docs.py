"""Command blocks of README.md and docs/*.md, run as written.

A ```sh block runs in bash from the repository root with the installed console script on PATH;
its exit code is 0, or N when the block says `# exit N`. The ```text block right after it, if
any, is its output: every line (`...` skips any number of lines) appears in stdout, in order.
A block right after `<!-- not run: WHY -->` is not run here; WHY names what tests it instead.

Every other fenced block that is not an input (`yaml`, `toml`) is a sample output, and must be
checked too (`unchecked_samples`): it follows a run ```sh block (compared as above), or is a
`console` block of docs/simulate.md (tests/test_docs_simulate.py runs each `$` line), or is
marked `<!-- abridged: WHY -->` right before it, WHY saying what it leaves out and what tests it.
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
_FENCE = re.compile(r"^```(\w*)\n.*?^```\n", re.DOTALL | re.MULTILINE)
_ABRIDGED = re.compile(r"<!-- abridged: (\S[^\n]*?) -->\n$")
INPUT_LANGUAGES = frozenset({"yaml", "toml"})
"""Fenced blocks that are files to write, not output: each page's own tests read them."""
CONSOLE_PAGES = frozenset({"simulate.md"})
"""Pages whose `console` blocks tests/test_docs_simulate.py runs and compares."""


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


@dataclass(frozen=True)
class Sample:
    """A fenced output block no test compares: where it is and how it starts."""

    line: int
    language: str
    first: str


def unchecked_samples(text: str, page: str) -> list[Sample]:
    """Sample outputs of `text` that no test checks and no `<!-- abridged: WHY -->` marks."""
    found = []
    previous: tuple[str, int, bool] | None = None  # language, end, whether it runs
    for m in _FENCE.finditer(text):
        language = m.group(1)
        before = text[:m.start()]
        if language == "sh":
            previous = (language, m.end(), _NOT_RUN.search(before) is None)
            continue
        after_run = (previous is not None and previous[0] == "sh" and previous[2]
                     and not text[previous[1]:m.start()].strip())
        previous = (language, m.end(), False)
        if language in INPUT_LANGUAGES or after_run or _ABRIDGED.search(before):
            continue
        if language == "console" and page in CONSOLE_PAGES:
            continue
        body = m.group(0).split("\n", 1)[1]
        found.append(Sample(before.count("\n") + 1, language or "(none)", body.split("\n", 1)[0][:60]))
    return found
