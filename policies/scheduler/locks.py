"""SPEC §6: the scheduler's per-device affinity locks, and why a device is (not) viable.

The KEP keeps, per device of a pool that declares `sharingAffinity`, an
`AffinityState`: clean, locked to a key map, or unreconstructable. This module
holds that state as immutable values and the transitions on it (Reserve sets or
joins a lock, releasing the last holder clears it, restart reconstruction
re-derives it from bound claims), the Filter's per-device viability check and
the device choice of alpha (first-fit) and beta (affinity-aware preference).

Extraction is not done here: `dra_affinity.policies.scheduler.extraction.extract` runs once per
(claim, request, pool) and `pool_verdict` turns its result into what every
device of the pool inherits; per device, the remaining work is a capacity sum
and a dictionary comparison. Orchestration over many claims is
`dra_affinity.policies.scheduler.simulation`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType

from ..core.findings import PoolRef
from ..core.identity_enum import IdentityEnum
from ..model.resources import AllocatedDevice, Device
from .capacity import CapacityProblem, amount, fits
from .capacity import total as total_amounts
from .diagnostics import Diagnostic, describe
from .extraction import ExtractionResult, Outcome


class LockStatus(IdentityEnum):
    """The KEP's `AffinityStatus`, plus the devices for which the scheduler keeps none."""

    CLEAN = "clean"
    LOCKED = "locked"
    UNRECONSTRUCTABLE = "unreconstructable"
    UNTRACKED = "untracked"
    """No lock is kept: the pool declares no sharingAffinity (permissive), is incomplete,
    or the feature gate is off in the scheduler."""


class Reason(IdentityEnum):
    """Why one device is not viable for one request. The four KEP classes reuse their names."""

    FEATURE_GATE_OFF = "feature gate off"
    POOL_INCOMPLETE = "pool incomplete"
    IN_USE = "allocated exclusively"
    CAPACITY = "insufficient capacity"
    UNKNOWN_LOCK_STATE = Diagnostic.UNKNOWN_LOCK_STATE.value
    CEL_EVALUATION_FAILURE = Diagnostic.CEL_EVALUATION_FAILURE.value
    CLAIM_INCONSISTENT = "claim inconsistent"
    NO_KEYS_EXTRACTED = Diagnostic.NO_KEYS_EXTRACTED.value
    LOCK_MISMATCH = Diagnostic.LOCK_MISMATCH.value
    NO_CANDIDATES = "no candidate devices"
    CONSTRAINT = "constraint not satisfied"
    """A claim constraint (`matchAttribute`, `distinctAttribute`) rules the device out."""

    @property
    def diagnostic(self) -> Diagnostic | None:
        """The KEP's per-pod class, for the four affinity reasons; None for the others."""
        return _DIAGNOSTICS.get(self)


_DIAGNOSTICS: Mapping[Reason, Diagnostic] = MappingProxyType(
    {r: Diagnostic(r.value) for r in Reason if r.value in {d.value for d in Diagnostic}})
"""Reason -> its KEP class, made once: every rendered step asks (a failed `Diagnostic(value)`
lookup raises and catches per call, a large share of rendering a long summary)."""


@dataclass(frozen=True, slots=True)
class Rejection:
    """One reason a device is not viable, with the sentence a person reads."""

    reason: Reason
    message: str

    @property
    def diagnostic(self) -> Diagnostic | None:
        return self.reason.diagnostic


