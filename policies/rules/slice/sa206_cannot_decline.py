"""SA206: an extractor can return `""` for configs it does not understand."""

from __future__ import annotations

import json
from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ..context import SliceContext, SliceRule


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.compiled_extractors():
        outcome = result.foreign_outcome
        if outcome is None:
            continue
        if outcome.value is not None:
            what = f"returns {json.dumps(outcome.value)}, so every such config in scope gives " \
                   f"key {extractor.name or '?'}={outcome.value}"
        else:
            what = f"fails with \"{outcome.error}\", which aborts the pod"
        yield RULE.finding(
            ctx,
            ("spec", "sharingAffinity", extractor.index, "expression"),
            f"the expression does not decline a config of another schema: on {outcome.config_text} "
            f"it {what}; return \"\" for configs it does not understand, e.g. "
            '`object.kind == "MyConfig" ? object.x : ""`',
        )


RULE = SliceRule(
    id="SA206",
    slug="cannot-decline",
    severity=Severity.WARNING,
    summary="the expression does not return \"\" for a config of another schema",
    description=(
        "`\"\"` is how an extractor says \"this config is not mine\". The expression is run on "
        "two configs of another schema (an apiVersion and kind it does not name and no other "
        "field, and `{}`); when neither yields `\"\"`, every foreign config in scope gets either "
        "a wrong key or a runtime error that aborts the pod. The finding quotes the config and "
        "what the expression returned for it."
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
