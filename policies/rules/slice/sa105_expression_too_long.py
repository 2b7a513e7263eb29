"""SA105: an expression is at most 10 Ki bytes of UTF-8 (Go's `len`, not characters)."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...core.limits import Limits
from ..context import SliceContext, SliceRule
from ..vap_cel import (
    ENTRIES,
    MAX_UTF8_BYTES_PER_CODE_POINT,
    OLD_EXPRESSIONS,
    SLICES,
    VapCel,
    indexed,
)


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


def _short_enough(var: str, limits: Limits) -> str:
    # size() counts code points; a code point is at most 4 UTF-8 bytes, so short expressions
    # need no byte conversion. Go's len(), which upstream limits use, counts bytes.
    limit = limits.max_expression_bytes
    return (
        f"!has({var}.expression)"
        f" || size({var}.expression) <= {limit // MAX_UTF8_BYTES_PER_CODE_POINT}"
        f" || size(bytes({var}.expression)) <= {limit}"
        f" || {var}.expression in {OLD_EXPRESSIONS}"
    )


def vap(limits: Limits) -> VapCel:
    # Above max_entries `check_slice` skips the expression rules, and so does the policy.
    return VapCel(
        f"size({ENTRIES}) > {limits.max_entries} || {ENTRIES}.all(a, {_short_enough('a', limits)})",
        f"{ENTRIES}.transformList(i, a, !({_short_enough('a', limits)}), "
        f"{indexed('expression')} + ' has ' + string(size(bytes(a.expression))) + ' bytes')"
        f".join(', ')",
        SLICES,
    )


RULE = SliceRule(
    id="SA105",
    slug="expression-too-long",
    severity=Severity.ERROR,
    summary="an expression is longer than 10 Ki (10240) bytes",
    description=(
        "The KEP reuses `CELSelectorExpressionMaxLength` (10 Ki). Length is counted in UTF-8 "
        "bytes, as Go's `len` does, so an expression of 4000 non-ASCII characters can be too "
        "long. Ratcheting: an expression already stored unchanged in the old object is not "
        "re-checked on UPDATE."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\") + \"<10241 × a>\"'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'   # at most 10240 bytes"
    ),
    check=check,
    vap=vap,
    ratchets=True,
    upstream="kube-apiserver (CELSelectorExpressionMaxLength)",
)