@dataclass(frozen=True, slots=True, order=True)
class DeviceRef:
    driver: str
    pool: str
    device: str
    pool_ref: PoolRef = field(init=False, compare=False, repr=False)
    """The device's pool, made once: Filter, Reserve and every index look it up per claim."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "pool_ref", PoolRef(self.driver, self.pool))

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"

    @classmethod
    def in_pool(cls, pool: PoolRef, device: str) -> DeviceRef:
        """A device of `pool` whose `pool_ref` is that very object: the dictionaries keyed by
        pools then find it by identity instead of comparing names, lookup after lookup."""
        ref = cls(pool.driver, pool.name, device)
        object.__setattr__(ref, "pool_ref", pool)
        return ref


LockItems = tuple[tuple[str, str], ...]


def lock_items(values: Mapping[str, str] | None) -> LockItems:
    """A lock (or the affinity a claim would set) as sorted (key, value) pairs, empty for none:
    equal maps give equal keys, so devices and waiting claims can be grouped by it."""
    return tuple(sorted(values.items())) if values else ()


@dataclass(frozen=True, slots=True)
class Holder:
    """One allocation on a device: a claim's request, and what it consumes."""

    claim: str
    request: str
    consumed: Mapping[str, Fraction] = field(default_factory=dict)
    bound: bool = False
    """True when it comes from `status.allocation` (reconstructed), not from this run."""
    shared: bool | None = None
    """A share of the device (a bound result with `shareID`: True) or the whole device (a bound
    result without one: False), as the scheduler's allocated-device tracker reads results back;
    None: what the device allows (`allowMultipleAllocations`), for an allocation made here."""


@dataclass(frozen=True, slots=True)
class DeviceState:
    """The KEP's `AffinityState` of one device, with its holders (for capacity and release)."""

    status: LockStatus
    lock: Mapping[str, str] | None = None
    holders: tuple[Holder, ...] = ()
    reason: str = ""
    """Why the device is unreconstructable (empty otherwise)."""
    consumed: Mapping[str, Fraction] = field(init=False, compare=False, repr=False)
    """The holders' summed consumption: computed once per state, read by every Filter check."""
    holding: tuple[bool, bool] = field(init=False, compare=False, repr=False)
    """(a holder holds the whole device, a holder made here takes what the device allows):
    what `in_use` reads, computed once per state."""
    lock_items: LockItems = field(init=False, compare=False, repr=False)
    """The lock as sorted (key, value) pairs (empty: no lock), made once per lock: the first-fit
    index and the replay's snapshots group devices by it after every change."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "consumed", total_amounts(h.consumed for h in self.holders))
        object.__setattr__(self, "holding", _holding(self.holders))
        object.__setattr__(self, "lock_items", lock_items(self.lock))

    def without(self, claim: str) -> DeviceState:
        """This state without `claim`'s holders; their consumption is subtracted instead of the
        remaining holders' being summed again (only names a remaining holder consumes are kept)."""
        kept: list[Holder] = []
        gone: list[Holder] = []
        for holder in self.holders:
            (gone if holder.claim == claim else kept).append(holder)
        taken = total_amounts(h.consumed for h in gone)
        names = {name for h in kept for name in h.consumed}
        consumed = {name: value - taken[name] if name in taken else value
                    for name, value in self.consumed.items() if name in names}
        whole, made_here = self.holding  # a flag no holder had set stays unset without some of them
        holding = (whole and any(h.shared is False for h in kept),
                   made_here and any(h.shared is None for h in kept))
        return self._derived(tuple(kept), consumed, holding)

    def _derived(self, holders: tuple[Holder, ...], consumed: Mapping[str, Fraction],
                 holding: tuple[bool, bool] | None = None) -> DeviceState:
        new = object.__new__(DeviceState)
        for name, value in (("status", self.status), ("lock", self.lock), ("holders", holders),
                            ("reason", self.reason), ("consumed", consumed),
                            ("holding", _holding(holders) if holding is None else holding),
                            ("lock_items", self.lock_items)):
            object.__setattr__(new, name, value)
        return new

    def joined(self, holder: Holder) -> DeviceState:
        """This state with one more holder; the sum and the holding flags are extended, not
        recomputed over every holder (a device shared by 16 pods is joined and left 100,000s of
        times in a workload replay)."""
        whole, made_here = self.holding
        holding = (whole or holder.shared is False, made_here or holder.shared is None)
        return self._derived((*self.holders, holder), total_amounts((self.consumed, holder.consumed)),
                             holding)

    @property
    def tracked(self) -> bool:
        return self.status is not LockStatus.UNTRACKED


