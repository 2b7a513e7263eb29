"""Replay a workload against the lock model: arrivals, departures, retries, fragmentation over time.

The scheduler's behaviour is `scheduler.simulation`'s, run over time: the same reconstruction
(`simulation.new_run`), the same Filter (`locks.check_device`), the same choice policies
(`locks.rank`, alpha first-fit or beta preference) and the same Reserve and release
(`locks.allocate`, `locks.release`). What this module adds is the clock and the bookkeeping that
makes 100,000 arrivals affordable:

* a claim that cannot be placed waits; when a departure frees a device, the waiting claims that
  could use that device (its pool, its lock or clean) are retried in arrival order, as the
  scheduler's queue retries unschedulable pods on the event that may make them schedulable;
  an arrival identical to a waiting one (same template and values) queues behind it, because
  nothing it could use has changed since that one failed;
* Filter results are kept per (template, request, verdicts over the candidate pools) and brought
  up to date from a log of device changes: only changed pools are filtered again, only their
  changed devices are checked, and pools without a viable device are skipped;
* extraction runs once per (variant, request, pool) (`workload.Variant`), never per copy.

The run ends at the last arrival; claims still waiting then are reported as pending.
Counters follow `simulate`: `sharing_affinity_lock_conflict_total` counts the devices Filter
rejected for a lock mismatch over every attempt (arrivals and retries), and
`sharing_affinity_extractor_evaluations_total` the evaluations the scheduler runs for each
claim copy (once per copy, request and candidate pool), although the replay itself evaluates
once per variant.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import time as wallclock
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from dra_affinity.policies.core.findings import PoolRef
from dra_affinity.policies.core.gc_pause import gc_paused
from dra_affinity.policies.core.limits import KubernetesVersion, limits_for
from dra_affinity.policies.model.resources import (
    Device,
    DeviceClass,
    DeviceRequest,
    ResourceClaim,
    ResourceSlice,
)
from dra_affinity.policies.scheduler import locks
from dra_affinity.policies.scheduler.candidates import SelectorError, missing_class, pool_is_candidate
from dra_affinity.policies.scheduler.capacity import CapacityProblem, amount, demand, fits
from dra_affinity.policies.scheduler.capacity import total as _sums
from dra_affinity.policies.scheduler.claim_steps import ClaimSteps
from dra_affinity.policies.scheduler.device_states import DeviceReport
from dra_affinity.policies.scheduler.extraction import ExtractionResult
from dra_affinity.policies.scheduler.locks import (
    DeviceRef,
    DeviceState,
    Holder,
    LockMetrics,
    LockStatus,
    Mode,
    Option,
    PoolFilterVerdict,
    Reason,
    Rejection,
)
from dra_affinity.policies.scheduler.pools import Pool
from dra_affinity.policies.scheduler.simulation import new_run
from dra_affinity.policies.scheduler.workload import (
    Arrival,
    Variant,
    Workload,
    WorkloadProblem,
    arrivals,
    variants,
)

DEFAULT_SAMPLES = 100
"""Snapshots taken over a run (evenly spaced in time), for the charts and the peaks."""

LockKey = tuple[tuple[str, str], ...]


def lock_key(values: Mapping[str, str] | None) -> LockKey:
    return tuple(sorted((values or {}).items()))


# -- the report -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CapacityUse:
    """One capacity name over the shareable devices of affinity pools: total, in use, stranded."""

    name: str
    total: Fraction
    in_use: Fraction
    stranded: Fraction

    @property
    def stranded_percent(self) -> float:
        return float(100 * self.stranded / self.total) if self.total else 0.0

    @property
    def in_use_percent(self) -> float:
        return float(100 * self.in_use / self.total) if self.total else 0.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The cluster at one moment of the run."""

    time: float
    locked: int
    clean: int
    unreconstructable: int
    pending: int
    pending_fit: int
    """Pending claims the raw capacity could have held, each considered alone, locks ignored."""
    capacity: tuple[CapacityUse, ...]
    by_value: tuple[tuple[str, int], ...]
    """Devices locked per lock value (`subnet=a, pkey=b`), most first."""

    @property
    def stranded_percent(self) -> float:
        """The largest share of any capacity name that is stranded (0 when nothing is pending)."""
        return max((c.stranded_percent for c in self.capacity), default=0.0)

    @property
    def in_use_percent(self) -> float:
        return max((c.in_use_percent for c in self.capacity), default=0.0)


@dataclass(frozen=True, slots=True)
class Waits:
    """Time to place (placement time minus arrival time) of the placed claims."""

    placed: int
    immediate: int
    mean: float
    p50: float
    p95: float
    max: float


