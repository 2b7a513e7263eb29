"""SA104: every entry carries an expression."""

from __future__ import annotations

from collections.abc import Iterator

from dra_affinity.policies.core.findings import Finding, Severity
from dra_affinity.policies.rules.base import Rule, Scope
from dra_affinity.policies.rules.context import SliceContext


def check(ctx: SliceContext) -> Iterator[Finding]:
    for entry in ctx.slice.sharing_affinity:
        if not entry.expression or not entry.expression.strip():
            yield RULE.finding(ctx, ("spec", "sharingAffinity", entry.index, "expression"), "Required value")


RULE = Rule(
    id="SA104",
    slug="empty-expression",
    severity=Severity.ERROR,
    scope=Scope.SLICE,
    summary="an entry's expression is empty",
    description=(
        "`expression` is `+required`: an entry without one declares a key the scheduler can "
        "never extract, so under strict gating no request could ever use the pool. An "
        "expression of only white space is reported too: CEL would reject it as a syntax "
        "error, and this message says more."
    ),
    bad_example="- name: subnet\n  expression: ''",
    good_example="- name: subnet\n  expression: 'has(object.subnetID) ? object.subnetID : \"\"'",
    check=check,
    upstream="kube-apiserver (+required)",
)
