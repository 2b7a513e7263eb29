"""What one run of `lint`, `dry-run` or `test` hands to the CI formats (sarif, junit, github).

The human formats (text, json, table) stay each command's own; the CI formats only
need findings with locations, test cases, and the rule metadata to explain them, so
every command describes its run in these terms once and all three formats follow.
Results that are not catalog rules (a failed test case, a dry-run slice error) are
`Finding`s too, with an `ExtraRule` describing their id.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...policies.core.findings import Finding, Severity
from ..suppressions import Suppressed


@dataclass(frozen=True, slots=True)
class ExtraRule:
    """A result id outside the rule catalog, described like a rule for SARIF."""

    id: str
    slug: str
    severity: Severity
    summary: str
    description: str


@dataclass(frozen=True, slots=True)
class TestCase:
    """One JUnit test case: an object linted, a dry-run result, a suite case."""

    suite: str
    name: str
    classname: str
    file: str | None = None
    line: int | None = None
    failures: tuple[str, ...] = ()
    output: tuple[str, ...] = ()
    """Lines for `<system-out>`: findings below the failure threshold, suppressed ones."""

    @property
    def failed(self) -> bool:
        return bool(self.failures)


@dataclass(frozen=True, slots=True)
class Notification:
    """Something about the run itself, not the input: an unreadable path, a skipped step."""

    level: str
    """`error` (the run is incomplete: exit code 2) or `warning`."""
    message: str


@dataclass(frozen=True, slots=True)
class RunResult:
    command: str
    findings: tuple[Finding, ...]
    cases: tuple[TestCase, ...] = ()
    suppressed: tuple[Suppressed, ...] = ()
    show_suppressed: bool = False
    extra_rules: tuple[ExtraRule, ...] = ()
    notifications: tuple[Notification, ...] = ()
    """Usage errors and warnings of the run (SARIF `toolExecutionNotifications`)."""
    summary: str = ""
    """The one-line summary a human reads (printed after GitHub annotations)."""
    threshold: Severity = Severity.ERROR
    """The lowest severity that fails the run (`--fail-on`, `--strict`)."""

    @property
    def successful(self) -> bool:
        """Whether the tool ran to completion (no usage error), whatever it found."""
        return not any(n.level == "error" for n in self.notifications)
