"""Writing reports: each format to standard output or its `--output` file, rendered once.

Machine output goes only to stdout or its file; logs go to stderr (the commands'
job). A file gets the text without terminal colours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import click
from dra_affinity.lint.config import OutputSpec


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
            click.echo(text)
            continue
        assert spec.output is not None
        try:
            Path(spec.output).write_text(click.unstyle(text) + "\n", encoding="utf-8")
        except OSError as error:
            errors.append(f"{spec.output}: cannot write the {spec.format} report: "
                          f"{error.strerror or error}")
    return errors