def _holding(holders: tuple[Holder, ...]) -> tuple[bool, bool]:
    return any(h.shared is False for h in holders), any(h.shared is None for h in holders)


CLEAN = DeviceState(LockStatus.CLEAN)
UNTRACKED = DeviceState(LockStatus.UNTRACKED)


def render_map(values: Mapping[str, str] | None) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted((values or {}).items())) or "-"


# -- transitions ------------------------------------------------------------------------------


def allocate(state: DeviceState, holder: Holder, affinity: Mapping[str, str] | None,
             device: str = "") -> DeviceState | Rejection:
    """Reserve: a clean device takes the request's map as its lock; a locked one is joined on a match.

    The lock is re-checked here even after Filter, as the KEP's Reserve does (another pod
    may have locked the device in between).
    """
    if not state.tracked:
        return state.joined(holder)
    if state.status is LockStatus.UNRECONSTRUCTABLE:
        return Rejection(Reason.UNKNOWN_LOCK_STATE,
                         describe(Diagnostic.UNKNOWN_LOCK_STATE, device=device or None, detail=state.reason))
    if affinity is None:
        return Rejection(Reason.NO_KEYS_EXTRACTED, describe(Diagnostic.NO_KEYS_EXTRACTED))
    if state.status is LockStatus.CLEAN:
        return DeviceState(LockStatus.LOCKED, dict(affinity), (holder,))
    if state.lock != affinity and dict(state.lock or {}) != dict(affinity):
        return Rejection(Reason.LOCK_MISMATCH, mismatch_message(state, affinity, device))
    return state.joined(holder)


def reserve(device: Device, ref: DeviceRef, state: DeviceState, claim: str, request: str,
            wanted: Mapping[str, Fraction] | CapacityProblem, affinity: Mapping[str, str] | None
            ) -> DeviceState | Rejection:
    """Reserve of one request on a device Filter passed: `allocate` with the holder it becomes.

    A device held whole records no consumption: upstream tracks capacity only for shares
    (a device that allows multiple allocations)."""
    consumed = {} if isinstance(wanted, CapacityProblem) or not device.allow_multiple_allocations else wanted
    return allocate(state, Holder(claim, request, consumed), affinity, str(ref))


def release(state: DeviceState, claim: str) -> DeviceState:
    """Drop every holder of `claim`; a tracked device without holders is clean again.

    An unreconstructable device stays so while any of its claims remain (the KEP: "until
    all claims on it drain"), even if the remaining ones would now agree.
    """
    if state.tracked and all(h.claim == claim for h in state.holders):
        return CLEAN
    return state.without(claim)


def reconstruct(bound: Sequence[tuple[Holder, ExtractionResult]]) -> DeviceState:
    """Restart reconstruction: every bound claim's request must yield one and the same map.

    Any slice error, unsatisfied extractor, self-inconsistent claim or disagreement
    between claims makes the device unreconstructable: the scheduler never infers a lock
    from ambiguous data.
    """
    if not bound:
        return CLEAN
    holders = tuple(h for h, _ in bound)
    first: tuple[Holder, Mapping[str, str]] | None = None
    for holder, result in bound:
        if result.outcome is not Outcome.OK or result.affinity is None:
            who = f"claim {holder.claim} request {holder.request!r}"
            return DeviceState(LockStatus.UNRECONSTRUCTABLE, None, holders,
                               f"{who}: {_extraction_problem(result)}")
        if first is None:
            first = (holder, result.affinity)
        elif dict(first[1]) != dict(result.affinity):
            who = f"claim {holder.claim} request {holder.request!r}"
            other = f"claim {first[0].claim} request {first[0].request!r}"
            return DeviceState(
                LockStatus.UNRECONSTRUCTABLE, None, holders,
                f"bound claims disagree: {other} extracts {render_map(first[1])}, "
                f"{who} extracts {render_map(result.affinity)}",
            )
    assert first is not None
    return DeviceState(LockStatus.LOCKED, dict(first[1]), holders)


