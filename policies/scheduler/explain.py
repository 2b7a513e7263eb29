"""`explain`: the KEP's troubleshooting steps 1–6 for one claim, from the reconstructed locks.

The KEP's debugging flow asks the operator to inspect the slices' extractors (1) and the
claim's opaque configs (2), to run every extractor against every config by hand (3), to
check whether the target device is locked to other values (4) or has an unknown lock state
(5), and to read the scheduler's filter reasons (6). Here every step is computed: the
candidate pools of each request (DeviceClass and selectors, as the allocator matches them),
the extraction per pool with every (extractor, config) evaluation, each candidate device's
lock state and Filter verdict (`simulation.try_allocate_pod`: a pod's claims allocated
together, the same steps as `simulate` of them), the verdict in the KEP's per-pod wording,
and what would change it. Each such change is one the model was re-run with (released
claims, a config added to the claim, a slice republished) and found to work, since a hint
that does not work sends the operator the wrong way. An allocated claim is explained too:
where it is, the lock it holds, who shares it.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace

from ..analysis.advice import config_yielding, mentioned_fields
from ..analysis.scheduler_cel import scheduler_compile
from ..core.findings import PoolRef
from ..core.limits import limits_for
from ..model.resources import DeviceRequest, ResourceClaim, ResourceSlice, parse
from .candidates import CandidateMatch, match_pool, missing_class
from .claim_steps import Evaluated, Placement, StepResult
from .extraction import ExtractionResult, Outcome, device_requests
from .lock_book import LockBook, untracked_reason
from .locks import DeviceRef, LockStatus, Mode, Reason, render_map
from .pools import Pool
from .simulation import try_allocate_pod

_SELECTOR_ERROR = "selector error (the allocator aborts the pod): "


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
    class_devices: int = 0
    """Devices of the pool the request's DeviceClass offers (before the request's own selectors)."""


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
    releases: tuple[Release, ...] = ()
    """The releases among `hints`, as values: each checked by re-running the pod's allocation."""


def explain_claim(book: LockBook, claim_name: str, *, mode: Mode = Mode.ALPHA) -> Explanation:
    return explain_pod(book, (claim_name,), mode=mode)[0]


def explain_pod(book: LockBook, claim_names: Sequence[str], *, mode: Mode = Mode.ALPHA
                ) -> tuple[Explanation, ...]:
    """Every claim of one pod, its pending ones allocated together in the pod's order.

    The scheduler places a pod's claims in one pass, each claim's tentative locks and consumed
    capacity visible to the next (`simulation.try_allocate_pod`, the same steps as `simulate`
    of those claims), so a later claim is explained against the earlier ones' placements.
    """
    names = [name if "/" in name else f"default/{name}" for name in claim_names]
    pending = [n for n in dict.fromkeys(names) if n in book.claims and not book.claims[n].allocation]
    steps = dict(zip(pending, try_allocate_pod(book, pending, mode=mode), strict=True))
    out: list[Explanation] = []
    for name in names:
        claim = book.claims.get(name)
        if claim is None:
            out.append(Explanation(name, False, False, f"claim {name} is not in the input",
                                   problem=f"claim {name} is not in the input"))
        elif claim.allocation:
            out.append(_allocated(book, name))
        else:
            earlier = tuple(n for n in pending[:pending.index(name)] if steps[n].placed)
            tentative = {p.device: p.lock for n in earlier for p in steps[n].placements}
            out.append(_pending(book, name, steps[name], pending, earlier, tentative, mode))
    failed = [n for n in pending if not steps[n].placed]
    if len(pending) > 1 and failed:  # the scheduler binds all of a pod's claims or none
        note = f"; the pod stays pending: {_who(failed)} cannot be placed"
        out = [replace(e, verdict=e.verdict + note) if e.schedulable and not e.allocated else e for e in out]
    return tuple(out)


