"""The lock simulator behind `dra-affinity simulate` and simulation test cases (SPEC §6).

Given slices and claims, it does what a scheduler does over time: on start, reconstructs every
device's lock from the claims that already have `status.allocation`; then allocates (or
releases) claims one step at a time, and finally reports each device's lock state and the
KEP's metrics. This module is the driver: the steps in order and the report. The pieces it
drives are public, so the workload replay (`replay`) and `explain` run the same model:

* `device_states`: the lock and capacity state — every device's state, the claims holding
  them, one claim's tentative reservations;
* `claim_steps`: one claim's Filter, device choice and Reserve through the structured
  allocator's search (`allocator`), and release.

docs/allocator.md says where the model deliberately differs from upstream.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..core.features import FRACTIONAL_CAPACITY_RANGE, FeatureGates
from ..core.findings import Finding, PoolRef
from ..core.gc_pause import gc_paused
from ..core.limits import KubernetesVersion, Limits, limits_for
from ..model.resources import Device, DeviceClass, ResourceClaim, ResourceSlice
from . import locks
from .claim_memos import RememberingClaimSteps
from .claim_steps import Action, CandidateFilter, ClaimSteps, Detail, Step, StepResult
from .claims import claim_problems, missing_class_problems
from .device_states import DeviceReport, DeviceStates
from .dryrun import Filters, to_extraction_pool
from .first_fit import FirstFitIndex
from .lock_book import LockBook
from .locks import (
    DeviceRef,
    DeviceState,
    Holder,
    LockMetrics,
    LockStatus,
    Mode,
)
from .pools import build_pools

__all__ = [
    "Action", "CandidateFilter", "Detail", "DeviceReport", "SimulationProblem", "SimulationReport",
    "SimulationRun", "Step", "StepResult", "check_steps", "default_steps", "device_matches", "new_run",
    "parse_order", "qualified", "simulate", "start", "try_allocate", "try_allocate_pod",
]


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




def reconstruct(steps: ClaimSteps, claims: Sequence[ResourceClaim]) -> None:
    """The scheduler's restart: every device's lock rebuilt from the claims that already have
    `status.allocation`, as their results say (`locks.bound_holder`, `locks.reconstruct`)."""
    states = steps.states
    bound: dict[DeviceRef, list[tuple[Holder, ResourceClaim]]] = {}
    for claim in claims:
        for result in claim.allocation:
            ref = DeviceRef(result.driver, result.pool, result.device)
            if ref not in states.devices:
                if steps.pool_ok(ref.pool_ref):
                    steps.notes.append(f"claim {claim.qualified_name} is allocated device {ref}, "
                                       "which is not in the input: ignored")
                continue
            holder = locks.bound_holder(claim.qualified_name, result)
            if holder is not None:
                bound.setdefault(ref, []).append((holder, claim))
            states.held.setdefault(claim.qualified_name, set()).add(ref)
    for ref in states.devices:
        pool = states.pools[ref.pool_ref]
        held = bound.get(ref, [])
        holders = tuple(h for h, _ in held)
        if not steps.tracked(pool):
            states.commit(ref, DeviceState(LockStatus.UNTRACKED, holders=holders))
            continue
        extracted = [(h, steps.extraction(c, h.request, pool.ref)) for h, c in held]
        states.commit(ref, locks.reconstruct(extracted))


class SimulationRun:
    """A simulation under way: its reconstruction, then its steps one at a time, then the end.

    Why: a report of 100,000 steps need not sit in memory to be printed. `steps()` yields
    each step as it is decided (once); `devices()`, `metrics()` and `notes` describe the state
    after the steps consumed so far. Every view of `simulate` (the collected report, the
    streamed text and JSON, with or without `--summary`) renders this one run.
    """

    def __init__(self, run: ClaimSteps, steps: Sequence[Step], findings: tuple[Finding, ...]) -> None:
        self._run = run
        self._steps = steps
        self.mode = run.mode
        self.feature_gate = run.feature_gate
        self.findings = findings
        self.reconstructed = tuple(run.states.report(ref) for ref in run.states.devices)

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
        return tuple(self._run.states.report(ref) for ref in self._run.states.devices)

    def metrics(self) -> LockMetrics:
        return self._run.counters.metrics(self._run.states.states)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self._run.notes)

    def report(self) -> SimulationReport:
        """Every remaining step decided, collected into one report."""
        with gc_paused():  # each step makes short-lived acyclic objects next to a large parsed input
            results = tuple(self.steps())
        return SimulationReport(self.mode, self.feature_gate, self.reconstructed, results, self.devices(),
                                self.metrics(), self.notes, self.findings)


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
) -> ClaimSteps:
    """Pools gathered, devices listed and every lock reconstructed from the bound claims: the
    start of a simulation, and of a workload replay (`scheduler.replay`)."""
    filters = [Filters(pool=p) for p in pools]
    built = build_pools(slices, limits)

    def pool_ok(ref: PoolRef) -> bool:
        return not filters or any(f.pool_ok(ref) for f in filters)

    devices: dict[DeviceRef, Device] = {}
    for ref, pool in built.items():
        if pool_ok(ref):  # pools left out by `pools` are not simulated at all
            for device, _ in pool.devices:
                devices.setdefault(DeviceRef.in_pool(ref, device.name), device)
    run = RememberingClaimSteps(
        states=DeviceStates(built, devices),
        summaries={ref: to_extraction_pool(pool) for ref, pool in built.items()},
        claims={c.qualified_name: c for c in claims},
        mode=mode, feature_gate=feature_gate, version=limits.kubernetes_version,
        pool_ok=pool_ok, candidate=candidate, classes={c.name: c for c in classes}, detail=detail,
        fractional_range=_fractional_range(limits.kubernetes_version, fractional_range),
    )
    run.first_branch = FirstFitIndex(run).allocate
    reconstruct(run, claims)
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
    return run.report()


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
    claims (`ClaimSteps.allocate_pod`): each claim's tentative locks and consumed capacity are
    visible to the claims after it, as the KEP's Reserve makes them immediately visible, so two
    claims of one pod cannot both take one device with different locks, and a later claim that
    finds no room makes the search move an earlier one's devices.
    `release`: allocated claims released first (`simulate`'s `-name` steps), to check what
    releasing them would change.
    """
    held = {name: set(book.held_by(name)) for name in (*release, *claims) if book.held_by(name)}
    version = book.kubernetes_version or limits_for().kubernetes_version
    run = RememberingClaimSteps(
        states=DeviceStates(book.pools, book.devices, book.states, held),
        summaries={ref: book.summary(ref) for ref in book.pools},
        claims=book.claims, mode=mode, feature_gate=book.feature_gate, version=version,
        pool_ok=lambda ref: True, candidate=None, classes=dict(book.classes), exhaustive=True,
        fractional_range=_fractional_range(version, book.fractional_range),
    )
    run.first_branch = FirstFitIndex(run).allocate
    for name in release:
        run.release(Step(Action.RELEASE, name))
    return run.allocate_pod([Step(Action.ALLOCATE, claim) for claim in claims])


def device_matches(ref: DeviceRef, name: str) -> bool:
    """`device`, `pool/device` or `driver/pool/device` names `ref` (how suites and users name one)."""
    return name in {ref.device, f"{ref.pool}/{ref.device}", str(ref)}
