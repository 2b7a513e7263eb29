"""Feature gates per release: parsing `--feature-gate`, defaults, locks (kube_features.go)."""

from __future__ import annotations

import pytest
from dra_affinity.policies.core.features import (
    CONSUMABLE_CAPACITY,
    FRACTIONAL_CAPACITY_RANGE,
    LIST_TYPE_ATTRIBUTES,
    PRIORITIZED_LIST,
    SHARING_AFFINITY,
    FeatureGateError,
    FeatureGates,
    parse_feature_gate,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("DRAListTypeAttributes=on", (LIST_TYPE_ATTRIBUTES, True)),
    ("DRAListTypeAttributes=false", (LIST_TYPE_ATTRIBUTES, False)),
    (" DRAConsumableCapacity = TRUE ", (CONSUMABLE_CAPACITY, True)),
    ("off", (SHARING_AFFINITY, False)),
    ("on", (SHARING_AFFINITY, True)),
])
def test_parse(text: str, expected: tuple[str, bool]) -> None:
    assert parse_feature_gate(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("DRANope=on", "unknown feature gate 'DRANope': known gates are DRAConsumableCapacity, "
                   "DRAFractionalCapacityRange, DRAListTypeAttributes, DRAPrioritizedList, "
                   "DRASharingAffinity"),
    ("DRAListTypeAttributes", "expected NAME=on|off"),
    ("DRAListTypeAttributes=yes", "invalid value 'yes' for feature gate DRAListTypeAttributes"),
])
def test_parse_errors_name_the_known_gates_or_values(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError, match=message):
        parse_feature_gate(text)


@pytest.mark.parametrize(("version", "gate", "default"), [
    ((1, 37), CONSUMABLE_CAPACITY, True),  # beta since 1.36
    ((1, 35), CONSUMABLE_CAPACITY, False),  # alpha
    ((1, 37), LIST_TYPE_ATTRIBUTES, False),  # alpha
    ((1, 37), FRACTIONAL_CAPACITY_RANGE, False),  # on once the compatibility version is 1.37
    ((1, 38), FRACTIONAL_CAPACITY_RANGE, True),
    ((1, 36), FRACTIONAL_CAPACITY_RANGE, False),  # does not exist yet
    ((1, 37), PRIORITIZED_LIST, True),
    ((1, 38), SHARING_AFFINITY, True),  # assumed on: see the module docstring
])
def test_release_defaults(version: tuple[int, int], gate: str, default: bool) -> None:
    assert FeatureGates(version).enabled(gate) is default


def test_settings_override_defaults_and_the_last_one_wins() -> None:
    gates = FeatureGates.for_release((1, 37), [(LIST_TYPE_ATTRIBUTES, True),
                                               (SHARING_AFFINITY, False),
                                               (LIST_TYPE_ATTRIBUTES, False)])
    assert not gates.enabled(LIST_TYPE_ATTRIBUTES)
    assert not gates.enabled(SHARING_AFFINITY)
    assert gates.enabled(CONSUMABLE_CAPACITY)
    assert gates == FeatureGates.for_release((1, 37), [(SHARING_AFFINITY, False),
                                                       (LIST_TYPE_ATTRIBUTES, False)])
    assert hash(gates)  # a cache key


def test_a_locked_gate_refuses_the_other_value() -> None:
    assert FeatureGates.for_release((1, 37), [(PRIORITIZED_LIST, True)]).enabled(PRIORITIZED_LIST)
    with pytest.raises(FeatureGateError, match=r"cannot set feature gate DRAPrioritizedList to "
                                               r"false, feature is locked to true in Kubernetes 1\.37"):
        FeatureGates.for_release((1, 37), [(PRIORITIZED_LIST, False)])
    assert not FeatureGates.for_release((1, 36), [(PRIORITIZED_LIST, False)]).enabled(
        PRIORITIZED_LIST)


def test_a_gate_the_release_lacks_is_refused() -> None:
    with pytest.raises(FeatureGateError, match=r"DRAFractionalCapacityRange does not exist in "
                                               r"Kubernetes 1\.36"):
        FeatureGates.for_release((1, 36), [(FRACTIONAL_CAPACITY_RANGE, True)])
