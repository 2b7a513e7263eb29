"""The lock simulator behind `dra-affinity simulate` and simulation test cases (SPEC §6).

Given slices and claims, it does what a scheduler does over time: on start,
reconstructs every device's lock from the claims that already have
`status.allocation`; then allocates (or releases) claims one step at a time,
running Filter on every candidate device, choosing one (alpha first-fit or beta
preference) and reserving it, and finally reports each device's lock state and
the KEP's metrics.

Simplifications, stated once: every pool whose (driver, name) passes the pool
filter is a candidate for every request (pass `candidate` to narrow pools with
DeviceClasses), pools are visited in (driver, pool) order as if they were one
node's, and a request with `count: n` takes n distinct devices. A slice error in
any candidate pool aborts the claim, as a scheduler Filter error aborts the pod.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from dra_affinity.policies.core.findings import Finding, PoolRef
from dra_affinity.policies.core.limits import KubernetesVersion, limits_for
from dra_affinity.policies.model.resources import (
    Device,
    DeviceClass,
    DeviceRequest,
    ResourceClaim,
    ResourceSlice,
)
from dra_affinity.policies.scheduler import locks
from dra_affinity.policies.scheduler.candidates import SelectorError, pool_is_candidate
from dra_affinity.policies.scheduler.capacity import CapacityProblem, amount, demand, render
from dra_affinity.policies.scheduler.claims import claim_problems
from dra_affinity.policies.scheduler.diagnostics import Diagnostic
from dra_affinity.policies.scheduler.dryrun import Filters, to_extraction_pool
from dra_affinity.policies.scheduler.extraction import ExtractionPool, ExtractionResult, extract
from dra_affinity.policies.scheduler.locks import (
    DeviceRef,
    DeviceState,
    Holder,
    LockStatus,
    Metrics,
    Mode,
    Option,
    PoolVerdict,
    Reason,
    Rejection,
)
from dra_affinity.policies.scheduler.pools import Pool, build_pools

CandidateFilter = Callable[[DeviceRequest, Mapping[str, DeviceClass], Pool], bool]


class Action(enum.Enum):
    ALLOCATE = "allocate"
    RELEASE = "release"


@dataclass(frozen=True, slots=True)
class Step:
    action: Action
    claim: str
    """`namespace/name`; a bare name means namespace `default`."""


def parse_order(text: str) -> list[Step]:
    """`a,b,-a,c`: allocate a, allocate b, release a, allocate c (names cannot start with `-`)."""
    steps = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item.startswith("-"):
            steps.append(Step(Action.RELEASE, item[1:].strip()))
        else:
            steps.append(Step(Action.ALLOCATE, item))
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

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """For an unplaced claim: the distinct first reasons of the failed request's devices."""
        if self.placed:
            return ()
        found: list[Reason] = []
        if self.failure is not None and self.failure.reason is not Reason.NO_CANDIDATES:
            found.append(self.failure.reason)
        for e in self.evaluated:
            if e.request == self.failed_request and e.rejections and e.rejections[0].reason not in found:
                found.append(e.rejections[0].reason)
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
        return {k: render(v) for k, v in self.state.consumed.items()}


