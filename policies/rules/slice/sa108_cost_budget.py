"""SA108: the slice's expressions stay within the CEL cost budget, estimated as cel-go does."""

from __future__ import annotations

from collections.abc import Iterator

from ...analysis.slice_cost import slice_cost
from ...cel.cost.estimate import CostReport
from ...core.findings import Finding, Severity
from ..context import SliceContext, SliceRule

_REWRITES = (
    ("concatenation", "return the field itself and let the driver derive the key, or compare it "
                      "with literals (`object.x in [\"a\", \"b\"]`)"),
    ("conversion", "keep the value a string in the config schema and return `object.x` unchanged"),
    ("equality", "compare object fields with string literals only, e.g. `object.kind == \"K\"`"),
    ("inequality", "compare object fields with string literals only"),
    ("iteration", "avoid comprehensions over object lists or maps; read a fixed position or key, "
                  "e.g. `object.?items[0].?name.orValue(\"\")`"),
    ("regular-expression", "match literal strings instead (`object.x in [...]`, `startsWith`"
                           " with a literal prefix is bounded by the prefix)"),
    ("substring", "use `startsWith`/`endsWith` with a literal, which is bounded by the literal"),
    ("membership", "test membership in a literal list instead of an object-derived one"),
)


def _rewrite(reason: str) -> str:
    for word, advice in _REWRITES:
        if word in reason:
            return advice
    return "bound every size the estimate depends on by literals"


def _explain(cost: CostReport) -> str:
    if not cost.unbounded:
        return ""
    parts = [
        f"`{c.text}` ({c.line}:{c.column}) has no known size, so {c.reason} in `{c.operation_text}` "
        f"is unbounded; {_rewrite(c.reason)}"
        for c in cost.unbounded[:3]
    ]
    return "; " + "; ".join(parts)


def _first_cause(cost: CostReport) -> tuple[int, int] | None:
    return (cost.unbounded[0].line, cost.unbounded[0].column) if cost.unbounded else None


def check(ctx: SliceContext) -> Iterator[Finding]:
    budget = ctx.limits.slice_cost_budget
    analysed = [(e, r) for e, r in ctx.checked_extractors() if r.cost is not None]
    if not analysed:
        return  # nothing new or changed: a stored slice is not re-costed (ratcheting)
    single_over = False
    for extractor, result in analysed:
        assert result.cost is not None
        if result.cost.max > budget:
            single_over = True
            yield RULE.finding(
                ctx,
                ("spec", "sharingAffinity", extractor.index, "expression"),
                f"Forbidden: too complex, exceeds cost limit: estimated cost {result.cost.max} "
                f"exceeds limit {budget}{_explain(result.cost)}",
                inner=_first_cause(result.cost),
            )
    if single_over:
        return
    total = slice_cost(ctx.slice, ctx.limits)
    if total > budget:
        yield RULE.finding(
            ctx,
            ("spec", "sharingAffinity"),
            "Forbidden: too complex, total estimated cost of the sharing affinity CEL expressions "
            f"in the slice ({total}) exceeds cost limit {budget}",
        )


RULE = SliceRule(
    id="SA108",
    slug="cost-budget",
    severity=Severity.ERROR,
    summary="combined estimated cost of the slice's expressions exceeds 1,000,000",
    description=(
        "The scheduler estimates each extractor's cost with cel-go's static estimator, knowing "
        "nothing about the size of `object`, and refuses extractors over the budget "
        "(`cel evaluation cost exceeded`), blocking every pod of the pool. So any operation "
        "whose cost grows with an object-derived string or list — `object.a == object.b`, "
        "`\"p-\" + object.x`, `string(object.n)`, `object.x.matches(...)`, a comprehension over "
        "an object list — is unbounded. The message names the sub-expression (line:column "
        "inside the expression) and how to rewrite it. Ratcheting: a slice whose expressions "
        "are all unchanged is not re-costed."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: '\"subnet-\" + object.subnetID'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    check=check,
    ratchets=True,
    upstream="kube-scheduler (estimated cost per extractor; the KEP caps the pool at 1,000,000)",
)