@dataclass(frozen=True, slots=True)
class ReplayReport:
    mode: Mode
    feature_gate: bool
    workload: str
    arrivals: int
    duration: float
    placed: int
    departed: int
    pending: int
    waits: Waits
    final: Snapshot
    series: tuple[Snapshot, ...]
    metrics: LockMetrics
    devices: tuple[DeviceReport, ...]
    pending_reasons: tuple[tuple[str, int], ...]
    """Why the claims pending at the end could not be placed: reason and claims, most first."""
    extractions: int
    """Extractions the replay ran (per variant, request and pool)."""
    elapsed: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def peak_pending(self) -> int:
        return max((s.pending for s in self.series), default=0)

    @property
    def peak_locked(self) -> int:
        return max((s.locked for s in self.series), default=0)

    @property
    def peak_stranded_percent(self) -> float:
        return max((s.stranded_percent for s in self.series), default=0.0)

    @property
    def peak_pending_fit(self) -> int:
        return max((s.pending_fit for s in self.series), default=0)


# -- the replay -------------------------------------------------------------------------------


_UNTRACKED = "untracked"
_UNKNOWN = "unknown"
Bucket = tuple[str, LockKey]
"""Where a device with room for a request sits: (`clean`|`locked`|`untracked`|`unknown`, lock)."""


@dataclass(slots=True)
class _PoolRoom:
    """One pool's devices with room for one (template, request), by state and lock value."""

    buckets: dict[Bucket, list[int]] = field(default_factory=dict)
    """Sorted positions per bucket."""
    locked: int = 0
    """Devices locked (to any value) with room: those a mismatching request counts as conflicts."""


@dataclass(slots=True)
class _Room:
    """Filter's capacity stage for one (template, request) over its candidate pools, kept current.

    Built once, then moved device by device as states change (`_Replay._set`), so the cost of a
    placement does not grow with the devices that are full or locked to other values: a request
    with affinity A looks only at the `clean` and (`locked`, A) positions of each pool.
    """

    template: int
    request: DeviceRequest
    pools: list[Pool]
    slot: dict[PoolRef, int]
    rooms: list[_PoolRoom]
    member: dict[DeviceRef, Bucket | None] = field(default_factory=dict)
    everywhere: dict[Bucket, list[int]] = field(default_factory=dict)
    """The same buckets over every candidate pool (positions are cluster-wide and pool-ordered)."""
    locked: list[int] = field(default_factory=list)
    """Positions of every locked device with room, whatever its value."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one (variant, request) needs at every attempt: its pools and their verdicts."""

    pools: list[Pool]
    verdicts: list[tuple[Pool, PoolFilterVerdict]]
    by_pool: dict[PoolRef, PoolFilterVerdict]
    evaluations: int
    """Extractor evaluations the scheduler runs for one copy (over the candidate pools)."""
    uniform: tuple[bool, LockKey] | None
    """(tracked, affinity) when every candidate pool gives the same verdict without rejection."""
    abort: Rejection | None


@dataclass(slots=True)
class _Waiting:
    variant: int
    queue: deque[int] = field(default_factory=deque)
    keys: tuple[tuple[PoolRef, object], ...] = ()


_ANY = "any"
_CLEAN = "clean"


