"""Runs the rules. Both doors (CLI and webhook) come here; nothing here knows which called.

`check_slice(new, old)` is the API server's view (one slice, with UPDATE
ratcheting); `check_pools(slices)` is the scheduler's view across slices (SPEC §4),
which no API server has.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..core.findings import Finding, Severity
from ..core.limits import (
    DEFAULT_KUBERNETES_VERSION,
    KubernetesVersion,
    Limits,
    limits_for,
)
from ..model.resources import ResourceSlice
from ..scheduler.pools import Pool, build_pools
from .catalog import pool_rules, slice_rules
from .context import PoolContext, SliceContext


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
        if rule.id not in options.disabled_rules:
            findings.extend(rule.check(ctx))
    return findings


def check_pool(
    pool: Pool, options: EngineOptions | None = None, *, complete_pools: bool = False
) -> list[Finding]:
    """Every pool-rule finding for one pool built by `dra_affinity.policies.scheduler.pools.build_pools`.

    `complete_pools` says the input holds every slice of the pool (a full dump, a cluster):
    only then are SP303/SP304 errors rather than warnings.
    """
    options = options or EngineOptions()
    ctx = PoolContext(pool=pool, limits=options.limits, complete_pools=complete_pools)
    findings: list[Finding] = []
    for rule in pool_rules():
        if rule.id not in options.disabled_rules:
            findings.extend(rule.check(ctx))
    return findings


def check_pools(
    slices: Iterable[ResourceSlice], options: EngineOptions | None = None, *, complete_pools: bool = False
) -> list[Finding]:
    """Every pool-rule finding over `slices`, grouped into pools as the scheduler does."""
    options = options or EngineOptions()
    findings: list[Finding] = []
    for pool in build_pools(slices, options.limits).values():
        findings.extend(check_pool(pool, options, complete_pools=complete_pools))
    return findings


def worst(findings: Iterable[Finding]) -> Severity | None:
    return max((f.severity for f in findings), default=None)