def _extraction_problem(result: ExtractionResult) -> str:
    if result.outcome is Outcome.NOT_SATISFIED:
        return "no value extracted for " + ", ".join(result.unsatisfied)
    if result.error is not None:
        return f"{result.outcome.value}: {result.error.message}"
    return result.outcome.value


def mismatch_message(state: DeviceState, affinity: Mapping[str, str], device: str) -> str:
    return describe(
        Diagnostic.LOCK_MISMATCH, device=device or None,
        detail=f"locked to {render_map(state.lock)}, the request extracts {render_map(affinity)}",
    )


# -- Filter -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PoolFilterVerdict:
    """What one (claim request, pool) gives every device of the pool, computed once.

    `tracked`: the scheduler keeps locks for the pool's devices. `affinity`: the
    request's effective map (None for a permissive pool). `rejection`: a reason that
    rules out every device of the pool; a CEL evaluation failure aborts the pod.
    """

    tracked: bool
    affinity: Mapping[str, str] | None = None
    rejection: Rejection | None = None
    extraction: ExtractionResult | None = None

    @property
    def aborts(self) -> bool:
        return self.rejection is not None and self.rejection.reason is Reason.CEL_EVALUATION_FAILURE

    @property
    def pool_level(self) -> bool:
        """The pool is skipped before any device is looked at (gate off, incomplete)."""
        return self.rejection is not None and self.rejection.reason in (
            Reason.FEATURE_GATE_OFF, Reason.POOL_INCOMPLETE)


def pool_precheck(*, declares_affinity: bool, complete: bool, incomplete_reason: str,
                  feature_gate: bool) -> PoolFilterVerdict | None:
    """The pool-level verdict when no CEL may run: incomplete pool, or gate off on an affinity pool."""
    if not complete:
        return PoolFilterVerdict(False, rejection=Rejection(
            Reason.POOL_INCOMPLETE, f"the pool is incomplete ({incomplete_reason}): the scheduler skips it"))
    if declares_affinity and not feature_gate:
        return PoolFilterVerdict(False, rejection=Rejection(
            Reason.FEATURE_GATE_OFF,
            "the pool declares sharingAffinity and the DRASharingAffinity feature gate is off in the "
            "scheduler: its devices are unallocatable (fail closed)"))
    if not declares_affinity:
        return PoolFilterVerdict(False)
    return None


def pool_verdict(result: ExtractionResult) -> PoolFilterVerdict:
    """The verdict of an affinity pool from the request's extraction (SPEC §5 outcome)."""
    outcome = result.outcome
    if outcome is Outcome.OK:
        return PoolFilterVerdict(True, affinity=dict(result.affinity or {}), extraction=result)
    if outcome is Outcome.NOT_APPLICABLE:
        return PoolFilterVerdict(False, extraction=result)
    if outcome is Outcome.NOT_SATISFIED:
        detail = "no value for " + ", ".join(result.unsatisfied)
        rejection = Rejection(Reason.NO_KEYS_EXTRACTED,
                              describe(Diagnostic.NO_KEYS_EXTRACTED, detail=detail))
    elif outcome is Outcome.SLICE_ERROR:
        message = result.error.message if result.error else "slice error"
        rejection = Rejection(Reason.CEL_EVALUATION_FAILURE,
                              describe(Diagnostic.CEL_EVALUATION_FAILURE, detail=message))
    elif outcome is Outcome.CLAIM_INCONSISTENT:
        message = result.error.message if result.error else "claim self-inconsistent"
        rejection = Rejection(Reason.CLAIM_INCONSISTENT,
                              f"the claim is self-inconsistent (UnschedulableAndUnresolvable): {message}")
    else:  # POOL_INCOMPLETE: precheck normally catches it first
        rejection = Rejection(Reason.POOL_INCOMPLETE, "the pool is incomplete: the scheduler skips it")
    return PoolFilterVerdict(True, rejection=rejection, extraction=result)