class _Replay:
    def __init__(self, run: ClaimSteps, variants_: Sequence[Variant], mode: Mode) -> None:
        self.run = run
        self.mode = mode
        self.variants = variants_
        self.states: dict[DeviceRef, DeviceState] = run.states.states
        self.pool_list: list[Pool] = [p for ref, p in run.states.pools.items() if run.pool_ok(ref)]
        self.pool_devices: dict[PoolRef, list[tuple[Device, DeviceRef, int]]] = {}
        offset = 0
        for pool in self.pool_list:
            rows = []
            for device, _ in pool.devices:
                rows.append((device, DeviceRef(pool.ref.driver, pool.ref.name, device.name), offset))
                offset += 1
            self.pool_devices[pool.ref] = rows
        self.rooms: dict[tuple[int, str], _Room] = {}
        self.watchers: dict[PoolRef, list[_Room]] = {}
        """The rooms to move a device in when its state changes."""
        self.unknown: dict[PoolRef, int] = {p.ref: 0 for p in self.pool_list}
        """Unreconstructable devices per pool (beta places on such pools last)."""
        self.positions: dict[DeviceRef, tuple[Device, int, PoolRef]] = {}
        self.by_position: list[DeviceRef] = [ref for rows in self.pool_devices.values() for _, ref, _ in rows]
        self.plans: dict[tuple[int, str], _Plan | Rejection] = {}
        for rows in self.pool_devices.values():
            for device, ref, position in rows:
                self.positions[ref] = (device, position, ref.pool_ref)
                self.unknown[ref.pool_ref] += self.states[ref].status is LockStatus.UNRECONSTRUCTABLE
        self.unknown_total = sum(self.unknown.values())
        self.candidates: dict[tuple[int, str], list[Pool] | Rejection] = {}
        self.demands: dict[tuple[int, str, DeviceRef], Mapping[str, Fraction] | CapacityProblem] = {}
        self.verdicts: dict[tuple[int, str, PoolRef], PoolFilterVerdict] = {}
        self.held: dict[int, list[DeviceRef]] = {}
        self.waiting: dict[int, _Waiting] = {}
        self.wait_index: dict[tuple[PoolRef, object], set[int]] = {}
        self.attempted: set[int] = set()
        """Copies that failed once: a retry does not extract again (the scheduler's cache)."""
        self.conflicts = 0
        self.no_keys = 0
        self.reuse = 0
        self.evaluations_total = 0
        self.last_failure: dict[int, Rejection] = {}

    # -- per (template, request): candidate pools, demand; per (variant, request, pool): verdict --

    def candidate_pools(self, template: int, request: DeviceRequest) -> list[Pool] | Rejection:
        key = (template, request.name)
        found = self.candidates.get(key)
        missing = missing_class(request, self.run.classes) if found is None else None
        if missing is not None:  # a class that does not exist selects no device: the claim stays pending
            found = Rejection(Reason.NO_CANDIDATES, missing)
            self.candidates[key] = found
        if found is None:
            try:
                found = [p for p in self.pool_list
                         if not self.run.classes
                         or (self.run.candidate or pool_is_candidate)(request, self.run.classes, p)]
            except SelectorError as exc:
                found = Rejection(Reason.CEL_EVALUATION_FAILURE, exc.failure.message(None))
            self.candidates[key] = found
        return found

    def verdict(self, variant: Variant, request: str, pool: Pool) -> PoolFilterVerdict:
        key = (variant.index, request, pool.ref)
        found = self.verdicts.get(key)
        if found is None:
            early = locks.pool_precheck(declares_affinity=pool.declares_affinity, complete=pool.complete,
                                        incomplete_reason=pool.incomplete_reason,
                                        feature_gate=self.run.feature_gate)
            found = early or locks.pool_verdict(self.extraction(variant, request, pool))
            self.verdicts[key] = found
        return found

    def extraction(self, variant: Variant, request: str, pool: Pool) -> ExtractionResult:
        """Through the run's memo (by extractors and config contents): once per variant, request
        and extractor set, however many copies arrive and pools publish the same extractors."""
        return self.run.extraction(variant.claim, request, pool.ref)

    def demand(self, template: int, request: DeviceRequest, device: Device, ref: DeviceRef
               ) -> Mapping[str, Fraction] | CapacityProblem:
        key = (template, request.name, ref)
        found = self.demands.get(key)
        if found is None:
            found = demand(device, request)
            self.demands[key] = found
        return found

    # -- Filter: the capacity stage kept per (template, request), the lock stage per request --

    def room(self, template: int, request: DeviceRequest, pools: list[Pool]) -> _Room:
        key = (template, request.name)
        found = self.rooms.get(key)
        if found is None:
            found = _Room(template, request, pools, {p.ref: i for i, p in enumerate(pools)},
                          [_PoolRoom() for _ in pools])
            for pool in pools:
                self.watchers.setdefault(pool.ref, []).append(found)
                for device, ref, position in self.pool_devices[pool.ref]:
                    self._move(found, device, ref, position, pool.ref)
            self.rooms[key] = found
        return found

    def _move(self, room: _Room, device: Device, ref: DeviceRef, position: int, pool_ref: PoolRef) -> None:
        """Put `ref` in the bucket its current state gives it for `room`'s request."""
        state = self.states[ref]
        where: Bucket | None
        if locks.room_for(device, ref, state, self.demand(room.template, room.request, device, ref)):
            where = None
        elif state.status is LockStatus.LOCKED:
            where = (LockStatus.LOCKED.value, lock_key(state.lock))
        elif state.status is LockStatus.CLEAN:
            where = (_CLEAN, ())
        elif state.status is LockStatus.UNTRACKED:
            where = (_UNTRACKED, ())
        else:
            where = (_UNKNOWN, ())
        before = room.member.get(ref)
        if before == where:
            return
        pool_room = room.rooms[room.slot[pool_ref]]
        if before is not None:
            pool_room.buckets[before].remove(position)
            _discard(room.everywhere[before], position)
            if before[0] == LockStatus.LOCKED.value:
                pool_room.locked -= 1
                _discard(room.locked, position)
        if where is not None:
            bisect.insort(pool_room.buckets.setdefault(where, []), position)
            bisect.insort(room.everywhere.setdefault(where, []), position)
            if where[0] == LockStatus.LOCKED.value:
                pool_room.locked += 1
                bisect.insort(room.locked, position)
        room.member[ref] = where

    def _viable(self, pool_room: _PoolRoom, verdict: PoolFilterVerdict) -> list[list[int]]:
        """The position lists of the devices Filter passes for a request with this verdict."""
        if verdict.rejection is not None:
            return []
        if not verdict.tracked:
            return [p for p in pool_room.buckets.values() if p]
        out = [p for p in (pool_room.buckets.get((_CLEAN, ())),
                           pool_room.buckets.get((LockStatus.LOCKED.value, lock_key(verdict.affinity))))
               if p]
        return out

    def _count_rejections(self, pool_room: _PoolRoom, verdict: PoolFilterVerdict, before: int | None) -> None:
        """Add the devices whose first reason is a lock mismatch or no keys (positions < `before`)."""
        if verdict.rejection is not None and verdict.rejection.reason is Reason.NO_KEYS_EXTRACTED:
            lists = [p for (kind, _), p in pool_room.buckets.items() if kind != _UNKNOWN]
            self.no_keys += _count(lists, before)
        elif verdict.tracked and verdict.rejection is None:
            mine = (LockStatus.LOCKED.value, lock_key(verdict.affinity))
            if before is None:
                self.conflicts += pool_room.locked - len(pool_room.buckets.get(mine, ()))
            else:
                lists = [p for b, p in pool_room.buckets.items()
                         if b[0] == LockStatus.LOCKED.value and b != mine]
                self.conflicts += _count(lists, before)

    def _failure(self, pools: Sequence[tuple[Pool, PoolFilterVerdict]], template: int,
                 request: DeviceRequest) -> Rejection:
        """The reason the scheduler reports: the first reason of the first device looked at."""
        for pool, verdict in pools:
            for device, ref, _ in self.pool_devices[pool.ref]:
                wanted = self.demand(template, request, device, ref)
                rejections = locks.check_device(device, ref, self.states[ref], verdict, wanted)
                if rejections:
                    return rejections[0]
        return Rejection(Reason.NO_CANDIDATES, f"request {request.name!r}: no device in the input can "
                                               "serve it")

    def plan(self, variant: Variant, request: DeviceRequest) -> _Plan | Rejection:
        key = (variant.index, request.name)
        found = self.plans.get(key)
        if found is None:
            pools = self.candidate_pools(variant.template, request)
            if isinstance(pools, Rejection):
                found = pools
            else:
                verdicts = [(pool, self.verdict(variant, request.name, pool)) for pool in pools]
                evaluations = sum(len(v.extraction.evaluations) for _, v in verdicts
                                  if v.extraction is not None)
                kinds = {(v.tracked, lock_key(v.affinity)) if v.rejection is None else None
                         for _, v in verdicts}
                uniform = next(iter(kinds)) if len(kinds) == 1 else None
                abort = next((v.rejection for _, v in verdicts if v.aborts), None)
                found = _Plan(pools, verdicts, {p.ref: v for p, v in verdicts}, evaluations, uniform, abort)
            self.plans[key] = found
        return found

    def place_request(self, variant: Variant, request: DeviceRequest, claim: str,
                      changed: list[tuple[DeviceRef, DeviceState]], first_attempt: bool) -> Rejection | None:
        """Filter, choose and reserve one (sub-)request; changes are recorded in `changed`."""
        plan = self.plan(variant, request)
        if isinstance(plan, Rejection):
            return plan
        if first_attempt:  # the scheduler extracts once per claim copy, request and pool
            self.evaluations_total += plan.evaluations
        if plan.abort is not None:
            return plan.abort
        every = request.allocation_mode == "All"
        wanted = 1 if every else max(request.count or 1, 1)
        room = self.room(variant.template, request, plan.pools)
        if plan.uniform is not None and not every and not (self.mode is Mode.BETA and self.unknown_total):
            heads: list[Option] | None = self._uniform_heads(room, plan.uniform, wanted)
        else:
            heads = self._pool_heads(room, plan, wanted, every)
        if heads is None:
            return self._failure(plan.verdicts, variant.template, request)
        chosen = locks.rank(self.mode, heads)[:len(heads) if every else wanted]
        if len(chosen) < wanted:
            return self._failure(plan.verdicts, variant.template, request)
        for option in chosen:
            device = self.run.states.devices[option.ref]
            wanted_amounts = self.demand(variant.template, request, device, option.ref)
            consumed = wanted_amounts if isinstance(wanted_amounts, Mapping) else {}
            before = self.states[option.ref]
            after = locks.allocate(before, Holder(claim, request.name, consumed),
                                   plan.by_pool[option.ref.pool_ref].affinity, str(option.ref))
            if isinstance(after, Rejection):  # Reserve re-check: cannot fail when run in order
                return after
            self._set(option.ref, after, changed, before)
            if before.status is LockStatus.LOCKED:
                self.reuse += 1
        return None

    def _option(self, position: int) -> Option:
        ref = self.by_position[position]
        unknown = self.unknown_total > 0 and self.unknown[self.positions[ref][2]] > 0
        return Option(ref, self.states[ref], position, unknown)

    def _uniform_heads(self, room: _Room, uniform: tuple[bool, LockKey], wanted: int) -> list[Option]:
        """Every candidate pool gives the request the same verdict: look at the cluster-wide buckets."""
        tracked, affinity = uniform
        if not tracked:
            lists = [p for p in room.everywhere.values() if p]
            positions = sorted(itertools.chain.from_iterable(p[:wanted] for p in lists))[:wanted]
            return [self._option(p) for p in positions]
        clean = room.everywhere.get((_CLEAN, ()), [])
        mine = room.everywhere.get((LockStatus.LOCKED.value, affinity), [])
        if self.mode is Mode.ALPHA:
            positions = sorted([*clean[:wanted], *mine[:wanted]])[:wanted]
            if len(positions) < wanted:
                self.conflicts += len(room.locked) - len(mine)
            else:
                last = positions[-1]
                self.conflicts += bisect.bisect_right(room.locked, last) - bisect.bisect_right(mine, last)
        else:
            positions = [*mine[:wanted], *clean[:wanted]]
            self.conflicts += len(room.locked) - len(mine)
        return [self._option(p) for p in positions]

    def _pool_heads(self, room: _Room, plan: _Plan, wanted: int, every: bool) -> list[Option] | None:
        """Pool by pool (verdicts differ between pools, allocationMode All, or unknown devices)."""
        heads: list[Option] = []
        total = 0
        alpha = self.mode is Mode.ALPHA and not every
        for i, (pool, verdict) in enumerate(plan.verdicts):
            pool_room = room.rooms[i]
            total += len(self.pool_devices[pool.ref])
            lists = self._viable(pool_room, verdict)
            if not lists:
                self._count_rejections(pool_room, verdict, None)
                continue
            if every:
                positions = list(itertools.chain.from_iterable(lists))
            elif alpha:  # first-fit: the lowest positions, whichever bucket they are in
                positions = sorted(itertools.chain.from_iterable(p[:wanted] for p in lists))
                positions = positions[:wanted - len(heads)]
            else:  # the first of each bucket: `locks.rank` decides between them
                positions = list(itertools.chain.from_iterable(p[:wanted] for p in lists))
            heads.extend(self._option(p) for p in positions)
            if alpha and len(heads) >= wanted:
                self._count_rejections(pool_room, verdict, heads[-1].position)
                break
            self._count_rejections(pool_room, verdict, None)
        if every and len(heads) < total:
            return None
        return heads

    def _set(self, ref: DeviceRef, state: DeviceState, changed: list[tuple[DeviceRef, DeviceState]],
             before: DeviceState) -> None:
        changed.append((ref, before))
        self.change(ref, state)

    def change(self, ref: DeviceRef, state: DeviceState) -> None:
        """The one place a device's state changes: the rooms watching its pool follow."""
        old = self.states[ref]
        self.states[ref] = state
        device, position, pool_ref = self.positions[ref]
        if state.status is not old.status:
            unknown = LockStatus.UNRECONSTRUCTABLE
            moved = (state.status is unknown) - (old.status is unknown)
            self.unknown[pool_ref] += moved
            self.unknown_total += moved
        for room in self.watchers.get(pool_ref, ()):
            self._move(room, device, ref, position, pool_ref)

    def try_place(self, arrival: Arrival) -> Rejection | None:
        """Place every request of one copy, or nothing (the devices it had taken are given back)."""
        variant = self.variants[arrival.variant]
        claim = _copy_name(variant, arrival)
        first_attempt = arrival.index not in self.attempted
        reuse = self.reuse
        changed: list[tuple[DeviceRef, DeviceState]] = []
        for request in variant.claim.requests:
            alternatives = request.first_available or ((request.exactly,) if request.exactly else ())
            failure: Rejection | None = None
            for sub in alternatives:
                failure = self.place_request(variant, sub, claim, changed, first_attempt)
                if failure is None or failure.reason is Reason.CEL_EVALUATION_FAILURE:
                    break
            if failure is not None:
                for ref, before in reversed(changed):
                    self.change(ref, before)
                self.reuse = reuse
                self.attempted.add(arrival.index)
                return failure
        self.held[arrival.index] = sorted({ref for ref, _ in changed})
        return None

    def release(self, arrival: Arrival) -> list[DeviceRef]:
        claim = _copy_name(self.variants[arrival.variant], arrival)
        freed = self.held.pop(arrival.index, [])
        for ref in freed:
            self.change(ref, locks.release(self.states[ref], claim))
        return freed

    # -- waiting claims ---------------------------------------------------------------------

    def wait(self, arrival: Arrival) -> None:
        entry = self.waiting.get(arrival.variant)
        if entry is None:
            entry = _Waiting(arrival.variant, keys=self._wait_keys(self.variants[arrival.variant]))
            self.waiting[arrival.variant] = entry
            for key in entry.keys:
                self.wait_index.setdefault(key, set()).add(arrival.variant)
        entry.queue.append(arrival.index)

    def _wait_keys(self, variant: Variant) -> tuple[tuple[PoolRef, object], ...]:
        """The (pool, device state) events that may let this variant place: `clean` or its lock."""
        keys: set[tuple[PoolRef, object]] = set()
        for request in variant.claim.requests:
            for sub in request.first_available or ((request.exactly,) if request.exactly else ()):
                pools = self.candidate_pools(variant.template, sub)
                if isinstance(pools, Rejection):
                    continue
                for pool in pools:
                    verdict = self.verdict(variant, sub.name, pool)
                    if verdict.rejection is not None:
                        continue
                    if verdict.tracked:
                        keys.add((pool.ref, _CLEAN))
                        keys.add((pool.ref, lock_key(verdict.affinity)))
                    else:
                        keys.add((pool.ref, _ANY))
        return tuple(sorted(keys, key=repr))

    def unwait(self, variant: int) -> None:
        entry = self.waiting.pop(variant)
        for key in entry.keys:
            members = self.wait_index.get(key)
            if members is not None:
                members.discard(variant)

    def woken(self, freed: Sequence[DeviceRef]) -> list[int]:
        """The waiting variants a change of these devices may help, oldest waiting claim first."""
        if not self.waiting:
            return []
        found: set[int] = set()
        for ref in freed:
            state = self.states[ref]
            keys: list[tuple[PoolRef, object]] = [(ref.pool_ref, _ANY)]
            if state.status is LockStatus.CLEAN:
                keys.append((ref.pool_ref, _CLEAN))
            elif state.status is LockStatus.LOCKED:
                keys.append((ref.pool_ref, lock_key(state.lock)))
            for key in keys:
                found |= self.wait_index.get(key, set())
        return sorted(found, key=lambda v: self.waiting[v].queue[0])