def _pending(book: LockBook, name: str, step: StepResult, pod: Sequence[str], earlier: Sequence[str],
             tentative: Mapping[DeviceRef, Mapping[str, str] | None], mode: Mode) -> Explanation:
    pools = _pool_steps(book, name)
    events = tuple(dict.fromkeys(_event(book, e, tentative) for e in step.evaluated if e.rejections))
    if step.placed:
        where = ", ".join(f"{p.request!r} on {p.device} ({_placement(p.reused, p.lock)})"
                          for p in step.placements)
        verdict = f"schedulable: {where}"
        if earlier:
            verdict += f" (after the pod's {', '.join(earlier)})"
        return Explanation(name, False, True, verdict, pools, step, (), events, _viable_hints(step))
    failure = step.failure
    verdict = "unschedulable"
    if failure is not None:
        verdict += f": {failure.message}"
    if earlier:
        verdict += f" (with the pod's {', '.join(earlier)} placed first)"
    if failure is not None and failure.reason is Reason.CEL_EVALUATION_FAILURE:
        events = (f"CEL evaluation failed: {failure.message} (scheduling of the pod is aborted)",)
    hints, releases = _hints(book, name, step, pools, pod, mode)
    return Explanation(name, False, False, verdict, pools, step, (), events,
                       _own_claims(step, earlier, tentative) + hints, releases=releases)


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
            offered = match.survey.class_devices if match.survey is not None else int(match.candidate)
            why_not = missing or _why_not(match, request.device_class_name, ref)
            if match.survey is not None and match.survey.class_devices == 0:
                stale = _superseded_match(book, request, pool)
                if stale is None:
                    continue  # listed only when the class offers the pool (the request's selectors may not)
                why_not = (f"the pool is incomplete ({pool.incomplete_reason}; its devices are published at "
                           f"generation {stale}, caught mid-update): the scheduler skips it")
            untracked = untracked_reason(pool, book.feature_gate) if not book.tracked(pool) else ""
            extraction = None
            if match.candidate and pool.declares_affinity and pool.complete and book.feature_gate:
                extraction = book.extraction(claim, request_name, ref)
            extractors = tuple((key, entry.expression or "", slice_.name)
                               for key, (entry, slice_) in pool.extractors.items())
            out.append(PoolStep(request_name, ref, book.node(ref), match.candidate, why_not, untracked,
                                extractors, extraction, offered))
    return tuple(out)


def _superseded_match(book: LockBook, request: DeviceRequest, pool: Pool) -> int | None:
    """For an incomplete pool whose newest generation holds none of the request's devices: the
    older generation that does (a pool caught mid-update), else None."""
    older = [s for s in pool.superseded if s.devices]
    if pool.complete or not older:
        return None
    view = replace(pool, slices=tuple(older), superseded=())
    match = match_pool(request, book.classes, view, kubernetes_version=book.kubernetes_version)
    if match.candidate or (match.survey is not None and match.survey.class_devices):
        return max(s.generation for s in older)
    return None


def _why_not(match: CandidateMatch, class_name: str, ref: PoolRef) -> str:
    if match.failure is not None:
        return f"{_SELECTOR_ERROR}{match.failure.message()}"
    if match.candidate:
        return ""
    return f"no device of {ref.driver}/{ref.name} passes DeviceClass {class_name} and the request's selectors"


def _event(book: LockBook, e: Evaluated, tentative: Mapping[DeviceRef, Mapping[str, str] | None]) -> str:
    """The KEP's per-pod diagnostic for a filtered device (its lock as Filter saw it: the
    tentative one an earlier claim of the pod put on it, else the reconstructed one)."""
    first = e.rejections[0]
    device = str(e.device)
    if first.reason is Reason.LOCK_MISMATCH:
        state = book.states.get(e.device)
        if e.device in tentative:
            lock = render_map(tentative[e.device])
        else:
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


_VERIFY_RUNS = 12
"""Re-runs of the pod's allocation at most per claim to check release hints (each one copies
every device state of the book: a second or more on a cluster of 10,000 devices)."""

_DEVICES_TRIED = 6
"""Blocking devices (distinct sets of holders, fewest holders first) whose releases are tried."""

_POOLS_NAMED = 3
"""Pools named one by one in a hint about many (incomplete ones are each checked)."""

_SUBSET_HOLDERS = 4
"""Up to this many holders on one device, every smaller set of them is tried first, so the
hint names the fewest releases that work; above it only releasing all of them is tried."""

_RELEASABLE = frozenset({Reason.LOCK_MISMATCH, Reason.UNKNOWN_LOCK_STATE, Reason.CAPACITY, Reason.IN_USE})


