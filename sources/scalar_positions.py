"""Map a line:column inside a YAML string value (a CEL expression) to the file.

Rules know where in an expression a problem is (`<input>:2:5`); a user wants the
file's line. The mapping depends on how the scalar was written, which only the file
text tells, so it is computed here, for the few findings that need it, from the
file text the loader kept and the value's start position — never on the loading hot path.

Literal blocks (`|`) and single-line quoted or plain scalars map exactly; folded
blocks and multi-line flow scalars are folded by YAML, so their first line is used.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from ..policies.core.findings import Finding, Location
from ..policies.core.source import Position

_BLOCK = ("|", ">")


def locate_in_scalar(lines: Sequence[str], value: Position, inner: Position) -> Position | None:
    """The file position of `inner` (1-based, in the decoded value) or None if unknown."""
    if not 1 <= value.line <= len(lines):
        return None
    start_line = lines[value.line - 1]
    col0 = value.column - 1
    if col0 >= len(start_line):
        return None
    indicator = start_line[col0]
    if indicator in _BLOCK:
        return _in_block(lines, value.line, inner) if indicator == "|" else None
    if inner.line != 1:
        return None
    if indicator == "'":
        return _in_quoted(start_line, value, inner, single=True)
    if indicator == '"':
        return _in_quoted(start_line, value, inner, single=False)
    return Position(value.line, value.column + inner.column - 1)


def _in_block(lines: Sequence[str], header_line: int, inner: Position) -> Position | None:
    first = header_line  # 0-based index of the first content line
    while first < len(lines) and not lines[first].strip():
        first += 1
    if first >= len(lines):
        return None
    indent = len(lines[first]) - len(lines[first].lstrip(" "))
    target = first + inner.line - 1
    if target >= len(lines):
        return None
    return Position(target + 1, indent + inner.column)


def _in_quoted(line: str, value: Position, inner: Position, *, single: bool) -> Position | None:
    """Walk the raw text, counting decoded characters, to the inner column."""
    i = value.column  # 0-based index just after the opening quote
    decoded = 1
    while i < len(line) and decoded < inner.column:
        if single and line.startswith("''", i):
            i += 2
        elif not single and line[i] == "\\":
            i += _escape_width(line, i)
        else:
            i += 1
        decoded += 1
    return Position(value.line, i + 1)


def _escape_width(line: str, i: int) -> int:
    nxt = line[i + 1 : i + 2]
    return {"x": 4, "u": 6, "U": 10}.get(nxt, 2)


def resolve_inner_positions(findings: Iterable[Finding], texts: Mapping[str, str]) -> list[Finding]:
    """Point findings that carry an in-expression position at the exact file line:column.

    `texts` is each file's text as loaded (`LoadResult.texts`, stdin included); a finding in a
    file without text (a cluster object) keeps its field's position.
    """
    lines: dict[str, list[str]] = {}
    out: list[Finding] = []
    for finding in findings:
        loc = finding.primary
        mapped = _mapped(loc, texts, lines)
        if mapped is None:
            out.append(finding)
            continue
        moved = dataclasses.replace(loc, position=mapped)
        out.append(dataclasses.replace(finding, locations=(moved, *finding.locations[1:])))
    return out


def _mapped(loc: Location, texts: Mapping[str, str], lines: dict[str, list[str]]) -> Position | None:
    if loc.inner is None or loc.value is None or loc.file is None:
        return None
    if loc.file not in lines:
        text = texts.get(loc.file)
        if text is None:
            return None
        lines[loc.file] = text.splitlines()
    return locate_in_scalar(lines[loc.file], loc.value, loc.inner)
