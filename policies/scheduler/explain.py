"""`explain`: the KEP's troubleshooting steps 1–6 for one claim, from the reconstructed locks.

The KEP's debugging flow asks the operator to inspect the slices' extractors (1) and the
claim's opaque configs (2), to run every extractor against every config by hand (3), to
check whether the target device is locked to other values (4) or has an unknown lock state
(5), and to read the scheduler's filter reasons (6). Here every step is computed: the
candidate pools of each request (DeviceClass and selectors, as the allocator matches them),
the extraction per pool with every (extractor, config) evaluation, each candidate device's
lock state and Filter verdict (`simulation.try_allocate`, the same code as a `simulate`
step), the verdict in the KEP's per-pod wording, and what would change it. An allocated
claim is explained too: where it is, the lock it holds, who shares it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dra_affinity.policies.core.findings import PoolRef
from dra_affinity.policies.scheduler.candidates import CandidateMatch, match_pool, missing_class
from dra_affinity.policies.scheduler.extraction import ExtractionResult, Outcome, device_requests
from dra_affinity.policies.scheduler.lock_book import LockBook, untracked_reason
from dra_affinity.policies.scheduler.locks import DeviceRef, LockStatus, Mode, Reason, Rejection, render_map
from dra_affinity.policies.scheduler.simulation import Evaluated, StepResult, try_allocate


@dataclass(frozen=True, slots=True)
class PoolStep:
    """Steps 1–3 for one (request, pool): is it a candidate, and what extraction gives."""

    request: str
    pool: PoolRef
    node: str
    candidate: bool
    why_not: str
    """Why the pool is not a candidate (empty when it is)."""
    untracked: str
    """Why the pool keeps no lock (empty for an affinity pool the scheduler tracks)."""
    extractors: tuple[tuple[str, str, str], ...]
    """(key, expression, metadata slice) of the pool's extractors."""
    extraction: ExtractionResult | None


@dataclass(frozen=True, slots=True)
class Held:
    """An allocated claim's device: its lock, and who else holds it."""

    request: str
    device: DeviceRef
    status: LockStatus
    lock: Mapping[str, str] | None
    reason: str
    sharing: tuple[str, ...]
    present: bool = True


@dataclass(frozen=True, slots=True)
class Explanation:
    claim: str
    allocated: bool
    schedulable: bool
    verdict: str
    """The answer in one sentence (the KEP's per-pod diagnostic wording for a pending claim)."""
    pools: tuple[PoolStep, ...] = ()
    step: StepResult | None = None
    held: tuple[Held, ...] = ()
    events: tuple[str, ...] = ()
    """What the scheduler would put on PodScheduled=False, in the KEP's wording."""
    hints: tuple[str, ...] = ()
    problem: str = ""
    """The claim cannot be explained (not in the input): the message."""


def explain_claim(book: LockBook, claim_name: str, *, mode: Mode = Mode.ALPHA) -> Explanation:
    name = claim_name if "/" in claim_name else f"default/{claim_name}"
    claim = book.claims.get(name)
    if claim is None:
        return Explanation(name, False, False, f"claim {name} is not in the input",
                           problem=f"claim {name} is not in the input")
    if claim.allocation:
        return _allocated(book, name)
    pools = _pool_steps(book, name)
    step = try_allocate(book, name, mode=mode)
    events = tuple(dict.fromkeys(_event(book, e) for e in step.evaluated if e.rejections))
    if step.placed:
        where = ", ".join(f"{p.request!r} on {p.device} ({_placement(p.reused, p.lock)})"
                          for p in step.placements)
        verdict = f"schedulable: {where}"
        return Explanation(name, False, True, verdict, pools, step, (), events, _viable_hints(step))
    failure = step.failure
    verdict = "unschedulable"
    if failure is not None:
        verdict += f": {failure.message}"
    if failure is not None and failure.reason is Reason.CEL_EVALUATION_FAILURE:
        events = (f"CEL evaluation failed: {failure.message} (scheduling of the pod is aborted)",)
    return Explanation(name, False, False, verdict, pools, step, (), events, _hints(book, step, pools))