def _own_claims(step: StepResult, earlier: Sequence[str],
                tentative: Mapping[DeviceRef, Mapping[str, str] | None]) -> tuple[str, ...]:
    """Devices an earlier claim of the same pod took first: releasing others cannot free them."""
    taken = {e.device for e in step.evaluated if e.rejections and e.device in tentative}
    if not taken:
        return ()
    devices = ", ".join(str(d) for d in sorted(taken))
    return (f"the pod's own {_who(list(earlier))} took {devices} first (tentatively, as Reserve does): "
            "the pod's claims need different locks or more capacity than those devices give; "
            "request compatible values in the pod's claims, or split them across pods",)


def _hints(book: LockBook, name: str, step: StepResult, pools: tuple[PoolStep, ...], pod: Sequence[str],
           mode: Mode) -> tuple[tuple[str, ...], tuple[Release, ...]]:
    """What would change the verdict, each checked by re-running the pod's allocation with the
    change applied, or (when no change of other claims can help) the next step and why."""
    hints: list[str] = []
    failure = step.failure
    reason = failure.reason if failure is not None else None
    releases, tried_all = _release_hints(book, name, step, pod, mode)
    hints += [r.hint for r in releases]
    if tried_all is not None and not releases:
        still = tried_all.failure.message if tried_all.failure is not None else "unschedulable"
        hints.append(f"releasing every claim on its candidate devices would not help (checked: {still})")
    unsatisfied: dict[tuple[str, tuple[str, ...]], list[PoolStep]] = {}
    for p in pools:
        if p.extraction is None:
            continue
        if p.extraction.outcome is Outcome.NOT_SATISFIED:
            unsatisfied.setdefault((p.request, tuple(p.extraction.unsatisfied)), []).append(p)
        elif p.extraction.outcome is Outcome.CLAIM_INCONSISTENT and p.extraction.error is not None:
            hints.append(f"fix the claim's configs: {p.extraction.error.message}")
        elif p.extraction.outcome is Outcome.SLICE_ERROR and p.extraction.error is not None:
            slices = ", ".join(sorted({s for _, _, s in p.extractors}))
            hints.append(f"the extractor of slice {slices} fails on this claim's config and the scheduler "
                         f"aborts the pod: the driver must fix the extractor (`dra-affinity lint` the "
                         f"slice), or the claim must carry a config it accepts: {p.extraction.error.message}")
            break  # the scheduler aborts on the first: the others are the same story
    for (request, keys), steps in unsatisfied.items():
        first = steps[0]
        blockers = sorted({h for _, holders in _blocking(book, step, pod) for h in holders})
        named = ", ".join(f"`{k}`" for k in keys)
        where = f"{first.pool.driver}/{first.pool.name}{_more(len(steps) - 1, 'pool')}"
        hints.append(f"fix the claim: no config yields key {named} for request {request!r} in pool {where}; "
                     f"add an opaque config of driver {first.pool.driver} whose parameters the extractor "
                     "reads" + _fixed_config(book, name, first, pod, mode, blockers))
    stale = "the pool is incomplete"
    incomplete = [p for p in pools if p.untracked.startswith(stale) or p.why_not.startswith(stale)]
    for p in incomplete[:_POOLS_NAMED]:
        hint = (f"pool {p.pool.driver}/{p.pool.name} is incomplete, so the scheduler skips it until "
                "the driver has published every slice of its newest generation: check the driver "
                f"on node {p.node} (`kubectl get resourceslices` for the pool)")
        hints.append(hint + _republished(book, name, p.pool, pod, mode))
    if len(incomplete) > _POOLS_NAMED:
        hints.append(f"{len(incomplete) - _POOLS_NAMED} more candidate pool(s) are incomplete")
    gated = [p.pool for p in pools
             if p.candidate and not book.feature_gate and book.pools[p.pool].declares_affinity]
    if gated:
        hints.append(f"pool {gated[0].driver}/{gated[0].name}{_more(len(gated) - 1, 'pool')} declares "
                     "sharingAffinity and the DRASharingAffinity feature gate is off, so its devices are "
                     "unallocatable: enable the gate on kube-scheduler, or request a pool without "
                     "sharingAffinity")
    for p in pools:
        if p.why_not.startswith(_SELECTOR_ERROR):
            hints.append(f"fix the selector that fails on pool {p.pool.driver}/{p.pool.name}'s devices (the "
                         "allocator aborts the pod on the first device it cannot evaluate): guard the "
                         "attribute it reads, e.g. with `has()` or `.?` optional access: "
                         + p.why_not.removeprefix(_SELECTOR_ERROR))
            break
    if reason is Reason.NO_CANDIDATES and not any(p.candidate for p in pools):
        hints.append(_no_candidates(book, name, pools))
    if not releases:
        hints += _shape_hints(book, name, step)
    return tuple(dict.fromkeys(hints)), tuple(releases)


