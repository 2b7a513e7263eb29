"""SA203: an output type of `dyn` is only known to be a string at run time."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ..context import SliceContext, SliceRule
from .sa108_cost_budget import RULE as COST_BUDGET


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.compiled_extractors():
        witness = result.non_string
        if witness is not None:
            yield RULE.finding(
                ctx,
                ("spec", "sharingAffinity", extractor.index, "expression"),
                f"output type is dyn: on a config such as {witness.config_text} it returns a value of "
                f"type {witness.error.removeprefix('non-string result of type ')}, not a string, which "
                "makes the scheduler abort the pod (\"cel expression returned non-string\"); "
                "`string(...)` and `type(...) == string` are unbounded in the scheduler's cost "
                f"estimate ({COST_BUDGET.id}), so either reject non-string values in the driver's config "
                'validation or, if they are legitimate, convert at bounded cost with '
                '`\"%s\".format([object.x])`',
            )


RULE = SliceRule(
    id="SA203",
    slug="dyn-output",
    severity=Severity.WARNING,
    summary="output type is dyn",
    description=(
        "`object` is `dyn`, so `object.subnetID` type-checks as `dyn`: nothing proves it is a "
        "string until a claim arrives. A claim with `subnetID: 7` then fails with `cel "
        "expression returned non-string`, a slice authoring error that blocks the pod. "
        "The obvious fixes backfire: `string(object.x)` and `type(object.x) == string` are "
        "unbounded in the scheduler's cost estimate (it knows no sizes of `object`) and fail "
        "SA108. `\"%s\".format([object.x])` has a static `string` type and a bounded cost, but "
        "turns `7` into `\"7\"`: use it only when such values are legitimate keys; otherwise "
        "keep `dyn` and have the driver's config validation reject non-string values. "
        "The finding quotes a config on which the expression returns a non-string; a `dyn` "
        "expression no such config is found for (`v == \"a\" ? v : \"\"`) is not reported."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: vlan\n"
        "  expression: 'has(object.vlan) ? \"%s\".format([object.vlan]) : \"\"'"
    ),
    check=check,
    ratchets=True,
)
