"""Pool rules SP301–SP306 (SPEC §4): documented here, checked once the pool validator lands.

They are listed by `dra-affinity rules` as planned so rule ids stay stable from the
first release; a rule without a check never produces a finding.
"""

from policies.findings import Severity
from policies.rules.base import Rule, Scope

_POOL_DOC = " (Pool validation is not implemented yet: this rule is documented, not checked.)"

RULES = (
    Rule(
        id="SP301",
        slug="pool-duplicate-key",
        severity=Severity.ERROR,
        scope=Scope.POOL,
        summary="two metadata slices of one pool declare the same key name",
        description=(
            "The scheduler unions the extractors of a pool's metadata slices; a key declared "
            "twice makes the pool invalid and every device in it fails closed (`slice key "
            "collision`). The API server checks one slice at a time and cannot see this."
            + _POOL_DOC
        ),
    ),
    Rule(
        id="SP302",
        slug="pool-cost-budget",
        severity=Severity.ERROR,
        scope=Scope.POOL,
        summary="combined estimated cost of all the pool's extractors exceeds 1,000,000",
        description="`SharingAffinityCELMaxCost` caps the whole pool, not one slice." + _POOL_DOC,
    ),
    Rule(
        id="SP303",
        slug="pool-incomplete",
        severity=Severity.ERROR,
        scope=Scope.POOL,
        summary="fewer or more slices than resourceSliceCount at the highest generation",
        description=(
            "An incomplete pool is skipped by the scheduler (KEP-4815's fail-closed gate). "
            "Error when the input is known to hold every slice, else a warning." + _POOL_DOC
        ),
    ),
    Rule(
        id="SP304",
        slug="pool-count-mismatch",
        severity=Severity.ERROR,
        scope=Scope.POOL,
        summary="slices of the same generation disagree on resourceSliceCount",
        description="Severity as SP303." + _POOL_DOC,
    ),
    Rule(
        id="SP305",
        slug="pool-nothing-shareable",
        severity=Severity.WARNING,
        scope=Scope.POOL,
        summary="the pool declares sharingAffinity but no device allows multiple allocations",
        description="Sharing affinity only constrains devices that can be shared." + _POOL_DOC,
    ),
    Rule(
        id="SP306",
        slug="pool-superseded-slices",
        severity=Severity.INFO,
        scope=Scope.POOL,
        summary="superseded slices (lower generation) are present",
        description="Slices of a lower generation are ignored by the scheduler." + _POOL_DOC,
    ),
)