def _discard(positions: list[int], position: int) -> None:
    del positions[bisect.bisect_left(positions, position)]


def _count(lists: Sequence[Sequence[int]], before: int | None) -> int:
    if before is None:
        return sum(len(p) for p in lists)
    return sum(bisect.bisect_left(p, before) for p in lists)


def _copy_name(variant: Variant, arrival: Arrival) -> str:
    return f"{variant.template_claim}-{arrival.index + 1}"


# -- snapshots --------------------------------------------------------------------------------


def _totals(run_devices: Mapping[DeviceRef, Device], states: Mapping[DeviceRef, DeviceState]
            ) -> dict[DeviceRef, dict[str, Fraction]]:
    """Capacity per device, for the shareable devices of tracked (affinity) pools."""
    out: dict[DeviceRef, dict[str, Fraction]] = {}
    for ref, device in run_devices.items():
        if not device.allow_multiple_allocations or not states[ref].tracked:
            continue
        values = {name: amount(c.value) for name, c in device.capacity.items()}
        out[ref] = {k: v for k, v in values.items() if v is not None}
    return out


def _snapshot(replay: _Replay, now: float, totals: Mapping[DeviceRef, Mapping[str, Fraction]],
              total: Mapping[str, Fraction]) -> Snapshot:
    states = replay.states
    counts = {status: 0 for status in LockStatus}
    by_lock: dict[LockKey, int] = {}
    for state in states.values():
        counts[state.status] += 1
        if state.status is LockStatus.LOCKED:
            key = lock_key(state.lock)
            by_lock[key] = by_lock.get(key, 0) + 1
    by_value = {locks.render_map(dict(k)): n for k, n in by_lock.items()}
    pending = sum(len(w.queue) for w in replay.waiting.values())
    stranded: dict[str, Fraction] = {}
    used = _sums(states[ref].consumed for ref in totals)
    waiting = _waiting_demands(replay) if pending else {}
    for ref, capacity in totals.items() if waiting else ():
        state = states[ref]
        if state.status is LockStatus.LOCKED and _stranded(replay, ref, state, waiting):
            for name, value in capacity.items():
                free = value - state.consumed.get(name, Fraction(0))
                if free > 0:
                    stranded[name] = stranded.get(name, Fraction(0)) + free
    use = tuple(CapacityUse(n, total[n], used.get(n, Fraction(0)), stranded.get(n, Fraction(0)))
                for n in sorted(total))
    return Snapshot(now, counts[LockStatus.LOCKED], counts[LockStatus.CLEAN],
                    counts[LockStatus.UNRECONSTRUCTABLE], pending,
                    _pending_fit(replay) if pending else 0, use,
                    tuple(sorted(by_value.items(), key=lambda kv: (-kv[1], kv[0]))))