@dataclass(frozen=True, slots=True)
class SimulationReport:
    mode: Mode
    feature_gate: bool
    reconstructed: tuple[DeviceReport, ...]
    steps: tuple[StepResult, ...]
    devices: tuple[DeviceReport, ...]
    metrics: Metrics
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
    states: dict[DeviceRef, DeviceState] = field(default_factory=dict)
    devices: dict[DeviceRef, Device] = field(default_factory=dict)
    extractions: dict[tuple[str, str, PoolRef], ExtractionResult] = field(default_factory=dict)
    counters: _Counters = field(default_factory=_Counters)
    pool_devices: dict[PoolRef, list[tuple[Device, DeviceRef]]] = field(default_factory=dict)
    held: dict[str, set[DeviceRef]] = field(default_factory=dict)
    """claim -> the devices it holds (bound or placed by a step)."""
    notes: list[str] = field(default_factory=list)

    # -- per (claim, request, pool) ---------------------------------------------------------

    def extraction(self, claim: ResourceClaim, request: str, ref: PoolRef) -> ExtractionResult:
        key = (claim.qualified_name, request, ref)
        cached = self.extractions.get(key)
        if cached is None:
            cached = extract(claim, request, self.summaries[ref], kubernetes_version=self.version)
            self.counters.evaluations += len(cached.evaluations)
            self.extractions[key] = cached
        return cached

    def verdict(self, claim: ResourceClaim, request: str, pool: Pool) -> PoolVerdict:
        early = locks.pool_precheck(declares_affinity=pool.declares_affinity, complete=pool.complete,
                                    incomplete_reason=pool.incomplete_reason,
                                    feature_gate=self.feature_gate)
        if early is not None:
            return early
        return locks.pool_verdict(self.extraction(claim, request, pool.ref))

    def tracked(self, pool: Pool) -> bool:
        """The scheduler keeps locks for the pool's devices (gate on, complete, named extractors)."""
        return self.feature_gate and pool.complete and bool(pool.extractors)

    # -- start: reconstruction --------------------------------------------------------------

    def reconstruct(self) -> None:
        bound: dict[DeviceRef, list[tuple[Holder, ResourceClaim]]] = {}
        for claim in self.claims.values():
            for index, result in enumerate(claim.allocation):
                ref = DeviceRef(result.driver, result.pool, result.device)
                if ref not in self.devices:
                    if self.pool_ok(ref.pool_ref):
                        self.notes.append(f"claim {claim.qualified_name} is allocated device {ref}, "
                                          "which is not in the input: ignored")
                    continue
                holder = Holder(claim.qualified_name, result.request,
                                self._bound_consumption(claim, index, result.request, self.devices[ref]),
                                bound=True)
                bound.setdefault(ref, []).append((holder, claim))
                self.held.setdefault(claim.qualified_name, set()).add(ref)
        for ref in self.devices:
            pool = self.pools[ref.pool_ref]
            held = bound.get(ref, [])
            holders = tuple(h for h, _ in held)
            if not self.tracked(pool):
                self.states[ref] = DeviceState(LockStatus.UNTRACKED, holders=holders)
                continue
            self.states[ref] = locks.reconstruct(
                [(h, self.extraction(c, h.request, pool.ref)) for h, c in held])

    def _bound_consumption(self, claim: ResourceClaim, index: int, request: str,
                           device: Device) -> dict[str, Fraction]:
        """`consumedCapacity` of the allocation result, else what the request would consume now."""
        status = claim.raw.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        raw = results[index].get("consumedCapacity") if index < len(results) else None
        if isinstance(raw, Mapping):
            parsed = {str(k): amount(v) for k, v in raw.items()}
            return {k: v for k, v in parsed.items() if v is not None}
        spec = _device_requests(claim).get(request)
        wanted = demand(device, spec) if spec is not None else {}
        if isinstance(wanted, CapacityProblem):
            self.notes.append(f"claim {claim.qualified_name} request {request!r} on device "
                              f"{device.name}: {wanted.message}; counted as consuming nothing")
            return {}
        return wanted

    # -- steps ------------------------------------------------------------------------------

    def candidate_pools(self, request: DeviceRequest) -> list[Pool]:
        out = []
        for ref, pool in self.pools.items():
            if not self.pool_ok(ref):
                continue
            if self.classes and not (self.candidate or pool_is_candidate)(request, self.classes, pool):
                continue
            out.append(pool)
        return out

    def holds(self, claim: str) -> list[DeviceRef]:
        """The devices `claim` holds, in device order."""
        held = self.held.get(claim, set())
        return [ref for ref in self.states if ref in held]

    def allocate(self, step: Step) -> StepResult:
        claim = self.claims[step.claim]
        if self.holds(step.claim):
            self.notes.append(f"allocate {step.claim}: the claim is already allocated; step skipped")
            return StepResult(step, True)
        working = dict(self.states)
        placements: list[Placement] = []
        evaluated: list[Evaluated] = []
        for request in claim.requests:
            alternatives = request.first_available or ((request.exactly,) if request.exactly else ())
            failure: tuple[Rejection, str] | None = None
            for sub in alternatives:
                placed, seen, problem = self.place_request(claim, sub, working)
                evaluated.extend(seen)
                if problem is None:
                    placements.extend(placed)
                    failure = None
                    break
                failure = (problem, sub.name)
                if problem.reason is Reason.CEL_EVALUATION_FAILURE:
                    break  # the pod is aborted: no further sub-request is tried
            if failure is not None:
                return StepResult(step, False, (), tuple(evaluated), failure[0], failure[1])
        self.states = working
        self.held[claim.qualified_name] = {p.device for p in placements}
        self.counters.reuse += sum(p.reused for p in placements)
        return StepResult(step, True, tuple(placements), tuple(evaluated))

    def place_request(self, claim: ResourceClaim, request: DeviceRequest,
                      working: dict[DeviceRef, DeviceState]
                      ) -> tuple[list[Placement], list[Evaluated], Rejection | None]:
        """Filter, choose and reserve the devices of one (sub-)request against `working`."""
        try:
            pools = self.candidate_pools(request)
        except SelectorError as exc:  # the allocator aborts the pod, as for a slice error
            return [], [], Rejection(Reason.CEL_EVALUATION_FAILURE,
                                     exc.failure.message(claim.qualified_name))
        verdicts = {pool.ref: self.verdict(claim, request.name, pool) for pool in pools}
        for pool in pools:
            verdict = verdicts[pool.ref]
            if verdict.aborts:
                assert verdict.rejection is not None
                return [], [], verdict.rejection
        every = request.allocation_mode == "All"
        wanted_count = 1 if every else max(request.count or 1, 1)
        evaluated: list[Evaluated] = []
        options: list[Option] = []
        position = 0
        for pool in pools:
            verdict = verdicts[pool.ref]
            pool_unknown = any(working[r].status is LockStatus.UNRECONSTRUCTABLE
                               for r in self._refs(pool))
            for device, ref in self._pool_devices(pool):
                state = working[ref]
                wanted = demand(device, request)
                rejections = locks.check_device(device, ref, state, verdict, wanted)
                evaluated.append(Evaluated(request.name, ref, state.status, rejections))
                self._count(rejections)
                if not rejections:
                    options.append(Option(ref, state, position, pool_unknown))
                position += 1
                if self.mode is Mode.ALPHA and not every and len(options) >= wanted_count:
                    break
            if self.mode is Mode.ALPHA and not every and len(options) >= wanted_count:
                break
        if every:
            wanted_count = len(evaluated)
            if not evaluated or len(options) < wanted_count:
                return [], evaluated, self._summary(request, evaluated, wanted_count, len(options))
        ranked = locks.rank(self.mode, options)
        if len(ranked) < wanted_count:
            return [], evaluated, self._summary(request, evaluated, wanted_count, len(ranked))
        placements = []
        for option in ranked[:wanted_count]:
            verdict = verdicts[option.ref.pool_ref]
            wanted = demand(self.devices[option.ref], request)
            consumed = wanted if isinstance(wanted, Mapping) else {}
            holder = Holder(claim.qualified_name, request.name, consumed)
            before = working[option.ref]
            after = locks.allocate(before, holder, verdict.affinity, str(option.ref))
            if isinstance(after, Rejection):  # Reserve re-check failed: cannot happen sequentially
                return [], evaluated, after
            working[option.ref] = after
            placements.append(Placement(request.name, option.ref, before.status, after.lock,
                                        reused=before.status is LockStatus.LOCKED))
        return placements, evaluated, None

    def _summary(self, request: DeviceRequest, evaluated: Sequence[Evaluated], wanted: int,
                 viable: int) -> Rejection:
        if not evaluated:
            return Rejection(Reason.NO_CANDIDATES,
                             f"request {request.name!r}: no device in the input can serve it")
        firsts = [e.rejections[0] for e in evaluated if e.rejections]
        counts: dict[Reason, int] = {}
        for r in firsts:
            counts[r.reason] = counts.get(r.reason, 0) + 1
        listed = ", ".join(f"{n} {reason.value}" for reason, n in counts.items())
        reason = firsts[0].reason if firsts else Reason.NO_CANDIDATES
        return Rejection(reason, f"request {request.name!r}: {viable} of {wanted} device(s) viable "
                                 f"among {len(evaluated)} candidate(s) ({listed})")

    def _count(self, rejections: Sequence[Rejection]) -> None:
        if not rejections:
            return
        if rejections[0].reason is Reason.LOCK_MISMATCH:
            self.counters.conflicts += 1
        elif rejections[0].reason is Reason.NO_KEYS_EXTRACTED:
            self.counters.no_keys += 1

    def release(self, step: Step) -> StepResult:
        freed = self.holds(step.claim)
        for ref in freed:
            self.states[ref] = locks.release(self.states[ref], step.claim)
        self.held.pop(step.claim, None)
        if not freed:
            self.notes.append(f"release {step.claim}: the claim holds no device (its allocation "
                              "failed); nothing to release")
        return StepResult(step, True, released=tuple(freed))

    # -- helpers ----------------------------------------------------------------------------

    def _pool_devices(self, pool: Pool) -> list[tuple[Device, DeviceRef]]:
        cached = self.pool_devices.get(pool.ref)
        if cached is None:
            cached = [(d, DeviceRef(pool.ref.driver, pool.ref.name, d.name)) for d, _ in pool.devices]
            self.pool_devices[pool.ref] = cached
        return cached

    def _refs(self, pool: Pool) -> list[DeviceRef]:
        return [ref for _, ref in self._pool_devices(pool)]

    def report(self, ref: DeviceRef) -> DeviceReport:
        device = self.devices[ref]
        return DeviceReport(ref, self.states[ref],
                            {k: c.value for k, c in device.capacity.items()},
                            device.allow_multiple_allocations)


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
) -> SimulationReport | list[SimulationProblem]:
    """Reconstruct the locks from bound claims, then run `steps` (default: every unallocated claim).

    `pools` restricts the candidate pools (`driver/name` or `name`, as `--pool`).
    Returns the problems instead of a report when the steps cannot be run.
    """
    limits = limits_for(kubernetes_version) if kubernetes_version else limits_for()
    steps = [Step(s.action, qualified(s.claim)) for s in
             (default_steps(claims) if steps is None else steps)]
    problems = check_steps(steps, claims)
    if problems:
        return problems
    filters = [Filters(pool=p) for p in pools]
    built = build_pools(slices, limits)
    run = _Run(
        pools=built,
        summaries={ref: to_extraction_pool(pool) for ref, pool in built.items()},
        claims={c.qualified_name: c for c in claims},
        mode=mode, feature_gate=feature_gate, version=limits.kubernetes_version,
        pool_ok=lambda ref: not filters or any(f.pool_ok(ref) for f in filters),
        candidate=candidate, classes={c.name: c for c in classes},
    )
    for ref, pool in built.items():
        if run.pool_ok(ref):  # pools left out by `pools` are not simulated at all
            for device, _ in pool.devices:
                run.devices.setdefault(DeviceRef(ref.driver, ref.name, device.name), device)
    run.reconstruct()
    reconstructed = tuple(run.report(ref) for ref in run.devices)
    results = [run.allocate(s) if s.action is Action.ALLOCATE else run.release(s) for s in steps]
    locked, unknown = locks.gauges(run.states)
    metrics = Metrics(locked, unknown, run.counters.evaluations, run.counters.conflicts,
                      run.counters.no_keys, run.counters.reuse)
    findings = tuple(f for c in claims for f in claim_problems(c))
    return SimulationReport(mode, feature_gate, reconstructed, tuple(results),
                            tuple(run.report(ref) for ref in run.devices), metrics, tuple(run.notes),
                            findings)


def device_matches(ref: DeviceRef, name: str) -> bool:
    """`device`, `pool/device` or `driver/pool/device` names `ref` (how suites and users name one)."""
    return name in {ref.device, f"{ref.pool}/{ref.device}", str(ref)}
