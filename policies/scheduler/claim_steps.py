"""One claim through the scheduler: Filter, device choice and Reserve (SPEC §6, KEP-5981).

A claim is placed as kube-scheduler's structured allocator places it (`allocator.search`:
per-device selectors, constraints, backtracking, allocation modes, bound capacity), with the
KEP's lock as one more device check. A claim the search cannot change — ExactCount requests
only, no constraints, no admin access, selectors that take each pool whole — is placed by the
search's first branch (`first_fit`): Filter on every candidate device in first-fit order (alpha
stops at the first viable one, beta ranks them all), then each request in turn.

In both, Filter asks each candidate device's pool for the request's extraction verdict and
checks the device's state against it (`locks.check_device`); the choice is alpha's first fit
or beta's preference (`locks.preference`); Reserve takes the device (`locks.allocate`) in the
claim's `Tentative` view, and the claim's reservations are committed together. What Filter
looked at is kept per device (`Detail.DEVICES`) or as counts per first reason
(`Detail.COUNTS`), for the report.

Pools are visited in (driver, pool) order as if they were one node's; without DeviceClasses
every pool the pool filter passes is a candidate for every request. A slice error aborts the
claim, as a scheduler Filter error aborts the pod.

The checks here are computed every time they are asked, as the scheduler computes them; the
driver runs them through `claim_memos.RememberingClaimSteps`, the speed layers that answer a
check again while what it reads is unchanged, and `first_fit` declares its own (an index
instead of the device walk, shared verdicts, remembered failures). With
`DRA_AFFINITY_SPEED_LAYERS=none` every check is computed again, with the same outcome.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction

from ..core import layers
from ..core.findings import PoolRef
from ..core.limits import KubernetesVersion
from ..model.resources import Device, DeviceClass, DeviceRequest, ResourceClaim
from . import locks
from .allocator import (
    ClaimAborted,
    Entry,
    SearchResult,
    search,
    search_pod,
    visiting_order,
)
from .candidates import DeviceMatch, match_device, missing_class
from .capacity import CapacityProblem, demand, short_of
from .device_states import DeviceStates, Tentative
from .diagnostics import Diagnostic
from .extraction import ExtractionMemo, ExtractionPool, ExtractionResult
from .locks import DeviceRef, DeviceState, Holder, LockStatus, PoolFilterVerdict, Reason, Rejection
from .pools import Pool

CandidateFilter = Callable[[DeviceRequest, Mapping[str, DeviceClass], Pool], bool]

class Detail(enum.Enum):
    """How much of Filter's work a step keeps for the report."""

    DEVICES = "devices"
    """Every device Filter looked at, with all its rejections (`StepResult.evaluated`)."""
    COUNTS = "counts"
    """Only how many devices were turned down for which first reason (`StepResult.rejected`):
    bounded state for large inputs."""


class Action(enum.Enum):
    ALLOCATE = "allocate"
    RELEASE = "release"


@dataclass(frozen=True, slots=True)
class Step:
    action: Action
    claim: str
    """`namespace/name`; a bare name means namespace `default`."""
    with_next: bool = False
    """Allocated together with the next step: one pod's claims (`ClaimSteps.allocate_pod`)."""


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

    @classmethod
    def made(cls, request: DeviceRequest, ref: DeviceRef, before: LockStatus, after: DeviceState
             ) -> Placement:
        """The request's placement on a device found in `before` and left in `after`. Reserve
        joins a locked device only under the same values, so a locked device is a reuse, unless
        the request has admin access (it takes no lock)."""
        return cls(request.name, ref, before, after.lock,
                   before is LockStatus.LOCKED and not request.admin_access)


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