def _shape_hints(book: LockBook, name: str, step: StepResult) -> list[str]:
    """The next step when the claim itself asks for more than the candidates can ever give: more
    devices than match, a constraint no combination satisfies, more capacity than a device has.
    Read from the run itself (the devices Filter looked at, every one of them in `explain`)."""
    request = device_requests(book.claims[name]).get(step.failed_request or "")
    if request is None:
        return []
    seen = [e for e in step.evaluated if e.request == request.name]
    devices = {e.device for e in seen}
    reasons = {e.rejections[0].reason for e in seen if e.rejections}
    wanted = max(request.count or 1, 1)
    out = []
    if request.allocation_mode != "All" and devices and len(devices) < wanted:
        out.append(f"request {request.name!r} asks for {wanted} devices, but only {len(devices)} "
                   f"device(s) of the input match its DeviceClass and selectors: lower `count`, or "
                   "make more devices match")
    failed = step.failure.reason if step.failure is not None else None
    if Reason.CONSTRAINT in reasons or failed is Reason.CONSTRAINT:
        out.append("no combination of the candidate devices satisfies the claim's `constraints`: relax "
                   "`matchAttribute`/`distinctAttribute` (or scope them with `requests`), or narrow the "
                   "requests' selectors to devices that satisfy them")
    if reasons == {Reason.CAPACITY} and all(not book.states[d].holders for d in devices if d in book.states):
        out.append(f"request {request.name!r} asks for more capacity than any candidate device has "
                   "even unused: request less, or select a device with more capacity")
    return out


@contextmanager
def _what_if(book: LockBook, slices: Sequence[ResourceSlice] = (), claims: Sequence[ResourceClaim] = ()
             ) -> Iterator[None]:
    """The book with `slices` and `claims` put in place of their namesakes, then put back: the
    model re-run with a change applied, leaving the book as it was."""
    old_slices = [(s, book.slice(s.name)) for s in slices]
    old_claims = [(c, book.claims.get(c.qualified_name)) for c in claims]
    try:
        for new_slice in slices:
            book.put_slice(new_slice)
        book.put_claims(claims)
        yield
    finally:
        for new_slice, old_slice in reversed(old_slices):
            if old_slice is not None:
                book.put_slice(old_slice)
            else:
                book.remove_slice(new_slice.name)
        for new_claim, old_claim in old_claims:
            if old_claim is not None:
                book.put_claim(old_claim)
            else:
                book.remove_claim(new_claim.qualified_name)


def _placed_in(book: LockBook, name: str, pod: Sequence[str], mode: Mode) -> StepResult:
    return try_allocate_pod(book, pod, mode=mode)[list(pod).index(name)]


def _where(step: StepResult) -> str:
    return ", ".join(f"{p.request!r} goes on {p.device}" for p in step.placements)


def _republished(book: LockBook, name: str, ref: PoolRef, pod: Sequence[str], mode: Mode) -> str:
    """For a pool caught mid-update: what republishing its older device slices at the newest
    generation (devices unchanged) would do, as checked; empty when that is not the case."""
    pool = book.pools.get(ref)
    if pool is None or pool.complete or not pool.superseded:
        return ""
    republished = []
    for old in pool.superseded:
        raw = copy.deepcopy(dict(old.raw))
        raw.setdefault("spec", {}).setdefault("pool", {})["generation"] = pool.generation
        parsed = parse(raw, trusted=True).obj
        if not isinstance(parsed, ResourceSlice):
            return ""
        republished.append(parsed)
    with _what_if(book, slices=republished):
        if not book.pools[ref].complete:
            return ""
        result = _placed_in(book, name, pod, mode)
    slices = ", ".join(sorted(s.name for s in pool.superseded))
    if result.placed:
        return (f"; once the driver republishes {slices} at generation {pool.generation} "
                f"(devices unchanged), {_where(result)} (checked)")
    still = result.failure.message if result.failure is not None else "unschedulable"
    return f"; republishing {slices} at generation {pool.generation} alone would not help (checked: {still})"


