"""SA104: every entry carries an expression."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...core.limits import Limits
from ..context import SliceContext, SliceRule
from ..vap_cel import ENTRIES, SLICES, VapCel, cel_raw, indexed, whitespace_class


def check(ctx: SliceContext) -> Iterator[Finding]:
    for entry in ctx.slice.sharing_affinity:
        if not entry.expression or not entry.expression.strip():
            yield RULE.finding(ctx, ("spec", "sharingAffinity", entry.index, "expression"), "Required value")


def _non_empty_expression(var: str) -> str:
    return f"has({var}.expression) && !{var}.expression.matches({cel_raw('^' + whitespace_class() + '*$')})"


def vap(limits: Limits) -> VapCel:
    return VapCel(
        f"{ENTRIES}.all(a, {_non_empty_expression('a')})",
        f"{ENTRIES}.transformList(i, a, !({_non_empty_expression('a')}), "
        f"{indexed('expression')}).join(', ')",
        SLICES,
    )


RULE = SliceRule(
    id="SA104",
    slug="empty-expression",
    severity=Severity.ERROR,
    summary="an entry's expression is empty",
    description=(
        "`expression` is `+required`: an entry without one declares a key the scheduler can "
        "never extract, so under strict gating no request could ever use the pool. An "
        "expression of only white space is reported too: CEL would reject it as a syntax "
        "error, and this message says more."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: ''"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'has(object.subnetID) ? object.subnetID : \"\"'"
    ),
    check=check,
    vap=vap,
    upstream="kube-apiserver (+required)",
)