_Wanted = dict[PoolRef, list[tuple[int, DeviceRequest, set[LockKey]]]]


def _waiting_demands(replay: _Replay) -> _Wanted:
    """Per pool: each waiting (template, request) and the locks its waiting variants need there."""
    out: dict[PoolRef, dict[tuple[int, str], tuple[int, DeviceRequest, set[LockKey]]]] = {}
    for v in replay.waiting:
        variant = replay.variants[v]
        for request in variant.claim.requests:
            for sub in request.first_available or ((request.exactly,) if request.exactly else ()):
                pools = replay.candidate_pools(variant.template, sub)
                if isinstance(pools, Rejection):
                    continue
                for pool in pools:
                    verdict = replay.verdict(variant, sub.name, pool)
                    if not verdict.tracked or verdict.rejection is not None:
                        continue
                    row = out.setdefault(pool.ref, {}).setdefault(
                        (variant.template, sub.name), (variant.template, sub, set()))
                    row[2].add(lock_key(verdict.affinity))
    return {ref: list(rows.values()) for ref, rows in out.items()}


def _stranded(replay: _Replay, ref: DeviceRef, state: DeviceState, waiting: _Wanted) -> bool:
    """A locked device's free capacity is stranded when a waiting claim would fit it but for its
    lock, and no waiting claim that matches the lock fits it."""
    rows = waiting.get(ref.pool_ref)
    if not rows:
        return False
    device = replay.run.states.devices[ref]
    held = lock_key(state.lock)
    blocked = False
    for template, request, needed in rows:
        amounts = replay.demand(template, request, device, ref)
        if isinstance(amounts, CapacityProblem) or fits(device, state.consumed, amounts) is not None:
            continue
        if held in needed:
            return False
        blocked = True
    return blocked


