"""SA103: entry names are Kubernetes qualified names.

Upstream is silent on the format; SPEC §2 chooses the qualified-name rule
(optional DNS-subdomain prefix, then 1–63 characters), which admits every key the
KEP and the upstream tests use (`subnet`, `pkey`, `nvlink-domain`).
"""

from __future__ import annotations

from collections.abc import Iterator

from ...core.findings import Finding, Severity
from ...core.k8s_names import QNAME_MAX, SUBDOMAIN_MAX, go_quote, qualified_name_errors
from ...core.limits import Limits
from ..context import SliceContext, SliceRule
from ..vap_cel import (
    NAMES,
    SLICES,
    VapCel,
    cel_raw,
    indexed,
    qualified_name_pattern,
)


def check(ctx: SliceContext) -> Iterator[Finding]:
    for entry in ctx.slice.sharing_affinity:
        path = ("spec", "sharingAffinity", entry.index, "name")
        if not entry.name:
            yield RULE.finding(ctx, path, "Required value")
            continue
        for problem in qualified_name_errors(entry.name):
            yield RULE.finding(ctx, path, f"Invalid value: {_quote(entry.name)}: {problem}")


def _quote(value: str) -> str:

    return go_quote(value)


def _valid_name(var: str) -> str:
    # The pattern admits at most one '/', so indexOf finds the prefix separator or -1; the
    # prefix and the name part are ASCII once the pattern matched, so code points are bytes.
    return (
        f"{var}.matches({cel_raw(qualified_name_pattern())})"
        f" && {var}.indexOf('/') <= {SUBDOMAIN_MAX}"
        f" && size({var}) - {var}.indexOf('/') <= {QNAME_MAX + 1}"
    )


def vap(limits: Limits) -> VapCel:
    return VapCel(
        f"{NAMES}.all(n, {_valid_name('n')})",
        f"{NAMES}.transformList(i, n, !({_valid_name('n')}), "
        f"{indexed('name')} + (n == '' ? ' is empty' : ' ' + n)).join(', ')",
        SLICES,
    )


RULE = SliceRule(
    id="SA103",
    slug="invalid-name",
    severity=Severity.ERROR,
    summary="an entry's name is empty or not a valid key name",
    description=(
        "The name is the affinity key the scheduler locks a device on and shows in "
        "events. It must be a Kubernetes qualified name: an optional DNS-subdomain prefix "
        "and `/`, then 1–63 characters of letters, digits, `-`, `_` and `.`, starting and "
        "ending with a letter or digit. An empty or missing name is rejected as "
        "`Required value`."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: my subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: networking.example.com/subnet\n"
        "  expression: 'object.?subnetID.orValue(\"\")'"
    ),
    check=check,
    vap=vap,
)