def in_use(device: Device, state: DeviceState) -> bool:
    """The device is allocated exclusively: to a holder of the whole device, or, for a device
    that does not allow multiple allocations, to any holder made here."""
    whole, made_here = state.holding
    return whole or (made_here and not device.allow_multiple_allocations)


def bound_holder(claim: str, result: AllocatedDevice) -> Holder | None:
    """What one `status.allocation` result holds, read as kube-scheduler's allocated-device
    tracker (`allocateddevices.go`) reads it, not recomputed from today's slice and claim.

    Why: the result is what the allocator decided then; the slice or the request policy may
    have changed since. An admin-access result holds nothing (None); one without `shareID`
    holds the whole device, whatever the slice now says about multiple allocations; one with
    `shareID` consumes exactly its `consumedCapacity`, nothing when absent."""
    if result.admin_access:
        return None
    if result.share_id is None:
        return Holder(claim, result.request, {}, bound=True, shared=False)
    consumed: dict[str, Fraction] = {}
    for name, raw in (result.consumed_capacity or {}).items():
        value = amount(raw)
        if value is not None:
            consumed[str(name)] = value
    return Holder(claim, result.request, consumed, bound=True, shared=True)


def room_for(device: Device, ref: DeviceRef, state: DeviceState,
             wanted: Mapping[str, Fraction] | CapacityProblem
             ) -> tuple[Reason, Callable[[], Rejection]] | None:
    """Filter's first stage: None when the device can take the request next to its holders
    (allows multiple allocations or has none, and the capacity fits), else the reason."""
    if state.holders and in_use(device, state):
        def used() -> Rejection:
            holders = ", ".join(sorted({h.claim for h in state.holders}))
            if device.allow_multiple_allocations:
                return Rejection(Reason.IN_USE, f"device {ref} is allocated exclusively to {holders} "
                                                "(an allocation result without shareID)")
            return Rejection(Reason.IN_USE, f"device {ref} does not allow multiple allocations and "
                                            f"is allocated to {holders}")
        return Reason.IN_USE, used
    if isinstance(wanted, CapacityProblem):
        problem = wanted
        return Reason.CAPACITY, lambda: Rejection(Reason.CAPACITY, f"device {ref}: {problem.message}")
    short = fits(device, state.consumed, wanted)
    if short is not None:
        found = short
        return Reason.CAPACITY, lambda: Rejection(
            Reason.CAPACITY, f"device {ref} has not enough capacity left: {found.message}")
    return None


def _failures(device: Device, ref: DeviceRef, state: DeviceState, verdict: PoolFilterVerdict,
              wanted: Mapping[str, Fraction] | CapacityProblem
              ) -> Iterator[tuple[Reason, Callable[[], Rejection]]]:
    """The reasons `device` is not viable, in Filter order, each with its rejection built on demand.

    One definition of Filter for both callers: `check_device` (every reason, with the
    sentences) and `first_reason` (the reason the scheduler reports and counts, no sentence),
    which a workload replay asks 100,000s of times.
    """
    if verdict.pool_level:
        pool_wide = verdict.rejection
        assert pool_wide is not None
        yield pool_wide.reason, lambda: pool_wide
        return
    room = room_for(device, ref, state, wanted)
    if room is not None:
        yield room
    if verdict.tracked and state.status is LockStatus.UNRECONSTRUCTABLE:
        yield Reason.UNKNOWN_LOCK_STATE, lambda: Rejection(
            Reason.UNKNOWN_LOCK_STATE,
            describe(Diagnostic.UNKNOWN_LOCK_STATE, device=str(ref), detail=state.reason))
    if verdict.rejection is not None:
        rejection: Rejection = verdict.rejection
        yield rejection.reason, lambda: rejection
    elif (verdict.tracked and verdict.affinity is not None and state.status is LockStatus.LOCKED
          and dict(state.lock or {}) != dict(verdict.affinity)):
        affinity = verdict.affinity
        yield Reason.LOCK_MISMATCH, lambda: Rejection(
            Reason.LOCK_MISMATCH, mismatch_message(state, affinity, str(ref)))


