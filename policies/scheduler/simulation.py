"""The lock simulator behind `dra-affinity simulate` and simulation test cases (SPEC §6).

Given slices and claims, it does what a scheduler does over time: on start,
reconstructs every device's lock from the claims that already have
`status.allocation`; then allocates (or releases) claims one step at a time,
running Filter on every candidate device, choosing one (alpha first-fit or beta
preference) and reserving it, and finally reports each device's lock state and
the KEP's metrics.

Devices are placed as kube-scheduler's structured allocator places them
(`scheduler.allocator`: per-device selectors, constraints, backtracking, All): a
claim that needs that search gets it; a claim it cannot change (one ExactCount
request, no DeviceClasses, so every device is a candidate) is answered by first
fit over per-pool indexes, the search's first branch. Pools are visited in
(driver, pool) order as if they were one node's; without DeviceClasses every pool
whose (driver, name) passes the pool filter is a candidate for every request. A
slice error aborts the claim, as a scheduler Filter error aborts the pod.
docs/allocator.md says where the model deliberately differs from upstream.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TypeVar

from dra_affinity.policies.core.features import FRACTIONAL_CAPACITY_RANGE, FeatureGates
from dra_affinity.policies.core.findings import Finding, PoolRef
from dra_affinity.policies.core.gc_pause import gc_paused
from dra_affinity.policies.core.limits import KubernetesVersion, Limits, limits_for
from dra_affinity.policies.model.resources import (
    Device,
    DeviceClass,
    DeviceRequest,
    ResourceClaim,
    ResourceSlice,
)
from dra_affinity.policies.scheduler import locks
from dra_affinity.policies.scheduler.allocator import (
    ClaimAborted,
    Entry,
    SearchResult,
    search,
    search_pod,
    visiting_order,
)
from dra_affinity.policies.scheduler.candidates import (
    DeviceMatch,
    SelectorError,
    match_device,
    missing_class,
    pool_is_candidate,
)
from dra_affinity.policies.scheduler.capacity import CapacityProblem, demand, fits, render
from dra_affinity.policies.scheduler.claims import claim_problems, missing_class_problems
from dra_affinity.policies.scheduler.diagnostics import Diagnostic
from dra_affinity.policies.scheduler.dryrun import Filters, to_extraction_pool
from dra_affinity.policies.scheduler.extraction import ExtractionMemo, ExtractionPool, ExtractionResult
from dra_affinity.policies.scheduler.lock_book import LockBook
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
from dra_affinity.policies.scheduler.pools import Pool, build_pools

CandidateFilter = Callable[[DeviceRequest, Mapping[str, DeviceClass], Pool], bool]


class Detail(enum.Enum):
    """How much of Filter's work a step keeps for the report."""

    DEVICES = "devices"
    """Every device Filter looked at, with all its rejections (`StepResult.evaluated`)."""
    COUNTS = "counts"
    """Only how many devices were turned down for which first reason (`StepResult.rejected`):
    bounded state for large inputs, and Filter answered from per-pool profiles instead of
    visiting every device."""


class Action(enum.Enum):
    ALLOCATE = "allocate"
    RELEASE = "release"


@dataclass(frozen=True, slots=True)
class Step:
    action: Action
    claim: str
    """`namespace/name`; a bare name means namespace `default`."""
    with_next: bool = False
    """Allocated together with the next step: one pod's claims (`_Run.allocate_pod`)."""


def parse_order(text: str) -> list[Step]:
    """`a,b,-a,c`: allocate a, allocate b, release a, allocate c (names cannot start with `-`);
    `a+b`: allocate a and b together, as one pod's claims."""
    steps = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.startswith("-"):
            steps.append(Step(Action.RELEASE, item[1:].strip()))
        else:
            pod = [name.strip() for name in item.split("+") if name.strip()]
            steps.extend(Step(Action.ALLOCATE, name, n < len(pod) - 1) for n, name in enumerate(pod))
    return steps


def qualified(name: str) -> str:
    return name if "/" in name else f"default/{name}"


@dataclass(frozen=True, slots=True)
class Evaluated:
    """One device Filter looked at for one request, and why it is not viable (empty: viable)."""

    request: str
    device: DeviceRef
    status: LockStatus
    rejections: tuple[Rejection, ...]

    @property
    def viable(self) -> bool:
        return not self.rejections


@dataclass(frozen=True, slots=True)
class RejectionCount:
    """How many devices Filter turned down for one (sub-)request with this first reason."""

    request: str
    reason: Reason
    count: int


@dataclass(frozen=True, slots=True)
class Placement:
    request: str
    device: DeviceRef
    before: LockStatus
    lock: Mapping[str, str] | None
    """The device's lock after the placement (None for an untracked device)."""
    reused: bool
    """Placed onto a device already locked to the same values (compatible reuse)."""


@dataclass(frozen=True, slots=True)
class StepResult:
    step: Step
    placed: bool
    placements: tuple[Placement, ...] = ()
    evaluated: tuple[Evaluated, ...] = ()
    failure: Rejection | None = None
    """Why the claim could not be placed: the abort, or a summary of the devices' reasons."""
    failed_request: str | None = None
    released: tuple[DeviceRef, ...] = ()
    rejected: tuple[RejectionCount, ...] = ()
    """Per (sub-)request tried, the devices turned down by first reason, in order of appearance
    (kept whatever the `Detail`)."""

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """For an unplaced claim: the distinct first reasons of the failed request's devices."""
        if self.placed:
            return ()
        found: list[Reason] = []
        if self.failure is not None and self.failure.reason is not Reason.NO_CANDIDATES:
            found.append(self.failure.reason)
        for r in self.rejected:
            if r.request == self.failed_request and r.reason not in found:
                found.append(r.reason)
        if not found and self.failure is not None:
            found.append(self.failure.reason)
        return tuple(found)

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        """The KEP's per-pod classes among `reasons`."""
        return tuple(d for r in self.reasons if (d := r.diagnostic) is not None)


@dataclass(frozen=True, slots=True)
class DeviceReport:
    ref: DeviceRef
    state: DeviceState
    capacity: Mapping[str, str]
    shareable: bool

    @property
    def consumed(self) -> dict[str, str]:
        return {k: render(v, self.capacity.get(k)) for k, v in self.state.consumed.items()}


@dataclass(frozen=True, slots=True)
class SimulationReport:
    mode: Mode
    feature_gate: bool
    reconstructed: tuple[DeviceReport, ...]
    steps: tuple[StepResult, ...]
    devices: tuple[DeviceReport, ...]
    metrics: LockMetrics
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()

    @property
    def unplaced(self) -> tuple[StepResult, ...]:
        return tuple(s for s in self.steps if s.step.action is Action.ALLOCATE and not s.placed)


@dataclass(frozen=True, slots=True)
class SimulationProblem:
    """The steps cannot be run as given (unknown claim, already allocated, ...): a usage error."""

    message: str


@dataclass
class _Counters:
    evaluations: int = 0
    conflicts: int = 0
    no_keys: int = 0
    reuse: int = 0


class _Working:
    """The device states as one claim's placement sees them: committed states plus its own.

    A claim's requests are reserved one after the other against this view and committed
    together only when all of them fit, so a failed claim leaves no trace; no copy of every
    state is made per claim.
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
    """Per pool: its devices in first-fit order, its unknown-device count and cached profiles.

    A profile depends only on the pool's states and the request's capacity demand, so it is
    computed once per (pool, demand) and, when a device changes, only that device is looked at
    again: a claim pays for the one device it changed, not for every device of every pool.
    """

    devices: list[tuple[Device, DeviceRef]]
    unknown: int = 0
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
    affinity = tuple(sorted(verdict.affinity.items())) if verdict.affinity is not None else None
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
    Positions are those of `_Run._choose`'s walk (pools in list order, devices in pool order);
    per kind (and per bucket: `_LOCKED` holds every locked device) the positions are kept
    sorted, so the first viable device and the rejected counts before it are a few bisections,
    whatever the number of pools and devices. Kept current device by device by `_Run._set`.
    """

    pools: Sequence[Pool]
    indexes: list[_PoolIndex]
    base: dict[PoolRef, int]
    refs: list[DeviceRef]
    slots: list[int]
    """Per position, the index of its pool in `pools`."""
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
    conflicts: int
    no_keys: int


