"""Replay a workload against the lock model: arrivals, departures, retries, fragmentation over time.

The scheduler is `simulate`'s, run over time on its public pieces: the same reconstruction
(`simulation.new_run`), and each claim copy placed by `claim_steps.ClaimSteps` — the
structured allocator's search with the KEP's Filter as its device check (per-device selectors,
constraints, allocation modes, bound capacity), alpha first-fit or beta preference, Reserve
committed for every request or none — and released through `device_states.DeviceStates`.
What this module adds is the clock:

* a claim that cannot be placed waits; when a departure frees a device, the waiting claims that
  could use that device (a pool holding a device their selectors match; its lock, or any when
  it became clean) are retried in arrival order, as the scheduler's queue retries
  unschedulable pods on the event that may make them schedulable; an arrival identical to a
  waiting one (same template and values) queues behind it, because nothing it could use has
  changed since that one failed;
* extraction runs once per (variant, request, extractor set) (`workload.Variant`, the
  extraction memo), never per copy.

The run ends at the last arrival; claims still waiting then are reported as pending.
Counters follow `simulate`: `sharing_affinity_lock_conflict_total` counts the devices Filter
rejected for a lock mismatch over every attempt (arrivals and retries), and
`sharing_affinity_extractor_evaluations_total` the evaluations the scheduler runs for each
claim copy (once per copy, request and candidate pool), although the replay itself evaluates
once per variant.
"""

from __future__ import annotations

import heapq
import time as wallclock
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from ..core.findings import PoolRef
from ..core.gc_pause import gc_paused
from ..core.limits import KubernetesVersion, limits_for
from ..model.resources import (
    Device,
    DeviceClass,
    DeviceRequest,
    ResourceClaim,
    ResourceSlice,
)
from . import locks
from .allocator import Entry
from .candidates import DeviceMatch
from .capacity import CapacityProblem, amount, short_of
from .capacity import total as _sums
from .claim_steps import Action, ClaimSteps, Detail, Step, device_requests
from .device_states import DeviceReport
from .locks import (
    DeviceRef,
    DeviceState,
    LockItems,
    LockMetrics,
    LockStatus,
    Mode,
    PoolFilterVerdict,
    Reason,
    Rejection,
    lock_items,
)
from .pools import Pool
from .simulation import new_run
from .workload import (
    Arrival,
    Variant,
    Workload,
    WorkloadProblem,
    arrivals,
    variants,
)

DEFAULT_SAMPLES = 100
"""Snapshots taken over a run (evenly spaced in time), for the charts and the peaks."""

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


@dataclass(slots=True)
class _Waiting:
    variant: int
    queue: deque[int] = field(default_factory=deque)
    keys: tuple[tuple[PoolRef, object], ...] = ()


_ANY = "any"
_CLEAN = "clean"


class _Replay:
    """The waiting claims and the copies placed, over one run's `ClaimSteps`."""

    def __init__(self, run: ClaimSteps, variants_: Sequence[Variant]) -> None:
        self.run = run
        self.variants = variants_
        self.states: dict[DeviceRef, DeviceState] = run.states.states
        self.waiting: dict[int, _Waiting] = {}
        self.wait_index: dict[tuple[PoolRef, object], set[int]] = {}
        self.last_failure: dict[int, Rejection] = {}
        self.entry_of = {e.ref: e for e in run.visiting_order()}

    # -- what a variant's request can use -------------------------------------------------------

    def candidate_entries(self, request: DeviceRequest) -> list[Entry]:
        """The devices the request's class and selectors match (a failing selector matches none)."""
        if request.device_class_name not in self.run.classes and self.run.classes:
            return []
        return [e for e in self.entry_of.values() if _matched(self.run.device_match(request, e))]

    def candidate_pools(self, request: DeviceRequest) -> list[Pool]:
        if request.device_class_name not in self.run.classes and self.run.classes:
            return []
        return self.run.matching_pools(request)

    def verdict(self, variant: Variant, request: str, pool: Pool) -> PoolFilterVerdict:
        """The pool's verdict for the variant's request, as a question about the workload (not
        a Filter run of a copy: not counted)."""
        return self.run.verdict(variant.claim, request, pool, counted=False)

    # -- one copy -------------------------------------------------------------------------------

    def try_place(self, arrival: Arrival) -> Rejection | None:
        """Place every request of one copy through the allocator, or nothing (the speed layers
        as asked when the run was built: the replay is one question, not one per copy)."""
        variant = self.variants[arrival.variant]
        result = self.run.place(Step(Action.ALLOCATE, _copy_name(variant, arrival)), variant.claim,
                                ask_layers=False)
        if result.placed:
            return None
        assert result.failure is not None
        return result.failure

    def release(self, arrival: Arrival) -> list[DeviceRef]:
        """A departed copy's devices given back; what was counted for it goes too (its name is
        its arrival's, never placed again)."""
        variant = self.variants[arrival.variant]
        name = _copy_name(variant, arrival)
        self.run.forget(name, device_requests(variant.claim))
        return self.run.states.release(name)

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
                for pool in self.candidate_pools(sub):
                    verdict = self.verdict(variant, sub.name, pool)
                    if verdict.rejection is not None:
                        continue
                    if verdict.tracked:
                        keys.add((pool.ref, _CLEAN))
                        keys.add((pool.ref, lock_items(verdict.affinity)))
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
                keys.append((ref.pool_ref, state.lock_items))
            for key in keys:
                found |= self.wait_index.get(key, set())
        return sorted(found, key=lambda v: self.waiting[v].queue[0])



