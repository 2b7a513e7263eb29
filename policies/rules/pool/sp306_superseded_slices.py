"""SP306: slices of a lower generation are still present next to the current one."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...scheduler.pools import pool_name, slice_names
from ..context import PoolContext, PoolRule, slice_location


def check(ctx: PoolContext) -> Iterator[Finding]:
    pool = ctx.pool
    if not pool.superseded:
        return
    old = sorted({s.generation for s in pool.superseded})
    count = len(pool.superseded)
    yield RULE.finding(
        ctx,
        f"{count} superseded slice{'' if count == 1 else 's'} of pool {pool_name(pool.ref)} "
        f"({slice_names(pool.superseded)}: generation {', '.join(map(str, old))}) "
        f"{'is' if count == 1 else 'are'} present next to generation {pool.generation}: the "
        f"scheduler ignores {'it' if count == 1 else 'them'}; delete superseded slices once the "
        "new generation is published",
        [slice_location(s, ("spec", "pool", "generation")) for s in pool.superseded]
        + [slice_location(s, ("spec", "pool", "generation")) for s in pool.slices],
    )


RULE = PoolRule(
    id="SP306",
    slug="pool-superseded-slices",
    severity=Severity.INFO,
    summary="superseded slices (lower generation) are present",
    description=(
        "When a driver republishes a pool it bumps `pool.generation`; the scheduler then uses "
        "only the highest generation and ignores the rest. Old slices are normal for a moment "
        "during an update, but in a repository or a settled cluster they are leftovers whose "
        "extractors and devices no longer count. The finding points at the old slices first, "
        "then at the current ones."
    ),
    bad_example=(
        "# left over from generation 1\n"
        "pool: {name: pool-a, generation: 1, resourceSliceCount: 1}\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'\n"
        "---\n"
        "# the current generation\n"
        "pool: {name: pool-a, generation: 2, resourceSliceCount: 1}\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    good_example=(
        "pool: {name: pool-a, generation: 2, resourceSliceCount: 1}\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    check=check,
)
