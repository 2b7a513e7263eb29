"""SA102: entry names are unique within a slice (`+listType=map +listMapKey=name`)."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...core.limits import Limits
from ..context import SliceContext, SliceRule
from ..vap_cel import NAMES, SLICES, VapCel, indexed


def check(ctx: SliceContext) -> Iterator[Finding]:
    seen: set[str] = set()
    for entry in ctx.slice.sharing_affinity:
        if not entry.name:
            continue  # SA103's business
        if entry.name in seen:
            path = ("spec", "sharingAffinity", entry.index)
            yield RULE.finding(
                ctx, path, f'Duplicate value: "{entry.name}"', anchor=(*path, "name")
            )
        seen.add(entry.name)


def vap(limits: Limits) -> VapCel:
    # Every later occurrence of a non-empty name is reported, as `check` does; empty names
    # are SA103's business.
    return VapCel(
        f"{NAMES}.all(n, n == '' || {NAMES}.exists_one(m, m == n))",
        f"{NAMES}.transformList(i, n, n != '' && {NAMES}.indexOf(n) < i, "
        f"{indexed('name')} + ' ' + n).join(', ')",
        SLICES,
    )


RULE = SliceRule(
    id="SA102",
    slug="duplicate-name",
    severity=Severity.ERROR,
    summary="two entries in one slice share a name",
    description=(
        "`sharingAffinity` is a map-type list keyed by `name`; generic list validation in "
        "the API server rejects a second entry with the same name. The scheduler would "
        "otherwise not know which extractor's value to lock on. Duplicates across "
        "*different* metadata slices of one pool are SP301."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'\n"
        "- name: subnet\n"
        "  expression: 'object.?subnet.orValue(\"\")'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'\n"
        "- name: pkey\n"
        "  expression: 'object.?ibPKey.orValue(\"\")'"
    ),
    check=check,
    vap=vap,
    upstream="kube-apiserver (listType=map)",
)