_Checked = tuple[Mapping[PoolRef, PoolFilterVerdict], dict[int, tuple[DeviceState, Evaluated]]]

_CHECKS_KEPT = 256
"""Distinct (verdicts, request, demand) whose device checks are kept at once."""

_MATCHES_KEPT = 1_000_000
"""(request, device) selector matches `_Run.device_match` remembers at once."""

_DEVICE_CHECKS_KEPT = 200_000
"""Device checks `_Run.device_check` remembers at once (cleared whole beyond)."""

_FAILURES_KEPT = 64
"""Distinct failed requests remembered at once: with `Detail.DEVICES` each keeps every device
Filter looked at, so a workload of all-distinct values must not keep one per claim."""


@dataclass
class _Run:
    """One simulation's working state; lives only for the duration of `simulate`."""

    pools: dict[PoolRef, Pool]
    summaries: dict[PoolRef, ExtractionPool]
    claims: dict[str, ResourceClaim]
    mode: Mode
    feature_gate: bool
    version: KubernetesVersion
    pool_ok: Callable[[PoolRef], bool]
    candidate: CandidateFilter | None
    classes: dict[str, DeviceClass]
    detail: Detail = Detail.DEVICES
    fractional_range: bool = False
    """`DRAFractionalCapacityRange`: a capacity's `validRange` steps in milli-units."""
    states: dict[DeviceRef, DeviceState] = field(default_factory=dict)
    devices: dict[DeviceRef, Device] = field(default_factory=dict)
    memo: ExtractionMemo | None = None
    counted: dict[tuple[str, str], int] = field(default_factory=dict)
    """(claim, request) -> bit mask of the pools whose extraction the scheduler has counted."""
    counters: _Counters = field(default_factory=_Counters)
    index: dict[PoolRef, _PoolIndex] = field(default_factory=dict)
    order: dict[DeviceRef, int] = field(default_factory=dict)
    pool_bits: dict[PoolRef, int] = field(default_factory=dict)
    candidates: dict[tuple[object, ...], list[Pool] | SelectorError] = field(default_factory=dict)
    prechecks: dict[PoolRef, PoolFilterVerdict | None] = field(default_factory=dict)
    demands: dict[tuple[int, str], Mapping[str, Fraction] | CapacityProblem] = field(default_factory=dict)
    """(id of a device of `devices`, which lives as long as the run; capacity request) -> demand."""
    drivers: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """id(cached candidate list) -> the distinct drivers of its pools."""
    shared_verdicts: dict[tuple[Hashable, ...], _SharedVerdicts] = field(default_factory=dict)
    """(candidate list, request, in-scope contents) -> (verdicts, pool bits, evaluations, per pool).
    A shared verdict's `extraction` is the first such claim's (same outcome, same values)."""
    held: dict[str, set[DeviceRef]] = field(default_factory=dict)
    """claim -> the devices it holds (bound or placed by a step)."""
    notes: list[str] = field(default_factory=list)
    exhaustive: bool = False
    """Filter every candidate device even after first-fit found one (`explain` lists them all)."""
    spans: dict[tuple[int, str], _Span] = field(default_factory=dict)
    """(id(cached candidate list), demand) -> its span (`_choose_spanned`)."""
    stable: set[int] = field(default_factory=set)
    """ids of the shared verdict mappings (they live as long as the run)."""
    aborts: dict[int, Rejection | None] = field(default_factory=dict)
    """id(shared verdicts) -> the rejection that aborts the pod, if any (`_abort`)."""
    unknown_total: int = 0
    """Unreconstructable devices over every pool (`_PoolIndex.unknown` summed)."""
    changed: int = 0
    """Committed device-state changes so far (`_set`)."""
    failures: dict[tuple[Hashable, ...], _FailedPlacement] = field(default_factory=dict)
    """(shared verdicts, what Filter and the summary read of the request) -> the failed
    placement's outcome, every entry decided when `changed` was `failures_at` (`place_request`);
    at most `_FAILURES_KEPT` entries."""
    failures_at: int = 0
    checked: dict[tuple[int, str, str], _Checked] = field(default_factory=dict)
    """(id(verdicts), request, demand) -> those verdicts and their devices' checks (`_checked`)."""
    remember: bool = True
    """False: every failed placement and every device check is decided again (the oracle the
    memos are tested against)."""
    entries: list[Entry] | None = None
    """Every simulated device in the allocator's visiting order (`allocator.visiting_order`)."""
    matching: dict[tuple[str, str, tuple[object, ...]], list[Pool]] = field(default_factory=dict)
    """(class, request, its selectors) -> `matching_pools`."""
    device_checks: dict[tuple[Hashable, ...], tuple[DeviceState, Evaluated]] = field(default_factory=dict)
    """What `device_check` reads -> the state it was checked in and the check (bounded)."""
    uniform: dict[tuple[str, str, tuple[object, ...]], bool] = field(default_factory=dict)
    """(class, request, its selectors) -> `_uniform`."""
    matches: dict[tuple[str, str, tuple[object, ...], int], DeviceMatch] = field(default_factory=dict)
    """(class, request, its selectors, device position) -> the device's selector match: the
    allocator evaluates each (request, device) once, whatever the search revisits."""

    def build_index(self) -> None:
        self.memo = ExtractionMemo(self.version)
        self.order = {ref: n for n, ref in enumerate(self.devices)}
        self.pool_bits = {ref: 1 << n for n, ref in enumerate(self.pools)}
        for ref, pool in self.pools.items():
            self.index[ref] = _PoolIndex(
                [(d, DeviceRef(ref.driver, ref.name, d.name)) for d, _ in pool.devices])

    # -- per (claim, request, pool) ---------------------------------------------------------

    def extraction(self, claim: ResourceClaim, request: str, ref: PoolRef) -> ExtractionResult:
        """The extraction, memoised by content; counted once per (claim, request, pool) as the
        scheduler's `extractor_evaluations_total` would be."""
        assert self.memo is not None
        result = self.memo.extract(claim, request, self.summaries[ref])
        self._count_evaluations(claim.qualified_name, request, self.pool_bits[ref], len(result.evaluations))
        return result

    def _count_evaluations(self, claim: str, request: str, bits: int, evaluations: int) -> None:
        key = (claim, request)
        seen = self.counted.get(key, 0)
        if not seen & bits:
            self.counted[key] = seen | bits
            self.counters.evaluations += evaluations

    def verdict(self, claim: ResourceClaim, request: str, pool: Pool) -> PoolFilterVerdict:
        early = self._precheck(pool)
        if early is not None:
            return early
        return locks.pool_verdict(self.extraction(claim, request, pool.ref))

    def _precheck(self, pool: Pool) -> PoolFilterVerdict | None:
        if pool.ref in self.prechecks:
            return self.prechecks[pool.ref]
        cached = locks.pool_precheck(declares_affinity=pool.declares_affinity, complete=pool.complete,
                                     incomplete_reason=pool.incomplete_reason, feature_gate=self.feature_gate)
        self.prechecks[pool.ref] = cached
        return cached

    def verdicts(self, claim: ResourceClaim, request: str, pools: list[Pool], shared: bool
                 ) -> Mapping[PoolRef, PoolFilterVerdict]:
        """Every candidate pool's verdict for the request, once per distinct content.

        `shared`: `pools` is a cached candidate list (stable for the run), so the verdicts of
        claims whose in-scope configs read the same can be shared: a claim then pays for a
        dictionary lookup, not for one verdict per pool. Its evaluations are still counted
        per (claim, request, pool), as the scheduler performs them.
        """
        assert self.memo is not None
        if not shared:
            return {pool.ref: self.verdict(claim, request, pool) for pool in pools}
        drivers = self.drivers.get(id(pools))
        if drivers is None:
            drivers = tuple(dict.fromkeys(p.ref.driver for p in pools))
            self.drivers[id(pools)] = drivers
        content = self.memo.content
        contents = ((content(claim, request, drivers[0]),) if len(drivers) == 1
                    else tuple(content(claim, request, d) for d in drivers))
        if None in contents:
            return {pool.ref: self.verdict(claim, request, pool) for pool in pools}
        key = (id(pools), request, contents)
        entry = self.shared_verdicts.get(key)
        if entry is None:
            verdicts: dict[PoolRef, PoolFilterVerdict] = {}
            extracted: list[tuple[int, int]] = []
            for pool in pools:
                early = self._precheck(pool)
                if early is not None:
                    verdicts[pool.ref] = early
                    continue
                result = self.memo.extract(claim, request, self.summaries[pool.ref])
                verdicts[pool.ref] = locks.pool_verdict(result)
                extracted.append((self.pool_bits[pool.ref], len(result.evaluations)))
            mask = 0
            for bit, _ in extracted:
                mask |= bit
            entry = (verdicts, mask, sum(n for _, n in extracted), tuple(extracted))
            self.shared_verdicts[key] = entry
            self.stable.add(id(verdicts))
        verdicts, mask, total, extracted_ = entry
        counted = (claim.qualified_name, request)
        seen = self.counted.get(counted, 0)
        if not seen:
            if mask:
                self.counted[counted] = mask
                self.counters.evaluations += total
        else:
            for bit, n in extracted_:
                self._count_evaluations(claim.qualified_name, request, bit, n)
        return verdicts

    def tracked(self, pool: Pool) -> bool:
        """The scheduler keeps locks for the pool's devices (gate on, complete, named extractors)."""
        return self.feature_gate and pool.complete and bool(pool.extractors)

    # -- start: reconstruction --------------------------------------------------------------

    def reconstruct(self) -> None:
        bound: dict[DeviceRef, list[tuple[Holder, ResourceClaim]]] = {}
        for claim in self.claims.values():
            for result in claim.allocation:
                ref = DeviceRef(result.driver, result.pool, result.device)
                if ref not in self.devices:
                    if self.pool_ok(ref.pool_ref):
                        self.notes.append(f"claim {claim.qualified_name} is allocated device {ref}, "
                                          "which is not in the input: ignored")
                    continue
                holder = locks.bound_holder(claim.qualified_name, result)
                if holder is not None:
                    bound.setdefault(ref, []).append((holder, claim))
                self.held.setdefault(claim.qualified_name, set()).add(ref)
        for ref in self.devices:
            pool = self.pools[ref.pool_ref]
            held = bound.get(ref, [])
            holders = tuple(h for h, _ in held)
            if not self.tracked(pool):
                self._set(ref, DeviceState(LockStatus.UNTRACKED, holders=holders))
                continue
            self._set(ref, locks.reconstruct([(h, self.extraction(c, h.request, pool.ref)) for h, c in held]))

    def _set(self, ref: DeviceRef, state: DeviceState) -> None:
        """Commit one device's state, keeping its pool's index current."""
        old = self.states.get(ref)
        self.states[ref] = state
        self.changed += 1
        index = self.index.get(ref.pool_ref)
        if index is None:
            return
        if index.profiles:
            self._update_profiles(index, ref, state)
        if index.spans:
            self._update_spans(ref, state, index)
        moved = ((state.status is LockStatus.UNRECONSTRUCTABLE)
                 - (old is not None and old.status is LockStatus.UNRECONSTRUCTABLE))
        index.unknown += moved
        self.unknown_total += moved

    def _update_profiles(self, index: _PoolIndex, ref: DeviceRef, state: DeviceState) -> None:
        """Re-kind the one changed device in each cached profile of its pool (no full rebuild)."""
        for key, profile in index.profiles.items():
            for position in index.positions.get(ref, ()):
                device = index.devices[position][0]
                wanted = self.demands.get((id(device), key))
                if wanted is None:  # not computed for this demand: rebuild on next use
                    index.profiles.clear()
                    return
                profile.move(position, _kind(device, state, wanted))

    # -- steps ------------------------------------------------------------------------------

    def candidate_pools(self, request: DeviceRequest) -> list[Pool]:
        """The pools the request may use, matched once per (class, request selectors)."""
        if self.candidate is not None:
            return [pool for ref, pool in self.pools.items() if self.pool_ok(ref)
                    and (not self.classes or self.candidate(request, self.classes, pool))]
        key = (request.device_class_name, request.name, request.selectors)
        cached = self.candidates.get(key)
        if cached is None and missing_class(request, self.classes) is not None:
            cached = []  # a class that does not exist selects no device
            self.candidates[key] = cached
        if cached is None:
            try:
                cached = [pool for ref, pool in self.pools.items() if self.pool_ok(ref)
                          and (not self.classes or pool_is_candidate(request, self.classes, pool,
                                                                     kubernetes_version=self.version))]
            except SelectorError as exc:
                cached = exc
            self.candidates[key] = cached
        if isinstance(cached, SelectorError):
            raise cached
        return cached

    def holds(self, claim: str) -> list[DeviceRef]:
        """The devices `claim` holds, in device order."""
        return sorted(self.held.get(claim, ()), key=self.order.__getitem__)

    def allocate(self, step: Step) -> StepResult:
        claim = self.claims[step.claim]
        if self.held.get(step.claim):
            self.notes.append(f"allocate {step.claim}: the claim is already allocated; step skipped")
            return StepResult(step, True)
        if self._searched(claim):
            return self._allocate_by_search(step, claim)
        counters = replace(self.counters)
        first = self._first_fit(step, claim)
        if not first.placed and len(claim.requests) > 1:  # greedy missed: the search backtracks
            self.counters = counters  # Filter's conflicts are counted once, by the search
            return self._allocate_by_search(step, claim)
        return first

    def allocate_pod(self, steps: Sequence[Step]) -> tuple[StepResult, ...]:
        """A pod's claims allocated together (`allocator.search_pod`), as kube-scheduler's one
        `Allocate` call: placed one after the other first (the joint search's first branch,
        and each claim's own report); when a later claim then fails, the joint search, which
        may move the earlier claims' devices. All placed, or none: the sequential reports say
        why, and nothing stays held (the scheduler reserves a pod's claims only together).
        An admin-access request before the last claim goes straight to the joint search: the
        devices it takes whole are in use for the later claims only within one `Allocate`."""
        before_states, before_held, counters = dict(self.states), dict(self.held), replace(self.counters)
        pending = [n for n, step in enumerate(steps) if not self.held.get(step.claim)]
        admin = any(sub.admin_access for n in pending[:-1] for sub in _device_requests(
            self.claims[steps[n].claim]).values())
        results: tuple[StepResult, ...] | None = None
        failed = f"allocate {'+'.join(steps[n].claim for n in pending)}: not every claim of the pod " \
                 "can be placed, so none of them is allocated"
        if not admin or len(pending) < 2:
            results = tuple(self.allocate(step) for step in steps)
            if all(r.placed for r in results) or len(pending) < 2:
                return results
            after = self.counters
            self._restore(before_states, before_held, counters)  # the joint search starts before them
            if not results[pending[0]].placed:  # the first claim fails alone: so does the pod
                self.counters = after
                self.notes.append(failed)
                return results
        claims = [self.claims[steps[n].claim] for n in pending]
        if self.entries is None:
            self.entries = visiting_order([p for ref, p in self.pools.items() if self.pool_ok(ref)])
        working = _Working(self.states)
        hosts = [_SearchHost(self, claim, working) for claim in claims]
        ranked = None
        if self.mode is Mode.BETA:
            def ranked(request: DeviceRequest, entries: Sequence[Entry]) -> Sequence[Entry]:
                return sorted(entries, key=lambda e: locks.preference(self.mode, Option(
                    e.ref, working[e.ref], e.position, self.index[e.pool.ref].unknown > 0)))
        found = search_pod(claims, self.entries, hosts, ranked=ranked)
        if not found.placed:
            if results is None:
                results = tuple(self.allocate(step) for step in steps)
            after = self.counters
            self._restore(before_states, before_held, after)
            self.notes.append(failed)
            return results
        if self.exhaustive:
            for host in hosts:
                host.examine_rest()
        out = list(results) if results is not None else [StepResult(step, True) for step in steps]
        taken: set[DeviceRef] = set()  # by the pod's earlier claims: their tentative state
        for n, claim, host, chosen in zip(pending, claims, hosts, found.chosen, strict=True):
            before = {e.ref: (working if e.ref in taken else self.states)[e.ref].status for _, e in chosen}
            placements = tuple(Placement(request.name, entry.ref, before[entry.ref], working[entry.ref].lock,
                                         before[entry.ref] is LockStatus.LOCKED and not request.admin_access)
                               for request, entry in chosen)
            taken.update(before)
            self.held[claim.qualified_name] = {p.device for p in placements}
            self.counters.reuse += sum(p.reused for p in placements)
            kept = tuple(host.evaluated.values()) if self.detail is Detail.DEVICES else ()
            out[n] = StepResult(steps[n], True, placements, kept)
        for ref, state in working.changes.items():
            for host in hosts:
                state = host.committed(state)
            self._set(ref, state)
        return tuple(out)

    def _restore(self, states: Mapping[DeviceRef, DeviceState], held: dict[str, set[DeviceRef]],
                 counters: _Counters) -> None:
        for ref, state in list(self.states.items()):
            if states[ref] is not state:
                self._set(ref, states[ref])
        self.held, self.counters = held, counters

    def _first_fit(self, step: Step, claim: ResourceClaim) -> StepResult:
        """Each request in turn, first fit over the per-pool indexes: the search's first branch."""
        working = _Working(self.states)
        placements: list[Placement] = []
        evaluated: list[Sequence[Evaluated]] = []
        rejected: list[Sequence[RejectionCount]] = []
        for request in claim.requests:
            alternatives = request.first_available or ((request.exactly,) if request.exactly else ())
            failure: tuple[Rejection, str] | None = None
            for sub in alternatives:
                placed, seen, counts, problem = self.place_request(claim, sub, working)
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
        for ref, state in working.changes.items():
            self._set(ref, state)
        self.held[claim.qualified_name] = {p.device for p in placements}
        self.counters.reuse += sum(p.reused for p in placements)
        return StepResult(step, True, tuple(placements), _joined(evaluated), rejected=_joined(rejected))

    def _searched(self, claim: ResourceClaim) -> bool:
        """The claim needs the allocator's search from the start: constraints, All, admin
        access, or a request whose selectors split a pool (or fail on some device, which only
        the search may reach). Otherwise every device of a candidate pool is a candidate and no
        selector can fail, so first fit over the per-pool indexes is the search's first branch
        (a claim of several requests it cannot place goes to the search after all)."""
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
            if self.entries is None:
                self.entries = visiting_order([p for ref, p in self.pools.items() if self.pool_ok(ref)])
            seen: dict[PoolRef, bool] = {}
            found = True
            for entry in self.entries:
                match = self.device_match(request, entry)
                if isinstance(match, DeviceMatch) and match.failure is not None:
                    found = False
                    break
                matched = match if isinstance(match, bool) else match.matched
                if seen.setdefault(entry.pool.ref, matched) is not matched:
                    found = False
                    break
            self.uniform[key] = found
        return found

    def device_match(self, request: DeviceRequest, entry: Entry) -> DeviceMatch | bool:
        """The device against the request's class and own selectors, once per run (cached)."""
        if self.candidate is not None:
            return not self.classes or self.candidate(request, self.classes, entry.pool)
        if not self.classes:
            return True
        key = (request.device_class_name, request.name, request.selectors, entry.position)
        found = self.matches.get(key)
        if found is None:
            found = match_device(request, self.classes[request.device_class_name], entry.device,
                                 entry.ref.driver, entry.pool.ref, kubernetes_version=self.version)
            if len(self.matches) >= _MATCHES_KEPT:  # bounded: evaluated again when asked again
                self.matches.clear()
            self.matches[key] = found
        return found

    def matching_pools(self, request: DeviceRequest) -> list[Pool]:
        """The pools holding a device the request's selectors match (errors left to the
        search), once per (class, request, selectors): the candidate pools of `_SearchHost.begin`."""
        key = (request.device_class_name, request.name, request.selectors)
        found = self.matching.get(key)
        if found is None:
            found = []
            for entry in self.entries or ():
                if found and found[-1] is entry.pool:
                    continue
                match = self.device_match(request, entry)
                if match if isinstance(match, bool) else match.matched:
                    found.append(entry.pool)
            self.matching[key] = found
        return found

    def device_check(self, request: DeviceRequest, entry: Entry, state: DeviceState,
                     verdict: PoolFilterVerdict) -> Evaluated:
        """Filter's check of one device, remembered while the device keeps `state` under an
        equal verdict: a first-fit search walks the same full or locked devices claim after
        claim (the memo `_checked` keeps for first fit, keyed by what the check reads)."""
        affinity = tuple(sorted(verdict.affinity.items())) if verdict.affinity is not None else None
        demand_key = _demand_key(request)
        key = (entry.position, request.name, demand_key, verdict.tracked, affinity, verdict.rejection)
        found = self.device_checks.get(key)
        if found is not None and found[0] is state:
            return found[1]
        wanted = self._demand(entry.device, request, demand_key)
        seen = Evaluated(request.name, entry.ref, state.status,
                         locks.check_device(entry.device, entry.ref, state, verdict, wanted))
        if len(self.device_checks) >= _DEVICE_CHECKS_KEPT:
            self.device_checks.clear()
        self.device_checks[key] = (state, seen)
        return seen

    def _allocate_by_search(self, step: Step, claim: ResourceClaim) -> StepResult:
        """One claim through `allocator.search`, the KEP's Filter as its device check."""
        if self.entries is None:
            self.entries = visiting_order([p for ref, p in self.pools.items() if self.pool_ok(ref)])
        working = _Working(self.states)
        host = _SearchHost(self, claim, working)
        ranked = None
        if self.mode is Mode.BETA:
            def ranked(request: DeviceRequest, entries: Sequence[Entry]) -> Sequence[Entry]:
                return sorted(entries, key=lambda e: locks.preference(self.mode, Option(
                    e.ref, working[e.ref], e.position, self.index[e.pool.ref].unknown > 0)))
        result = search(claim, self.entries, host, prepare=host.prepare, ranked=ranked)
        if self.exhaustive:
            host.examine_rest()
        evaluated = tuple(host.evaluated.values())
        counts_by_request: dict[str, dict[Reason, int]] = {}
        for seen in evaluated:
            if seen.rejections:
                per = counts_by_request.setdefault(seen.request, {})
                per[seen.rejections[0].reason] = per.get(seen.rejections[0].reason, 0) + 1
        rejected = tuple(RejectionCount(name, reason, n) for name, per in counts_by_request.items()
                         for reason, n in per.items())
        for per in counts_by_request.values():
            self.counters.conflicts += per.get(Reason.LOCK_MISMATCH, 0)
            self.counters.no_keys += per.get(Reason.NO_KEYS_EXTRACTED, 0)
        kept = evaluated if self.detail is Detail.DEVICES else ()
        if not result.placed:
            return self._search_failure(step, claim, result, host, kept, rejected)
        placements = []
        for request, entry in result.chosen:
            before = self.states[entry.ref]
            after = working[entry.ref]
            reused = before.status is LockStatus.LOCKED and not request.admin_access
            placements.append(Placement(request.name, entry.ref, before.status, after.lock, reused))
        for ref, state in working.changes.items():
            self._set(ref, host.committed(state))
        self.held[claim.qualified_name] = {p.device for p in placements}
        self.counters.reuse += sum(p.reused for p in placements)
        return StepResult(step, True, tuple(placements), kept, rejected=rejected)

    def _search_failure(self, step: Step, claim: ResourceClaim, result: SearchResult, host: _SearchHost,
                        evaluated: tuple[Evaluated, ...], rejected: tuple[RejectionCount, ...]) -> StepResult:
        if result.failure is not None:
            return StepResult(step, False, (), evaluated, result.failure, result.failed_request,
                              rejected=rejected)
        requests = _device_requests(claim)
        name = result.failed_request
        request = requests.get(name) if name is not None else None
        if request is None:
            failure = Rejection(Reason.NO_CANDIDATES, f"claim {claim.qualified_name}: no allocation found")
            return StepResult(step, False, (), evaluated, failure, name, rejected=rejected)
        seen = [e for e in host.evaluated.values() if e.request == request.name]
        counts = _first_reasons(seen)
        every = request.allocation_mode == "All"
        wanted = len(host.listed.get(request.name, ())) if every else max(request.count or 1, 1)
        viable = sum(1 for e in seen if e.viable)
        if (not counts and viable >= wanted) or (every and not wanted):
            detail = ("no device matches the request" if every and not wanted else
                      f"{viable} viable device(s), but no combination satisfies the claim's constraints "
                      "and requests together")
            reason = Reason.CONSTRAINT if claim.constraints and not every else Reason.NO_CANDIDATES
            failure = Rejection(reason, f"request {request.name!r}: {detail}")
        else:
            failure = self._summary(request, counts, len(seen), wanted, viable)
        return StepResult(step, False, (), evaluated, failure, request.name, rejected=rejected)

    def place_request(self, claim: ResourceClaim, request: DeviceRequest, working: _Working
                      ) -> tuple[list[Placement], Sequence[Evaluated], Sequence[RejectionCount],
                                 Rejection | None]:
        """Filter, choose and reserve the devices of one (sub-)request against `working`.

        A remembered failure comes back as its own tuples, which a claim failing on that one
        request keeps as they are (`_joined`): its report shares them, rendered once."""
        try:
            pools = self.candidate_pools(request)
        except SelectorError as exc:  # the allocator aborts the pod, as for a slice error
            return [], [], [], Rejection(Reason.CEL_EVALUATION_FAILURE,
                                         exc.failure.message(claim.qualified_name))
        verdicts = self.verdicts(claim, request.name, pools, self.candidate is None)
        abort = self._abort(verdicts, pools)
        if abort is not None:
            return [], [], [], abort
        every = request.allocation_mode == "All"
        wanted_count = 1 if every else max(request.count or 1, 1)
        evaluated: list[Evaluated] = []
        demand_key = _demand_key(request)
        remembered: tuple[Hashable, ...] | None = None
        if (self.remember and not working.pools and id(verdicts) in self.stable
                and self.candidate is None):
            remembered = (id(verdicts), request.name, request.device_class_name, demand_key,
                          wanted_count, every)
            if self.failures_at != self.changed:
                self.failures.clear()
                self.failures_at = self.changed
            known = self.failures.get(remembered)
            if known is not None:
                self.counters.conflicts += known.conflicts
                self.counters.no_keys += known.no_keys
                return [], known.evaluated, known.rejected, known.failure
        if self.detail is Detail.COUNTS and wanted_count == 1 and not every:
            counts, examined, options = self._choose(request, pools, verdicts, working, demand_key)
        else:
            options = self._walk(request, pools, verdicts, working, wanted_count, every, evaluated,
                                 demand_key)
            counts, examined = _first_reasons(evaluated), len(evaluated)
            if self.detail is Detail.COUNTS:
                evaluated = []
        rejected = [RejectionCount(request.name, reason, n) for reason, n in counts.items()]
        conflicts, no_keys = counts.get(Reason.LOCK_MISMATCH, 0), counts.get(Reason.NO_KEYS_EXTRACTED, 0)
        self.counters.conflicts += conflicts
        self.counters.no_keys += no_keys
        viable = len(options)
        if every:
            wanted_count = examined
        if (every and not examined) or viable < wanted_count:
            failure = self._summary(request, counts, examined, wanted_count, viable)
            if remembered is not None:
                if len(self.failures) >= _FAILURES_KEPT:
                    self.failures.clear()
                kept = _FailedPlacement(tuple(evaluated), tuple(rejected), failure, conflicts, no_keys)
                self.failures[remembered] = kept
                return [], kept.evaluated, kept.rejected, failure  # the claims failing alike share them
            return [], evaluated, rejected, failure
        ranked = locks.rank(self.mode, options) if len(options) > 1 else options
        placements = []
        for option in ranked[:wanted_count]:
            verdict = verdicts[option.ref.pool_ref]
            wanted = self._demand(self.devices[option.ref], request, demand_key)
            # a device held whole records no consumption (upstream tracks capacity only for shares)
            shares = self.devices[option.ref].allow_multiple_allocations
            consumed = {} if isinstance(wanted, CapacityProblem) or not shares else wanted
            holder = Holder(claim.qualified_name, request.name, consumed)
            before = working[option.ref]
            after = locks.allocate(before, holder, verdict.affinity, str(option.ref))
            if isinstance(after, Rejection):  # Reserve re-check failed: cannot happen sequentially
                return [], evaluated, rejected, after
            working[option.ref] = after
            placements.append(Placement(request.name, option.ref, before.status, after.lock,
                                        reused=before.status is LockStatus.LOCKED))
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
              verdicts: Mapping[PoolRef, PoolFilterVerdict], working: _Working, wanted_count: int,
              every: bool, evaluated: list[Evaluated], demand_key: str) -> list[Option]:
        """Filter device by device in first-fit order, recording each device looked at."""
        options: list[Option] = []
        position = 0
        first_fit = self.mode is Mode.ALPHA and not every and not self.exhaustive
        state_of = working.__getitem__ if working.changes else working.base.__getitem__
        checked: dict[int, tuple[DeviceState, Evaluated]] = (
            self._checked(verdicts, request.name, demand_key) if self.remember else {})
        for pool in pools:
            verdict = verdicts[pool.ref]
            index = self.index[pool.ref]
            pool_unknown = index.unknown > 0
            for device, ref in index.devices:
                state = state_of(ref)
                known = checked.get(id(device))
                if known is not None and known[0] is state:
                    seen = known[1]
                else:
                    wanted = self._demand(device, request, demand_key)
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

    def _checked(self, verdicts: Mapping[PoolRef, PoolFilterVerdict], request: str, demand_key: str
                 ) -> dict[int, tuple[DeviceState, Evaluated]]:
        """The devices checked under one (verdicts, request, demand): id(device) -> the state it
        was checked in and the check (`_walk` reuses it while the device keeps that state).

        Why: first-fit walks every full or differently locked device before a free one, so
        with `Detail.DEVICES` the claims of one template see the same devices in the same
        states again and again (3 million device checks at 10,000 claims, 8 % of them in a
        state not seen before); the same `Evaluated` is handed out, so the report renders it
        once. The devices live as long as the run; the verdict is held by the entry, so its id
        stays its own. At most `_CHECKS_KEPT` (verdicts, request, demand) are kept."""
        key = (id(verdicts), request, demand_key)
        found = self.checked.get(key)
        if found is not None and found[0] is verdicts:
            return found[1]
        if len(self.checked) >= _CHECKS_KEPT:
            self.checked.clear()
        fresh: dict[int, tuple[DeviceState, Evaluated]] = {}
        self.checked[key] = (verdicts, fresh)
        return fresh

    def _choose(self, request: DeviceRequest, pools: Sequence[Pool],
                verdicts: Mapping[PoolRef, PoolFilterVerdict], working: _Working,
                demand_key: str) -> tuple[dict[Reason, int], int, list[Option]]:
        """One device, chosen from the pools' profiles: what `_walk` finds, without visiting every
        device. Returns the first-reason counts of the devices Filter looks at, their number, and
        the chosen option (none when no device is viable)."""
        if (not working.pools and id(verdicts) in self.stable and self.candidate is None
                and (self.mode is Mode.ALPHA or not self.unknown_total)):
            return self._choose_spanned(self._span(request, pools, demand_key), verdicts, working)
        counts: dict[Reason, int] = {}
        position = 0
        best: tuple[tuple[int, ...], Option] | None = None
        for pool in pools:
            verdict = verdicts[pool.ref]
            index = self.index[pool.ref]
            profile = self._profile(index, request, demand_key, working)
            reasons, viable, rejected = profile.seen_by(verdict)
            if self.mode is Mode.ALPHA and viable:
                stop = min(viable)
                for kind in profile.kinds[:stop]:
                    reason = reasons[kind]
                    assert reason is not None
                    counts[reason] = counts.get(reason, 0) + 1
                ref = index.devices[stop][1]
                chosen = Option(ref, working[ref], position + stop, index.unknown > 0)
                return counts, position + stop + 1, [chosen]
            for reason, n in rejected:
                counts[reason] = counts.get(reason, 0) + n
            if self.mode is Mode.BETA:
                for first in viable:
                    ref = index.devices[first][1]
                    option = Option(ref, working[ref], position + first, index.unknown > 0)
                    key = locks.preference(self.mode, option)
                    if best is None or key < best[0]:
                        best = (key, option)
            position += len(index.devices)
        return counts, position, [best[1]] if best is not None else []

    def _choose_spanned(self, span: _Span, verdicts: Mapping[PoolRef, PoolFilterVerdict],
                        working: _Working) -> tuple[dict[Reason, int], int, list[Option]]:
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

    def _option(self, span: _Span, position: int, working: _Working) -> Option:
        ref = span.refs[position]
        return Option(ref, working[ref], position, span.indexes[span.slots[position]].unknown > 0)

    def _span(self, request: DeviceRequest, pools: Sequence[Pool], key: str) -> _Span:
        """The span of a cached candidate list for one demand, built once and then kept current."""
        found = self.spans.get((id(pools), key))
        if found is not None and found.pools is pools:
            return found
        base: dict[PoolRef, int] = {}
        refs: list[DeviceRef] = []
        slots: list[int] = []
        kinds: list[_Kind] = []
        for slot, pool in enumerate(pools):
            base[pool.ref] = len(refs)
            for device, ref in self.index[pool.ref].devices:
                refs.append(ref)
                slots.append(slot)
                kinds.append(_kind(device, self.states[ref], self._demand(device, request, key)))
        found = _Span(pools, [self.index[p.ref] for p in pools], base, refs, slots, kinds)
        self.spans[(id(pools), key)] = found
        for pool in pools:
            self.index[pool.ref].spans.append((found, key, found.base[pool.ref]))
        return found

    def _update_spans(self, ref: DeviceRef, state: DeviceState, index: _PoolIndex) -> None:
        """Re-kind the one changed device in every span over its pool."""
        positions = index.positions.get(ref, ())
        for span, key, base in index.spans:
            for position in positions:
                device = index.devices[position][0]
                span.move(base + position, _kind(device, state, self.demands[(id(device), key)]))

    def _profile(self, index: _PoolIndex, request: DeviceRequest, key: str, working: _Working) -> _Profile:
        """Each device's kind for `request`'s demand (cached unless this claim changed the pool)."""
        changed = bool(index.devices) and index.devices[0][1].pool_ref in working.pools
        cached = None if changed else index.profiles.get(key)
        if cached is not None:
            return cached
        kinds: list[_Kind] = []
        summary: dict[_Kind, list[int]] = {}
        for position, (device, ref) in enumerate(index.devices):
            kind = _kind(device, working[ref], self._demand(device, request, key))
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

    def _demand(self, device: Device, request: DeviceRequest, key: str
                ) -> Mapping[str, Fraction] | CapacityProblem:
        """`capacity.demand`, once per (device, capacity request): it reads nothing else."""
        cache_key = (id(device), key)
        cached = self.demands.get(cache_key)
        if cached is None:
            cached = demand(device, request, self.fractional_range)
            self.demands[cache_key] = cached
        return cached

    def _summary(self, request: DeviceRequest, counts: Mapping[Reason, int], examined: int, wanted: int,
                 viable: int) -> Rejection:
        absent = missing_class(request, self.classes) if not examined else None
        if absent is not None:  # the class does not exist for the scheduler: the claim stays pending
            return Rejection(Reason.NO_CANDIDATES, absent)
        if not examined:
            return Rejection(Reason.NO_CANDIDATES,
                             f"request {request.name!r}: no device in the input can serve it")
        listed = ", ".join(f"{n} {reason.value}" for reason, n in counts.items())
        reason = next(iter(counts), Reason.NO_CANDIDATES)
        return Rejection(reason, f"request {request.name!r}: {viable} of {wanted} device(s) viable "
                                 f"among {examined} candidate(s) ({listed})")

    def release(self, step: Step) -> StepResult:
        freed = self.holds(step.claim)
        for ref in freed:
            self._set(ref, locks.release(self.states[ref], step.claim))
        self.held.pop(step.claim, None)
        if not freed:
            self.notes.append(f"release {step.claim}: the claim holds no device (its allocation "
                              "failed); nothing to release")
        return StepResult(step, True, released=tuple(freed))

    # -- helpers ----------------------------------------------------------------------------

    def report(self, ref: DeviceRef) -> DeviceReport:
        device = self.devices[ref]
        return DeviceReport(ref, self.states[ref],
                            {k: c.value for k, c in device.capacity.items()},
                            device.allow_multiple_allocations)


