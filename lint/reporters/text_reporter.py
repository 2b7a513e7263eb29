"""`--format text`: one line per finding, `file:line:col: severity RULE object: message`.

The `file:line:col:` prefix is what editors and terminals turn into links. Colour
only when writing to a terminal (click strips it otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence

import click
from dra_affinity.lint.report import Report
from dra_affinity.lint.suppressions import Suppressed
from dra_affinity.lint.walk import describe
from dra_affinity.policies.core.findings import Finding, Location, Severity

_COLOURS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def _where(finding: Finding) -> str:
    loc = finding.primary
    file = loc.file or "<input>"
    if loc.position is None:
        return file
    return f"{file}:{loc.position.line}:{loc.position.column}"


def _object(finding: Finding) -> str:
    obj = finding.primary.object
    if obj is None:
        return ""
    name = f"{obj.namespace}/{obj.name}" if obj.namespace else (obj.name or "<unnamed>")
    pool = f" (pool {finding.pool.driver}/{finding.pool.name})" if finding.pool else ""
    return f" {obj.kind}/{name}{pool}:"


def finding_line(finding: Finding) -> str:
    """One finding as the text report prints it: `file:line:col: severity RULE object message`."""
    severity = click.style(finding.severity.label, fg=_COLOURS[finding.severity], bold=True)
    rule = click.style(finding.rule, bold=True)
    text = f"{_where(finding)}: {severity} {rule}{_object(finding)} {finding.message}"
    for extra in finding.locations[1:]:
        text += f"\n    also at {_also(extra)}"
    return text


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
    finding = item.finding
    label = click.style("suppressed", fg="cyan", bold=True)
    reason = item.by.reason or "no reason given"
    return (f"{_where(finding)}: {label} {finding.rule}{_object(finding)} {finding.message}"
            f"\n    by {item.by.kind.value} at {item.by.where()}: {reason}")


def render(
    report: Report, suppressed: Sequence[Suppressed] = (), show_suppressed: bool = False
) -> str:
    """Findings, then (with `show_suppressed`) suppressed findings, then the summary line."""
    findings = report.sorted()
    tail = summary_line(report, suppressed)
    hidden = [_suppressed_line(item) for item in suppressed] if show_suppressed else []
    return "\n".join([*(finding_line(f) for f in findings), *hidden, tail])