def _placement(reused: bool, lock: Mapping[str, str] | None) -> str:
    if reused:
        return f"joins its lock {render_map(lock)}"
    if lock is not None:
        return f"clean, would be locked to {render_map(lock)}"
    return "no lock kept"


def _allocated(book: LockBook, name: str) -> Explanation:
    claim = book.claims[name]
    held: list[Held] = []
    for result in claim.allocation:
        ref = DeviceRef(result.driver, result.pool, result.device)
        state = book.states.get(ref)
        if state is None:
            held.append(Held(result.request, ref, LockStatus.UNTRACKED, None,
                             "no slice of the input publishes this device", (), present=False))
            continue
        others = tuple(dict.fromkeys(h.claim for h in state.holders if h.claim != name))
        held.append(Held(result.request, ref, state.status, state.lock, state.reason, others))
    parts = []
    for h in held:
        if h.status is LockStatus.LOCKED:
            what = f"locked to {render_map(h.lock)}"
        elif h.status is LockStatus.UNRECONSTRUCTABLE:
            what = f"unreconstructable: {h.reason}"
        else:
            what = h.status.value if h.present else h.reason
        sharing = f", shared with {', '.join(h.sharing)}" if h.sharing else ""
        parts.append(f"{h.request!r} on {h.device} ({what}{sharing})")
    return Explanation(name, True, True, "allocated: " + "; ".join(parts), held=tuple(held))


def _pool_steps(book: LockBook, name: str) -> tuple[PoolStep, ...]:
    """Steps 1–3 for every request and every pool the request could be offered."""
    claim = book.claims[name]
    out: list[PoolStep] = []
    for request_name, request in device_requests(claim).items():
        missing = missing_class(request, book.classes)  # then every pool is listed, with its reason
        for ref, pool in book.pools.items():
            match = match_pool(request, book.classes, pool, kubernetes_version=book.kubernetes_version)
            if match.survey is not None and match.survey.class_devices == 0:
                continue  # listed only when the class offers the pool and the request's selectors exclude it
            untracked = untracked_reason(pool, book.feature_gate) if not book.tracked(pool) else ""
            extraction = None
            if match.candidate and pool.declares_affinity and pool.complete and book.feature_gate:
                extraction = book.extraction(claim, request_name, ref)
            extractors = tuple((key, entry.expression or "", slice_.name)
                               for key, (entry, slice_) in pool.extractors.items())
            out.append(PoolStep(request_name, ref, book.node(ref), match.candidate,
                                missing or _why_not(match, request.device_class_name, ref), untracked,
                                extractors, extraction))
    return tuple(out)


def _why_not(match: CandidateMatch, class_name: str, ref: PoolRef) -> str:
    if match.failure is not None:
        return f"selector error (the allocator aborts the pod): {match.failure.message()}"
    if match.candidate:
        return ""
    return f"no device of {ref.driver}/{ref.name} passes DeviceClass {class_name} and the request's selectors"


def _event(book: LockBook, e: Evaluated) -> str:
    """The KEP's per-pod diagnostic for a filtered device."""
    first = e.rejections[0]
    device = str(e.device)
    if first.reason is Reason.LOCK_MISMATCH:
        state = book.states.get(e.device)
        lock = render_map(state.lock) if state is not None else "?"
        return f"device {device} is locked to incompatible affinity values ({lock})"
    if first.reason is Reason.UNKNOWN_LOCK_STATE:
        return f"device {device} has unknown affinity state due to legacy or invalid active claims"
    if first.reason is Reason.NO_KEYS_EXTRACTED:
        slices = ", ".join(sorted({s.name for _, (_, s) in book.pools[e.device.pool_ref].extractors.items()}))
        return (f"claim's opaque configs produced no non-empty key under any sharingAffinity extractor "
                f"on slice {slices} (device {device} filtered)")
    if first.reason is Reason.CEL_EVALUATION_FAILURE:
        return f"{first.message} (device {device} filtered)"
    return f"device {device}: {first.reason.value}: {first.message}"