def _matched(match: DeviceMatch | bool) -> bool:
    return match if isinstance(match, bool) else match.matched


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
    counts = Counter(state.status for state in states.values())
    by_lock = Counter(state.lock_items for state in states.values() if state.status is LockStatus.LOCKED)
    by_value = {locks.render_map(dict(k)): n for k, n in by_lock.items()}
    pending = sum(len(w.queue) for w in replay.waiting.values())
    stranded: dict[str, Fraction] = {}
    used = _sums(consumed for ref in totals if (consumed := states[ref].consumed))  # clean: adds none
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


_Wanted = dict[PoolRef, list[tuple[int, DeviceRequest, set[LockItems]]]]


def _waiting_demands(replay: _Replay) -> _Wanted:
    """Per pool: each waiting (template, request) and the locks its waiting variants need there."""
    out: dict[PoolRef, dict[tuple[int, str], tuple[int, DeviceRequest, set[LockItems]]]] = {}
    for v in replay.waiting:
        variant = replay.variants[v]
        for request in variant.claim.requests:
            for sub in request.first_available or ((request.exactly,) if request.exactly else ()):
                for pool in replay.candidate_pools(sub):
                    verdict = replay.verdict(variant, sub.name, pool)
                    if not verdict.tracked or verdict.rejection is not None:
                        continue
                    row = out.setdefault(pool.ref, {}).setdefault(
                        (variant.template, sub.name), (variant.template, sub, set()))
                    row[2].add(lock_items(verdict.affinity))
    return {ref: list(rows.values()) for ref, rows in out.items()}


def _stranded(replay: _Replay, ref: DeviceRef, state: DeviceState, waiting: _Wanted) -> bool:
    """A locked device's free capacity is stranded when a waiting claim would fit it but for its
    lock, and no waiting claim that matches the lock fits it."""
    rows = waiting.get(ref.pool_ref)
    if not rows:
        return False
    entry = replay.entry_of[ref]
    device = entry.device
    held = state.lock_items
    blocked = False
    for _, request, needed in rows:
        if not _matched(replay.run.device_match(request, entry)):
            continue
        amounts = replay.run.demand(device, request)
        if isinstance(amounts, CapacityProblem) or short_of(device, state.consumed, amounts) is not None:
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
            copies = sum(_copies(replay, sub, e.device, e.ref) for e in replay.candidate_entries(sub))
            best = max(best, copies // max(sub.count or 1, 1))
        fewest = best if fewest is None else min(fewest, best)
    return fewest or 0


def _copies(replay: _Replay, request: DeviceRequest, device: Device, ref: DeviceRef) -> int:
    state = replay.states[ref]
    if state.status is LockStatus.UNRECONSTRUCTABLE:
        return 0
    if not device.allow_multiple_allocations:
        return 0 if state.holders else 1
    amounts = replay.run.demand(device, request)
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
                  feature_gate=feature_gate, limits=limits, pools=pools, classes=classes,
                  detail=Detail.COUNTS)
    state = _Replay(run, variant_list)
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
    metrics = run.counters.metrics(state.states)
    devices = tuple(run.states.report(ref) for ref in run.states.devices)
    return ReplayReport(
        mode=mode, feature_gate=feature_gate, workload=workload.name, arrivals=len(arrival_list),
        duration=end, placed=len(placed_at), departed=departed, pending=pending,
        waits=_waits(waits, immediate), final=final, series=tuple(series), metrics=metrics,
        devices=devices, pending_reasons=tuple(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        extractions=run.memo.misses if run.memo else 0, elapsed=wallclock.perf_counter() - started,
        notes=tuple(run.notes),
    )