@dataclass
class FilterCounters:
    """The KEP's counters as the scheduler would have counted them so far."""

    evaluations: int = 0
    conflicts: int = 0
    no_keys: int = 0
    reuse: int = 0

    def count_rejections(self, rejected: Iterable[RejectionCount]) -> None:
        """Filter's turned-down devices by first reason: a lock mismatch is a lock conflict, a
        request without keys its own counter; the other reasons have none."""
        for r in rejected:
            if r.reason is Reason.LOCK_MISMATCH:
                self.conflicts += r.count
            elif r.reason is Reason.NO_KEYS_EXTRACTED:
                self.no_keys += r.count

    def metrics(self, states: Mapping[DeviceRef, DeviceState]) -> locks.LockMetrics:
        """The KEP's metrics: the gauges read from the devices' `states`, these counters."""
        locked, unknown = locks.gauges(states)
        return locks.LockMetrics(locked, unknown, self.evaluations, self.conflicts, self.no_keys, self.reuse)


def demand_key(request: DeviceRequest) -> str:
    """What `capacity.demand` reads of a request (its capacity requests), as a key."""
    requests = request.capacity_requests
    return repr(sorted(requests.items())) if requests else "[]"


def device_requests(claim: ResourceClaim) -> dict[str, DeviceRequest]:
    """Every request and firstAvailable sub-request of the claim, by name."""
    out: dict[str, DeviceRequest] = {}
    for request in claim.requests:
        for sub in request.first_available or ((request.exactly,) if request.exactly else ()):
            out[sub.name] = sub
    return out


def first_reasons(evaluated: Sequence[Evaluated]) -> dict[Reason, int]:
    """Per first reason, how many of the devices were turned down for it (in order of appearance)."""
    counts: dict[Reason, int] = {}
    for e in evaluated:
        if e.rejections:
            reason = e.rejections[0].reason
            counts[reason] = counts.get(reason, 0) + 1
    return counts


