"""SA201: every read of an `object` field is guarded, or a claim without it aborts the pod."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ..context import SliceContext, SliceRule


def _optional_form(path: tuple[str, ...]) -> str:
    return "object" + "".join(f".?{p}" for p in path) + '.orValue("")'


def check(ctx: SliceContext) -> Iterator[Finding]:
    for extractor, result in ctx.compiled_extractors():
        for read, witness in result.unguarded_reads:
            yield RULE.finding(
                ctx,
                ("spec", "sharingAffinity", extractor.index, "expression"),
                f"`{read.text}` ({read.line}:{read.column}) is read without a has(), optional "
                f"or apiVersion/kind guard: a claim config such as {witness.config_text} makes "
                f"the scheduler abort the pod with \"{witness.error}\"; guard it, e.g. "
                f"`{_optional_form(read.path)}`",
                inner=(read.line, read.column),
            )


RULE = SliceRule(
    id="SA201",
    slug="unguarded-field",
    severity=Severity.WARNING,
    summary="a field of object is selected without a has()/optional/apiVersion-kind guard",
    description=(
        "Every extractor runs against every opaque config in scope for a request, including "
        "configs of other schemas. Reading a field the config does not have is a runtime error "
        "(`no such key`), which the KEP classifies as a slice authoring error: the scheduler "
        "aborts the pod instead of skipping the device. A read counts as guarded inside the "
        "true branch of a condition that tests `has()` on it (or `\"f\" in object`), behind an "
        "`object.apiVersion`/`object.kind` comparison with a literal (the KEP's idiom), or when "
        "written with optional syntax (`object.?f.orValue(\"\")`). `object.apiVersion` and "
        "`object.kind` themselves are the guard idiom and not reported."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: object.subnetID"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    check=check,
    ratchets=True,
)
