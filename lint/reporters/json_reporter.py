"""`--format json`: the SPEC §7 contract. CI parses this; add fields, never rename them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...policies.core.findings import Finding, Location
from ...policies.core.limits import (
    NEWEST_PUBLISHED_KUBERNETES_VERSION,
    KubernetesVersion,
    cel_environment_note,
    format_kubernetes_version,
)
from ...sources.walk import SkipReason
from ..report import Report
from ..suppressions import Suppressed


def _location(loc: Location) -> dict[str, Any]:
    return {
        "file": loc.file,
        "line": loc.position.line if loc.position else None,
        "column": loc.position.column if loc.position else None,
        "field": loc.field_path or None,
        "object": _object(loc),
    }


def _object(loc: Location) -> dict[str, Any] | None:
    if loc.object is None:
        return None
    out: dict[str, Any] = {"kind": loc.object.kind, "name": loc.object.name}
    if loc.object.namespace:
        out["namespace"] = loc.object.namespace
    return out


def finding_to_json(finding: Finding) -> dict[str, Any]:
    primary = finding.primary
    out: dict[str, Any] = {
        "rule": finding.rule,
        "severity": finding.severity.label,
        **_location(primary),
        "pool": {"driver": finding.pool.driver, "name": finding.pool.name} if finding.pool else None,
        "message": finding.message,
    }
    if len(finding.locations) > 1:
        out["locations"] = [_location(loc) for loc in finding.locations]
    return out


def kubernetes_to_json(version: KubernetesVersion) -> dict[str, Any]:
    """The release a report models: `version`, `celEnvironment` (the release whose CEL tables
    are used) and, when those are not `version`'s own, a `note` saying so."""
    cel_version = min(version, NEWEST_PUBLISHED_KUBERNETES_VERSION)
    out: dict[str, Any] = {"version": format_kubernetes_version(version),
                           "celEnvironment": format_kubernetes_version(cel_version)}
    note = cel_environment_note(version)
    if note is not None:
        out["note"] = note
    return out


def suppressed_to_json(item: Suppressed) -> dict[str, Any]:
    """A suppressed finding, with the suppression that silenced it and its reason."""
    by = item.by
    return {
        **finding_to_json(item.finding),
        "suppression": {
            "kind": by.kind.value,
            "reason": by.reason or None,
            "file": by.file,
            "line": by.position.line if by.position else None,
            "column": by.position.column if by.position else None,
        },
    }


def render(
    report: Report, suppressed: Sequence[Suppressed] = (), show_suppressed: bool = False
) -> str:
    """SPEC §7; `summary.suppressed` counts suppressed findings, `suppressed[]` lists them on request."""
    findings = report.sorted()
    summary = {
        "files": report.summary.files,
        "objects": report.summary.objects,
        **report.summary.counts(findings),
        "skipped": report.summary.skipped,
        "suppressed": len(suppressed),
        "notRead": {reason.value: report.summary.not_walked.get(reason, 0) for reason in SkipReason},
    }
    out: dict[str, Any] = {"findings": [finding_to_json(f) for f in findings], "summary": summary}
    if show_suppressed:
        out["suppressed"] = [suppressed_to_json(item) for item in suppressed]
    return json.dumps(out, indent=2)