def check_device(device: Device, ref: DeviceRef, state: DeviceState, verdict: PoolFilterVerdict,
                 wanted: Mapping[str, Fraction] | CapacityProblem) -> tuple[Rejection, ...]:
    """Every reason `device` is not viable for the request, in the KEP's Filter order.

    1 capacity (KEP-5075), 2 not unreconstructable, 3 extraction succeeded, 4 every
    extractor satisfied, 5 lock empty or equal to the request's map. The first reason
    is the one the scheduler reports and counts; empty means viable.
    """
    return tuple(build() for _, build in _failures(device, ref, state, verdict, wanted))


def first_reason(device: Device, ref: DeviceRef, state: DeviceState, verdict: PoolFilterVerdict,
                 wanted: Mapping[str, Fraction] | CapacityProblem) -> Reason | None:
    """The first reason of `check_device` (None: viable), without building any message."""
    for reason, _ in _failures(device, ref, state, verdict, wanted):
        return reason
    return None


# -- device choice ----------------------------------------------------------------------------


class Mode(IdentityEnum):
    ALPHA = "alpha"
    """First-fit in slice/device order: no affinity-aware preference (the KEP's alpha)."""
    BETA = "beta"
    """Prefer a compatibly locked device over a clean one; pools with unknown lock state last."""


@dataclass(frozen=True, slots=True)
class Option:
    """A viable device, with what beta's preference looks at."""

    ref: DeviceRef
    state: DeviceState
    position: int
    """Slice/device order over the candidate pools: first-fit's order."""
    pool_has_unknown: bool = False
    """Some device of the same pool (node) is unreconstructable."""


def preference(mode: Mode, option: Option) -> tuple[int, ...]:
    """Sort key: lower is chosen first. Alpha only looks at the position."""
    if mode is Mode.ALPHA:
        return (option.position,)
    reuse = 0 if option.state.status is LockStatus.LOCKED else 1
    return (reuse, int(option.pool_has_unknown), option.position)


def rank(mode: Mode, options: Sequence[Option]) -> list[Option]:
    """The viable devices in the order the allocator tries them."""
    return sorted(options, key=lambda o: preference(mode, o))


# -- metrics ----------------------------------------------------------------------------------

METRIC_NAMES = (
    "sharing_affinity_locked_devices",
    "sharing_affinity_unreconstructable_devices",
    "sharing_affinity_extractor_evaluations_total",
    "sharing_affinity_lock_conflict_total",
    "sharing_affinity_no_keys_extracted_total",
    "sharing_affinity_compatible_reuse_total",
)


@dataclass(frozen=True, slots=True)
class LockMetrics:
    """The KEP's gauges (from the final states) and counters (accumulated over a run)."""

    locked_devices: int = 0
    unreconstructable_devices: int = 0
    extractor_evaluations_total: int = 0
    lock_conflict_total: int = 0
    no_keys_extracted_total: int = 0
    compatible_reuse_total: int = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name.removeprefix("sharing_affinity_")) for name in METRIC_NAMES}


def gauges(states: Mapping[DeviceRef, DeviceState]) -> tuple[int, int]:
    """(locked devices, unreconstructable devices)."""
    statuses = [s.status for s in states.values()]
    return statuses.count(LockStatus.LOCKED), statuses.count(LockStatus.UNRECONSTRUCTABLE)
