"""SP303: the pool does not have `resourceSliceCount` slices at its highest generation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...scheduler.pools import pool_name
from ..context import PoolContext, PoolRule, slice_location


def check(ctx: PoolContext) -> Iterator[Finding]:
    pool = ctx.pool
    expected = pool.expected_count
    if expected is None or pool.complete:
        return  # disagreeing counts are SP304's
    present = len(pool.slices)
    if present < expected:
        what = (
            f"{present} of the {expected} slices its resourceSliceCount announces "
            f"{'is' if present == 1 else 'are'} present"
        )
    else:
        what = f"{present} slices are present but resourceSliceCount is {expected}"
        repeated = sorted(n for n, k in Counter(s.name for s in pool.slices).items() if k > 1 and n)
        if repeated:
            what += f" (slice name {', '.join(repeated)} appears more than once in the input)"
    yield RULE.finding(
        ctx,
        f"pool {pool_name(pool.ref)} is incomplete: {what} at generation {pool.generation}; "
        "the scheduler skips incomplete pools, so none of its devices can be allocated"
        + ctx.completeness_hint(),
        [slice_location(s, ("spec", "pool", "resourceSliceCount")) for s in pool.slices],
        severity=ctx.completeness_severity,
    )


RULE = PoolRule(
    id="SP303",
    slug="pool-incomplete",
    severity=Severity.ERROR,
    summary="fewer or more slices than resourceSliceCount at the highest generation",
    description=(
        "Before reading a pool's metadata the scheduler checks that the pool is complete: "
        "exactly `resourceSliceCount` slices at the highest `generation`. An incomplete pool "
        "is skipped (KEP-4815's fail-closed gate), so its devices cannot be allocated and its "
        "sharing affinity is never read. An error when the input is known to hold every slice "
        "(`--complete-pools`, `--cluster`); otherwise a warning, because linting some files of "
        "a repository can leave slices out."
    ),
    bad_example=(
        "pool:\n"
        "  name: pool-a\n"
        "  generation: 1\n"
        "  resourceSliceCount: 2   # only one slice is published\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    good_example=(
        "pool:\n"
        "  name: pool-a\n"
        "  generation: 1\n"
        "  resourceSliceCount: 1\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    check=check,
    upstream="kube-scheduler (pool completeness, KEP-4815)",
)
