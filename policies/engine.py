"""Runs the rules. Both doors (CLI and webhook) come here; nothing here knows which called.

`check_slice(new, old)` is the API server's view (one slice, with UPDATE
ratcheting); pool rules join when the pool validator lands.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from policies.catalog import slice_rules
from policies.context import SliceContext
from policies.findings import Finding, Severity
from policies.limits import DEFAULT_KUBERNETES_VERSION, KubernetesVersion, Limits, limits_for
from policies.model import ResourceSlice


@dataclass(frozen=True, slots=True)
class EngineOptions:
    kubernetes_version: KubernetesVersion = DEFAULT_KUBERNETES_VERSION
    disabled_rules: frozenset[str] = frozenset()

    @property
    def limits(self) -> Limits:
        return limits_for(self.kubernetes_version)


def check_slice(
    new: ResourceSlice, old: ResourceSlice | None = None, options: EngineOptions | None = None
) -> list[Finding]:
    """Every slice-rule finding for `new` (CREATE) or `new` against `old` (UPDATE)."""
    options = options or EngineOptions()
    ctx = SliceContext(slice=new, old=old, limits=options.limits)
    findings: list[Finding] = []
    for rule in slice_rules():
        if rule.id in options.disabled_rules or rule.check is None:
            continue
        findings.extend(rule.check(ctx))
    return findings


def worst(findings: Iterable[Finding]) -> Severity | None:
    return max((f.severity for f in findings), default=None)
