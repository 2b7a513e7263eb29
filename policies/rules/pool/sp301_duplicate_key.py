"""SP301: a key declared by two metadata slices of one pool (the KEP's "invalid pool")."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...scheduler.pools import pool_name
from ..context import PoolContext, PoolRule, slice_location


def check(ctx: PoolContext) -> Iterator[Finding]:
    pool = ctx.pool
    for key in pool.duplicate_keys:
        declared = [(e, s) for e, s in pool.declarations if e.name == key]
        where = ", ".join(f"{s.name} spec.sharingAffinity[{e.index}]" for e, s in declared)
        yield RULE.finding(
            ctx,
            f'key "{key}" is declared by {len({id(s) for _, s in declared})} metadata slices of pool '
            f"{pool_name(pool.ref)} ({where}): the scheduler treats the pool as invalid "
            '("slice key collision") and every device in it fails closed; keep one declaration '
            "and rename or remove the others",
            [slice_location(s, ("spec", "sharingAffinity", e.index, "name")) for e, s in declared],
        )


RULE = PoolRule(
    id="SP301",
    slug="pool-duplicate-key",
    severity=Severity.ERROR,
    summary="two metadata slices of one pool declare the same key name",
    description=(
        "The scheduler unions the extractors of a pool's metadata slices, and key names must be "
        "unique across that union: a key declared twice would leave the device lock ambiguous "
        "about which extractor's value to store. The API server validates one slice at a time "
        "and cannot see a collision between two slices, so the allocator treats the pool as "
        "invalid and fails closed for every device in it (`slice key collision`). The finding "
        "points at the `name` of every declaration. Duplicates inside one slice are SA102."
    ),
    bad_example=(
        "# slice 1\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'\n"
        "---\n"
        "# slice 2 of the same pool\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnet.orValue(\"\")'"
    ),
    good_example=(
        "# slice 1 declares subnet\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'\n"
        "---\n"
        "# slice 2 declares another key\n"
        "sharingAffinity:\n"
        "- name: pkey\n"
        "  expression: 'object.?ibPKey.orValue(\"\")'"
    ),
    check=check,
    upstream="kube-scheduler (pool validation; KEP-5981 \"Key name uniqueness\")",
)
