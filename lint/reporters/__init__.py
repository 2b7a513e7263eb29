"""Reporters: each a function from a `Report` to text. Chosen by `--format`."""

from __future__ import annotations

from collections.abc import Callable

from lint.report import Report

FORMATS = ("text", "json")


def get_reporter(name: str) -> Callable[[Report], str]:
    if name == "json":
        from lint.reporters.json_reporter import render as render_json

        return render_json
    from lint.reporters.text_reporter import render as render_text

    return render_text
