"""What `dra-affinity locks` and the exporter show: per device, per pool, cluster totals.

One data structure (`LockReport`) built from a `LockBook`, which every format renders
(table, JSON, Prometheus text, HTML): the devices with their state, lock, holders and
capacity left; per pool the devices by state, each distinct lock value with how many
devices hold it, and the *locked-free* capacity — capacity still free on locked devices,
usable only by claims that extract the same values (SPEC §6 keeps *stranded* for the part
of it the pending claims cannot use because of the lock, which `simulate --workload`
reports); and the KEP's two gauges as cluster totals. Filters select what is listed;
totals are always the whole cluster's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..core.findings import PoolRef
from ..model.resources import Device
from . import locks
from .capacity import amount, render
from .lock_book import LockBook, untracked_reason
from .locks import DeviceRef, DeviceState, LockStatus, render_map

STATES = tuple(s.value for s in LockStatus)


@dataclass(frozen=True, slots=True)
class DeviceLocks:
    """One device as the scheduler would hold it after a restart."""

    ref: DeviceRef
    node: str
    state: DeviceState
    shareable: bool
    capacity: Mapping[str, str]
    consumed: Mapping[str, str]
    left: Mapping[str, str]
    """Capacity not consumed by the holders (0 everywhere on an exclusive device in use)."""


@dataclass(frozen=True, slots=True)
class LockValue:
    lock: Mapping[str, str]
    devices: int

    @property
    def text(self) -> str:
        return render_map(self.lock)


@dataclass(frozen=True, slots=True)
class PoolLocks:
    ref: PoolRef
    node: str
    untracked: str
    """Why no lock is kept for the pool's devices; empty for a tracked pool."""
    states: Mapping[str, int]
    locks: tuple[LockValue, ...]
    locked_free: Mapping[str, str]
    """Per capacity: free amount on the pool's locked devices."""
    locked_free_devices: int
    """Locked devices that still have room (or take more holders)."""

    @property
    def devices(self) -> int:
        return sum(self.states.values())


@dataclass(frozen=True, slots=True)
class Totals:
    """Cluster totals, whatever the filters: the KEP's gauges and the devices by state."""

    locked_devices: int
    unreconstructable_devices: int
    states: Mapping[str, int]
    extractor_evaluations: int


@dataclass(frozen=True, slots=True)
class LockFilters:
    """`--pool driver/name|name`, `--node`, `--state`, `--claim ns/name`; empty: everything."""

    pools: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    states: tuple[str, ...] = ()
    claims: tuple[str, ...] = ()
    untracked: bool = False
    """`--all`: list the devices of pools without locks too."""

    def pool_ok(self, ref: PoolRef, node: str) -> bool:
        if self.pools and not any(p in {ref.name, f"{ref.driver}/{ref.name}"} for p in self.pools):
            return False
        return not self.nodes or node in self.nodes

    def device_ok(self, state: DeviceState) -> bool:
        if not self.untracked and not self.states and state.status is LockStatus.UNTRACKED:
            return False
        if self.states and state.status.value not in self.states:
            return False
        if self.claims:
            wanted = {c if "/" in c else f"default/{c}" for c in self.claims}
            return any(h.claim in wanted for h in state.holders)
        return True


@dataclass(frozen=True, slots=True)
class LockReport:
    devices: tuple[DeviceLocks, ...]
    pools: tuple[PoolLocks, ...]
    totals: Totals
    notes: tuple[str, ...] = ()


def device_locks(book: LockBook, ref: DeviceRef) -> DeviceLocks:
    """Amounts in the units the slice wrote the capacity in (`80Gi` left `48Gi`), as
    `simulate` shows consumption."""
    device = book.devices[ref]
    state = book.states[ref]
    capacity = {k: c.value for k, c in device.capacity.items()}
    return DeviceLocks(ref, book.node(ref.pool_ref), state, device.allow_multiple_allocations, capacity,
                       {k: render(v, capacity.get(k)) for k, v in state.consumed.items()},
                       {k: render(v, capacity.get(k)) for k, v in _left(device, state).items()})


def _left(device: Device, state: DeviceState) -> dict[str, Fraction]:
    out: dict[str, Fraction] = {}
    for name, capacity in device.capacity.items():
        value = amount(capacity.value)
        if value is None:
            continue
        if locks.in_use(device, state):
            out[name] = Fraction(0)
        else:
            out[name] = max(value - state.consumed.get(name, Fraction(0)), Fraction(0))
    return out


def pool_locks(book: LockBook, ref: PoolRef) -> PoolLocks:
    """A capacity's locked-free sum is written in the units of the first device that adds to
    it, as apimachinery's `Quantity.Add` takes the format of the first non-zero operand."""
    pool = book.pools[ref]
    states = dict.fromkeys(STATES, 0)
    values: dict[tuple[tuple[str, str], ...], int] = {}
    locked_free: dict[str, Fraction] = {}
    written: dict[str, str] = {}
    locked_free_devices = 0
    for dref in book.pool_devices(ref):
        state = book.states[dref]
        states[state.status.value] += 1
        if state.status is not LockStatus.LOCKED:
            continue
        key = state.lock_items
        values[key] = values.get(key, 0) + 1
        device = book.devices[dref]
        left = _left(device, state)
        for name, free in left.items():
            locked_free[name] = locked_free.get(name, Fraction(0)) + free
            if free:
                written.setdefault(name, device.capacity[name].value)
        if (device.allow_multiple_allocations and not locks.in_use(device, state)
                and (not left or any(left.values()))):
            locked_free_devices += 1
    reason = untracked_reason(pool, book.feature_gate) if not book.tracked(pool) else ""
    ordered = sorted(values.items(), key=lambda kv: (-kv[1], kv[0]))
    return PoolLocks(ref, book.node(ref), reason, states,
                     tuple(LockValue(dict(k), n) for k, n in ordered),
                     {k: render(v, written.get(k)) for k, v in sorted(locked_free.items())},
                     locked_free_devices)


def totals(book: LockBook) -> Totals:
    states = dict.fromkeys(STATES, 0)
    for state in book.states.values():
        states[state.status.value] += 1
    return Totals(states[LockStatus.LOCKED.value], states[LockStatus.UNRECONSTRUCTABLE.value], states,
                  book.evaluations)


def lock_report(book: LockBook, filters: LockFilters | None = None,
                notes: Sequence[str] = ()) -> LockReport:
    """Every device and pool the filters select (sorted by driver, pool, slice order)."""
    filters = filters or LockFilters()
    devices: list[DeviceLocks] = []
    pools: list[PoolLocks] = []
    for ref in book.pools:
        if not filters.pool_ok(ref, book.node(ref)):
            continue
        listed = [device_locks(book, d) for d in book.pool_devices(ref) if filters.device_ok(book.states[d])]
        pool = pool_locks(book, ref)
        if filters.claims or filters.states:
            if not listed:
                continue
        elif pool.untracked and not filters.untracked:
            continue
        devices.extend(listed)
        pools.append(pool)
    return LockReport(tuple(devices), tuple(pools), totals(book), tuple(notes))