def _demand_key(request: DeviceRequest) -> str:
    """What `capacity.demand` reads of a request (its capacity requests), as a key."""
    requests = request.capacity_requests
    return repr(sorted(requests.items())) if requests else "[]"


def _kind(device: Device, state: DeviceState, wanted: Mapping[str, Fraction] | CapacityProblem) -> _Kind:
    """What `locks.check_device` looks at of one device, whatever the pool's verdict."""
    if state.holders and locks.in_use(device, state):
        return _IN_USE
    if isinstance(wanted, CapacityProblem) or fits(device, state.consumed, wanted) is not None:
        return _CAPACITY
    if state.status is LockStatus.UNRECONSTRUCTABLE:
        return _UNKNOWN
    if state.status is LockStatus.LOCKED:
        return ("locked", tuple(sorted((state.lock or {}).items())))
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
            and kind[1] != tuple(sorted(verdict.affinity.items()))):
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


def _first_reasons(evaluated: Sequence[Evaluated]) -> dict[Reason, int]:
    counts: dict[Reason, int] = {}
    for e in evaluated:
        if e.rejections:
            reason = e.rejections[0].reason
            counts[reason] = counts.get(reason, 0) + 1
    return counts


def _device_requests(claim: ResourceClaim) -> dict[str, DeviceRequest]:
    out: dict[str, DeviceRequest] = {}
    for request in claim.requests:
        for sub in request.first_available or ((request.exactly,) if request.exactly else ()):
            out[sub.name] = sub
    return out