def _pending_fit(replay: _Replay) -> int:
    """Waiting claims the raw capacity could hold, locks ignored (each claim considered alone)."""
    slots: dict[int, int] = {}
    count = 0
    for v, entry in replay.waiting.items():
        template = replay.variants[v].template
        if template not in slots:
            slots[template] = _raw_slots(replay, replay.variants[v])
        count += min(len(entry.queue), slots[template])
    return count


def _raw_slots(replay: _Replay, variant: Variant) -> int:
    """How many copies of the template fit by capacity alone (the scarcest of its requests)."""
    fewest: int | None = None
    for request in variant.claim.requests:
        best = 0
        for sub in request.first_available or ((request.exactly,) if request.exactly else ()):
            pools = replay.candidate_pools(variant.template, sub)
            if isinstance(pools, Rejection):
                continue
            copies = 0
            for pool in pools:
                for device, ref, _ in replay.pool_devices[pool.ref]:
                    copies += _copies(replay, variant.template, sub, device, ref)
            best = max(best, copies // max(sub.count or 1, 1))
        fewest = best if fewest is None else min(fewest, best)
    return fewest or 0


def _copies(replay: _Replay, template: int, request: DeviceRequest, device: Device, ref: DeviceRef) -> int:
    state = replay.states[ref]
    if state.status is LockStatus.UNRECONSTRUCTABLE:
        return 0
    if not device.allow_multiple_allocations:
        return 0 if state.holders else 1
    amounts = replay.demand(template, request, device, ref)
    if isinstance(amounts, CapacityProblem):
        return 0
    most: int | None = None
    for name, value in amounts.items():
        capacity = device.capacity.get(name)
        limit = amount(capacity.value) if capacity is not None else None
        if limit is None or value <= 0:
            continue
        free = limit - state.consumed.get(name, Fraction(0))
        n = max(int(free // value), 0)
        most = n if most is None else min(most, n)
    return most if most is not None else 1


# -- the loop ---------------------------------------------------------------------------------




def _waits(values: list[float], immediate: int) -> Waits:
    if not values:
        return Waits(0, 0, 0.0, 0.0, 0.0, 0.0)
    values.sort()

    def pct(p: float) -> float:
        return values[min(len(values) - 1, int(p * len(values)))]

    return Waits(len(values), immediate, sum(values) / len(values), pct(0.5), pct(0.95), values[-1])


def replay(
    slices: Sequence[ResourceSlice],
    claims: Sequence[ResourceClaim],
    workload: Workload,
    *,
    mode: Mode = Mode.ALPHA,
    feature_gate: bool = True,
    kubernetes_version: KubernetesVersion | None = None,
    pools: Sequence[str] = (),
    classes: Sequence[DeviceClass] = (),
    samples: int = DEFAULT_SAMPLES,
) -> ReplayReport | list[WorkloadProblem]:
    """Replay `workload` from the locks reconstructed from `claims`' allocations.

    The same workload and seed give the same arrivals for every mode, so alpha and beta
    are compared on identical input (`compare`).
    """
    started = wallclock.perf_counter()
    by_name = {c.qualified_name: c for c in claims}
    built = variants(workload, by_name)
    if isinstance(built, list):
        return built
    variant_list, index = built
    arrival_list = arrivals(workload, index)
    limits = limits_for(kubernetes_version) if kubernetes_version else limits_for()
    run = new_run(slices, [c for c in claims if c.kind == "ResourceClaim"], mode=mode,
                  feature_gate=feature_gate, limits=limits, pools=pools, classes=classes)
    state = _Replay(run, variant_list, mode)
    totals = _totals(run.states.devices, state.states)
    capacity_total = _sums(totals.values())
    end = arrival_list[-1].time if arrival_list else 0.0
    step = end / samples if samples and end else 0.0
    next_sample = step
    series: list[Snapshot] = []
    departures: list[tuple[float, int]] = []
    waits: list[float] = []
    immediate = 0
    departed = 0
    placed_at: dict[int, float] = {}

    def placed(arrival: Arrival, now: float) -> None:
        nonlocal immediate
        placed_at[arrival.index] = now
        waits.append(now - arrival.time)
        if now == arrival.time:
            immediate += 1
        if arrival.lifetime is not None:
            heapq.heappush(departures, (now + arrival.lifetime, arrival.index))

    def sample_until(now: float) -> None:
        nonlocal next_sample
        while step and next_sample <= now and len(series) < samples:
            series.append(_snapshot(state, next_sample, totals, capacity_total))
            next_sample += step

    with gc_paused():  # the loop makes millions of short-lived acyclic objects
        for arrival in arrival_list:
            while departures and departures[0][0] <= arrival.time:
                when, which = heapq.heappop(departures)
                sample_until(when)
                departed += 1
                freed = state.release(arrival_list[which])
                for v in state.woken(freed):
                    entry = state.waiting[v]
                    while entry.queue:
                        head = arrival_list[entry.queue[0]]
                        failure = state.try_place(head)
                        if failure is not None:
                            state.last_failure[v] = failure
                            break
                        entry.queue.popleft()
                        placed(head, when)
                    if not entry.queue:
                        state.unwait(v)
            sample_until(arrival.time)
            if arrival.variant in state.waiting:
                state.wait(arrival)
                continue
            failure = state.try_place(arrival)
            if failure is None:
                placed(arrival, arrival.time)
            else:
                state.last_failure[arrival.variant] = failure
                state.wait(arrival)
    final = _snapshot(state, end, totals, capacity_total)
    if len(series) < samples and step:
        series.append(final)
    pending = sum(len(w.queue) for w in state.waiting.values())
    reasons: dict[str, int] = {}
    for v, entry in state.waiting.items():
        failure = state.last_failure.get(v)
        label = failure.reason.value if failure else Reason.NO_CANDIDATES.value
        reasons[label] = reasons.get(label, 0) + len(entry.queue)
    locked, unknown = locks.gauges(state.states)
    metrics = LockMetrics(locked, unknown, state.evaluations_total, state.conflicts, state.no_keys,
                          state.reuse)
    devices = tuple(run.states.report(ref) for ref in run.states.devices)
    return ReplayReport(
        mode=mode, feature_gate=feature_gate, workload=workload.name, arrivals=len(arrival_list),
        duration=end, placed=len(placed_at), departed=departed, pending=pending,
        waits=_waits(waits, immediate), final=final, series=tuple(series), metrics=metrics,
        devices=devices, pending_reasons=tuple(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        extractions=run.memo.misses if run.memo else 0, elapsed=wallclock.perf_counter() - started,
        notes=tuple(run.notes),
    )
