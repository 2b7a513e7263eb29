"""What one CLI run found: findings plus the counts every reporter prints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..policies.core.findings import Finding, Severity

if TYPE_CHECKING:
    from ..sources.walk import SkipReason


@dataclass(frozen=True, slots=True)
class Summary:
    files: int
    objects: int
    skipped: int
    """Objects read whose kind no rule checks."""
    not_walked: dict[SkipReason, int] = field(default_factory=dict)
    """Paths directory walks left out, by reason."""

    def counts(self, findings: Sequence[Finding]) -> dict[str, int]:
        return {
            "errors": sum(f.severity is Severity.ERROR for f in findings),
            "warnings": sum(f.severity is Severity.WARNING for f in findings),
            "infos": sum(f.severity is Severity.INFO for f in findings),
        }


@dataclass(frozen=True, slots=True)
class Report:
    findings: tuple[Finding, ...]
    summary: Summary

    def sorted(self) -> tuple[Finding, ...]:
        """File, line, column order: how editors and humans read a report."""
        return tuple(sorted(self.findings, key=position_order))


def position_order(f: Finding) -> tuple[str, int, int, str]:
    """The sort key of every report: file, line, column, rule."""
    loc = f.primary
    pos = loc.position
    return (loc.file or "", pos.line if pos else 0, pos.column if pos else 0, f.rule)
