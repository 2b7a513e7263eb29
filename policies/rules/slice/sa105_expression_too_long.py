"""SA105: an expression is at most 10 Ki bytes of UTF-8 (Go's `len`, not characters)."""

from __future__ import annotations

from collections.abc import Iterator

from dra_affinity.policies.core.findings import Finding, Severity
from dra_affinity.policies.rules.base import Rule, Scope
from dra_affinity.policies.rules.context import SliceContext


def check(ctx: SliceContext) -> Iterator[Finding]:
    limit = ctx.limits.max_expression_bytes
    for entry in ctx.slice.sharing_affinity:
        if entry.expression is None or ctx.ratcheted(entry):
            continue
        size = len(entry.expression.encode("utf-8"))
        if size > limit:
            yield RULE.finding(
                ctx,
                ("spec", "sharingAffinity", entry.index, "expression"),
                f"Too long: may not be more than {limit} bytes",
            )


RULE = Rule(
    id="SA105",
    slug="expression-too-long",
    severity=Severity.ERROR,
    scope=Scope.SLICE,
    summary="an expression is longer than 10 Ki (10240) bytes",
    description=(
        "The KEP reuses `CELSelectorExpressionMaxLength` (10 Ki). Length is counted in UTF-8 "
        "bytes, as Go's `len` does, so an expression of 4000 non-ASCII characters can be too "
        "long. Ratcheting: an expression already stored unchanged in the old object is not "
        "re-checked on UPDATE."
    ),
    bad_example="expression: <10241 bytes>",
    good_example="expression: <at most 10240 bytes>",
    check=check,
    ratchets=True,
    upstream="kube-apiserver (CELSelectorExpressionMaxLength)",
)