def default_steps(claims: Sequence[ResourceClaim]) -> list[Step]:
    """Every ResourceClaim without `status.allocation`, in input order."""
    return [Step(Action.ALLOCATE, c.qualified_name) for c in claims
            if c.kind == "ResourceClaim" and not c.allocation]


def check_steps(steps: Sequence[Step], claims: Sequence[ResourceClaim]) -> list[SimulationProblem]:
    """Steps that can never run: unknown claims, templates, allocating a bound claim, releasing
    a claim no earlier step allocated. (An allocation that fails leaves its claim free; the
    run itself notes a step that finds its claim already placed or holding nothing.)"""
    by_name = {c.qualified_name: c for c in claims}
    bound = {c.qualified_name for c in claims if c.allocation}
    maybe_held = set(bound)
    problems = []
    for step in steps:
        name = qualified(step.claim)
        claim = by_name.get(name)
        if claim is None:
            problems.append(SimulationProblem(f"claim {name!r} is not in the input"))
        elif claim.kind != "ResourceClaim":
            problems.append(SimulationProblem(
                f"{name!r} is a {claim.kind}: simulate allocates ResourceClaims (make one from it)"))
        elif step.action is Action.ALLOCATE:
            if name in bound:
                problems.append(SimulationProblem(
                    f"claim {name!r} is already allocated (status.allocation): release it first "
                    "with -name"))
            maybe_held.add(name)
        else:
            if name not in maybe_held:
                problems.append(SimulationProblem(
                    f"claim {name!r} is neither allocated (status.allocation) nor allocated by an "
                    "earlier step: nothing to release"))
            bound.discard(name)
    return problems