def _fixed_config(book: LockBook, name: str, step: PoolStep, pod: Sequence[str], mode: Mode,
                  blockers: Sequence[str]) -> str:
    """A config for the pool's driver that yields every key the request lacks, checked by adding it
    to the claim and re-running the pod: the config and where the claim then goes, or that it is
    not enough on its own (and why, and whether releasing `blockers` as well is); a note that
    nothing was checked when no config was found."""
    claim = book.claims[name]
    pool = book.pools[step.pool]
    version = book.kubernetes_version or limits_for().kubernetes_version
    cost_limit = limits_for(version).runtime_cost_per_evaluation
    config: dict[str, object] = {}
    unchecked = " (no config built from the extractor's fields yields it: not checked)"
    for key in step.extraction.unsatisfied if step.extraction is not None else ():
        entry = pool.extractors.get(key)
        if entry is None:
            return unchecked
        compiled, _ = scheduler_compile(entry[0].expression or "", version)
        if not compiled.ok or compiled.checked is None:
            return unchecked
        found = config_yielding(compiled, mentioned_fields(compiled.checked), cost_limit)
        if found is None:
            return unchecked
        config.update(found.config)
    raw = copy.deepcopy(dict(claim.raw))
    devices = raw.setdefault("spec", {}).setdefault("devices", {})
    devices.setdefault("config", []).append(
        {"requests": [step.request], "opaque": {"driver": step.pool.driver, "parameters": config}})
    fixed = parse(raw, trusted=True).obj
    if not isinstance(fixed, ResourceClaim):
        return unchecked
    with _what_if(book, claims=[fixed]):
        result = _placed_in(book, name, pod, mode)
    shown = json.dumps(config, separators=(", ", ": "))
    if result.placed:
        return f", e.g. {shown} (checked: then {_where(result)})"
    still = result.failure.message if result.failure is not None else "unschedulable"
    text = f"; that alone is not enough (checked with {shown}: {still})"
    if blockers:
        with _what_if(book, claims=[fixed]):
            both = try_allocate_pod(book, pod, mode=mode, release=blockers)[list(pod).index(name)]
        if both.placed:
            text += f"; with {_who(list(blockers))} released as well, {_where(both)} (checked)"
    return text


def _more(n: int, what: str) -> str:
    return f" (and {n} more {what}{'s' if n > 1 else ''})" if n > 0 else ""


def _no_candidates(book: LockBook, name: str, pools: tuple[PoolStep, ...]) -> str:
    """Whose selectors leave the request without a device: the DeviceClass's or its own."""
    claim = book.claims[name]
    for request_name, request in device_requests(claim).items():
        missing = missing_class(request, book.classes)
        if missing is not None:
            return f"create DeviceClass {request.device_class_name} or name an existing one: {missing}"
        offered = [p for p in pools if p.request == request_name and p.class_devices]
        if offered:
            total = sum(p.class_devices for p in offered)
            return (f"request {request_name!r}: its own selectors match none of the {total} device(s) "
                    f"DeviceClass {request.device_class_name} offers in {len(offered)} pool(s); "
                    "fix the request's selectors")
        if request.device_class_name:
            return (f"request {request_name!r}: no complete pool of the input offers a device of "
                    f"DeviceClass {request.device_class_name}")
    return "no pool offers a device the claim's requests select"


def _blocking(book: LockBook, step: StepResult, pod: Sequence[str]
              ) -> list[tuple[DeviceRef, tuple[str, ...]]]:
    """The devices Filter turned down for a reason a release can remove, with their holders
    (other than the pod's own claims), one entry per distinct set of holders."""
    own = set(pod)
    blocking: list[tuple[DeviceRef, tuple[str, ...]]] = []
    for e in step.evaluated:
        if not e.rejections or e.rejections[0].reason not in _RELEASABLE:
            continue
        state = book.states.get(e.device)
        holders = tuple(dict.fromkeys(h.claim for h in state.holders if h.claim not in own)) if state else ()
        if holders and all(b[1] != holders for b in blocking):
            blocking.append((e.device, holders))
    return blocking


