"""SP302: the pool's extractors together exceed the shared CEL cost budget."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...scheduler.pools import pool_name, render_cost
from ..context import PoolContext, PoolRule, slice_location


def check(ctx: PoolContext) -> Iterator[Finding]:
    pool = ctx.pool
    metadata = pool.metadata_slices
    if len(metadata) < 2:
        return  # one metadata slice: the pool total is that slice's, and SA108 reports it
    budget = ctx.limits.pool_cost_budget
    total = pool.total_cost
    if total <= budget:
        return
    parts = ", ".join(f"{s.name} {render_cost(pool.cost_of(s))}" for s in metadata)
    yield RULE.finding(
        ctx,
        f"total estimated cost of the sharing affinity CEL expressions of pool "
        f"{pool_name(pool.ref)} ({render_cost(total)}) exceeds cost limit {budget}: {parts}; "
        'the scheduler refuses every extractor of the pool ("cel evaluation cost exceeded"), '
        "so cheapen or drop extractors until the sum fits",
        [slice_location(s, ("spec", "sharingAffinity")) for s in metadata],
    )


RULE = PoolRule(
    id="SP302",
    slug="pool-cost-budget",
    severity=Severity.ERROR,
    summary="combined estimated cost of all the pool's extractors exceeds 1,000,000",
    description=(
        "The KEP caps the estimated cost of a pool's whole extractor set with one shared budget "
        "(`SharingAffinityCELMaxCost`, 1,000,000), because the scheduler runs every extractor "
        "against every in-scope config for every candidate device. The API server can only "
        "check each slice's share (SA108); a pool of several metadata slices can pass slice by "
        "slice and still exceed the budget in total. The cost of each slice is SA108's "
        "estimate (cel-go's static estimator, no size knowledge of `object`), summed with "
        "saturating uint64 arithmetic; the message lists each slice's share. A pool with a "
        "single metadata slice is SA108's alone."
    ),
    bad_example=(
        "# slice 1: within budget alone\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: >-\n"
        "    lists.range(300).all(x, lists.range(300).all(y, x != y))\n"
        "    ? object.?subnetID.orValue(\"\") : \"\"\n"
        "---\n"
        "# slice 2: within budget alone, over it together with slice 1\n"
        "sharingAffinity:\n"
        "- name: pkey\n"
        "  expression: >-\n"
        "    lists.range(300).all(x, lists.range(300).all(y, x != y))\n"
        "    ? object.?ibPKey.orValue(\"\") : \"\""
    ),
    good_example=(
        "# slice 1: the costly extractor, trimmed\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: >-\n"
        "    lists.range(200).all(x, lists.range(300).all(y, x != y))\n"
        "    ? object.?subnetID.orValue(\"\") : \"\"\n"
        "---\n"
        "# slice 2: a cheap one, so that the pool stays within budget\n"
        "sharingAffinity:\n"
        "- name: pkey\n"
        "  expression: 'object.?ibPKey.orValue(\"\")'"
    ),
    check=check,
    upstream="kube-scheduler (shared per-pool CEL cost budget)",
)