class _SearchHost:
    """`allocator.SearchHost` over one claim's working state: the KEP's Filter as device check."""

    def __init__(self, run: _Run, claim: ResourceClaim, working: _Working) -> None:
        self.run = run
        self.claim = claim
        self.working = working
        self.evaluated: dict[tuple[str, DeviceRef], Evaluated] = {}
        self.listed: dict[str, list[Entry]] = {}
        self.verdicts: dict[tuple[str, PoolRef], PoolFilterVerdict] = {}
        self.begun: set[str] = set()
        self.admin: set[str] = set()
        """Admin-access requests that joined a device's capacity in the working state."""

    def _abort(self, request: DeviceRequest, rejection: Rejection) -> ClaimAborted:
        return ClaimAborted(rejection, request.name)

    def selectable(self, request: DeviceRequest, entry: Entry) -> bool:
        match = self.run.device_match(request, entry)
        if isinstance(match, bool):
            return match
        if match.failure is not None:
            raise self._abort(request, Rejection(Reason.CEL_EVALUATION_FAILURE,
                                                 match.failure.message(self.claim.qualified_name)))
        return match.matched

    def quietly_selectable(self, request: DeviceRequest, entry: Entry) -> bool:
        match = self.run.device_match(request, entry)
        return match if isinstance(match, bool) else match.matched

    def in_use(self, entry: Entry) -> bool:
        state = self.working[entry.ref]
        return bool(state.holders) and locks.in_use(entry.device, state)

    def verdict(self, request: DeviceRequest, pool: Pool) -> PoolFilterVerdict:
        key = (request.name, pool.ref)
        found = self.verdicts.get(key)
        if found is None:
            found = self.run.verdict(self.claim, request.name, pool)
            self.verdicts[key] = found
        if found.aborts:
            assert found.rejection is not None
            raise self._abort(request, found.rejection)
        return found

    def begin(self, request: DeviceRequest) -> None:
        """Every candidate pool's verdict for the request, as first fit computes them: the
        extractions the scheduler counts, and a slice error in any of them aborts the claim."""
        if request.name in self.begun:
            return
        self.begun.add(request.name)
        for pool in self.run.matching_pools(request):
            early = self.run._precheck(pool)
            if early is None:
                self.verdict(request, pool)

    def pool_skipped(self, request: DeviceRequest, entry: Entry) -> bool:
        early = self.run._precheck(entry.pool)
        if early is None or not early.pool_level:
            return False
        if self.quietly_selectable(request, entry):
            self.examine(request, entry)
        return True

    def _wanted(self, request: DeviceRequest, entry: Entry) -> Mapping[str, Fraction] | CapacityProblem:
        return self.run._demand(entry.device, request, _demand_key(request))

    def capacity_fits(self, request: DeviceRequest, entry: Entry, committed: bool) -> bool:
        wanted = self._wanted(request, entry)
        if isinstance(wanted, CapacityProblem):
            return False
        state = self.run.states[entry.ref] if committed else self.working[entry.ref]
        return fits(entry.device, state.consumed, wanted) is None

    def examine(self, request: DeviceRequest, entry: Entry) -> tuple[Rejection, ...]:
        verdict = self.verdict(request, entry.pool)
        state = self.working[entry.ref]
        seen = self.run.device_check(request, entry, state, verdict)
        key = (request.name, entry.ref)
        if key not in self.evaluated:
            self.evaluated[key] = seen
        return seen.rejections

    def note_rejection(self, request: DeviceRequest, entry: Entry, rejection: Rejection) -> None:
        key = (request.name, entry.ref)
        seen = self.evaluated.get(key)
        if seen is None or seen.viable:
            status = self.working[entry.ref].status
            self.evaluated[key] = Evaluated(request.name, entry.ref, status, (rejection,))

    def reserve(self, request: DeviceRequest, entry: Entry) -> Callable[[], None]:
        wanted = self._wanted(request, entry)
        ref = entry.ref
        had = ref in self.working.changes
        previous = self.working.changes.get(ref)

        def undo() -> None:
            if had:
                assert previous is not None
                self.working.changes[ref] = previous
            else:
                del self.working.changes[ref]
        if request.admin_access:  # no lock; a share's capacity counts within this claim only
            if entry.device.allow_multiple_allocations and not isinstance(wanted, CapacityProblem):
                self.working[ref] = self.working[ref].joined(
                    Holder(self.claim.qualified_name, request.name, wanted, shared=True))
                self.admin.add(request.name)
                return undo
            return lambda: None
        verdict = self.verdict(request, entry.pool)
        # a device held whole records no consumption (upstream tracks capacity only for shares)
        consumed = {} if isinstance(wanted, CapacityProblem) or not entry.device.allow_multiple_allocations \
            else wanted
        holder = Holder(self.claim.qualified_name, request.name, consumed)
        after = locks.allocate(self.working[ref], holder, verdict.affinity, str(ref))
        if isinstance(after, Rejection):  # Filter passed it: cannot happen within one claim
            raise self._abort(request, after)
        self.working[ref] = after
        return undo

    def committed(self, state: DeviceState) -> DeviceState:
        """A working state as committed: admin-access holders hold nothing afterwards."""
        if not self.admin:
            return state
        name = self.claim.qualified_name
        kept = tuple(h for h in state.holders if h.claim != name or h.request not in self.admin)
        if len(kept) == len(state.holders):
            return state
        return DeviceState(state.status, state.lock, kept, state.reason)

    def prepare(self, request: DeviceRequest) -> list[Entry] | None:
        """upstream `validateDeviceRequest`: the class must exist; All lists its devices."""
        absent = missing_class(request, self.run.classes) if self.run.candidate is None else None
        if absent is not None:
            raise self._abort(request, Rejection(Reason.NO_CANDIDATES, absent))
        if request.allocation_mode != "All":
            return None
        entries = self.run.entries or []
        for pool in dict.fromkeys(e.pool for e in entries):
            if not pool.complete:
                raise self._abort(request, Rejection(Reason.POOL_INCOMPLETE, (
                    f"request {request.name!r} asks for all devices, but resource pool "
                    f"{pool.ref.driver}/{pool.ref.name} is currently being updated "
                    f"({pool.incomplete_reason})")))
        listed = [e for e in entries if self.selectable(request, e)
                  and self.capacity_fits(request, e, committed=True)]
        self.listed[request.name] = listed
        return listed

    def examine_rest(self) -> None:
        """`exhaustive`: every selectable device of every request tried, for the report."""
        tried = {name for name, _ in self.evaluated}
        for request in _device_requests(self.claim).values():
            if request.name not in tried:
                continue
            for entry in self.run.entries or ():
                if (request.name, entry.ref) in self.evaluated or not self.quietly_selectable(request, entry):
                    continue
                try:
                    self.examine(request, entry)
                except ClaimAborted:
                    break


