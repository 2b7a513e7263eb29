"""`--format text`: each finding as a short first line, `file:line:col: RULE severity: message`,
with what else it says on indented lines below.

The first line is what `grep` and editors read (one finding per first line; the
`file:line:col:` prefix is what editors and terminals turn into links). Below it, indented:
the rest of the message after its first `; ` (most rules state there what to do), the object
and its pool, and every further place of a pool finding. Colour follows the terminal and
`--color`/`NO_COLOR` (click strips it otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from ...policies.core.findings import Finding, Location, Severity
from ...sources.walk import describe
from ..report import Report
from ..suppressions import Suppressed

_COLOURS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def _where(finding: Finding) -> str:
    loc = finding.primary
    file = loc.file or "<input>"
    if loc.position is None:
        return file
    return f"{file}:{loc.position.line}:{loc.position.column}"


def _object(finding: Finding) -> str | None:
    """`in KIND/NAME (pool DRIVER/NAME)`: the object the finding is about, when it has one."""
    obj = finding.primary.object
    if obj is None:
        return None
    name = f"{obj.namespace}/{obj.name}" if obj.namespace else (obj.name or "<unnamed>")
    pool = f" (pool {finding.pool.driver}/{finding.pool.name})" if finding.pool else ""
    return f"in {obj.kind}/{name}{pool}"


def split_message(message: str) -> tuple[str, str]:
    """The message's first clause, and what follows its first `; ` outside quotes and brackets.

    Rule messages say what is wrong, then (after `; `) what follows from it or what to do;
    a `; ` inside a quoted value or an expression is part of the value.
    """
    depth = 0
    quoted = False
    escaped = False
    for i, char in enumerate(message):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif char == ";" and depth == 0 and message.startswith("; ", i):
            return message[:i], message[i + 2:]
    return message, ""


def _head(finding: Finding, label: str) -> tuple[str, list[str]]:
    """The first line of a finding (with `label` as its severity) and its indented detail."""
    first, rest = split_message(finding.message)
    head = f"{_where(finding)}: {click.style(finding.rule, bold=True)} {label}: {first}"
    detail = [line for line in (rest, _object(finding)) if line]
    detail += [f"also at {_also(extra)}" for extra in finding.locations[1:]]
    return head, [f"    {line}" for line in detail]


def finding_line(finding: Finding) -> str:
    """One finding as the text report prints it: `file:line:col: RULE severity: message` on its
    first line, the rest of the message, the object and further places indented below."""
    severity = click.style(finding.severity.label, fg=_COLOURS[finding.severity], bold=True)
    head, detail = _head(finding, severity)
    return "\n".join([head, *detail])


def _also(loc: Location) -> str:
    """A further place of a multi-location (pool) finding: file:line:col, object, field."""
    pos = f":{loc.position.line}:{loc.position.column}" if loc.position else ""
    obj = f" {loc.object.kind}/{loc.object.name or '<unnamed>'}" if loc.object else ""
    field = f" {loc.field_path}" if loc.field_path else ""
    return f"{loc.file or '<input>'}{pos}{obj}{field}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_line(report: Report, suppressed: Sequence[Suppressed] = ()) -> str:
    """`N errors, N warnings, N infos in N objects (N files, N other objects skipped[; not read: N hidden,
    N git-ignored, N excluded])[, N suppressed]`."""
    counts = report.summary.counts(report.findings)
    s = report.summary
    tail = (
        f"{_plural(counts['errors'], 'error')}, {_plural(counts['warnings'], 'warning')}, "
        f"{_plural(counts['infos'], 'info')} in {_plural(s.objects, 'object')} "
        f"({_plural(s.files, 'file')}, {_plural(s.skipped, 'other object')} skipped"
    )
    not_walked = describe(s.not_walked)
    tail += f"; not read: {not_walked})" if not_walked else ")"
    if suppressed:
        tail += f", {len(suppressed)} suppressed"
    return tail


def _suppressed_line(item: Suppressed) -> str:
    label = click.style("suppressed", fg="cyan", bold=True)
    head, detail = _head(item.finding, label)
    reason = item.by.reason or "no reason given"
    return "\n".join([head, *detail, f"    by {item.by.kind.value} at {item.by.where()}: {reason}"])


def render(
    report: Report, suppressed: Sequence[Suppressed] = (), show_suppressed: bool = False
) -> str:
    """Findings, then (with `show_suppressed`) suppressed findings, then the summary line (not
    with -q)."""
    from ..terminal import current

    findings = report.sorted()
    tail = [] if current().quiet else [summary_line(report, suppressed)]
    hidden = [_suppressed_line(item) for item in suppressed] if show_suppressed else []
    return "\n".join([*(finding_line(f) for f in findings), *hidden, *tail])
