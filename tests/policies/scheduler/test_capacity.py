"""Consumable capacity's `requestPolicy` rounding per `DRAFractionalCapacityRange`.

Upstream (`structured/internal/experimental/consumable_capacity.go`): without the gate a
`validRange` step is computed on int64 `Value()`s (each quantity rounded up to a whole
number); with it, on milli-values when `min`, `max` and `step` are all whole milli-units and
the step is at least 1m (`useMilli`), and a request finer than a milli-unit cannot be rounded.
The gate is beta and off in 1.37, on by default from 1.38.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest
from dra_affinity.policies.model.resources import Device, DeviceRequest
from dra_affinity.policies.scheduler.capacity import CapacityProblem, demand, render
from dra_affinity.policies.scheduler.simulation import SimulationReport, simulate

from tests.cli import run as run_cli
from tests.policies.scheduler.test_allocator import claim, cluster, gpu_class, request

RANGE = {"min": "500m", "step": "250m"}


def _device(value: str, valid_range: dict[str, str], default: str | None = None) -> Device:
    policy: dict[str, Any] = {"validRange": valid_range}
    if default is not None:
        policy["default"] = default
    [slice_] = cluster([{"name": "d", "allowMultipleAllocations": True,
                         "capacity": {"bw": {"value": value, "requestPolicy": policy}}}])
    return slice_.devices[0]


def _request(amount: str | None) -> DeviceRequest:
    extra: dict[str, Any] = {"capacity": {"requests": {"bw": amount}}} if amount is not None else {}
    c = claim("c", request("r0", **extra))
    assert c.requests[0].exactly is not None
    return c.requests[0].exactly


def _consumed(device: Device, amount: str | None, fractional: bool) -> str:
    got = demand(device, _request(amount), fractional)
    if isinstance(got, CapacityProblem):
        return f"problem: {got.message}"
    return render(got["bw"])


@pytest.mark.parametrize(("valid_range", "amount", "off", "on"), [
    (RANGE, "600m", "1", "750m"),  # the example
    (RANGE, "100m", "500m", "500m"),  # below min: min itself, exactly
    (RANGE, "1100m", "2", "1250m"),
    (RANGE, "750m", "1", "750m"),
    (RANGE, "1", "1", "1"),
    ({"min": "1500m", "step": "500m", "max": "3"}, "1600m", "2", "2"),
    ({"min": "1500m", "step": "500m", "max": "3"}, "2100m", "3", "2500m"),
    ({"min": "100m", "step": "300m", "max": "2500m"}, "1", "1", "1"),
    ({"min": "100m", "step": "300m", "max": "2500m"}, "2", "2", "2200m"),
    ({"min": "1", "step": "1"}, "1500m", "2", "2"),  # whole numbers: both paths agree
    ({"min": "250m"}, "600m", "600m", "600m"),  # no step: the request as it is
    ({"min": "500m", "step": "1u"}, "600m", "1", "1"),  # a step finer than 1m: int64 Value()
])
def test_valid_range_rounding_per_gate(valid_range: dict[str, str], amount: str, off: str, on: str) -> None:
    device = _device("10", valid_range)
    assert _consumed(device, amount, fractional=False) == off
    assert _consumed(device, amount, fractional=True) == on


def test_a_rounded_request_above_max_does_not_fit_either_way() -> None:
    device = _device("10", {"min": "1500m", "step": "500m", "max": "3"})
    assert _consumed(device, "3100m", False).startswith("problem: requested 3100m (rounded to 4)")
    assert _consumed(device, "3100m", True).startswith("problem: requested 3100m (rounded to 3500m)")


def test_a_request_finer_than_a_milli_unit_cannot_be_rounded_with_the_gate() -> None:
    device = _device("10", RANGE)
    assert _consumed(device, "600001u", False) == "1"
    assert "finer than a milli-unit" in _consumed(device, "600001u", True)


@pytest.mark.parametrize(("value", "off", "on"), [
    ("2500m", "2500m", "2500m"),
    ("2600m", "2600m", "problem"),  # (2600m - 500m) is no multiple of 250m; on whole numbers it is
])
def test_a_whole_capacity_taken_without_default_is_checked_against_the_steps(value: str, off: str,
                                                                            on: str) -> None:
    device = _device(value, RANGE)
    assert _consumed(device, None, False) == off
    assert _consumed(device, None, True).startswith(on)


def _simulated(version: tuple[int, int], fractional: bool | None = None) -> list[str]:
    slices = cluster([{"name": "d", "allowMultipleAllocations": True,
                       "capacity": {"bw": {"value": "2", "requestPolicy": {"default": "500m",
                                                                           "validRange": RANGE}}}}])
    claims = [claim(f"c{i}", request("r0", capacity={"requests": {"bw": "600m"}})) for i in range(3)]
    report = simulate(slices, claims, classes=[gpu_class()], kubernetes_version=version,
                      fractional_range=fractional)
    assert isinstance(report, SimulationReport)
    return [f"{s.placed}" for s in report.steps] + [str(report.devices[0].state.consumed.get("bw"))]


def test_simulate_follows_the_gate_of_the_release_or_as_set() -> None:
    """600m on a 2-unit device: 1 each without the gate (two fit), 750m each with it (two fit,
    a third does not: 2250m)."""
    assert _simulated((1, 37)) == ["True", "True", "False", str(Fraction(2))]
    assert _simulated((1, 38)) == ["True", "True", "False", str(Fraction(3, 2))]
    assert _simulated((1, 37), fractional=True) == ["True", "True", "False", str(Fraction(3, 2))]


def _gate_docs(value: str) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
         "spec": {"driver": "gpu.example.com", "nodeName": "n", "pool": {"name": "p", "generation": 1,
                                                                         "resourceSliceCount": 1},
                  "devices": [{"name": "d", "allowMultipleAllocations": True,
                               "capacity": {"bw": {"value": value,
                                                   "requestPolicy": {"validRange": RANGE}}}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "c", "namespace": "default"},
         "spec": {"devices": {"requests": [{"name": "r", "exactly": {
             "deviceClassName": "gpu", "capacity": {"requests": {"bw": "600m"}}}}]}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {}},
    ]


def test_simulate_command_takes_the_gate_from_feature_gate(tmp_path: Any) -> None:
    path = tmp_path / "in.yaml"
    path.write_text("".join(json.dumps(d) + "\n---\n" for d in _gate_docs("4")))
    for gate, consumed in (("off", "1"), ("on", "750m")):
        done = run_cli("simulate", str(path), "--kubernetes-version", "1.37", "--feature-gate",
                       f"DRAFractionalCapacityRange={gate}", "--format", "json")
        assert done.code == 0, done.err
        [device] = done.json()["devices"]
        assert device["consumed"] == {"bw": consumed}, device



def test_explain_command_takes_the_gate_from_feature_gate(tmp_path: Any) -> None:
    """600m on a 900m device: 1 without the gate (does not fit), 750m with it (fits)."""
    path = tmp_path / "in.yaml"
    path.write_text("".join(json.dumps(d) + "\n---\n" for d in _gate_docs("900m")))
    for gate, fits in (("off", False), ("on", True)):
        done = run_cli("explain", "default/c", str(path), "--kubernetes-version", "1.37", "--feature-gate",
                       f"DRAFractionalCapacityRange={gate}", "--format", "json")
        assert done.code == 0, done.err
        assert done.json()["schedulable"] is fits, done.json()["verdict"]


@pytest.mark.parametrize(("value", "like", "shown"), [
    (Fraction(16), None, "16"),
    (Fraction(2000), None, "2k"),  # apimachinery's canonical form of "2000"
    (Fraction(10**10), "10G", "10G"),
    (Fraction(1500), None, "1500"),
    (Fraction(3, 2), None, "1500m"),
    (Fraction(0), None, "0"),
    (Fraction(2**35), "80Gi", "32Gi"),
    (Fraction(2**35 + 1), "80Gi", "34359738369"),
])
def test_amounts_read_as_kubernetes_prints_the_quantity(value: Fraction, like: str | None,
                                                        shown: str) -> None:
    assert render(value, like) == shown
