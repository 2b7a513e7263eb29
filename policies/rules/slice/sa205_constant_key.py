"""SA205: an extractor that ignores `object` gives every claim the same key."""

from __future__ import annotations

from collections.abc import Iterator

from dra_affinity.policies.core.findings import Finding, Severity
from dra_affinity.policies.rules.context import SliceContext, SliceRule


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.compiled_extractors():
        if not result.depends_on_object:
            yield RULE.finding(
                ctx,
                ("spec", "sharingAffinity", extractor.index, "expression"),
                "the expression does not depend on object: every claim gets the same key, so "
                "it constrains nothing (or, if it returns \"\", no request is ever satisfied)",
            )


RULE = SliceRule(
    id="SA205",
    slug="constant-key",
    severity=Severity.WARNING,
    summary="the expression does not depend on object",
    description=(
        "A constant non-empty key is satisfied by every request and never differs, so it adds "
        "a lock that always matches; a constant \"\" is never satisfied, so under strict "
        "gating no request can use the pool at all. Either way it is almost certainly a "
        "mistake, such as a quoted expression (`'\"object.subnetID\"'`)."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: '\"object.subnetID\"'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    check=check,
    ratchets=True,
)
