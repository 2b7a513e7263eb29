"""Writing reports: each format to standard output or its `--output` file, rendered once.

Machine output goes only to stdout or its file; logs go to stderr (the commands'
job). A file gets the text without terminal colours.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

import click

from ..config import OutputSpec


def to_stdout(spec: OutputSpec) -> bool:
    return spec.output is None or spec.output == "-"


def write_reports(specs: Sequence[OutputSpec], render: Callable[[str], str]) -> list[str]:
    """Write every report; return the files that could not be written, as messages."""
    errors: list[str] = []
    rendered: dict[str, str] = {}
    for spec in specs:
        if spec.format not in rendered:
            rendered[spec.format] = render(spec.format)
        text = rendered[spec.format]
        if to_stdout(spec):
            if text:  # an empty report (-q, nothing found) prints no blank line
                click.echo(text)
            continue
        assert spec.output is not None
        try:
            Path(spec.output).write_text(click.unstyle(text) + "\n", encoding="utf-8")
        except OSError as error:
            errors.append(f"{spec.output}: cannot write the {spec.format} report: "
                          f"{error.strerror or error}")
    return errors


@contextmanager
def report_stream(command: str, output: str | None) -> Iterator[TextIO]:
    """Where one report goes: standard output, or `output` opened for writing.

    A file that cannot be opened is the user's to fix, so it is a usage error (exit 2) with
    the reason, before anything is written.
    """
    if output is None or output == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    try:
        stream = open(output, "w", encoding="utf-8")  # noqa: SIM115 - closed by the with below
    except OSError as error:
        click.echo(f"dra-affinity {command}: {output}: cannot write the report: "
                   f"{error.strerror or error}", err=True)
        sys.exit(2)
    with stream:
        yield stream


def emit(command: str, text: str, output: str | None) -> None:
    """One rendered report to standard output (coloured as the terminal allows) or to `output`
    (without terminal colours)."""
    if output is None or output == "-":
        click.echo(text, nl=not text.endswith("\n"))
        return
    with report_stream(command, output) as stream:
        stream.write(click.unstyle(text) + ("" if text.endswith("\n") else "\n"))
