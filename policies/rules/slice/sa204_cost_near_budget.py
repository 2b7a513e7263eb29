"""SA204: the slice's estimated cost uses more than half of the budget."""

from __future__ import annotations

from collections.abc import Iterator

from ...analysis.slice_cost import slice_cost
from ...core.findings import Finding, Severity
from ..context import SliceContext, SliceRule


def check(ctx: SliceContext) -> Iterator[Finding]:
    if not any(True for _ in ctx.checked_extractors()):
        return
    budget = ctx.limits.slice_cost_budget
    total = slice_cost(ctx.slice, ctx.limits)
    if budget // 2 < total <= budget:
        yield RULE.finding(
            ctx,
            ("spec", "sharingAffinity"),
            f"estimated cost {total} is above half of the budget {budget}: the pool budget is "
            "shared by every metadata slice of the pool, and more extractors will not fit",
        )


RULE = SliceRule(
    id="SA204",
    slug="cost-near-budget",
    severity=Severity.WARNING,
    summary="estimated cost above half the budget",
    description=(
        "The KEP caps the combined cost of a pool's extractors at 1,000,000. A slice that "
        "already uses more than half leaves little room for another metadata slice or key, "
        "and scheduling latency grows with the cost of every claim evaluated."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: >-\n"
        "    lists.range(300).all(x, lists.range(300).all(y, x != y))\n"
        "    ? object.?subnetID.orValue(\"\") : \"\""
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    check=check,
    ratchets=True,
)
