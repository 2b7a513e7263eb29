"""SA102: entry names are unique within a slice (`+listType=map +listMapKey=name`)."""

from __future__ import annotations

from collections.abc import Iterator

from dra_affinity.policies.core.findings import Finding, Severity
from dra_affinity.policies.rules.base import Rule, Scope
from dra_affinity.policies.rules.context import SliceContext


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


RULE = Rule(
    id="SA102",
    slug="duplicate-name",
    severity=Severity.ERROR,
    scope=Scope.SLICE,
    summary="two entries in one slice share a name",
    description=(
        "`sharingAffinity` is a map-type list keyed by `name`; generic list validation in "
        "the API server rejects a second entry with the same name. The scheduler would "
        "otherwise not know which extractor's value to lock on. Duplicates across "
        "*different* metadata slices of one pool are SP301."
    ),
    bad_example="- name: subnet\n  expression: object.subnetID\n- name: subnet\n  expression: object.subnet",
    good_example="- name: subnet\n  expression: object.subnetID\n- name: pkey\n  expression: object.ibPKey",
    check=check,
    upstream="kube-apiserver (listType=map)",
)
