"""SA202: the extractor says which config schema it understands (apiVersion/kind)."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ..context import SliceContext, SliceRule


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.compiled_extractors():
        if result.depends_on_object and not result.has_schema_guard:
            yield RULE.finding(
                ctx,
                ("spec", "sharingAffinity", extractor.index, "expression"),
                "no object.apiVersion / object.kind guard: configs of every schema the driver "
                "accepts are evaluated too; return \"\" for the ones this key does not apply to, "
                'e.g. `object.?kind.orValue("") == "NICConfig" ? ... : ""`',
            )


RULE = SliceRule(
    id="SA202",
    slug="no-schema-guard",
    severity=Severity.WARNING,
    summary="no object.apiVersion / object.kind guard",
    description=(
        "The KEP dropped the per-extractor GVK field: the expression itself must recognise the "
        "config schemas it applies to and return \"\" for others. Without such a guard, a "
        "driver-tuning config or a newer config version is fed to the same field reads, which "
        "either aborts the pod (missing field) or locks the device on a value that means "
        "something else."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'has(object.subnetID) ? object.subnetID : \"\"'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: >-\n"
        "    object.apiVersion == \"networking.example.com/v1\" && object.kind == \"NICConfig\"\n"
        "    ? object.subnetID : \"\""
    ),
    check=check,
    ratchets=True,
)
