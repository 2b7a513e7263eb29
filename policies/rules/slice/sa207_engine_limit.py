"""SA207: an expression our CEL engine cannot check although upstream accepts it."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ..context import SliceContext, SliceRule


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.checked_extractors():
        if result.compiled.engine_limited:
            yield RULE.finding(
                ctx,
                ("spec", "sharingAffinity", extractor.index, "expression"),
                "could not be fully checked: "
                f"{result.compiled.engine_limit_reason or 'engine limit'}; "
                "compilation, type and cost were not verified (upstream's parser accepts it)",
            )


RULE = SliceRule(
    id="SA207",
    slug="not-fully-checked",
    severity=Severity.WARNING,
    summary="the expression exceeds our CEL engine's limits but not upstream's; not fully checked",
    description=(
        "cel-expr-python's parser stops at nesting depth 32, while cel-go (the API server and "
        "scheduler) allows 250 and 100,000 code points. Rejecting such an expression would be "
        "a false SA106, so it is let through with this warning instead: SA106–SA108 and the "
        "advisories could not run on it. Flatten the nesting (e.g. with `cel.bind`) to get it "
        "fully checked."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: '((((((((((((((((((((((((((((((((((((((((object.?subnetID.orValue("
        "\"\")))))))))))))))))))))))))))))))))))))))))'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    check=check,
    ratchets=True,
)
