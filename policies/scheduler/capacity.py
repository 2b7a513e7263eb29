"""KEP-5075 consumable capacity: what one request consumes of a shareable device.

A lock (SPEC §6) only matters while a device still has room, so the lock simulator
needs the allocator's capacity arithmetic too. The rules are upstream's API
documentation (`CapacityRequirements`, `CapacityRequestPolicy`):

* a capacity the request names must exist on the device; with a `requestPolicy`
  the amount is rounded up to the next valid value (`validValues`: the smallest
  listed value at least as large; `validRange`: at least `min`, then `min + n*step`,
  never above `max`), else the device cannot serve the request. The step arithmetic
  depends on `DRAFractionalCapacityRange`: without the gate it is on whole numbers
  (int64 `Value()`, each quantity rounded up: 600m from 500m in steps of 250m
  consumes 1); with it, on milli-units (750m) whenever `min`, `max` and `step` are
  whole milli-units and the step is at least 1m (upstream's `useMilli`), and a request
  finer than a milli-unit cannot be rounded at all;
* a capacity the request does not name consumes the policy's `default`, and the
  *whole* capacity when there is no policy (or no default): such a device is
  effectively exclusive for that capacity;
* a device fits when, per capacity, the sum of what its holders consume plus the
  new amount is at most the capacity's value.

Amounts are exact `Fraction`s of values parsed by the Kubernetes quantity parser the CEL
quantity library uses (`dra_affinity.policies.cel.k8s_library._resource`), so `500m + 500m == 1` exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..cel.k8s_library._resource import (
    BINARY_SI,
    DECIMAL_SI,
    Quantity,
    QuantityError,
    parse_quantity,
)
from ..core.cache import cached
from ..model.resources import Device, DeviceRequest

Amounts = Mapping[str, Fraction]


@dataclass(frozen=True, slots=True)
class CapacityProblem:
    """Why a device cannot serve a request's capacity (a value, never raised)."""

    capacity: str
    message: str


def amount(text: object) -> Fraction | None:
    """A Kubernetes quantity (string or number) as an exact value; None when it does not parse."""
    return _amount(str(text).strip())


@cached("scheduler.capacity_amounts", 4096, lru=False)
def _amount(text: str) -> Fraction | None:
    """Bounded cache: Filter reads the same few capacity values for every device and claim."""
    try:
        q = parse_quantity(text)
    except QuantityError:
        return None
    return Fraction(q.unscaled) * Fraction(10) ** q.scale


def render(value: Fraction, like: object = None) -> str:
    """An amount in Kubernetes' canonical quantity form (`1500m`, `16`, `2k`); in binary form
    (`32Gi`) when `like` — the capacity's own value — is written so (`80Gi`)."""
    if value.denominator == 1 and like is not None and _binary(str(like).strip()):
        return str(Quantity(False, value.numerator, 0, BINARY_SI))
    digits = 0
    while (value * 10**digits).denominator != 1 and digits < 30:
        digits += 1
    scaled = value * 10**digits
    if scaled.denominator != 1:  # not decimal: cannot come from quantities, shown as a float
        return repr(float(value))
    return str(Quantity(True, scaled.numerator, -digits, DECIMAL_SI))


def _milli(value: Fraction) -> int | None:
    """A value in whole milli-units; None when it is finer (upstream `safeMilliValue` fails)."""
    scaled = value * 1000
    return scaled.numerator if scaled.denominator == 1 else None


def _step_units(valid_range: Mapping[str, Any], fractional: bool
                ) -> tuple[Fraction, Fraction, Fraction] | None:
    """(unit, min, step) of a range's step arithmetic, both counted in units: 1 for int64
    `Value()` (each quantity rounded up to a whole number), 1/1000 when the gate makes
    upstream use milli-values; None without a step."""
    if valid_range.get("step") is None:
        return None
    step = amount(valid_range["step"])
    if not step:
        return None
    low = amount(valid_range.get("min", 0)) or Fraction(0)
    bounds = [low, step] + ([amount(valid_range["max"]) or Fraction(0)]
                            if valid_range.get("max") is not None else [])
    if fractional and all(_milli(b) is not None for b in bounds) and step >= Fraction(1, 1000):
        return Fraction(1, 1000), low, step
    return Fraction(1), Fraction(math.ceil(low)), Fraction(math.ceil(step))


def _in_units(value: Fraction, unit: Fraction) -> int | None:
    """`Value()` (rounded up) for whole units; the exact milli-value or None for milli-units."""
    if unit == 1:
        return math.ceil(value)
    return _milli(value)


@cached("scheduler.capacity_binary", 256, lru=False)
def _binary(text: str) -> bool:
    """Bounded cache: the few capacity values of a cluster, asked for every rendered amount."""
    try:
        return parse_quantity(text).fmt == BINARY_SI
    except QuantityError:
        return False