class SimulationRun:
    """A simulation under way: its reconstruction, then its steps one at a time, then the end.

    Why: a report of 100,000 steps need not sit in memory to be printed. `steps()` yields
    each step as it is decided (once); `devices()`, `metrics()` and `notes` describe the state
    after the steps consumed so far. `simulate` is this, collected into one report.
    """

    def __init__(self, run: _Run, steps: Sequence[Step], findings: tuple[Finding, ...]) -> None:
        self._run = run
        self._steps = steps
        self.mode = run.mode
        self.feature_gate = run.feature_gate
        self.findings = findings
        self.reconstructed = tuple(run.report(ref) for ref in run.devices)

    def steps(self) -> Iterator[StepResult]:
        """Each step as it is decided. The cyclic collector is left as the caller set it: the
        caller's code runs between steps (a command freezes the input it keeps instead, see
        `simulate_cmd`; `simulate` pauses it around its own drain)."""
        run = self._run
        pod: list[Step] = []
        for step in self._steps:
            if step.action is Action.ALLOCATE and (pod or step.with_next):
                pod.append(step)
                if not step.with_next:
                    yield from run.allocate_pod(pod)
                    pod = []
                continue
            yield run.allocate(step) if step.action is Action.ALLOCATE else run.release(step)
        if pod:
            yield from run.allocate_pod(pod)

    def devices(self) -> tuple[DeviceReport, ...]:
        return tuple(self._run.report(ref) for ref in self._run.devices)

    def metrics(self) -> LockMetrics:
        run = self._run
        locked, unknown = locks.gauges(run.states)
        return LockMetrics(locked, unknown, run.counters.evaluations, run.counters.conflicts,
                       run.counters.no_keys, run.counters.reuse)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self._run.notes)