@dataclass
class ClaimSteps:
    """Filter, device choice and Reserve for one claim at a time, over a run's `DeviceStates`.

    Holds what the scheduler knows besides the states (pools' extraction summaries, claims,
    classes, mode, feature gate), the extraction memo and the KEP's counters: the extractions
    the scheduler counts once per (claim, request, pool), however often a claim is tried.
    """

    states: DeviceStates
    summaries: Mapping[PoolRef, ExtractionPool]
    claims: Mapping[str, ResourceClaim]
    mode: locks.Mode
    feature_gate: bool
    version: KubernetesVersion
    pool_ok: Callable[[PoolRef], bool]
    candidate: CandidateFilter | None
    classes: dict[str, DeviceClass]
    detail: Detail = Detail.DEVICES
    fractional_range: bool = False
    """`DRAFractionalCapacityRange`: a capacity's `validRange` steps in milli-units."""
    exhaustive: bool = False
    """Filter every candidate device even after the search found one (`explain` lists them all)."""
    memo: ExtractionMemo | None = None
    counters: FilterCounters = field(default_factory=FilterCounters)
    notes: list[str] = field(default_factory=list)
    counted: dict[tuple[str, str], int] = field(default_factory=dict)
    """(claim, request) -> bit mask of the pools whose extraction the scheduler has counted."""
    pool_bits: dict[PoolRef, int] = field(default_factory=dict)
    entries: list[Entry] | None = None
    """Every simulated device in the allocator's visiting order (`allocator.visiting_order`)."""
    first_branch: Callable[[Step, ResourceClaim], StepResult | None] | None = None
    """The search's first branch for a claim the search cannot change (`first_fit.FirstFitIndex`,
    given by the driver, which builds it over these steps): its placement or failure, or None
    when the search must decide. Without it every claim goes through the search, which visits
    (and counts) fewer devices than the first branch's walk in beta mode."""
    active_layers: frozenset[str] = field(init=False, default=frozenset())
    """Every speed layer in effect at the step's start (`core.layers.active_layers`)."""
    layers_spec: tuple[str, int] | None = field(init=False, default=None)
    """`DRA_AFFINITY_SPEED_LAYERS` and the number of declared layers `active_layers` was read under."""

    def __post_init__(self) -> None:
        self.asked_layers()
        if self.memo is None:
            self.memo = ExtractionMemo(self.version)
        self.pool_bits = {ref: 1 << n for n, ref in enumerate(self.states.pools)}

    def asked_layers(self) -> None:
        """The speed layers in effect, asked once per step: the checks below run per device.
        The variable is read at every step; it is parsed again only when it reads differently."""
        spec = (os.environ.get(layers.ENV, ""), len(layers.LAYERS))
        if spec == self.layers_spec:
            return
        active = layers.active_layers()
        self.layers_spec = spec
        self.active_layers = active

    # -- what Filter asks of a pool: the request's extraction verdict ------------------------

    def extraction(self, claim: ResourceClaim, request: str, ref: PoolRef, name: str | None = None
                   ) -> ExtractionResult:
        """The extraction, memoised by content; counted once per (claim, request, pool) as the
        scheduler's `extractor_evaluations_total` would be (`name`: the claim's, when `claim`
        is a copy's spec under another name)."""
        assert self.memo is not None
        result = self.memo.extract(claim, request, self.summaries[ref])
        self.count_evaluations(name or claim.qualified_name, request, self.pool_bits[ref],
                               len(result.evaluations))
        return result

    def count_evaluations(self, claim: str, request: str, bits: int, evaluations: int) -> None:
        key = (claim, request)
        seen = self.counted.get(key, 0)
        if not seen & bits:
            self.counted[key] = seen | bits
            self.counters.evaluations += evaluations

    def forget(self, claim: str, requests: Iterable[str]) -> None:
        """Drop what was counted for `claim`'s requests: a workload copy that departed is never
        placed again, so a long replay keeps only its live copies' counts."""
        for request in requests:
            self.counted.pop((claim, request), None)

    def precheck(self, pool: Pool) -> PoolFilterVerdict | None:
        """The pool's verdict when no CEL may run (incomplete, gate off, no sharingAffinity)."""
        return locks.pool_precheck(declares_affinity=pool.declares_affinity, complete=pool.complete,
                                   incomplete_reason=pool.incomplete_reason, feature_gate=self.feature_gate)

    def verdict(self, claim: ResourceClaim, request: str, pool: Pool, *, counted: bool = True,
                name: str | None = None) -> PoolFilterVerdict:
        """The pool's verdict for the claim's request. `counted`: a Filter run the scheduler's
        counter sees (False: a question about the claim, such as which pools a waiting claim
        could use)."""
        early = self.precheck(pool)
        if early is not None:
            return early
        if not counted:
            assert self.memo is not None
            return locks.pool_verdict(self.memo.extract(claim, request, self.summaries[pool.ref]))
        return locks.pool_verdict(self.extraction(claim, request, pool.ref, name))

    def tracked(self, pool: Pool) -> bool:
        """The scheduler keeps locks for the pool's devices (gate on, complete, named extractors)."""
        return self.feature_gate and pool.complete and bool(pool.extractors)

    # -- what Filter asks of a device ---------------------------------------------------------

    def visiting_order(self) -> list[Entry]:
        if self.entries is None:
            self.entries = visiting_order([p for ref, p in self.states.pools.items() if self.pool_ok(ref)])
        return self.entries

    def device_match(self, request: DeviceRequest, entry: Entry) -> DeviceMatch | bool:
        """The device against the request's class and own selectors."""
        if self.candidate is not None:
            return not self.classes or self.candidate(request, self.classes, entry.pool)
        if not self.classes:
            return True
        return match_device(request, self.classes[request.device_class_name], entry.device,
                            entry.ref.driver, entry.pool.ref, kubernetes_version=self.version)

    def matching_pools(self, request: DeviceRequest) -> list[Pool]:
        """The pools holding a device the request's selectors match (errors left to the search)."""
        found: list[Pool] = []
        for entry in self.visiting_order():
            if found and found[-1] is entry.pool:
                continue
            match = self.device_match(request, entry)
            if match if isinstance(match, bool) else match.matched:
                found.append(entry.pool)
        return found

    def demand(self, device: Device, request: DeviceRequest, key: str | None = None
               ) -> Mapping[str, Fraction] | CapacityProblem:
        """`capacity.demand` of the request on the device (`key`: `demand_key(request)`, for a
        layer that remembers demands)."""
        return demand(device, request, self.fractional_range)

    def device_check(self, request: DeviceRequest, entry: Entry, state: DeviceState,
                     verdict: PoolFilterVerdict, key: str | None = None) -> Evaluated:
        """Filter's check of one device in `state` under the pool's verdict (`key`: as for
        `demand`)."""
        return Evaluated(request.name, entry.ref, state.status, locks.check_device(
            entry.device, entry.ref, state, verdict, self.demand(entry.device, request, key)))

    # -- one claim -------------------------------------------------------------------------------

    def allocate(self, step: Step) -> StepResult:
        """Place the step's claim: every request or none (a claim already holding devices is
        left as it is, with a note)."""
        return self.place(step, self.claims[step.claim])

    def place(self, step: Step, claim: ResourceClaim, *, ask_layers: bool = True) -> StepResult:
        """`allocate` of `claim`'s spec under the step's name (a workload's copy is its
        variant's spec, held and counted under the copy's own name). `ask_layers` False: the
        caller asked the speed layers (`asked_layers`) once for a run of steps (the replay)."""
        if ask_layers:
            self.asked_layers()
        if self.states.held.get(step.claim):
            self.notes.append(f"allocate {step.claim}: the claim is already allocated; step skipped")
            return StepResult(step, True)
        placed = self.first_branch(step, claim) if self.first_branch is not None else None
        return placed if placed is not None else self.search(step, claim)

    def search(self, step: Step, claim: ResourceClaim) -> StepResult:
        """One claim through `allocator.search`, the KEP's Filter as its device check."""
        entries = self.visiting_order()
        working = Tentative(self.states.states)
        host = KepFilterHost(self, claim, working, step.claim)
        result = search(claim, entries, host, prepare=host.prepare, ranked=self.ranking(working))
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
        self.counters.count_rejections(rejected)
        kept = evaluated if self.detail is Detail.DEVICES else ()
        if not result.placed:
            return self._search_failure(step, claim, result, host, kept, rejected)
        placements = [Placement.made(request, entry.ref, self.states.states[entry.ref].status,
                                     working[entry.ref]) for request, entry in result.chosen]
        self.commit(step.claim, working, placements, host.committed)
        return StepResult(step, True, tuple(placements), kept, rejected=rejected)

    def ranking(self, working: Tentative
                ) -> Callable[[DeviceRequest, Sequence[Entry]], Sequence[Entry]] | None:
        """The order the search tries a request's viable devices in: beta's preference over
        their states in `working`; None in alpha, whose order is first fit's."""
        if self.mode is not locks.Mode.BETA:
            return None

        def ranked(request: DeviceRequest, found: Sequence[Entry]) -> Sequence[Entry]:
            return sorted(found, key=lambda e: locks.preference(self.mode, locks.Option(
                e.ref, working[e.ref], e.position, self.states.has_unknown(e.pool.ref))))
        return ranked

    def allocate_pod(self, steps: Sequence[Step]) -> tuple[StepResult, ...]:
        """A pod's claims allocated together (`allocator.search_pod`), as kube-scheduler's one
        `Allocate` call: placed one after the other first (the joint search's first branch,
        and each claim's own report); when a later claim then fails, the joint search, which
        may move the earlier claims' devices. All placed, or none: the sequential reports say
        why, and nothing stays held (the scheduler reserves a pod's claims only together).
        An admin-access request before the last claim goes straight to the joint search: the
        devices it takes whole are in use for the later claims only within one `Allocate`."""
        before_states, before_held = dict(self.states.states), dict(self.states.held)
        counters = replace(self.counters)
        pending = [n for n, step in enumerate(steps) if not self.states.held.get(step.claim)]
        admin = any(sub.admin_access for n in pending[:-1] for sub in device_requests(
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
        entries = self.visiting_order()
        working = Tentative(self.states.states)
        hosts = [KepFilterHost(self, claim, working, claim.qualified_name) for claim in claims]
        found = search_pod(claims, entries, hosts, ranked=self.ranking(working))
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
            before = {e.ref: (working if e.ref in taken else self.states.states)[e.ref].status
                      for _, e in chosen}
            placements = tuple(Placement.made(request, entry.ref, before[entry.ref], working[entry.ref])
                               for request, entry in chosen)
            taken.update(before)
            self.states.held[claim.qualified_name] = {p.device for p in placements}
            self.counters.reuse += sum(p.reused for p in placements)
            kept = tuple(host.evaluated.values()) if self.detail is Detail.DEVICES else ()
            out[n] = StepResult(steps[n], True, placements, kept)
        for ref, state in working.changes.items():
            for host in hosts:
                state = host.committed(state)
            self.states.commit(ref, state)
        return tuple(out)

    def _restore(self, states: Mapping[DeviceRef, DeviceState], held: dict[str, set[DeviceRef]],
                 counters: FilterCounters) -> None:
        for ref, state in list(self.states.states.items()):
            if states[ref] is not state:
                self.states.commit(ref, states[ref])
        self.states.held, self.counters = held, counters

    def commit(self, claim: str, working: Tentative, placements: Sequence[Placement],
               as_committed: Callable[[DeviceState], DeviceState] | None = None) -> None:
        """Reserve made final: the claim's tentative states committed, its devices held."""
        for ref, state in working.changes.items():
            self.states.commit(ref, state if as_committed is None else as_committed(state))
        self.states.held[claim] = {p.device for p in placements}
        self.counters.reuse += sum(p.reused for p in placements)

    def _search_failure(self, step: Step, claim: ResourceClaim, result: SearchResult, host: KepFilterHost,
                        evaluated: tuple[Evaluated, ...], rejected: tuple[RejectionCount, ...]) -> StepResult:
        if result.failure is not None:
            return StepResult(step, False, (), evaluated, result.failure, result.failed_request,
                              rejected=rejected)
        requests = device_requests(claim)
        name = result.failed_request
        request = requests.get(name) if name is not None else None
        if request is None:
            failure = Rejection(Reason.NO_CANDIDATES, f"claim {step.claim}: no allocation found")
            return StepResult(step, False, (), evaluated, failure, name, rejected=rejected)
        seen = [e for e in host.evaluated.values() if e.request == request.name]
        counts = first_reasons(seen)
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
            failure = self.summary(request, counts, len(seen), wanted, viable)
        return StepResult(step, False, (), evaluated, failure, request.name, rejected=rejected)

    def summary(self, request: DeviceRequest, counts: Mapping[Reason, int], examined: int, wanted: int,
                viable: int) -> Rejection:
        """Why a request found too few viable devices, as the report words it."""
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
        """Release the step's claim: its devices lose its holders (a lock with no holder clears)."""
        self.asked_layers()
        freed = self.states.release(step.claim)
        if not freed:
            self.notes.append(f"release {step.claim}: the claim holds no device (its allocation "
                              "failed); nothing to release")
        return StepResult(step, True, released=tuple(freed))


class KepFilterHost:
    """`allocator.SearchHost` over one claim's tentative states: the KEP's Filter as device check."""

    def __init__(self, steps: ClaimSteps, claim: ResourceClaim, working: Tentative, name: str) -> None:
        self.steps = steps
        self.claim = claim
        self.name = name
        """The claim's `namespace/name` (a workload's copy is its template's spec under its own)."""
        self.working = working
        self.evaluated: dict[tuple[str, DeviceRef], Evaluated] = {}
        self.listed: dict[str, list[Entry]] = {}
        self.verdicts: dict[tuple[str, PoolRef], PoolFilterVerdict] = {}
        """One claim's verdict per (request, pool): the search asks again at every device."""
        self.begun: set[str] = set()
        self.admin: set[str] = set()
        """Admin-access requests that joined a device's capacity in the tentative states."""

    def _abort(self, request: DeviceRequest, rejection: Rejection) -> ClaimAborted:
        return ClaimAborted(rejection, request.name)

    def selectable(self, request: DeviceRequest, entry: Entry) -> bool:
        match = self.steps.device_match(request, entry)
        if isinstance(match, bool):
            return match
        if match.failure is not None:
            raise self._abort(request, Rejection(Reason.CEL_EVALUATION_FAILURE,
                                                 match.failure.message(self.name)))
        return match.matched

    def quietly_selectable(self, request: DeviceRequest, entry: Entry) -> bool:
        match = self.steps.device_match(request, entry)
        return match if isinstance(match, bool) else match.matched

    def in_use(self, entry: Entry) -> bool:
        state = self.working[entry.ref]
        return bool(state.holders) and locks.in_use(entry.device, state)

    def verdict(self, request: DeviceRequest, pool: Pool) -> PoolFilterVerdict:
        key = (request.name, pool.ref)
        found = self.verdicts.get(key)
        if found is None:
            found = self.steps.verdict(self.claim, request.name, pool, name=self.name)
            self.verdicts[key] = found
        if found.aborts:
            assert found.rejection is not None
            raise self._abort(request, found.rejection)
        return found

    def begin(self, request: DeviceRequest) -> None:
        """Every candidate pool's verdict for the request, as the scheduler computes them: the
        extractions it counts, and a slice error in any of them aborts the claim."""
        if request.name in self.begun:
            return
        self.begun.add(request.name)
        for pool in self.steps.matching_pools(request):
            if self.steps.precheck(pool) is None:
                self.verdict(request, pool)

    def pool_skipped(self, request: DeviceRequest, entry: Entry) -> bool:
        early = self.steps.precheck(entry.pool)
        if early is None or not early.pool_level:
            return False
        if self.quietly_selectable(request, entry):
            self.examine(request, entry)
        return True

    def _wanted(self, request: DeviceRequest, entry: Entry) -> Mapping[str, Fraction] | CapacityProblem:
        return self.steps.demand(entry.device, request)

    def capacity_fits(self, request: DeviceRequest, entry: Entry, committed: bool) -> bool:
        wanted = self._wanted(request, entry)
        if isinstance(wanted, CapacityProblem):
            return False
        state = self.steps.states.states[entry.ref] if committed else self.working[entry.ref]
        return short_of(entry.device, state.consumed, wanted) is None

    def examine(self, request: DeviceRequest, entry: Entry) -> tuple[Rejection, ...]:
        verdict = self.verdict(request, entry.pool)
        seen = self.steps.device_check(request, entry, self.working[entry.ref], verdict)
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
        undo = self.working.undo_to(ref)
        if request.admin_access:  # no lock; a share's capacity counts within this claim only
            if entry.device.allow_multiple_allocations and not isinstance(wanted, CapacityProblem):
                self.working[ref] = self.working[ref].joined(
                    Holder(self.name, request.name, wanted, shared=True))
                self.admin.add(request.name)
                return undo
            return lambda: None
        verdict = self.verdict(request, entry.pool)
        after = locks.reserve(entry.device, ref, self.working[ref], self.name, request.name, wanted,
                              verdict.affinity)
        if isinstance(after, Rejection):  # Filter passed it: cannot happen within one claim
            raise self._abort(request, after)
        self.working[ref] = after
        return undo

    def committed(self, state: DeviceState) -> DeviceState:
        """A tentative state as committed: admin-access holders hold nothing afterwards."""
        if not self.admin:
            return state
        kept = tuple(h for h in state.holders if h.claim != self.name or h.request not in self.admin)
        if len(kept) == len(state.holders):
            return state
        return DeviceState(state.status, state.lock, kept, state.reason)

    def prepare(self, request: DeviceRequest) -> list[Entry] | None:
        """upstream `validateDeviceRequest`: the class must exist; All lists its devices."""
        absent = missing_class(request, self.steps.classes) if self.steps.candidate is None else None
        if absent is not None:
            raise self._abort(request, Rejection(Reason.NO_CANDIDATES, absent))
        if request.allocation_mode != "All":
            return None
        entries = self.steps.visiting_order()
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
        for request in device_requests(self.claim).values():
            if request.name not in tried:
                continue
            for entry in self.steps.visiting_order():
                if (request.name, entry.ref) in self.evaluated or not self.quietly_selectable(request, entry):
                    continue
                try:
                    self.examine(request, entry)
                except ClaimAborted:
                    break