def _policy_amount(name: str, requested: Fraction, policy: Mapping[str, Any], fractional: bool,
                   like: object = None) -> Fraction | CapacityProblem:
    """Round a requested amount up to what the device's request policy allows (`like`: the
    capacity's value, whose units the messages use)."""
    values = policy.get("validValues")
    valid_range = policy.get("validRange")
    if isinstance(valid_range, Mapping) and valid_range.get("min") is not None:
        low = amount(valid_range["min"]) or Fraction(0)
        value = max(requested, low)
        arithmetic = _step_units(valid_range, fractional)
        if arithmetic is not None and requested >= low:
            unit, base, step = arithmetic
            wanted = _in_units(requested, unit)
            if wanted is None:
                return CapacityProblem(name, f"requested {render(requested)} is finer than a milli-unit, "
                                             "which a fractional range cannot round")
            start, stride = int(base / unit), int(step / unit)
            value = (start + stride * -(-(wanted - start) // stride)) * unit
        high = amount(valid_range["max"]) if valid_range.get("max") is not None else None
        if high is not None and value > high:
            return CapacityProblem(name, f"requested {render(requested, like)} "
                                         f"(rounded to {render(value, like)}) "
                                         f"exceeds the policy's maximum {render(high, like)}")
        return value
    if values:
        parsed = sorted(v for v in (amount(x) for x in values) if v is not None)
        fitting = [v for v in parsed if v >= requested]
        if not fitting:
            return CapacityProblem(name, f"requested {render(requested, like)} exceeds every valid value "
                                         f"({', '.join(render(v, like) for v in parsed)})")
        return fitting[0]
    return requested


def demand(device: Device, request: DeviceRequest, fractional: bool = False
           ) -> dict[str, Fraction] | CapacityProblem:
    """What allocating `request` on `device` consumes, per capacity name (policies applied);
    `fractional`: the `DRAFractionalCapacityRange` gate."""
    for name, raw in request.capacity_requests.items():
        if name not in device.capacity:
            return CapacityProblem(name, f"the device has no capacity {name!r}")
        if amount(raw) is None:
            return CapacityProblem(name, f"requested amount {raw!r} is not a quantity")
    consumed: dict[str, Fraction] = {}
    for name, capacity in device.capacity.items():
        total = amount(capacity.value)
        if total is None:
            return CapacityProblem(name, f"the device's capacity value {capacity.value!r} is not a quantity")
        policy = capacity.request_policy or {}
        if name in request.capacity_requests:
            requested = amount(request.capacity_requests[name])
            assert requested is not None  # checked above
            value = _policy_amount(name, requested, policy, fractional, capacity.value)
            if isinstance(value, CapacityProblem):
                return value
            consumed[name] = value
        elif policy.get("default") is not None and amount(policy["default"]) is not None:
            consumed[name] = amount(policy["default"]) or Fraction(0)
        else:
            outside = _outside_policy(total, policy, fractional, capacity.value)
            if outside is not None:
                return CapacityProblem(name, "the request takes the whole capacity "
                                             f"{render(total, capacity.value)}, "
                                             f"which its request policy does not allow ({outside})")
            consumed[name] = total
    return consumed


def _outside_policy(value: Fraction, policy: Mapping[str, Any], fractional: bool,
                    like: object = None) -> str | None:
    """Why a whole capacity taken without a `default` breaks the device's request policy (the
    allocator's `violatesPolicy`: above `validRange.max`, off its steps, not a valid value)."""
    valid_range = policy.get("validRange")
    if isinstance(valid_range, Mapping):
        high = amount(valid_range["max"]) if valid_range.get("max") is not None else None
        if high is not None and value > high:
            return f"maximum {render(high, like)}"
        arithmetic = _step_units(valid_range, fractional)
        if arithmetic is not None:
            unit, base, step = arithmetic
            taken = _in_units(value, unit)
            if taken is None or (taken - int(base / unit)) % int(step / unit):
                low = amount(valid_range.get("min", 0)) or Fraction(0)
                stride = amount(valid_range["step"]) or step
                return f"steps of {render(stride, like)} from {render(low, like)}"
        return None
    values = policy.get("validValues")
    if values and value not in {amount(v) for v in values}:
        return "not a valid value"
    return None


def total(amounts: Iterable[Amounts]) -> dict[str, Fraction]:
    """The per-capacity sum of several holders' consumption.

    Whole amounts (almost all: `pods: 1`, `bandwidth: 10G`) are summed as integers and
    wrapped once: every Reserve and release rebuilds a device's sum over its holders, and
    Fraction addition (a new object and a gcd per sum) is far slower than int addition.
    """
    whole: dict[str, int] = {}
    parts: dict[str, Fraction] = {}
    for item in amounts:
        for name, value in item.items():
            if value.denominator == 1:
                whole[name] = whole.get(name, 0) + value.numerator
            else:
                parts[name] = parts.get(name, Fraction(0)) + value
    out = {name: Fraction(n) for name, n in whole.items()}
    for name, value in parts.items():
        out[name] = out[name] + value if name in out else value
    return out


_ZERO = Fraction(0)


def short_of(device: Device, consumed: Amounts, wanted: Amounts) -> str | None:
    """The first capacity of `wanted` that does not fit next to what is `consumed` already (None:
    it all fits). The question without the sentence: most callers only sort devices by it."""
    for name, value in wanted.items():
        capacity = device.capacity.get(name)
        limit = amount(capacity.value) if capacity is not None else None
        if limit is None:
            continue
        used = consumed.get(name, _ZERO)
        if used.denominator == value.denominator == limit.denominator == 1:  # whole amounts: int math
            over = used.numerator + value.numerator > limit.numerator
        else:
            over = used + value > limit
        if over:
            return name
    return None


def fits(device: Device, consumed: Amounts, wanted: Amounts) -> CapacityProblem | None:
    """None when `wanted` fits next to what is `consumed` already; else the first capacity short."""
    name = short_of(device, consumed, wanted)
    if name is None:
        return None
    like = device.capacity[name].value
    limit = amount(like)
    assert limit is not None  # `short_of` skips a capacity whose value does not parse
    used = consumed.get(name, _ZERO)
    return CapacityProblem(name, f"{name}: {render(used, like)} of {render(limit, like)} consumed, "
                                 f"the request needs {render(wanted[name], like)}")
