"""First fit: the allocator search's first branch, for a claim the search cannot change.

A claim of ExactCount requests only, without constraints or admin access, whose selectors
take each pool whole and fail on no device, is placed as the search's first branch places
it: each request in turn, Filter on the candidate devices in first-fit order (pools in
(driver, pool) order, devices in pool order), alpha's first viable device or beta's
preferred one among every viable device, then Reserve. A claim of several requests that
first fit cannot place goes to the search after all (`FirstFitIndex.allocate` returns None),
which may backtrack.

Four speed layers answer the same questions without the walk (with the layer off, the walk):

* `simulate-count-index`: per pool, each device's *kind* for one capacity demand (exclusively
  held, full, unknown, free, locked to each value) and, per candidate list, the kinds' sorted
  positions (`_Span`), kept current device by device (`DeviceStates.followers`), so the
  chosen device and the rejected counts before it are a few bisections when the step keeps
  counts only;
* `simulate-shared-verdicts`: the pools' verdicts shared by the claims whose in-scope
  configs read the same;
* `simulate-remembered-failures`: a failed request's outcome and the devices' checks,
  reused while no device changed;
* `simulate-claim-plans`: a claim spec placed under other names (the workload replay's
  copies) finds what its copies share (candidate pools, shared verdicts, abort, demand) by the
  spec's identity, without reading its configs again.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TypeVar

from ..core import layers
from ..core.findings import PoolRef
from ..model.resources import Device, DeviceRequest, ResourceClaim
from . import locks
from .candidates import (
    DeviceMatch,
    SelectorError,
    missing_class,
    pool_is_candidate,
)
from .capacity import CapacityProblem, short_of
from .claim_steps import (
    ClaimSteps,
    Detail,
    Evaluated,
    Placement,
    RejectionCount,
    Step,
    StepResult,
    demand_key,
    first_reasons,
)
from .device_states import Tentative
from .locks import DeviceRef, DeviceState, LockStatus, Mode, Option, PoolFilterVerdict, Reason, Rejection
from .pools import Pool

COUNT_INDEX = layers.declare(
    "simulate-count-index",
    "a step that keeps only counts (`--summary`, the workload replay) finds first fit's device "
    "and the rejected counts before it by bisecting per-kind device positions instead of "
    "checking every device before it")
SHARED_VERDICTS = layers.declare(
    "simulate-shared-verdicts",
    "claims whose in-scope configs read the same share one verdict per candidate pool: a claim "
    "pays for a dictionary lookup, not a verdict per pool (its evaluations still counted)")
REMEMBERED_FAILURES = layers.declare(
    "simulate-remembered-failures",
    "once a cluster is full every further claim of a template fails alike: with no device "
    "changed since, the failure and the devices' checks are reused instead of walking every "
    "device again")
CLAIM_PLANS = layers.declare(
    "simulate-claim-plans",
    "one claim spec placed again and again under other names (the workload replay's copies of "
    "a variant) finds what its copies share (whether it needs the search; per request the "
    "candidate pools, the shared verdicts, the abort among them, the demand) by the spec's "
    "identity instead of working it out again for every copy (the evaluations still counted "
    "per copy)")

_IN_USE = ("in-use",)
_CAPACITY = ("capacity",)
_UNKNOWN = ("unknown",)
_FREE = ("free",)
"""Device kinds for one request's demand; a locked device's kind is ("locked", its lock items)."""

_Kind = tuple[object, ...]


@dataclass
class _Profile:
    """A pool's devices as one demand sees them: each device's kind, and per kind (count, first)."""

    kinds: list[_Kind]
    summary: dict[_Kind, list[int]]
    verdicts: dict[int, tuple[PoolFilterVerdict, dict[_Kind, Reason | None], list[int],
                              list[tuple[Reason, int]]]] = field(default_factory=dict)

    def move(self, position: int, kind: _Kind) -> None:
        """The device at `position` is now of `kind`."""
        old = self.kinds[position]
        if old == kind:
            return
        self.kinds[position] = kind
        self.verdicts.clear()
        entry = self.summary[old]
        entry[0] -= 1
        if not entry[0]:
            del self.summary[old]
        elif entry[1] == position:
            entry[1] = self.kinds.index(old)
        new = self.summary.get(kind)
        if new is None:
            self.summary[kind] = [1, position]
        else:
            new[0] += 1
            new[1] = min(new[1], position)

    def seen_by(self, verdict: PoolFilterVerdict
                ) -> tuple[dict[_Kind, Reason | None], list[int], list[tuple[Reason, int]]]:
        """Per kind its first reason under `verdict`; the first positions of the viable kinds;
        the rejected counts in walk order (once per verdict: claims sharing one pay nothing)."""
        cached = self.verdicts.get(id(verdict))
        if cached is not None and cached[0] is verdict:
            return cached[1], cached[2], cached[3]
        reasons = {kind: _reason(kind, verdict) for kind in self.summary}
        viable = [first for kind, (_, first) in self.summary.items() if reasons[kind] is None]
        rejected: dict[Reason, int] = {}
        for kind, (n, _) in sorted(self.summary.items(), key=lambda item: item[1][1]):
            reason = reasons[kind]
            if reason is not None:
                rejected[reason] = rejected.get(reason, 0) + n
        result = (reasons, viable, list(rejected.items()))
        self.verdicts[id(verdict)] = (verdict, *result)
        return result


@dataclass
class _PoolIndex:
    """Per pool: its devices in first-fit order and cached profiles.

    A profile depends only on the pool's states and the request's capacity demand, so it is
    computed once per (pool, demand) and, when a device changes, only that device is looked at
    again: a claim pays for the one device it changed, not for every device of every pool.
    """

    devices: list[tuple[Device, DeviceRef]]
    profiles: dict[str, _Profile] = field(default_factory=dict)
    positions: dict[DeviceRef, list[int]] = field(default_factory=dict)
    """Where each device sits in `devices` (a name listed twice in a pool sits twice)."""
    spans: list[tuple[_Span, str, int]] = field(default_factory=list)
    """The spans (with their demand, and where this pool starts in them) listing its devices."""

    def __post_init__(self) -> None:
        for position, (_, ref) in enumerate(self.devices):
            self.positions.setdefault(ref, []).append(position)


_LOCKED = ("locked",)
"""The bucket of every locked device (whatever its lock) in a `_Span`."""

_Sig = tuple[bool, "Reason | None", bool, "tuple[tuple[str, str], ...] | None"]
"""What `_reason` reads of a verdict: (pool level, rejection reason, tracked, affinity items)."""


def _signature(verdict: PoolFilterVerdict) -> _Sig:
    rejection = verdict.rejection.reason if verdict.rejection is not None else None
    affinity = locks.lock_items(verdict.affinity) if verdict.affinity is not None else None
    return verdict.pool_level, rejection, verdict.tracked, affinity


def _bucket_reason(bucket: _Kind, sig: _Sig) -> Reason | None:
    """`_reason` for a `_Span` bucket (`_LOCKED`: a device locked to another map than the request's)."""
    pool_level, rejection, tracked, affinity = sig
    if pool_level:
        return rejection
    if bucket is _IN_USE:
        return Reason.IN_USE
    if bucket is _CAPACITY:
        return Reason.CAPACITY
    if bucket is _UNKNOWN and tracked:
        return Reason.UNKNOWN_LOCK_STATE
    if rejection is not None:
        return rejection
    if bucket is _LOCKED and tracked and affinity is not None:
        return Reason.LOCK_MISMATCH
    return None


_BUCKETS = (_IN_USE, _CAPACITY, _UNKNOWN, _FREE, _LOCKED)


@dataclass
class _Stretch:
    """Consecutive candidate pools whose verdicts `_reason` reads alike: [start, end) positions."""

    start: int
    end: int
    reasons: tuple[tuple[_Kind, Reason], ...]
    """The rejected buckets and their reason."""
    viable: tuple[_Kind, ...]
    """The buckets (or a ("locked", items) kind) Filter passes."""
    locked_viable: tuple[_Kind, ...]
    """Of `viable`, those holding locked devices (beta prefers them)."""
    mine: _Kind | None = None
    """The request's own lock kind when `_LOCKED` is a lock mismatch (its devices are viable)."""


@dataclass
class _Span:
    """One demand's device kinds over a whole candidate list, as sorted positions per kind.

    Why: first-fit over 50 pools whose first 40 are full must not look at 40 pools per claim.
    Positions are those of `FirstFitIndex._choose`'s walk (pools in list order, devices in
    pool order); per kind (and per bucket: `_LOCKED` holds every locked device) the positions
    are kept sorted, so the first viable device and the rejected counts before it are a few
    bisections, whatever the number of pools and devices. Kept current device by device by
    `FirstFitIndex.follow`.
    """

    pools: Sequence[Pool]
    base: dict[PoolRef, int]
    refs: list[DeviceRef]
    kinds: list[_Kind]
    lists: dict[_Kind, list[int]] = field(default_factory=dict)
    runs: dict[int, tuple[Mapping[PoolRef, PoolFilterVerdict], list[_Stretch]]] = field(default_factory=dict)
    """id(shared verdicts) -> their runs (the verdict mappings live as long as the simulation)."""

    def __post_init__(self) -> None:
        for position, kind in enumerate(self.kinds):
            self.lists.setdefault(kind, []).append(position)
            if kind[0] == "locked":
                self.lists.setdefault(_LOCKED, []).append(position)

    def move(self, position: int, kind: _Kind) -> None:
        old = self.kinds[position]
        if old == kind:
            return
        self.kinds[position] = kind
        _discard(self.lists[old], position)
        bisect.insort(self.lists.setdefault(kind, []), position)
        was, now = old[0] == "locked", kind[0] == "locked"
        if was and not now:
            _discard(self.lists[_LOCKED], position)
        elif now and not was:
            bisect.insort(self.lists.setdefault(_LOCKED, []), position)

    def runs_of(self, verdicts: Mapping[PoolRef, PoolFilterVerdict]) -> list[_Stretch]:
        cached = self.runs.get(id(verdicts))
        if cached is not None and cached[0] is verdicts:
            return cached[1]
        runs: list[_Stretch] = []
        last: _Sig | None = None
        for pool in self.pools:
            sig = _signature(verdicts[pool.ref])
            start = self.base[pool.ref]
            end = start + len(pool.devices)
            if runs and sig == last:
                runs[-1].end = end
                continue
            last = sig
            reasons = tuple((b, r) for b in _BUCKETS if (r := _bucket_reason(b, sig)) is not None)
            viable: list[_Kind] = [b for b in _BUCKETS if b is not _IN_USE and b is not _CAPACITY
                      and _bucket_reason(b, sig) is None]
            mine: _Kind | None = None
            if _bucket_reason(_LOCKED, sig) is Reason.LOCK_MISMATCH:
                assert sig[3] is not None
                mine = ("locked", sig[3])
                viable.append(mine)
            locked = tuple(b for b in viable if b[0] == "locked")
            runs.append(_Stretch(start, end, reasons, tuple(viable), locked, mine))
        self.runs[id(verdicts)] = (verdicts, runs)
        return runs

    def first(self, kinds: Sequence[_Kind], start: int, end: int) -> int | None:
        """The first position in [start, end) of any of `kinds`."""
        found: int | None = None
        for kind in kinds:
            positions = self.lists.get(kind)
            if positions:
                i = bisect.bisect_left(positions, start)
                if i < len(positions) and positions[i] < end and (found is None or positions[i] < found):
                    found = positions[i]
        return found

    def count(self, run: _Stretch, end: int, counts: dict[Reason, int]) -> None:
        """Add the rejected devices of [run.start, end) to `counts`, reasons in walk order."""
        seen: list[tuple[int, Reason, int]] = []
        for bucket, reason in run.reasons:
            positions = self.lists.get(bucket)
            if not positions:
                continue
            i = bisect.bisect_left(positions, run.start)
            j = bisect.bisect_left(positions, end, i)
            if j <= i:
                continue
            first = positions[i]
            n = j - i
            if bucket is _LOCKED and run.mine is not None:  # the request's own lock is viable
                own = self.lists.get(run.mine)
                if own:
                    k = bisect.bisect_left(own, run.start)
                    m = bisect.bisect_left(own, end, k)
                    n -= m - k
                    while k < m and i < j and positions[i] == own[k]:
                        i += 1
                        k += 1
                    if not n:
                        continue
                    first = positions[i]
            seen.append((first, reason, n))
        seen.sort()
        for _, reason, n in seen:
            counts[reason] = counts.get(reason, 0) + n


def _discard(positions: list[int], position: int) -> None:
    del positions[bisect.bisect_left(positions, position)]


_SharedVerdicts = tuple[dict[PoolRef, PoolFilterVerdict], int, int, tuple[tuple[int, int], ...]]


@dataclass(frozen=True, slots=True)
class _FailedPlacement:
    """A (sub-)request that could not be placed, as `place_request` returned it.

    Why: once a cluster is full, every further claim of a template fails the same way: with
    no device changed since, and the same shared verdicts and request, Filter would look at
    the same devices and find the same reasons, so the claim reuses them instead of paying
    for a walk over every device (none of it names the asking claim)."""

    evaluated: tuple[Evaluated, ...]
    rejected: tuple[RejectionCount, ...]
    failure: Rejection


@dataclass(frozen=True, slots=True)
class _CopyPlan:
    """What placing a copy of one claim spec's (sub-)request reads that stays fixed for the run:
    the candidate list, the shared verdicts, the rejection among them that aborts the pod and
    the request's demand key. The spec and the request are held, so their ids stay their own."""

    claim: ResourceClaim
    request: DeviceRequest
    pools: list[Pool]
    shared: _SharedVerdicts
    abort: Rejection | None
    demand: str


_Checked = tuple[Mapping[PoolRef, PoolFilterVerdict], dict[int, tuple[DeviceState, Evaluated]]]

_CHECKS_KEPT = 256
"""Distinct (verdicts, request, demand) whose device checks are kept at once."""

_PLANS_KEPT = 4096
"""(claim spec, request) whose copy plans `CLAIM_PLANS` keeps at once."""

_FAILURES_KEPT = 64
"""Distinct failed requests remembered at once: with `Detail.DEVICES` each keeps every device
Filter looked at, so a workload of all-distinct values must not keep one per claim."""


class FirstFitIndex:
    """The indexes and remembered answers first fit reads, over one `ClaimSteps`' states."""

    def __init__(self, steps: ClaimSteps) -> None:
        self.steps = steps
        self.states = steps.states
        self.mode = steps.mode
        self.detail = steps.detail
        self.exhaustive = steps.exhaustive
        self.candidate = steps.candidate
        self.classes = steps.classes
        self.pool_ok = steps.pool_ok
        self.version = steps.version
        self.devices = steps.states.devices
        known = {ref: ref for ref in self.devices}  # the states' own keys, found by identity
        self.pool_index: dict[PoolRef, _PoolIndex] = {
            ref: _PoolIndex([(d, known.get(r, r)) for d, _ in pool.devices
                             for r in (DeviceRef.in_pool(ref, d.name),)])
            for ref, pool in self.states.pools.items()}
        self.by_demand: dict[str, DeviceRequest] = {}
        """A request of each capacity demand an index was built for (to re-kind a device)."""
        self.candidates: dict[tuple[object, ...], list[Pool] | SelectorError] = {}
        """(class, request, its selectors) -> the candidate pools (or the selector error)."""
        self.uniform: dict[tuple[str, str, tuple[object, ...]], bool] = {}
        """(class, request, its selectors) -> `_uniform`."""
        self.drivers: dict[int, tuple[str, ...]] = {}
        """id(cached candidate list) -> the distinct drivers of its pools."""
        self.shared_verdicts: dict[tuple[Hashable, ...], _SharedVerdicts] = {}
        """(candidate list, request, in-scope contents) -> (verdicts, pool bits, evaluations, per
        pool). A shared verdict's `extraction` is the first such claim's (same outcome, values)."""
        self.stable: set[int] = set()
        """ids of the shared verdict mappings (they live as long as the run)."""
        self.aborts: dict[int, Rejection | None] = {}
        """id(shared verdicts) -> the rejection that aborts the pod, if any (`_abort`)."""
        self.spans: dict[tuple[int, str], _Span] = {}
        """(id(cached candidate list), demand) -> its span (`_choose_spanned`)."""
        self.failures: dict[tuple[Hashable, ...], _FailedPlacement] = {}
        """(shared verdicts, what Filter and the summary read of the request) -> the failed
        placement's outcome, every entry decided when `states.changed` was `failures_at`; at
        most `_FAILURES_KEPT` entries."""
        self.failures_at = 0
        self.checked: dict[tuple[int, str, str], _Checked] = {}
        """(id(verdicts), request, demand) -> those verdicts and their devices' checks (`_checked`)."""
        self.plans: dict[tuple[int, int], _CopyPlan] = {}
        """`CLAIM_PLANS`: (id(claim spec), id(its request)) -> the copy plan; at most
        `_PLANS_KEPT` entries."""
        self.searched: dict[int, tuple[ResourceClaim, bool]] = {}
        """`CLAIM_PLANS`: id(claim spec) -> that spec and `_searched`'s answer for it; at most
        `_PLANS_KEPT` entries."""
        self.remember = self.count_index = self.share = self.plan = True
        self.layers_read: frozenset[str] | None = None
        """The set of layers the four flags above were read from (`ClaimSteps.active_layers`)."""
        self.copy = False
        """`CLAIM_PLANS` and the claim being placed is a copy of its spec (under another name)."""
        self.states.followers.append(self.follow)

    def allocate(self, step: Step, claim: ResourceClaim) -> StepResult | None:
        """The claim placed by first fit, or its failure; None when the search must decide
        (the claim needs it, or first fit could not place a claim of several requests)."""
        # the layers in effect, read again only when the step's set of layers is another one
        # (the hot paths below run per device)
        active = self.steps.active_layers
        if active is not self.layers_read:
            self.layers_read = active
            self.remember = REMEMBERED_FAILURES.name in active
            self.count_index = COUNT_INDEX.name in active
            self.share = SHARED_VERDICTS.name in active
            self.plan = CLAIM_PLANS.name in active
        self.copy = self.plan and step.claim != claim.qualified_name
        if self._searched(claim, copy=self.copy):
            return None
        counters = self.steps.counters
        conflicts, no_keys = counters.conflicts, counters.no_keys
        first = self._first_fit(step, claim)
        if not first.placed and len(claim.requests) > 1:  # the search may backtrack
            counters.conflicts, counters.no_keys = conflicts, no_keys  # it counts Filter's rejections
            return None
        return first

    def follow(self, ref: DeviceRef, state: DeviceState) -> None:
        """A committed change: the one device re-kinded in its pool's profiles and spans."""
        index = self.pool_index.get(ref.pool_ref)
        if index is None:
            return
        if index.profiles:
            self._update_profiles(index, ref, state)
        if index.spans:
            self._update_spans(ref, state, index)

    def _shared(self, claim: ResourceClaim, request: str, pools: list[Pool]) -> _SharedVerdicts | None:
        """Every candidate pool's verdict for the request, once per distinct content (None when a
        config in scope cannot be read as content: the claim's verdicts are its own).

        `pools` is a cached candidate list (stable for the run), so the verdicts of claims whose
        in-scope configs read the same can be shared: a claim then pays for a dictionary
        lookup, not for one verdict per pool. Its evaluations are still counted per (claim,
        request, pool), as the scheduler performs them (`_counted`).
        """
        assert self.steps.memo is not None
        drivers = self.drivers.get(id(pools))
        if drivers is None:
            drivers = tuple(dict.fromkeys(p.ref.driver for p in pools))
            self.drivers[id(pools)] = drivers
        content = self.steps.memo.content
        contents = ((content(claim, request, drivers[0]),) if len(drivers) == 1
                    else tuple(content(claim, request, d) for d in drivers))
        if None in contents:
            return None
        key = (id(pools), request, contents)
        entry = self.shared_verdicts.get(key)
        if entry is None:
            verdicts: dict[PoolRef, PoolFilterVerdict] = {}
            extracted: list[tuple[int, int]] = []
            for pool in pools:
                early = self.steps.precheck(pool)
                if early is not None:
                    verdicts[pool.ref] = early
                    continue
                result = self.steps.memo.extract(claim, request, self.steps.summaries[pool.ref])
                verdicts[pool.ref] = locks.pool_verdict(result)
                extracted.append((self.steps.pool_bits[pool.ref], len(result.evaluations)))
            mask = 0
            for bit, _ in extracted:
                mask |= bit
            entry = (verdicts, mask, sum(n for _, n in extracted), tuple(extracted))
            self.shared_verdicts[key] = entry
            self.stable.add(id(verdicts))
        return entry

    def _counted(self, name: str, request: str, entry: _SharedVerdicts
                 ) -> Mapping[PoolRef, PoolFilterVerdict]:
        """The shared verdicts, their evaluations counted for the claim `name` (once per pool)."""
        verdicts, mask, total, extracted_ = entry
        counted = (name, request)
        seen = self.steps.counted.get(counted, 0)
        if not seen:
            if mask:
                self.steps.counted[counted] = mask
                self.steps.counters.evaluations += total
        else:
            for bit, n in extracted_:
                self.steps.count_evaluations(name, request, bit, n)
        return verdicts

    def _update_profiles(self, index: _PoolIndex, ref: DeviceRef, state: DeviceState) -> None:
        """Re-kind the one changed device in each cached profile of its pool (no full rebuild)."""
        for key, profile in index.profiles.items():
            for position in index.positions.get(ref, ()):
                device = index.devices[position][0]
                wanted = self.steps.demand(device, self.by_demand[key], key)
                profile.move(position, _kind(device, state, wanted))

    # -- steps ------------------------------------------------------------------------------

    def candidate_pools(self, request: DeviceRequest) -> list[Pool]:
        """The pools the request may use, matched once per (class, request selectors)."""
        if self.candidate is not None:
            return [pool for ref, pool in self.states.pools.items() if self.pool_ok(ref)
                    and (not self.classes or self.candidate(request, self.classes, pool))]
        key = (request.device_class_name, request.name, request.selectors)
        cached = self.candidates.get(key)
        if cached is None and missing_class(request, self.classes) is not None:
            cached = []  # a class that does not exist selects no device
            self.candidates[key] = cached
        if cached is None:
            try:
                cached = [pool for ref, pool in self.states.pools.items() if self.pool_ok(ref)
                          and (not self.classes or pool_is_candidate(request, self.classes, pool,
                                                                     kubernetes_version=self.version))]
            except SelectorError as exc:
                cached = exc
            self.candidates[key] = cached
        if isinstance(cached, SelectorError):
            raise cached
        return cached

    def _first_fit(self, step: Step, claim: ResourceClaim) -> StepResult:
        """Each request in turn, first fit over the per-pool indexes: the search's first branch."""
        working = Tentative(self.states.states)
        placements: list[Placement] = []
        evaluated: list[Sequence[Evaluated]] = []
        rejected: list[Sequence[RejectionCount]] = []
        for request in claim.requests:
            alternatives = request.first_available or ((request.exactly,) if request.exactly else ())
            failure: tuple[Rejection, str] | None = None
            for sub in alternatives:
                placed, seen, counts, problem = self.place_request(claim, step.claim, sub, working)
                if seen:
                    evaluated.append(seen)
                if counts:
                    rejected.append(counts)
                if problem is None:
                    placements.extend(placed)
                    failure = None
                    break
                failure = (problem, sub.name)
                if problem.reason is Reason.CEL_EVALUATION_FAILURE:
                    break  # the pod is aborted: no further sub-request is tried
            if failure is not None:
                return StepResult(step, False, (), _joined(evaluated), failure[0], failure[1],
                                  rejected=_joined(rejected))
        self.steps.commit(step.claim, working, placements)
        return StepResult(step, True, tuple(placements), _joined(evaluated), rejected=_joined(rejected))

    def _searched(self, claim: ResourceClaim, *, copy: bool = False) -> bool:
        """The claim needs the allocator's search from the start: constraints, All, admin
        access, or a request whose selectors split a pool (or fail on some device, which only
        the search may reach). Otherwise every device of a candidate pool is a candidate and no
        selector can fail, so first fit over the per-pool indexes is the search's first branch
        (a claim of several requests it cannot place goes to the search after all).

        `copy`: the claim is a copy of a spec placed again and again (`CLAIM_PLANS`): the answer
        is the spec's, kept by its identity."""
        if not copy:
            return self._needs_search(claim)
        known = self.searched.get(id(claim))
        if known is not None and known[0] is claim:
            return known[1]
        found = self._needs_search(claim)
        if len(self.searched) >= _PLANS_KEPT:
            self.searched.clear()
        self.searched[id(claim)] = (claim, found)
        return found

    def _needs_search(self, claim: ResourceClaim) -> bool:
        if claim.constraints:
            return True
        for request in claim.requests:
            for sub in request.first_available or ((request.exactly,) if request.exactly else ()):
                if sub.allocation_mode == "All" or sub.admin_access or not self._uniform(sub):
                    return True
        return False

    def _uniform(self, request: DeviceRequest) -> bool:
        """Per pool, the request's selectors match every device or none, and fail on none."""
        if not self.classes or self.candidate is not None:
            return True
        if missing_class(request, self.classes):  # the allocator's validation fails the claim
            return False
        key = (request.device_class_name, request.name, request.selectors)
        found = self.uniform.get(key)
        if found is None:
            seen: dict[PoolRef, bool] = {}
            found = True
            for entry in self.steps.visiting_order():
                match = self.steps.device_match(request, entry)
                if isinstance(match, DeviceMatch) and match.failure is not None:
                    found = False
                    break
                matched = match if isinstance(match, bool) else match.matched
                if seen.setdefault(entry.pool.ref, matched) is not matched:
                    found = False
                    break
            self.uniform[key] = found
        return found

    def place_request(self, claim: ResourceClaim, name: str, request: DeviceRequest, working: Tentative
                      ) -> tuple[list[Placement], Sequence[Evaluated], Sequence[RejectionCount],
                                 Rejection | None]:
        """Filter, choose and reserve the devices of one (sub-)request against `working`.

        A remembered failure comes back as its own tuples, which a claim failing on that one
        request keeps as they are (`_joined`): its report shares them, rendered once."""
        copy = self.copy
        plan = self.plans.get((id(claim), id(request))) if copy else None
        if plan is not None and plan.claim is claim and plan.request is request:
            pools, abort, key_of_demand = plan.pools, plan.abort, plan.demand
            verdicts = self._counted(name, request.name, plan.shared)
        else:
            try:
                pools = self.candidate_pools(request)
            except SelectorError as exc:  # the allocator aborts the pod, as for a slice error
                return [], [], [], Rejection(Reason.CEL_EVALUATION_FAILURE,
                                             exc.failure.message(name))
            shared = None
            if self.candidate is None and self.share:
                shared = self._shared(claim, request.name, pools)
            if shared is None:
                verdicts = {pool.ref: self.steps.verdict(claim, request.name, pool, name=name)
                            for pool in pools}
            else:
                verdicts = self._counted(name, request.name, shared)
            abort = self._abort(verdicts, pools)
            key_of_demand = demand_key(request)
            if copy and shared is not None:
                if len(self.plans) >= _PLANS_KEPT:
                    self.plans.clear()
                self.plans[(id(claim), id(request))] = _CopyPlan(claim, request, pools, shared, abort,
                                                                 key_of_demand)
        if abort is not None:
            return [], [], [], abort
        every = request.allocation_mode == "All"
        wanted_count = 1 if every else max(request.count or 1, 1)
        evaluated: list[Evaluated] = []
        remembered: tuple[Hashable, ...] | None = None
        if (self.remember and not working.pools and id(verdicts) in self.stable
                and self.candidate is None):
            remembered = (id(verdicts), request.name, request.device_class_name, key_of_demand,
                          wanted_count, every)
            if self.failures_at != self.states.changed:
                self.failures.clear()
                self.failures_at = self.states.changed
            known = self.failures.get(remembered)
            if known is not None:
                self.steps.counters.count_rejections(known.rejected)
                return [], known.evaluated, known.rejected, known.failure
        if self.count_index and self.detail is Detail.COUNTS and wanted_count == 1 and not every:
            counts, examined, options = self._choose(request, pools, verdicts, working, key_of_demand)
        else:
            options = self._walk(request, pools, verdicts, working, wanted_count, every, evaluated,
                                 key_of_demand)
            counts, examined = first_reasons(evaluated), len(evaluated)
            if self.detail is Detail.COUNTS:
                evaluated = []
        rejected = tuple([RejectionCount(request.name, reason, n) for reason, n in counts.items()])
        self.steps.counters.count_rejections(rejected)
        viable = len(options)
        if every:
            wanted_count = examined
        if (every and not examined) or viable < wanted_count:
            failure = self.steps.summary(request, counts, examined, wanted_count, viable)
            if remembered is not None:
                if len(self.failures) >= _FAILURES_KEPT:
                    self.failures.clear()
                kept = _FailedPlacement(tuple(evaluated), rejected, failure)
                self.failures[remembered] = kept
                return [], kept.evaluated, kept.rejected, failure  # the claims failing alike share them
            return [], evaluated, rejected, failure
        ranked = locks.rank(self.mode, options) if len(options) > 1 else options
        placements = []
        for option in ranked[:wanted_count]:
            verdict = verdicts[option.ref.pool_ref]
            device = self.devices[option.ref]
            wanted = self.steps.demand(device, request, key_of_demand)
            before = option.state  # as `working` has it: this loop changes only other devices
            after = locks.reserve(device, option.ref, before, name, request.name, wanted, verdict.affinity)
            if isinstance(after, Rejection):  # Reserve re-check failed: cannot happen sequentially
                return [], evaluated, rejected, after
            working[option.ref] = after
            placements.append(Placement.made(request, option.ref, before.status, after))
        return placements, evaluated, rejected, None

    def _abort(self, verdicts: Mapping[PoolRef, PoolFilterVerdict], pools: Sequence[Pool]
               ) -> Rejection | None:
        """The first candidate pool's rejection that aborts the pod (once per shared verdicts)."""
        stable = id(verdicts) in self.stable
        if stable and id(verdicts) in self.aborts:
            return self.aborts[id(verdicts)]
        found = None
        for pool in pools:
            verdict = verdicts[pool.ref]
            if verdict.aborts:
                found = verdict.rejection
                break
        if stable:
            self.aborts[id(verdicts)] = found
        return found

    def _walk(self, request: DeviceRequest, pools: Sequence[Pool],
              verdicts: Mapping[PoolRef, PoolFilterVerdict], working: Tentative, wanted_count: int,
              every: bool, evaluated: list[Evaluated], key_of_demand: str) -> list[Option]:
        """Filter device by device in first-fit order, recording each device looked at."""
        options: list[Option] = []
        position = 0
        first_fit = self.mode is Mode.ALPHA and not every and not self.exhaustive
        state_of = working.__getitem__ if working.changes else working.base.__getitem__
        checked: dict[int, tuple[DeviceState, Evaluated]] = (
            self._checked(verdicts, request.name, key_of_demand) if self.remember else {})
        for pool in pools:
            verdict = verdicts[pool.ref]
            index = self.pool_index[pool.ref]
            pool_unknown = self.states.has_unknown(pool.ref)
            for device, ref in index.devices:
                state = state_of(ref)
                known = checked.get(id(device))
                if known is not None and known[0] is state:
                    seen = known[1]
                else:
                    wanted = self.steps.demand(device, request, key_of_demand)
                    seen = Evaluated(request.name, ref, state.status,
                                     locks.check_device(device, ref, state, verdict, wanted))
                    checked[id(device)] = (state, seen)
                evaluated.append(seen)
                if not seen.rejections:
                    options.append(Option(ref, state, position, pool_unknown))
                position += 1
                if first_fit and len(options) >= wanted_count:
                    return options
        return options

    def _checked(self, verdicts: Mapping[PoolRef, PoolFilterVerdict], request: str, key_of_demand: str
                 ) -> dict[int, tuple[DeviceState, Evaluated]]:
        """The devices checked under one (verdicts, request, demand): id(device) -> the state it
        was checked in and the check (`_walk` reuses it while the device keeps that state).

        Why: first-fit walks every full or differently locked device before a free one, so
        with `Detail.DEVICES` the claims of one template see the same devices in the same
        states again and again (3 million device checks at 10,000 claims, 8 % of them in a
        state not seen before); the same `Evaluated` is handed out, so the report renders it
        once. The devices live as long as the run; the verdict is held by the entry, so its id
        stays its own. At most `_CHECKS_KEPT` (verdicts, request, demand) are kept."""
        key = (id(verdicts), request, key_of_demand)
        found = self.checked.get(key)
        if found is not None and found[0] is verdicts:
            return found[1]
        if len(self.checked) >= _CHECKS_KEPT:
            self.checked.clear()
        fresh: dict[int, tuple[DeviceState, Evaluated]] = {}
        self.checked[key] = (verdicts, fresh)
        return fresh

    def _choose(self, request: DeviceRequest, pools: Sequence[Pool],
                verdicts: Mapping[PoolRef, PoolFilterVerdict], working: Tentative,
                key_of_demand: str) -> tuple[dict[Reason, int], int, list[Option]]:
        """One device, chosen from the pools' profiles: what `_walk` finds, without visiting every
        device. Returns the first-reason counts of the devices Filter looks at, their number, and
        the chosen option (none when no device is viable)."""
        if (not working.pools and id(verdicts) in self.stable and self.candidate is None
                and (self.mode is Mode.ALPHA or not self.states.unknown_total)):
            return self._choose_spanned(self._span(request, pools, key_of_demand), verdicts, working)
        counts: dict[Reason, int] = {}
        position = 0
        best: tuple[tuple[int, ...], Option] | None = None
        for pool in pools:
            verdict = verdicts[pool.ref]
            index = self.pool_index[pool.ref]
            profile = self._profile(index, request, key_of_demand, working)
            reasons, viable, rejected = profile.seen_by(verdict)
            if self.mode is Mode.ALPHA and viable:
                stop = min(viable)
                for kind in profile.kinds[:stop]:
                    reason = reasons[kind]
                    assert reason is not None
                    counts[reason] = counts.get(reason, 0) + 1
                ref = index.devices[stop][1]
                chosen = Option(ref, working[ref], position + stop, self.states.has_unknown(pool.ref))
                return counts, position + stop + 1, [chosen]
            for reason, n in rejected:
                counts[reason] = counts.get(reason, 0) + n
            if self.mode is Mode.BETA:
                for first in viable:
                    ref = index.devices[first][1]
                    option = Option(ref, working[ref], position + first, self.states.has_unknown(pool.ref))
                    key = locks.preference(self.mode, option)
                    if best is None or key < best[0]:
                        best = (key, option)
            position += len(index.devices)
        return counts, position, [best[1]] if best is not None else []

    def _choose_spanned(self, span: _Span, verdicts: Mapping[PoolRef, PoolFilterVerdict],
                        working: Tentative) -> tuple[dict[Reason, int], int, list[Option]]:
        """`_choose` answered from the candidate list's span (the claim has changed no device yet;
        beta only while no device is unreconstructable, so no pool is ranked last)."""
        counts: dict[Reason, int] = {}
        runs = span.runs_of(verdicts)
        if self.mode is Mode.ALPHA:
            for run in runs:
                stop = span.first(run.viable, run.start, run.end) if run.viable else None
                span.count(run, run.end if stop is None else stop, counts)
                if stop is not None:
                    return counts, stop + 1, [self._option(span, stop, working)]
            return counts, len(span.refs), []
        locked: int | None = None
        viable: int | None = None
        for run in runs:
            span.count(run, run.end, counts)
            if locked is None and run.locked_viable:
                locked = span.first(run.locked_viable, run.start, run.end)
            if viable is None and run.viable:
                viable = span.first(run.viable, run.start, run.end)
        chosen = locked if locked is not None else viable
        return counts, len(span.refs), [] if chosen is None else [self._option(span, chosen, working)]

    def _option(self, span: _Span, position: int, working: Tentative) -> Option:
        ref = span.refs[position]
        return Option(ref, working[ref], position, self.states.has_unknown(ref.pool_ref))

    def _span(self, request: DeviceRequest, pools: Sequence[Pool], key: str) -> _Span:
        """The span of a cached candidate list for one demand, built once and then kept current."""
        found = self.spans.get((id(pools), key))
        if found is not None and found.pools is pools:
            return found
        self.by_demand.setdefault(key, request)
        base: dict[PoolRef, int] = {}
        refs: list[DeviceRef] = []
        kinds: list[_Kind] = []
        for pool in pools:
            base[pool.ref] = len(refs)
            for device, ref in self.pool_index[pool.ref].devices:
                refs.append(ref)
                kinds.append(_kind(device, self.states.states[ref], self.steps.demand(device, request, key)))
        found = _Span(pools, base, refs, kinds)
        self.spans[(id(pools), key)] = found
        for pool in pools:
            self.pool_index[pool.ref].spans.append((found, key, found.base[pool.ref]))
        return found

    def _update_spans(self, ref: DeviceRef, state: DeviceState, index: _PoolIndex) -> None:
        """Re-kind the one changed device in every span over its pool."""
        positions = index.positions.get(ref, ())
        for span, key, base in index.spans:
            for position in positions:
                device = index.devices[position][0]
                wanted = self.steps.demand(device, self.by_demand[key], key)
                span.move(base + position, _kind(device, state, wanted))

    def _profile(self, index: _PoolIndex, request: DeviceRequest, key: str, working: Tentative) -> _Profile:
        """Each device's kind for `request`'s demand (cached unless this claim changed the pool)."""
        changed = bool(index.devices) and index.devices[0][1].pool_ref in working.pools
        cached = None if changed else index.profiles.get(key)
        if cached is not None:
            return cached
        self.by_demand.setdefault(key, request)
        kinds: list[_Kind] = []
        summary: dict[_Kind, list[int]] = {}
        for position, (device, ref) in enumerate(index.devices):
            kind = _kind(device, working[ref], self.steps.demand(device, request, key))
            kinds.append(kind)
            entry = summary.get(kind)
            if entry is None:
                summary[kind] = [1, position]
            else:
                entry[0] += 1
        profile = _Profile(kinds, summary)
        if not changed:
            index.profiles[key] = profile
        return profile


def _kind(device: Device, state: DeviceState, wanted: Mapping[str, Fraction] | CapacityProblem) -> _Kind:
    """What `locks.check_device` looks at of one device, whatever the pool's verdict."""
    if state.holders and locks.in_use(device, state):
        return _IN_USE
    if isinstance(wanted, CapacityProblem) or short_of(device, state.consumed, wanted) is not None:
        return _CAPACITY
    if state.status is LockStatus.UNRECONSTRUCTABLE:
        return _UNKNOWN
    if state.status is LockStatus.LOCKED:
        return ("locked", state.lock_items)
    return _FREE


def _reason(kind: _Kind, verdict: PoolFilterVerdict) -> Reason | None:
    """The first reason `locks.check_device` gives a device of `kind` (None: viable); same order."""
    if verdict.pool_level:
        assert verdict.rejection is not None
        return verdict.rejection.reason
    if kind is _IN_USE:
        return Reason.IN_USE
    if kind is _CAPACITY:
        return Reason.CAPACITY
    if kind is _UNKNOWN and verdict.tracked:
        return Reason.UNKNOWN_LOCK_STATE
    if verdict.rejection is not None:
        return verdict.rejection.reason
    if (kind[0] == "locked" and verdict.tracked and verdict.affinity is not None
            and kind[1] != locks.lock_items(verdict.affinity)):
        return Reason.LOCK_MISMATCH
    return None


_T = TypeVar("_T")


def _joined(parts: Sequence[Sequence[_T]]) -> tuple[_T, ...]:
    """The parts as one tuple; a single tuple part is that very tuple (shared, not copied)."""
    if not parts:
        return ()
    if len(parts) == 1 and type(parts[0]) is tuple:
        return parts[0]
    return tuple(item for part in parts for item in part)


