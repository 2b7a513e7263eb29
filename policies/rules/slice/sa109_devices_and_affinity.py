"""SA109: a slice carries either devices or sharingAffinity, never both."""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...core.limits import Limits
from ..context import SliceContext, SliceRule
from ..vap_cel import VapCel


def check(ctx: SliceContext) -> Iterator[Finding]:
    if ctx.slice.devices_set and ctx.slice.sharing_affinity_set:
        yield RULE.finding(
            ctx,
            ("spec",),
            'Invalid value: "": only one of `devices` or `sharingAffinity` is allowed',
            anchor=("spec", "sharingAffinity"),
        )


def vap(limits: Limits) -> VapCel:
    return VapCel("!(has(object.spec.devices) && has(object.spec.sharingAffinity))", None, "spec")


RULE = SliceRule(
    id="SA109",
    slug="devices-and-affinity",
    severity=Severity.ERROR,
    summary="the slice sets both devices and sharingAffinity",
    description=(
        "KEP-5981 publishes sharing affinity as pool-level metadata in dedicated slices, "
        "mutually exclusive with devices, mirroring `sharedCounters` (KEP-4815). As upstream "
        "does for `sharedCounters`, the test is on presence: `devices: []` next to "
        "`sharingAffinity` is rejected too. Move the extractors to a metadata slice of the "
        "same pool and raise `resourceSliceCount` by one."
    ),
    bad_example=(
        "devices:\n"
        "- name: eth0\n"
        "  allowMultipleAllocations: true\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    good_example=(
        "# slice 1: the pool's metadata\n"
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'\n"
        "---\n"
        "# slice 2: its devices\n"
        "devices:\n"
        "- name: eth0\n"
        "  allowMultipleAllocations: true"
    ),
    check=check,
    vap=vap,
    upstream="kube-apiserver (mutual exclusion, as for sharedCounters)",
)
