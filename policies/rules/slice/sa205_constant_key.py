"""SA205: an extractor that ignores `object` gives every claim the same key."""

from __future__ import annotations

import json
from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ..context import SliceContext, SliceRule


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.compiled_extractors():
        if result.depends_on_object:
            continue
        outcome = result.constant_outcome
        if outcome is None:
            what = "it gives every config the same result"
        elif outcome.value == "":
            what = ("it returns \"\" for every config, so no request is ever satisfied and no claim "
                    "can use the pool's devices")
        elif outcome.value is not None:
            what = (f"it returns {json.dumps(outcome.value)} for every config, so every request with a "
                    f"config in scope gets key {extractor.name or '?'}={outcome.value}: the lock "
                    "constrains nothing")
        else:
            what = (f"it fails with \"{outcome.error}\" on every config, so the scheduler aborts every "
                    "pod with a config in scope that is offered the pool")
        yield RULE.finding(
            ctx,
            ("spec", "sharingAffinity", extractor.index, "expression"),
            f"the expression does not depend on object: {what}",
        )


RULE = SliceRule(
    id="SA205",
    slug="constant-key",
    severity=Severity.WARNING,
    summary="the expression does not depend on object",
    description=(
        "A constant non-empty key is satisfied by every request with a config in scope and "
        "never differs, so it adds a lock that always matches; a constant \"\" is never "
        "satisfied, so under strict gating no request can use the pool at all. Either way it "
        "is almost certainly a mistake, such as a quoted expression (`'\"object.subnetID\"'`)."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: '\"object.subnetID\"'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    check=check,
    ratchets=True,
)