def _release_hints(book: LockBook, name: str, step: StepResult, pod: Sequence[str], mode: Mode
                   ) -> tuple[list[Release], StepResult | None]:
    """The fewest releases of allocated claims that make the claim schedulable, checked.

    Per blocking device, its holders' sets are tried smallest first; the first set that works
    (and holds no set already found to work) is kept. Returns them and, when none works, the
    claim's result with every blocking holder released (None when nothing was releasable).
    """
    blocking = _blocking(book, step, pod)
    if not blocking:
        return [], None
    everyone = tuple(dict.fromkeys(h for _, holders in blocking for h in holders))
    tried = sorted(blocking, key=lambda b: len(b[1]))[:_DEVICES_TRIED]
    index = list(pod).index(name)
    runs: dict[frozenset[str], StepResult] = {}

    def attempt(release: frozenset[str]) -> StepResult | None:
        if release not in runs:
            if len(runs) >= _VERIFY_RUNS:
                return None
            runs[release] = try_allocate_pod(book, pod, mode=mode, release=sorted(release))[index]
        return runs[release]

    found: list[Release] = []
    for device, holders in tried:
        sizes = range(1, len(holders) + 1) if len(holders) <= _SUBSET_HOLDERS else (len(holders),)
        fewer_fail = len(holders) <= _SUBSET_HOLDERS  # every smaller set tried and failed, so far
        for size in sizes:
            chosen = _first_working(holders, size, attempt, found)
            if chosen is None:
                fewer_fail = False  # out of runs: nothing more is claimed
                break
            release, result = chosen
            if release is None:
                continue
            if result is not None:
                ordered = tuple(h for h in holders if h in release)
                kept = tuple(h for h in holders if h not in release)
                fewest = fewer_fail and len(ordered) > 1
                found.append(Release(device, ordered, kept, fewest, result.placements))
            break
    if found:
        position: dict[DeviceRef | None, int] = {device: n for n, (device, _) in enumerate(blocking)}
        return sorted(found, key=lambda r: position.get(r.device, len(position))), None  # Filter's order
    result = try_allocate_pod(book, pod, mode=mode, release=sorted(everyone))[index]
    if result.placed:  # only releases on several devices together help
        return [Release(None, everyone, (), False, result.placements)], None
    return [], result


def _first_working(holders: tuple[str, ...], size: int,
                   attempt: Callable[[frozenset[str]], StepResult | None], found: Sequence[Release]
                   ) -> tuple[frozenset[str] | None, StepResult | None] | None:
    """The first set of `size` holders whose release places the claim: (set, result); (set, None)
    when it holds a set already found; (None, None) when none of that size works; None when the
    run budget ran out before every set of that size was tried."""
    for combination in itertools.combinations(holders, size):
        release = frozenset(combination)
        if any(set(r.claims) <= release for r in found):
            return release, None
        result = attempt(release)
        if result is None:
            return None
        if result.placed:
            return release, result
    return None, None


@dataclass(frozen=True, slots=True)
class Release:
    """A release checked to make the claim schedulable: which claims, and where it then goes."""

    device: DeviceRef | None
    """The device whose holders they are (the claim may then go elsewhere: `placements`);
    None for the holders of every blocking device, released together."""
    claims: tuple[str, ...]
    kept: tuple[str, ...]
    """The device's other holders, which may stay."""
    fewest: bool
    """Every smaller set of the device's holders was tried and is not enough."""
    placements: tuple[Placement, ...]

    @property
    def hint(self) -> str:
        """`D: release A and B (all of them: releasing fewer is not enough); then 'nic' goes on D`."""
        if len(self.claims) > 1:
            note = " (all of them: releasing fewer is not enough)" if self.fewest else ""
        else:
            note = f" ({_who(list(self.kept))} can stay)" if self.kept else ""
        where = ", ".join(f"{p.request!r} goes on {p.device}" for p in self.placements)
        if self.device is None:
            return f"release {_who(list(self.claims))} together (no fewer set of one device's claims " \
                   f"is enough); then {where}"
        return f"{self.device}: release {_who(list(self.claims))}{note}; then {where}"


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
