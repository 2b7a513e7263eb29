"""SA206: an extractor can return `""` for configs it does not understand."""

from __future__ import annotations

from collections.abc import Iterator

from dra_affinity.policies.core.findings import Finding, Severity
from dra_affinity.policies.rules.context import SliceContext, SliceRule


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.compiled_extractors():
        if result.depends_on_object and not result.can_decline:
            yield RULE.finding(
                ctx,
                ("spec", "sharingAffinity", extractor.index, "expression"),
                "the expression can never return \"\", so it cannot decline a config it does "
                "not understand: every in-scope config must yield this key or fail; add a "
                'branch that returns "", e.g. `has(object.x) ? object.x : ""`',
            )


RULE = SliceRule(
    id="SA206",
    slug="cannot-decline",
    severity=Severity.WARNING,
    summary="the expression can never return \"\"",
    description=(
        "`\"\"` is how an extractor says \"this config is not mine\". An expression with no "
        "`\"\"` among its possible results (through `?:`, `cel.bind` and `orValue`) turns "
        "every foreign config into either a wrong key or a runtime error that aborts the pod."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'has(object.subnetID) ? object.subnetID : \"none\"'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet   # \"\" declines: the device stays usable by other claims\n"
        "  expression: 'has(object.subnetID) ? object.subnetID : \"\"'"
    ),
    check=check,
    ratchets=True,
)
