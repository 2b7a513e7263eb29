"""SP305: a pool declares sharing affinity but none of its devices can be shared."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...scheduler.pools import pool_name
from ..context import PoolContext, PoolRule, slice_location


def check(ctx: PoolContext) -> Iterator[Finding]:
    pool = ctx.pool
    devices = len(pool.devices)
    if not pool.declares_affinity or pool.shareable_devices or devices == 0:
        return  # no devices in the input: nothing to mark, and likely partial input
    keys = ", ".join(pool.extractors) or "unnamed entries"
    yield RULE.finding(
        ctx,
        f"pool {pool_name(pool.ref)} declares sharingAffinity ({keys}) but none of its {devices} "
        f"device{'' if devices == 1 else 's'} sets allowMultipleAllocations: true: an affinity "
        "lock only constrains devices that several claims can share, so the extractors only "
        "cost scheduling time; mark the shareable devices or drop sharingAffinity",
        [slice_location(s, ("spec", "sharingAffinity")) for s in pool.metadata_slices]
        + [slice_location(s, ("spec", "devices")) for s in pool.device_slices],
    )


RULE = PoolRule(
    id="SP305",
    slug="pool-nothing-shareable",
    severity=Severity.WARNING,
    summary="the pool declares sharingAffinity but no device allows multiple allocations",
    description=(
        "Sharing affinity decides which claims may share a multi-allocatable device; a device "
        "without `allowMultipleAllocations: true` is never shared, so a pool whose devices are "
        "all exclusive gains nothing from its extractors and still pays for them in every "
        "scheduling cycle (and, with the scheduler's feature gate off, loses every device). "
        "Not reported for a pool with no devices in the input (a metadata slice linted alone)."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'\n"
        "---\n"
        "devices:\n"
        "- name: eth0   # exclusive: never shared"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'\n"
        "---\n"
        "devices:\n"
        "- name: eth0\n"
        "  allowMultipleAllocations: true"
    ),
    check=check,
)