def _viable_hints(step: StepResult) -> tuple[str, ...]:
    viable = [e for e in step.evaluated if e.viable]
    by_pool: dict[PoolRef, list[Evaluated]] = {}
    for e in viable:
        by_pool.setdefault(e.device.pool_ref, []).append(e)
    hints = []
    for ref, devices in by_pool.items():
        clean = sum(1 for e in devices if e.status is LockStatus.CLEAN)
        locked = sum(1 for e in devices if e.status is LockStatus.LOCKED)
        other = len(devices) - clean - locked
        parts = [f"{clean} clean" if clean else "", f"{locked} locked to the same values" if locked else "",
                 f"{other} without lock" if other else ""]
        hints.append(f"{len(devices)} device(s) in pool {ref.driver}/{ref.name} would accept it "
                     f"({', '.join(p for p in parts if p)})")
    return tuple(hints)


def _hints(book: LockBook, step: StepResult, pools: tuple[PoolStep, ...]) -> tuple[str, ...]:
    hints: list[str] = []
    for p in pools:
        if p.extraction is None:
            continue
        if p.extraction.outcome is Outcome.NOT_SATISFIED:
            keys = ", ".join(f"`{k}`" for k in p.extraction.unsatisfied)
            hints.append(f"no config yields key {keys} for request {p.request!r} in pool "
                         f"{p.pool.driver}/{p.pool.name}: add an opaque config of driver {p.pool.driver} "
                         "whose parameters the extractor reads")
        elif p.extraction.outcome is Outcome.CLAIM_INCONSISTENT and p.extraction.error is not None:
            hints.append(f"fix the claim's configs: {p.extraction.error.message}")
    seen: set[DeviceRef] = set()
    for e in step.evaluated:
        if not e.rejections or e.device in seen:
            continue
        first: Rejection = e.rejections[0]
        state = book.states.get(e.device)
        if state is None:
            continue
        holders = list(dict.fromkeys(h.claim for h in state.holders))
        who = _who(holders)
        verb = "is" if len(holders) == 1 else "are"
        if first.reason is Reason.LOCK_MISMATCH and holders:
            seen.add(e.device)
            hints.append(f"{e.device} becomes clean when {who} {verb} released")
        elif first.reason is Reason.UNKNOWN_LOCK_STATE and holders:
            seen.add(e.device)
            hints.append(f"{e.device} is usable again when {who} {verb} released ({state.reason})")
        elif first.reason is Reason.CAPACITY and holders:
            seen.add(e.device)
            hints.append(f"{e.device} has room again when one of {who} is released")
    if not step.evaluated and not any(p.candidate for p in pools):
        hints.append("no pool offers a device of the requested DeviceClass")
    return tuple(hints)


def _who(holders: list[str]) -> str:
    if len(holders) <= 3:
        return " and ".join(holders)
    return f"{', '.join(holders[:3])} and {len(holders) - 3} more"


def pod_claims(pod: Mapping[str, object]) -> tuple[list[tuple[str, str]], list[str]]:
    """A pod's claims as (pod claim name, namespace/claim), and the ones not yet created.

    Templates resolve through `status.resourceClaimStatuses`, as the kubelet does; a claim of a
    template the resource-claim controller has not created yet is reported, not guessed.
    """
    meta = _mapping(pod.get("metadata"))
    namespace = str(meta.get("namespace") or "default")
    spec, status = _mapping(pod.get("spec")), _mapping(pod.get("status"))
    generated = {}
    for entry in _list(status.get("resourceClaimStatuses")):
        if isinstance(entry, Mapping) and entry.get("name"):
            generated[str(entry["name"])] = entry.get("resourceClaimName")
    found: list[tuple[str, str]] = []
    missing: list[str] = []
    for entry in _list(spec.get("resourceClaims")):
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        pod_name = str(entry["name"])
        if entry.get("resourceClaimName"):
            found.append((pod_name, f"{namespace}/{entry['resourceClaimName']}"))
        elif generated.get(pod_name):
            found.append((pod_name, f"{namespace}/{generated[pod_name]}"))
        elif entry.get("resourceClaimTemplateName"):
            missing.append(f"{pod_name}: no ResourceClaim created yet from template "
                           f"{entry['resourceClaimTemplateName']} (status.resourceClaimStatuses has none)")
        else:
            missing.append(f"{pod_name}: needs no claim (status.resourceClaimStatuses says none was created)")
    return found, missing


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []
