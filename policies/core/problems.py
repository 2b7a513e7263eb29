"""The kinds of input problem every stage can report: a stable id and a severity, nothing more.

The model (a document that is not a usable object), the scheduler model (a claim the API
server would reject, a selector the allocator cannot evaluate) and the loaders all find input
they cannot use. They sit below `policies.rules`, so they cannot take a rule object; they
report a `Finding` of one of these kinds instead — a value with the kind's id, its severity,
a message and the field paths it points at. The rule catalog documents each kind as a rule
(`policies/rules/input/`: summary, description, examples) under the same id and severity,
taken from here, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .findings import Finding, Location, PoolRef, Severity


@dataclass(frozen=True, slots=True)
class ProblemKind:
    """One kind of input problem: the finding id it is reported under, and how grave it is."""

    id: str
    severity: Severity

    def finding(
        self, message: str, locations: Location | Sequence[Location], *, pool: PoolRef | None = None
    ) -> Finding:
        """The problem as a finding; the first location is the primary one."""
        where = (locations,) if isinstance(locations, Location) else tuple(locations)
        return Finding(rule=self.id, severity=self.severity, message=message, locations=where, pool=pool)


INPUT_ERROR = ProblemKind("SA000", Severity.ERROR)
"""Unreadable or unparseable input, a document that is not an object, a structural error."""

SUPPRESSION_WITHOUT_REASON = ProblemKind("SA001", Severity.WARNING)
"""A suppression that does not say why."""

UNUSED_SUPPRESSION = ProblemKind("SA002", Severity.WARNING)
"""A suppression that silenced nothing."""

SELECTOR_ERROR = ProblemKind("SA003", Severity.ERROR)
"""A DeviceClass or request selector the allocator cannot evaluate."""
