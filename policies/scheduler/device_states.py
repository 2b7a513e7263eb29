"""The lock and capacity state of a simulated cluster: what Reserve changes and release undoes.

Every simulated device has one `DeviceState` (its lock, its holders and what they consume), and
every claim holds a set of devices. A claim's placement writes its reservations into a
`Tentative` view first and commits them together only when every request fits, so a claim
that fails leaves no trace; a release drops the claim's holders again. `simulate`, `explain`
and the workload replay all change states through `DeviceStates.commit` only, so whatever
follows the states (the counts of unreconstructable devices beta's ranking reads, a speed
layer's indexes) sees every change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..core.findings import PoolRef
from ..model.resources import Device
from . import locks
from .capacity import render
from .locks import DeviceRef, DeviceState, LockStatus
from .pools import Pool


@dataclass(frozen=True, slots=True)
class DeviceReport:
    """One device's state as a report shows it, next to the device the slice publishes."""

    ref: DeviceRef
    state: DeviceState
    device: Device

    @property
    def capacity(self) -> dict[str, str]:
        """Each capacity's value as the slice writes it."""
        return {k: c.value for k, c in self.device.capacity.items()}

    @property
    def shareable(self) -> bool:
        return self.device.allow_multiple_allocations

    @property
    def consumed(self) -> dict[str, str]:
        """What the holders consume, in the form each capacity is written in."""
        capacity = self.capacity
        return {k: render(v, capacity.get(k)) for k, v in self.state.consumed.items()}


Follower = Callable[[DeviceRef, DeviceState], None]
"""Told of every committed state change (after it is made)."""


class DeviceStates:
    """Every simulated device's state and the devices each claim holds.

    `pools`: every gathered pool (a pool left out of the simulation still answers questions
    about a bound claim's device); `devices`: the simulated devices, in the order reports list
    them. States start empty (a simulation reconstructs them) or as given (`explain` starts
    from a `LockBook`'s).
    """

    def __init__(self, pools: Mapping[PoolRef, Pool], devices: Mapping[DeviceRef, Device],
                 states: Mapping[DeviceRef, DeviceState] | None = None,
                 held: Mapping[str, set[DeviceRef]] | None = None) -> None:
        self.pools = dict(pools)
        self.devices = dict(devices)
        self.states: dict[DeviceRef, DeviceState] = dict(states or {})
        self.held: dict[str, set[DeviceRef]] = {name: set(refs) for name, refs in (held or {}).items()}
        """claim -> the devices it holds (bound or placed by a step)."""
        self.order = {ref: n for n, ref in enumerate(self.devices)}
        self.unknown: dict[PoolRef, int] = {}
        """Unreconstructable devices per pool: beta ranks a pool with one last."""
        self.unknown_total = 0
        self.changed = 0
        """Committed changes so far: a speed layer's remembered answer is valid while it stays."""
        self.followers: list[Follower] = []
        for ref, state in self.states.items():
            if state.status is LockStatus.UNRECONSTRUCTABLE:
                self.unknown[ref.pool_ref] = self.unknown.get(ref.pool_ref, 0) + 1
                self.unknown_total += 1

    def commit(self, ref: DeviceRef, state: DeviceState) -> None:
        """The one place a device's state changes."""
        old = self.states.get(ref)
        self.states[ref] = state
        self.changed += 1
        moved = ((state.status is LockStatus.UNRECONSTRUCTABLE)
                 - (old is not None and old.status is LockStatus.UNRECONSTRUCTABLE))
        if moved:
            self.unknown[ref.pool_ref] = self.unknown.get(ref.pool_ref, 0) + moved
            self.unknown_total += moved
        for follow in self.followers:
            follow(ref, state)

    def has_unknown(self, pool: PoolRef) -> bool:
        """The pool has an unreconstructable device."""
        return self.unknown.get(pool, 0) > 0

    def holds(self, claim: str) -> list[DeviceRef]:
        """The devices `claim` holds, in device order."""
        return sorted(self.held.get(claim, ()), key=self.order.__getitem__)

    def release(self, claim: str) -> list[DeviceRef]:
        """Drop `claim`'s holders from every device it holds; returns those devices."""
        freed = self.holds(claim)
        for ref in freed:
            self.commit(ref, locks.release(self.states[ref], claim))
        self.held.pop(claim, None)
        return freed

    def report(self, ref: DeviceRef) -> DeviceReport:
        return DeviceReport(ref, self.states[ref], self.devices[ref])


class Tentative:
    """The device states as one claim's placement sees them: committed states plus its own.

    Reserve writes here; the claim's reservations are committed together only when all of
    its requests fit, so a failed claim leaves no trace and no copy of every state is made.
    """

    def __init__(self, base: Mapping[DeviceRef, DeviceState]) -> None:
        self.base = base
        self.changes: dict[DeviceRef, DeviceState] = {}
        self.pools: set[PoolRef] = set()

    def __getitem__(self, ref: DeviceRef) -> DeviceState:
        changed = self.changes.get(ref)
        return changed if changed is not None else self.base[ref]

    def __setitem__(self, ref: DeviceRef, state: DeviceState) -> None:
        self.changes[ref] = state
        self.pools.add(ref.pool_ref)

    def undo_to(self, ref: DeviceRef) -> Callable[[], None]:
        """A function that puts `ref` back as it is in this view now (the search backtracks)."""
        had = ref in self.changes
        previous = self.changes.get(ref)

        def undo() -> None:
            if had:
                assert previous is not None
                self.changes[ref] = previous
            else:
                del self.changes[ref]
        return undo
