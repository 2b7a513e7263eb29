"""SA101: at most 8 sharing-affinity entries per slice (`SharingAffinityMaxEntries`)."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...core.limits import Limits
from ..context import SliceContext, SliceRule
from ..vap_cel import ENTRIES, SLICES, VapCel


def check(ctx: SliceContext) -> Iterator[Finding]:
    count = len(ctx.slice.sharing_affinity)
    limit = ctx.limits.max_entries
    if count > limit:
        yield RULE.finding(
            ctx, ("spec", "sharingAffinity"), f"Too many: {count}: must have at most {limit} items"
        )


def vap(limits: Limits) -> VapCel:
    return VapCel(
        f"size({ENTRIES}) <= {limits.max_entries}",
        f"'found ' + string(size({ENTRIES}))",
        SLICES,
    )


RULE = SliceRule(
    id="SA101",
    slug="too-many-entries",
    severity=Severity.ERROR,
    summary="sharingAffinity has more than 8 entries",
    description=(
        "The API declares `+k8s:maxItems=8` on `spec.sharingAffinity` "
        "(`SharingAffinityMaxEntries`), so the API server rejects a slice with more entries. "
        "A pool that needs more keys than that is probably mixing unrelated sharing "
        "constraints; split its devices into separate pools."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- {name: k1, expression: 'object.?k1.orValue(\"\")'}\n"
        "- {name: k2, expression: 'object.?k2.orValue(\"\")'}\n"
        "- {name: k3, expression: 'object.?k3.orValue(\"\")'}\n"
        "- {name: k4, expression: 'object.?k4.orValue(\"\")'}\n"
        "- {name: k5, expression: 'object.?k5.orValue(\"\")'}\n"
        "- {name: k6, expression: 'object.?k6.orValue(\"\")'}\n"
        "- {name: k7, expression: 'object.?k7.orValue(\"\")'}\n"
        "- {name: k8, expression: 'object.?k8.orValue(\"\")'}\n"
        "- {name: k9, expression: 'object.?k9.orValue(\"\")'}"
    ),
    good_example=(
        "sharingAffinity:   # at most 8 entries\n"
        "- {name: k1, expression: 'object.?k1.orValue(\"\")'}\n"
        "- {name: k2, expression: 'object.?k2.orValue(\"\")'}"
    ),
    check=check,
    vap=vap,
    upstream="kube-apiserver (declarative maxItems)",
)
