"""The numbers of SPEC §8, per Kubernetes version — and nowhere else.

Limits change between releases; a stored object must not become invalid because
of that, which is why the engine ratchets (see `dra_affinity.policies.rules.engine`). Keeping them
in one versioned table is what lets `--kubernetes-version` mean something.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KubernetesVersion = tuple[int, int]

DEFAULT_KUBERNETES_VERSION: KubernetesVersion = (1, 37)
"""The KEP's alpha release."""

OLDEST_KUBERNETES_VERSION: KubernetesVersion = (1, 37)
"""`sharingAffinity` does not exist before its alpha release."""

NEWEST_KUBERNETES_VERSION: KubernetesVersion = (1, 38)
"""The newest release accepted: the KEP's alpha (moved to 1.38; beta is planned for 1.39)."""

NEWEST_PUBLISHED_KUBERNETES_VERSION: KubernetesVersion = (1, 37)
"""The newest release whose CEL environment (option table, DRA compiler, gates) is published.

A newer target gets the tables of this one (every option this build knows, none it does not):
its own additions are not published yet. `cel_environment_note` says so in `--help`, the docs
and every JSON report that names a version.
"""

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?$")


class VersionError(ValueError):
    """A `--kubernetes-version` the tool cannot interpret."""


def parse_kubernetes_version(text: str) -> KubernetesVersion:
    """Accept `1.37`, `v1.37` and `1.37.2` (the patch release does not change limits)."""
    match = _VERSION_RE.match(text.strip())
    if not match:
        raise VersionError(f"invalid Kubernetes version {text!r}: expected MAJOR.MINOR, e.g. 1.37")
    version = (int(match.group(1)), int(match.group(2)))
    if version < OLDEST_KUBERNETES_VERSION:
        raise VersionError(
            f"Kubernetes {version[0]}.{version[1]} has no ResourceSlice.spec.sharingAffinity "
            f"(introduced as alpha in {OLDEST_KUBERNETES_VERSION[0]}.{OLDEST_KUBERNETES_VERSION[1]})"
        )
    if version > NEWEST_KUBERNETES_VERSION:
        newest = format_kubernetes_version(NEWEST_KUBERNETES_VERSION)
        raise VersionError(
            f"Kubernetes {version[0]}.{version[1]} is newer than this release of dra-affinity "
            f"knows (newest: {newest}); upgrade dra-affinity or pass --kubernetes-version {newest}"
        )
    return version


def format_kubernetes_version(version: KubernetesVersion) -> str:
    return f"{version[0]}.{version[1]}"


def cel_environment_note(version: KubernetesVersion) -> str | None:
    """Why `version`'s CEL environment is an approximation, or None when it is modelled."""
    if version <= NEWEST_PUBLISHED_KUBERNETES_VERSION:
        return None
    newest = format_kubernetes_version(NEWEST_PUBLISHED_KUBERNETES_VERSION)
    return (f"Kubernetes {format_kubernetes_version(version)}'s CEL environment is not "
            f"published yet; the newest known one ({newest}) is used")


@dataclass(frozen=True, slots=True)
class Limits:
    """Limits in force for one Kubernetes version."""

    kubernetes_version: KubernetesVersion
    max_entries: int = 8
    """`SharingAffinityMaxEntries`."""
    max_expression_bytes: int = 10 * 1024
    """`CELSelectorExpressionMaxLength`, reused by the KEP; counted in UTF-8 bytes like Go's len()."""
    slice_cost_budget: int = 1_000_000
    """Sum of estimated costs of one slice's expressions."""
    pool_cost_budget: int = 1_000_000
    """`SharingAffinityCELMaxCost`: sum over all of a pool's extractors."""
    runtime_cost_per_evaluation: int = 1_000_000
    """`celconfig.PerCallLimit` / `CELSelectorExpressionMaxCost`."""
    max_opaque_parameters_bytes: int = 10 * 1024
    """`OpaqueParametersMaxLength`."""

    @property
    def cel_compatibility_version(self) -> KubernetesVersion:
        """New or changed expressions are compiled at n−1, as upstream does."""
        major, minor = self.kubernetes_version
        return (major, minor - 1)


def limits_for(version: KubernetesVersion = DEFAULT_KUBERNETES_VERSION) -> Limits:
    """The limits of `version`; every release so far shares the alpha numbers."""
    return Limits(kubernetes_version=version)
