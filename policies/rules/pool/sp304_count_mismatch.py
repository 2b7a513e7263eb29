"""SP304: slices of the current generation disagree on `resourceSliceCount`."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...scheduler.pools import pool_name, slice_names
from ..context import PoolContext, PoolRule, slice_location


def check(ctx: PoolContext) -> Iterator[Finding]:
    pool = ctx.pool
    if len(pool.counts) < 2:
        return
    claims = "; ".join(
        f"{slice_names(s for s in pool.slices if s.resource_slice_count == count)} say {count}"
        for count in pool.counts
    )
    yield RULE.finding(
        ctx,
        f"the {len(pool.slices)} slices of pool {pool_name(pool.ref)} at generation "
        f"{pool.generation} disagree on resourceSliceCount ({claims}): the pool can never be "
        "complete, so the scheduler skips it; publish one count in every slice of a generation"
        + ctx.completeness_hint(),
        [slice_location(s, ("spec", "pool", "resourceSliceCount")) for s in pool.slices],
        severity=ctx.completeness_severity,
    )


RULE = PoolRule(
    id="SP304",
    slug="pool-count-mismatch",
    severity=Severity.ERROR,
    summary="slices of the same generation disagree on resourceSliceCount",
    description=(
        "A pool is complete when every slice of its highest generation states the same "
        "`resourceSliceCount` and that many slices are present. Disagreeing counts usually mean "
        "a driver bumped the count without bumping the generation. Severity as SP303: an error "
        "on complete input (`--complete-pools`, `--cluster`), else a warning."
    ),
    bad_example=(
        "pool: {name: pool-a, generation: 1, resourceSliceCount: 2}\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'\n"
        "---\n"
        "pool: {name: pool-a, generation: 1, resourceSliceCount: 3}\n"
        "devices:\n"
        "- name: eth0\n"
        "  allowMultipleAllocations: true"
    ),
    good_example=(
        "pool: {name: pool-a, generation: 1, resourceSliceCount: 2}\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'\n"
        "---\n"
        "pool: {name: pool-a, generation: 1, resourceSliceCount: 2}\n"
        "devices:\n"
        "- name: eth0\n"
        "  allowMultipleAllocations: true"
    ),
    check=check,
    upstream="kube-scheduler (pool completeness, KEP-4815)",
)
