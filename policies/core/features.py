"""Feature gates that change what the API server and the scheduler decide, per release.

Why a table: the same ResourceSlice or selector means different things depending on which DRA
gates a cluster runs. Kubernetes gives every gate a history (`pkg/features/kube_features.go`:
alpha off, beta on, GA locked on); `--kubernetes-version` picks the defaults of one release and
`--feature-gate NAME=on|off` overrides them per run, as `kube-scheduler --feature-gates` does.
The result is a `FeatureGates` value threaded through the code (no process-wide switch).

Only gates whose state changes a verdict of this tool are known:

* `DRASharingAffinity` — KEP-5981's own gate (alpha 1.38). A cluster that publishes
  `sharingAffinity` runs it, so this tool assumes it on unless told otherwise: the one
  deliberate difference from the release default (an alpha gate is off upstream).
* `DRAConsumableCapacity` — `device.allowMultipleAllocations` in selectors, shared allocation.
* `DRAListTypeAttributes` — KEP-5491's list-valued attributes and `includes` in new selectors.
* `DRAFractionalCapacityRange` — milli-unit `min`/`max`/`step` in a capacity request policy's
  `validRange` (KEP-5075; beta 1.37, on by default once the compatibility version reaches 1.37,
  i.e. from 1.38).
* `DRAPrioritizedList` — `firstAvailable` subrequests (locked on from 1.37).

A gate locked to its default refuses the other value, as kube-scheduler does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .limits import KubernetesVersion

__all__ = [
    "CONSUMABLE_CAPACITY",
    "FRACTIONAL_CAPACITY_RANGE",
    "KNOWN_GATES",
    "LIST_TYPE_ATTRIBUTES",
    "PRIORITIZED_LIST",
    "SHARING_AFFINITY",
    "FeatureGateError",
    "FeatureGates",
    "GateSpec",
    "GateStage",
    "parse_feature_gate",
]

SHARING_AFFINITY = "DRASharingAffinity"
CONSUMABLE_CAPACITY = "DRAConsumableCapacity"
LIST_TYPE_ATTRIBUTES = "DRAListTypeAttributes"
FRACTIONAL_CAPACITY_RANGE = "DRAFractionalCapacityRange"
PRIORITIZED_LIST = "DRAPrioritizedList"


class FeatureGateError(ValueError):
    """A `--feature-gate` value the tool cannot accept (message meant for users)."""


@dataclass(frozen=True, slots=True)
class GateStage:
    """From release `since` on: the default, the maturity, and whether the default is locked."""

    since: KubernetesVersion
    default: bool
    maturity: str
    locked: bool = False


@dataclass(frozen=True, slots=True)
class GateSpec:
    """One gate: its stages, oldest first."""

    name: str
    stages: tuple[GateStage, ...]

    def stage(self, version: KubernetesVersion) -> GateStage | None:
        """The stage in force at `version` (None before the gate exists)."""
        found: GateStage | None = None
        for stage in self.stages:
            if stage.since <= version:
                found = stage
        return found


KNOWN_GATES: Mapping[str, GateSpec] = MappingProxyType({spec.name: spec for spec in (
    GateSpec(SHARING_AFFINITY, (GateStage((1, 37), True, "alpha (assumed on)"),)),
    GateSpec(CONSUMABLE_CAPACITY, (GateStage((1, 34), False, "alpha"),
                                   GateStage((1, 36), True, "beta"))),
    GateSpec(LIST_TYPE_ATTRIBUTES, (GateStage((1, 36), False, "alpha"),)),
    GateSpec(FRACTIONAL_CAPACITY_RANGE, (GateStage((1, 37), False, "beta"),
                                         GateStage((1, 38), True, "beta"))),
    GateSpec(PRIORITIZED_LIST, (GateStage((1, 33), False, "alpha"),
                                GateStage((1, 34), True, "beta"),
                                GateStage((1, 36), True, "GA"),
                                GateStage((1, 37), True, "GA", locked=True))),
)})
"""Every gate `--feature-gate` accepts (kube_features.go, newest known release 1.37)."""

_ON = {"on": True, "true": True, "off": False, "false": False}
_GATE_RE = re.compile(r"^\s*([A-Za-z0-9]+)\s*=\s*([A-Za-z]+)\s*$")


def _known_list() -> str:
    return ", ".join(sorted(KNOWN_GATES))


def parse_feature_gate(text: str) -> tuple[str, bool]:
    """`NAME=on|off|true|false` -> (NAME, enabled). A bare `on`/`off` is DRASharingAffinity's."""
    bare = _ON.get(text.strip().lower())
    if bare is not None:
        return SHARING_AFFINITY, bare
    match = _GATE_RE.match(text)
    if match is None:
        raise FeatureGateError(f"invalid feature gate {text!r}: expected NAME=on|off "
                               f"(NAME one of {_known_list()})")
    name, value = match.group(1), match.group(2).lower()
    if name not in KNOWN_GATES:
        raise FeatureGateError(f"unknown feature gate {name!r}: known gates are {_known_list()}")
    if value not in _ON:
        raise FeatureGateError(f"invalid value {match.group(2)!r} for feature gate {name}: "
                               "expected on, off, true or false")
    return name, _ON[value]


@dataclass(frozen=True)
class FeatureGates:
    """The gates of one run: the release's defaults plus explicit overrides.

    Hashable, so it can key caches (an environment per gate combination).
    """

    version: KubernetesVersion
    overrides: frozenset[tuple[str, bool]] = field(default_factory=frozenset)

    @classmethod
    def for_release(cls, version: KubernetesVersion,
                    settings: Iterable[tuple[str, bool]] = ()) -> FeatureGates:
        """The gates of `version` with `settings` applied (later settings win, as upstream).

        Raises FeatureGateError for a gate the release does not have or a locked gate set to
        the other value.
        """
        chosen: dict[str, bool] = {}
        for name, enabled in settings:
            spec = KNOWN_GATES.get(name)
            if spec is None:
                raise FeatureGateError(f"unknown feature gate {name!r}: known gates are "
                                       f"{_known_list()}")
            stage = spec.stage(version)
            shown = f"{version[0]}.{version[1]}"
            if stage is None:
                raise FeatureGateError(f"feature gate {name} does not exist in Kubernetes {shown}")
            if stage.locked and enabled != stage.default:
                raise FeatureGateError(
                    f"cannot set feature gate {name} to {str(enabled).lower()}, feature is "
                    f"locked to {str(stage.default).lower()} in Kubernetes {shown}")
            chosen[name] = enabled
        return cls(version, frozenset(chosen.items()))

    def enabled(self, name: str) -> bool:
        """Whether gate `name` is on (False for a gate the release does not have)."""
        for gate, value in self.overrides:
            if gate == name:
                return value
        spec = KNOWN_GATES[name]
        stage = spec.stage(self.version)
        return stage.default if stage is not None else False
