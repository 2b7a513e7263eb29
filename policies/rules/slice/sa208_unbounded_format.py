"""SA208: a format clause whose output grows with its precision, which no cost limit charges."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ..context import SliceContext, SliceRule


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.compiled_extractors():
        for verb in result.oversized_formats:
            yield RULE.finding(
                ctx,
                ("spec", "sharingAffinity", extractor.index, "expression"),
                f"the format verb `{verb.verb}` ({verb.line}:{verb.column}) renders about "
                f"{verb.precision:,} characters on every evaluation, and the cost limit charges "
                "format() 1: the scheduler would build that string on every Filter; use a "
                "precision of at most 1000",
                inner=(verb.line, verb.column),
            )


RULE = SliceRule(
    id="SA208",
    slug="unbounded-format",
    severity=Severity.WARNING,
    summary="a string.format() clause has a precision so large its output is unbounded in practice",
    description=(
        "`'%.999999999f'.format([x])` prints a billion digits. cel-go's runtime cost tracker "
        "has no price for `string.format` beyond the call itself (interpreter/runtimecost.go; "
        "Kubernetes' library/cost.go adds none), so neither the per-expression budget nor the "
        "scheduler's cost limit stops it: every Filter call allocates the whole string. This "
        "tool refuses to render a clause above precision 1000 when it evaluates, and reports "
        "the verb here."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: rate\n"
        "  expression: '\"%.999999999f\".format([object.rate])'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: rate\n"
        "  expression: '\"%.2f\".format([object.rate])'"
    ),
    check=check,
    ratchets=True,
)