def new_run(
    slices: Sequence[ResourceSlice],
    claims: Sequence[ResourceClaim],
    *,
    mode: Mode,
    feature_gate: bool,
    limits: Limits,
    pools: Sequence[str] = (),
    classes: Sequence[DeviceClass] = (),
    candidate: CandidateFilter | None = None,
    detail: Detail = Detail.DEVICES,
    fractional_range: bool | None = None,
) -> _Run:
    """Pools gathered, devices listed and every lock reconstructed from the bound claims: the
    start of a simulation, and of a workload replay (`scheduler.replay`)."""
    filters = [Filters(pool=p) for p in pools]
    built = build_pools(slices, limits)
    run = _Run(
        pools=built,
        summaries={ref: to_extraction_pool(pool) for ref, pool in built.items()},
        claims={c.qualified_name: c for c in claims},
        mode=mode, feature_gate=feature_gate, version=limits.kubernetes_version,
        pool_ok=lambda ref: not filters or any(f.pool_ok(ref) for f in filters),
        candidate=candidate, classes={c.name: c for c in classes}, detail=detail,
        fractional_range=_fractional_range(limits.kubernetes_version, fractional_range),
    )
    for ref, pool in built.items():
        if run.pool_ok(ref):  # pools left out by `pools` are not simulated at all
            for device, _ in pool.devices:
                run.devices.setdefault(DeviceRef(ref.driver, ref.name, device.name), device)
    run.build_index()
    run.reconstruct()
    return run


