"""Speed layers over Filter's checks: `ClaimSteps` that remember what a check reads.

`ClaimSteps` computes every check as the scheduler does, device by device, each time it is
asked. A run asks the same questions again and again — the search and the report revisit a
device, claim after claim first fit walks the same full or locked devices, every device of a
pool asks the pool's precheck — so `RememberingClaimSteps` keeps each answer keyed by what the
check reads, and answers it again while that is unchanged. Each memo is one layer
(`core.layers`) and can be switched off alone; with `DRA_AFFINITY_SPEED_LAYERS=none` every
call goes to `ClaimSteps` as it stands, with the same outcome.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from ..core import layers
from ..core.findings import PoolRef
from ..model.resources import Device, DeviceRequest
from .allocator import Entry
from .candidates import DeviceMatch
from .capacity import CapacityProblem
from .claim_steps import ClaimSteps, Evaluated, demand_key
from .locks import DeviceState, PoolFilterVerdict, lock_items
from .pools import Pool

SELECTOR_MATCHES = layers.declare(
    "simulate-selector-matches",
    "each (request, device) selector match is evaluated once per run, however often the "
    "search and the report revisit the device")
DEVICE_CHECKS = layers.declare(
    "simulate-device-checks",
    "Filter's check of a device is remembered while the device keeps its state under an equal "
    "verdict: claim after claim, first fit walks the same full or locked devices")
PRECHECKS = layers.declare(
    "simulate-pool-prechecks",
    "a pool's verdict when no CEL may run (incomplete, gate off, no sharingAffinity) is decided "
    "once per pool: the search asks it at every device it visits")
DEMANDS = layers.declare(
    "simulate-demands",
    "a request's capacity demand on a device (requestPolicy rounding with fractions) is "
    "computed once per (device, capacity request)")

_MATCHES_KEPT = 1_000_000
"""(request, device) selector matches remembered at once."""

_DEVICE_CHECKS_KEPT = 200_000
"""Device checks remembered at once (cleared whole beyond)."""


@dataclass
class RememberingClaimSteps(ClaimSteps):
    """`ClaimSteps` whose checks answer again what they were asked before, per layer in effect."""

    matches: dict[tuple[str, str, tuple[object, ...], int], DeviceMatch | bool] = field(
        default_factory=dict)
    """`SELECTOR_MATCHES`: (class, request, its selectors, device position) -> the match."""
    matching: dict[tuple[str, str, tuple[object, ...]], list[Pool]] = field(default_factory=dict)
    """`SELECTOR_MATCHES`: (class, request, its selectors) -> `matching_pools`."""
    device_checks: dict[tuple[Hashable, ...], tuple[DeviceState, Evaluated]] = field(default_factory=dict)
    """`DEVICE_CHECKS`: what `device_check` reads -> the state it was checked in and the check."""
    prechecks: dict[PoolRef, PoolFilterVerdict | None] = field(default_factory=dict)
    """`PRECHECKS`: pool -> its verdict when no CEL may run (the pools live as long as the run)."""
    demands: dict[tuple[int, str], Mapping[str, Fraction] | CapacityProblem] = field(default_factory=dict)
    """`DEMANDS`: (id of a device of `states.devices`, which lives as long as the run; capacity
    request) -> demand."""
    remember_matches: bool = field(init=False, default=True)
    remember_checks: bool = field(init=False, default=True)
    remember_demands: bool = field(init=False, default=True)
    remember_prechecks: bool = field(init=False, default=True)
    """`SELECTOR_MATCHES`, `DEVICE_CHECKS`, `DEMANDS`, `PRECHECKS` as asked at the step's start."""

    def asked_layers(self) -> None:
        super().asked_layers()
        active = self.active_layers
        self.remember_matches = SELECTOR_MATCHES.name in active
        self.remember_checks = DEVICE_CHECKS.name in active
        self.remember_demands = DEMANDS.name in active
        self.remember_prechecks = PRECHECKS.name in active

    def precheck(self, pool: Pool) -> PoolFilterVerdict | None:
        if not self.remember_prechecks:
            return super().precheck(pool)
        if pool.ref not in self.prechecks:
            self.prechecks[pool.ref] = super().precheck(pool)
        return self.prechecks[pool.ref]

    def device_match(self, request: DeviceRequest, entry: Entry) -> DeviceMatch | bool:
        if not self.remember_matches or self.candidate is not None or not self.classes:
            return super().device_match(request, entry)
        key = (request.device_class_name, request.name, request.selectors, entry.position)
        found = self.matches.get(key)
        if found is None:
            found = super().device_match(request, entry)
            if len(self.matches) >= _MATCHES_KEPT:  # bounded: evaluated again when asked again
                self.matches.clear()
            self.matches[key] = found
        return found

    def matching_pools(self, request: DeviceRequest) -> list[Pool]:
        if not self.remember_matches:
            return super().matching_pools(request)
        key = (request.device_class_name, request.name, request.selectors)
        found = self.matching.get(key)
        if found is None:
            found = self.matching[key] = super().matching_pools(request)
        return found

    def demand(self, device: Device, request: DeviceRequest, key: str | None = None
               ) -> Mapping[str, Fraction] | CapacityProblem:
        if not self.remember_demands:
            return super().demand(device, request, key)
        cache_key = (id(device), demand_key(request) if key is None else key)
        cached = self.demands.get(cache_key)
        if cached is None:
            cached = self.demands[cache_key] = super().demand(device, request, key)
        return cached

    def device_check(self, request: DeviceRequest, entry: Entry, state: DeviceState,
                     verdict: PoolFilterVerdict, key: str | None = None) -> Evaluated:
        if not self.remember_checks:
            return super().device_check(request, entry, state, verdict, key)
        affinity = lock_items(verdict.affinity) if verdict.affinity is not None else None
        of_demand = demand_key(request) if key is None else key
        check = (entry.position, request.name, of_demand, verdict.tracked, affinity, verdict.rejection)
        found = self.device_checks.get(check)
        if found is not None and found[0] is state:
            return found[1]
        seen = super().device_check(request, entry, state, verdict, of_demand)
        if len(self.device_checks) >= _DEVICE_CHECKS_KEPT:
            self.device_checks.clear()
        self.device_checks[check] = (state, seen)
        return seen
