"""Every command block of docs/simulate.md runs, and prints what the page shows.

A `console` block holds `$ command` lines, each followed by the output it must print (exactly,
line for line; nothing shown: no output checked). Commands run from a scratch directory where
`examples/` is the repository's, so files they write stay out of the tree.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.cli import REPO, run

DOC = REPO / "docs" / "simulate.md"


def _commands() -> list[tuple[str, list[str]]]:
    found = []
    for block in re.findall(r"```console\n(.*?)```", DOC.read_text(), re.S):
        command: str | None = None
        output: list[str] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    found.append((command, output))
                command, output = line[2:], []
            else:
                output.append(line)
        if command is not None:
            found.append((command, output))
    return found


COMMANDS = _commands()


def test_the_page_has_commands() -> None:
    assert len(COMMANDS) >= 3


@pytest.mark.parametrize(("command", "output"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_command(command: str, output: list[str], tmp_path: Path) -> None:
    argv = shlex.split(command)
    assert argv[0] == "dra-affinity"
    (tmp_path / "examples").symlink_to(REPO / "examples")
    result = run(*argv[1:], cwd=tmp_path)
    assert result.code == 0, result.err  # reports and passing suites: exit 0
    if output:
        assert [line.rstrip() for line in result.out.rstrip("\n").splitlines()] == output
    if "-o" in argv:
        assert (tmp_path / argv[argv.index("-o") + 1]).stat().st_size > 0