def _fractional_range(version: KubernetesVersion, chosen: bool | None) -> bool:
    """`DRAFractionalCapacityRange` as chosen, else the release's default."""
    if chosen is not None:
        return chosen
    return FeatureGates.for_release(version).enabled(FRACTIONAL_CAPACITY_RANGE)


def start(
    slices: Sequence[ResourceSlice],
    claims: Sequence[ResourceClaim],
    steps: Sequence[Step] | None = None,
    *,
    mode: Mode = Mode.ALPHA,
    feature_gate: bool = True,
    kubernetes_version: KubernetesVersion | None = None,
    pools: Sequence[str] = (),
    classes: Sequence[DeviceClass] = (),
    candidate: CandidateFilter | None = None,
    detail: Detail = Detail.DEVICES,
    fractional_range: bool | None = None,
) -> SimulationRun | list[SimulationProblem]:
    """Reconstruct the locks from bound claims; the returned run then yields `steps` (default:
    every unallocated claim) one at a time.

    `pools` restricts the candidate pools (`driver/name` or `name`, as `--pool`); `detail`
    says what each step keeps. Returns the problems instead when the steps cannot be run.
    """
    limits = limits_for(kubernetes_version) if kubernetes_version else limits_for()
    steps = [Step(s.action, qualified(s.claim), s.with_next) for s in
             (default_steps(claims) if steps is None else steps)]
    problems = check_steps(steps, claims)
    if problems:
        return problems
    run = new_run(slices, claims, mode=mode, feature_gate=feature_gate, limits=limits, pools=pools,
                  classes=classes, candidate=candidate, detail=detail, fractional_range=fractional_range)
    findings = tuple(f for c in claims for f in claim_problems(c))
    placed = {s.claim for s in steps if s.action is Action.ALLOCATE}
    # a claim to place whose class is absent: an input error, as dry-run reports it
    findings += tuple(f for c in claims if c.qualified_name in placed
                      for f in missing_class_problems(c, run.classes))
    return SimulationRun(run, steps, findings)


def simulate(
    slices: Sequence[ResourceSlice],
    claims: Sequence[ResourceClaim],
    steps: Sequence[Step] | None = None,
    *,
    mode: Mode = Mode.ALPHA,
    feature_gate: bool = True,
    kubernetes_version: KubernetesVersion | None = None,
    pools: Sequence[str] = (),
    classes: Sequence[DeviceClass] = (),
    candidate: CandidateFilter | None = None,
    detail: Detail = Detail.DEVICES,
    fractional_range: bool | None = None,
) -> SimulationReport | list[SimulationProblem]:
    """Reconstruct the locks from bound claims, then run `steps` (default: every unallocated claim).

    `pools` restricts the candidate pools (`driver/name` or `name`, as `--pool`).
    Returns the problems instead of a report when the steps cannot be run.
    """
    run = start(slices, claims, steps, mode=mode, feature_gate=feature_gate,
                kubernetes_version=kubernetes_version, pools=pools, classes=classes,
                candidate=candidate, detail=detail, fractional_range=fractional_range)
    if isinstance(run, list):
        return run
    with gc_paused():  # each step makes short-lived acyclic objects next to a large parsed input
        results = tuple(run.steps())
    return SimulationReport(mode, feature_gate, run.reconstructed, results, run.devices(), run.metrics(),
                            run.notes, run.findings)


def try_allocate(book: LockBook, claim: str, *, mode: Mode = Mode.ALPHA) -> StepResult:
    """One allocation attempt of `claim` against the book's current locks, leaving them unchanged.

    What `explain` shows for a pending claim: Filter on every candidate device (all of them,
    not only up to first-fit's pick), the device choice and the failure, exactly as a
    `simulate` step does it. Candidates come from the book's DeviceClasses (every pool when
    it has none).
    """
    return try_allocate_pod(book, (claim,), mode=mode)[0]


def try_allocate_pod(book: LockBook, claims: Sequence[str], *, mode: Mode = Mode.ALPHA,
                     release: Sequence[str] = ()) -> tuple[StepResult, ...]:
    """One pod's claims allocated together against the book's locks, leaving the book unchanged.

    One search over all of them, as kube-scheduler's one `Allocate` call for a pod's pending
    claims (`_Run.allocate_pod`): each claim's tentative locks and consumed capacity are visible
    to the claims after it, as the KEP's Reserve makes them immediately visible, so two claims
    of one pod cannot both take one device with different locks, and a later claim that finds
    no room makes the search move an earlier one's devices.
    `release`: allocated claims released first (`simulate`'s `-name` steps), to check what
    releasing them would change.
    """
    held = {name: set(book.held_by(name)) for name in (*release, *claims) if book.held_by(name)}
    version = book.kubernetes_version or limits_for().kubernetes_version
    run = _Run(
        pools=book.pools, summaries={ref: book.summary(ref) for ref in book.pools},
        claims=book.claims, mode=mode, feature_gate=book.feature_gate, version=version,
        pool_ok=lambda ref: True, candidate=None, classes=dict(book.classes),
        states=dict(book.states), devices=dict(book.devices), exhaustive=True, held=held,
        fractional_range=_fractional_range(version, book.fractional_range),
    )
    run.build_index()
    unknown = LockStatus.UNRECONSTRUCTABLE
    for index in run.index.values():
        index.unknown = sum(1 for _, d in index.devices if run.states[d].status is unknown)
        run.unknown_total += index.unknown
    for name in release:
        run.release(Step(Action.RELEASE, name))
    return run.allocate_pod([Step(Action.ALLOCATE, claim) for claim in claims])


def device_matches(ref: DeviceRef, name: str) -> bool:
    """`device`, `pool/device` or `driver/pool/device` names `ref` (how suites and users name one)."""
    return name in {ref.device, f"{ref.pool}/{ref.device}", str(ref)}
