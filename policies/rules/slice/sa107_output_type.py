"""SA107: the expression's static type can be a string (`string` or `dyn`)."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...core.k8s_names import go_quote
from ..context import SliceContext, SliceRule

ACCEPTED = frozenset({"string", "dyn"})
"""`dyn` may be a string; so are the Kubernetes library types upstream converts results of
(`scheduler.extraction.LIBRARY_STRING_TYPES`, imported only for another type: the scheduler
model is not needed to lint a file)."""


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.compiled_extractors():
        output = result.compiled.output_type
        if output is None or output in ACCEPTED or extractor.expression is None:
            continue
        from ...scheduler.extraction import LIBRARY_STRING_TYPES

        if output in LIBRARY_STRING_TYPES:
            continue
        yield RULE.finding(
            ctx,
            ("spec", "sharingAffinity", extractor.index, "expression"),
            f"Invalid value: {go_quote(extractor.expression)}: must evaluate to string, not {output}",
        )


RULE = SliceRule(
    id="SA107",
    slug="output-type",
    severity=Severity.ERROR,
    summary="the expression's static output type is neither string nor dyn",
    description=(
        "An extractor must return a string (the KEP's alpha restricts return values to "
        "`string`). When the type checker proves the result is something else (`int`, `bool`, "
        "`optional_type(dyn)` from an unfinished `object.?x`, …), every evaluation fails with "
        "`cel expression returned non-string` and the scheduler aborts every pod that reaches "
        "the pool. Upstream only finds this at run time; we find it at write time. The "
        "Kubernetes library types that upstream converts to a string (`net.IP`, `net.CIDR`, "
        "`kubernetes.Quantity`, `kubernetes.URL`, `kubernetes.Semver`) are accepted."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: object.?subnetID"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    check=check,
    ratchets=True,
)
