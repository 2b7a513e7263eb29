"""The structured allocator's search for a pod's claims, with the KEP's lock as one more device check.

Why: a lock is added to an allocator that does far more than take the first free device of a
candidate pool. kube-scheduler (`k8s.io/dynamic-resource-allocation/structured`, the
experimental channel of kubernetes-1.36) allocates a claim by an exhaustive depth-first search:

* requests in claim order; a `firstAvailable` request tries its sub-requests in order, each
  with everything after it, before the next alternative;
* per device wanted, the devices in pool order ((driver, pool) ascending, a pool's slices by
  name, devices in slice order), from just after the previous device of the same request (sets,
  not permutations); a device is skipped when it is in use, when it does not match the class
  and request selectors (evaluated lazily, when the search reaches the device: a runtime error
  aborts the claim only then), when the capacity does not fit, or when a constraint rejects it;
  a later dead end backtracks to the next device;
* `allocationMode: All` lists its devices when the claim is validated (every pool must be
  complete; devices that do not match, or whose capacity cannot take the request, are left
  out) and then needs every listed one; a constraint that rejects one of them is an error;
* constraints (`matchAttribute`, `distinctAttribute`, optionally scoped to `requests`) are
  tracked as devices are added and removed; `distinctAttribute` remembers one value per
  request, as upstream does;
* an admin-access request ignores devices allocated to other claims and holds nothing;
* a pod's claims are one search (kube-scheduler's DynamicResources plugin hands all of a pod's
  pending claims to one `Allocate`): every claim is validated first, then the requests of claim
  1 follow the last request of claim 0, so a later claim that finds no room makes the search
  revise the earlier claims' devices; each claim's reservations are in the host's working state
  while the later claims are searched (the KEP's tentative lock of Reserve), and a device one
  claim takes whole — even for an admin-access request — is in use for the other claims'
  requests (an admin-access request skips only the devices its own claim holds).

The host (`simulation`) says what a device check means in its model — the KEP's lock, the
capacity in its working state — and applies or undoes a reservation; this module owns the
order, the search and the constraints. The search is bounded: at most `MAX_STEPS` device
visits per search (one pod), beyond which the claims are reported as not placed (upstream
bounds it by the scheduler's timeout).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Protocol

from ..model.resources import Device, DeviceConstraint, DeviceRequest, ResourceClaim
from .locks import DeviceRef, Reason, Rejection
from .pools import Pool

MAX_RESULTS = 32
"""`AllocationResultsMaxSize`: devices one claim may be allocated."""

MAX_STEPS = 200_000
"""Device visits one search (a pod's claims) may make before it gives up (bounded work)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One device in the allocator's visiting order."""

    position: int
    device: Device
    ref: DeviceRef
    pool: Pool


def visiting_order(pools: Sequence[Pool]) -> list[Entry]:
    """Every device of `pools` (already in (driver, pool) order) as the allocator visits them."""
    out: list[Entry] = []
    for pool in pools:
        for device, _ in pool.devices:
            out.append(Entry(len(out), device, DeviceRef(pool.ref.driver, pool.ref.name, device.name), pool))
    return out


# -- attributes and constraints ---------------------------------------------------------------

_SCALARS = {"string": "string", "int": "int", "bool": "bool", "version": "version"}
_LISTS = {"strings": "string", "ints": "int", "bools": "bool", "versions": "version",
          "stringValues": "string", "intValues": "int", "boolValues": "bool", "versionValues": "version"}


def lookup_attribute(device: Device, driver: str, name: str) -> Mapping[str, Any] | None:
    """The attribute `name` (fully qualified) of a device: as written, or without the domain
    when the domain is the device's driver (upstream `lookupAttribute`)."""
    found = device.attributes.get(name)
    if isinstance(found, Mapping):
        return found
    domain, slash, short = name.partition("/")
    if not slash or domain != driver:
        return None
    found = device.attributes.get(short)
    return found if isinstance(found, Mapping) else None


def attribute_set(attribute: Mapping[str, Any]) -> frozenset[tuple[str, Hashable]] | None:
    """An attribute as a set of (type, value): a scalar is a set of one, a list its elements
    (upstream `attributeAsSet`, list-type attributes enabled); None for an unknown type."""
    for key, kind in _LISTS.items():
        values = attribute.get(key)
        if isinstance(values, list) and values:
            return frozenset((kind, _hashable(v)) for v in values)
    for key, kind in _SCALARS.items():
        if key in attribute and attribute[key] is not None:
            return frozenset({(kind, _hashable(attribute[key]))})
    return None


def _hashable(value: Any) -> Hashable:
    return value if isinstance(value, (str, int, bool, float)) else repr(value)


@dataclass
class _Constraint:
    """One claim constraint as the search adds and removes devices."""

    spec: DeviceConstraint
    count: int = 0
    common: frozenset[tuple[str, Hashable]] | None = None
    """matchAttribute: the values every device added so far shares."""
    history: list[frozenset[tuple[str, Hashable]] | None] = field(default_factory=list)
    per_request: dict[str, frozenset[tuple[str, Hashable]]] = field(default_factory=dict)
    """distinctAttribute: the last value added per (parent) request name."""

    def applies(self, parent: str, sub: str | None) -> bool:
        names = self.spec.requests
        if not names:
            return True
        return parent in names or (sub is not None and f"{parent}/{sub}" in names)

    def add(self, parent: str, sub: str | None, entry: Entry) -> tuple[bool, Callable[[], None] | None]:
        """Whether the device may join; and how to take it out again (None when untouched)."""
        if not self.applies(parent, sub):
            return True, None
        name = self.spec.match_attribute or self.spec.distinct_attribute or ""
        attribute = lookup_attribute(entry.device, entry.ref.driver, name)
        if attribute is None:
            return False, None
        values = attribute_set(attribute)
        if self.spec.match_attribute is not None:
            if values is None:
                return False, None
            if self.count and self.common is not None and not (self.common & values):
                return False, None
            before = self.common
            self.common = values if not self.count or self.common is None else self.common & values
            self.count += 1

            def undo_match() -> None:
                self.common = before
                self.count -= 1
            return True, undo_match
        if self.count:
            if values is None:
                return False, None
            if any(values & other for other in self.per_request.values()):
                return False, None
        elif values is None:
            values = frozenset()
        self.per_request[parent] = values
        self.count += 1

        def undo_distinct() -> None:  # upstream forgets the request's value altogether
            self.per_request.pop(parent, None)
            self.count -= 1
        return True, undo_distinct


# -- the search -------------------------------------------------------------------------------


class ClaimAborted(Exception):
    """Raised inside the search where the allocator returns an error for the claim: a selector
    error, an extraction that aborts the pod, an All request on an incomplete pool. Caught by
    `search`, which returns the rejection as a value."""

    def __init__(self, rejection: Rejection, request: str) -> None:
        super().__init__(rejection.message)
        self.rejection = rejection
        self.request = request


class SearchHost(Protocol):
    """What the search needs of the model it runs in (`simulation`)."""

    def selectable(self, request: DeviceRequest, entry: Entry) -> bool:
        """Class and request selectors match the device; raises `ClaimAborted` on an error."""

    def quietly_selectable(self, request: DeviceRequest, entry: Entry) -> bool:
        """Like `selectable`, False instead of an error: for reporting only."""

    def in_use(self, entry: Entry) -> bool:
        """Allocated exclusively (committed or earlier in this claim)."""

    def capacity_fits(self, request: DeviceRequest, entry: Entry, committed: bool) -> bool:
        """The request's capacity fits next to what is consumed (`committed`: ignore this claim)."""

    def examine(self, request: DeviceRequest, entry: Entry) -> tuple[Rejection, ...]:
        """Every reason the device is not viable now (empty: viable); records the check."""

    def note_rejection(self, request: DeviceRequest, entry: Entry, rejection: Rejection) -> None:
        """A viable device turned down by the search itself (a constraint)."""

    def reserve(self, request: DeviceRequest, entry: Entry) -> Callable[[], None]:
        """Hold the device for the request in the working state; returns the undo. An
        admin-access request holds capacity only until the claim is committed."""

    def pool_skipped(self, request: DeviceRequest, entry: Entry) -> bool:
        """The device's pool is skipped whole (incomplete, gate off): records it, True."""

    def begin(self, request: DeviceRequest) -> None:
        """The search starts on a request (or alternative): the KEP's per-pool work, which may
        raise `ClaimAborted` (an extraction that aborts the pod)."""

    def prepare(self, request: DeviceRequest) -> list[Entry] | None:
        """upstream's validation of one request before any search (see `search`)."""


@dataclass(frozen=True, slots=True)
class _Slot:
    """One claim request: its alternatives (one for `exactly`) and its name."""

    name: str
    alternatives: tuple[DeviceRequest, ...]
    first_available: bool


@dataclass
class SearchResult:
    placed: bool
    chosen: list[tuple[DeviceRequest, Entry]] = field(default_factory=list)
    failure: Rejection | None = None
    """Set when the allocator errors (the claim is aborted), not when it simply finds nothing."""
    failed_request: str | None = None
    steps: int = 0


@dataclass
class _Shared:
    """What the searches of one pod's claims share: the step budget and the devices taken whole."""

    steps: int = 0
    taken: dict[DeviceRef, int] = field(default_factory=dict)
    """Devices taken whole by any of the pod's claims, admin-access ones included (upstream's
    allocating devices: in use for every other claim's requests but admin-access ones)."""
    active: int = 0
    """The claim whose request the search works on (the one an error belongs to)."""


class _Search:
    def __init__(self, claim: ResourceClaim, order: Sequence[Entry], host: SearchHost,
                 all_devices: Mapping[str, list[Entry]],
                 ranked: Callable[[DeviceRequest, Sequence[Entry]], Sequence[Entry]] | None,
                 shared: _Shared | None = None, position: int = 0) -> None:
        self.shared = shared if shared is not None else _Shared()
        self.position = position
        self.then: Callable[[], bool] = lambda: True
        """What follows this claim's last request: the next claim of the pod (or success)."""
        self.claim = claim
        self.order = order
        self.host = host
        self.all_devices = all_devices
        self.ranked = ranked
        self.constraints = [_Constraint(c) for c in claim.constraints]
        self.slots = [_Slot(r.name, r.first_available or ((r.exactly,) if r.exactly else ()),
                            bool(r.first_available)) for r in claim.requests]
        self.chosen: list[tuple[DeviceRequest, Entry]] = []
        self.taken_here: dict[DeviceRef, int] = {}
        """Devices taken whole by this claim so far (upstream's allocating devices of the claim;
        admin-access ones are not in the host's working state)."""
        self.deepest: tuple[int, str] | None = None
        """(slot index, request) of the deepest request the search failed to complete."""

    def start(self) -> bool:
        """Search this claim from its first request (and then the claims after it)."""
        return self.request_slot(0)

    @property
    def steps(self) -> int:
        return self.shared.steps

    def request_slot(self, index: int) -> bool:
        if index >= len(self.slots):
            return self.then()
        return any(self.place(index, sub, 0, 0) for sub in self.slots[index].alternatives)

    def _fail(self, index: int, request: DeviceRequest) -> bool:
        if self.deepest is None or index >= self.deepest[0]:
            self.deepest = (index, request.name)
        return False

    def place(self, index: int, request: DeviceRequest, done: int, start: int) -> bool:
        self.shared.active = self.position
        every = request.allocation_mode == "All"
        wanted = len(self.all_devices.get(request.name, ())) if every else max(request.count or 1, 1)
        if every and not wanted:
            return self._fail(index, request)
        if done >= wanted:
            return self.request_slot(index + 1)
        if len(self.chosen) + wanted - done > MAX_RESULTS:
            return self._fail(index, request)
        if not done:
            self.host.begin(request)
        if every:
            entry = self.all_devices[request.name][done]
            undo = self.try_device(request, entry, must=True)
            if undo is None:
                return self._fail(index, request)
            if self.place(index, request, done + 1, 0):
                return True
            undo()
            return False
        candidates: Sequence[Entry] = self.order
        if self.ranked is not None:
            candidates = self.ranked(request, self.order[start:])
            start = 0
        for i in range(start, len(candidates)):
            entry = candidates[i]
            self._count(request)
            undo = self.try_device(request, entry, must=False)
            if undo is None:
                continue
            following = entry.position + 1 if self.ranked is None else i + 1
            if self.ranked is not None:
                # ranked: the rest of this request's devices come after this one in the ranking
                rest = candidates[i + 1:]
                if self._place_ranked(index, request, done + 1, rest):
                    return True
            elif self.place(index, request, done + 1, following):
                return True
            undo()
        return self._fail(index, request)

    def _place_ranked(self, index: int, request: DeviceRequest, done: int, rest: Sequence[Entry]) -> bool:
        wanted = max(request.count or 1, 1)
        if done >= wanted:
            return self.request_slot(index + 1)
        for i, entry in enumerate(rest):
            self._count(request)
            undo = self.try_device(request, entry, must=False)
            if undo is None:
                continue
            if self._place_ranked(index, request, done + 1, rest[i + 1:]):
                return True
            undo()
        return self._fail(index, request)

    def _count(self, request: DeviceRequest) -> None:
        self.shared.active = self.position
        self.shared.steps += 1
        if self.shared.steps > MAX_STEPS:
            raise ClaimAborted(Rejection(Reason.NO_CANDIDATES, f"request {request.name!r}: the search "
                                         f"gave up after {MAX_STEPS} device visits"), request.name)

    def _fits(self, request: DeviceRequest, entry: Entry) -> bool:
        if request.admin_access:
            return self.host.capacity_fits(request, entry, committed=False)
        return not self.host.examine(request, entry)

    def _constrain(self, request: DeviceRequest, entry: Entry, must: bool) -> list[Callable[[], None]] | None:
        """Add the device to every constraint: the undos, or None (nothing left added) when one
        rejects it; for an All device that is the allocator's error."""
        parent: str = request.parent or request.name
        sub = request.name.split("/", 1)[1] if request.parent else None
        undos: list[Callable[[], None]] = []
        for constraint in self.constraints:
            ok, undo = constraint.add(parent, sub, entry)
            if not ok:
                for u in reversed(undos):
                    u()
                if must:
                    raise ClaimAborted(Rejection(Reason.CONSTRAINT, f"claim {self.claim.qualified_name}, "
                                                 f"request {request.name}: cannot add device {entry.ref} "
                                                 "because a claim constraint would not be satisfied"),
                                       request.name)
                self.host.note_rejection(request, entry, Rejection(
                    Reason.CONSTRAINT, f"device {entry.ref}: claim constraint #{constraint.spec.index} "
                                       "would not be satisfied"))
                return None
            if undo is not None:
                undos.append(undo)
        return undos

    def try_device(self, request: DeviceRequest, entry: Entry, *, must: bool) -> Callable[[], None] | None:
        """upstream `allocateOne`'s per-device checks and `allocateDevice`: the undo, or None."""
        host = self.host
        if request.admin_access:
            if entry.ref in self.taken_here and not entry.device.allow_multiple_allocations:
                return None
        elif entry.ref in self.shared.taken or host.in_use(entry):
            if host.quietly_selectable(request, entry):
                host.examine(request, entry)  # recorded as in use, as Filter reports it
            return None
        if not must:
            if host.pool_skipped(request, entry):
                return None
            if not host.selectable(request, entry):
                return None
        # Searching, capacity (and the lock) is checked before the constraints; for an All
        # device (`must`), upstream's `allocateDevice` checks the constraints first.
        if not must and not self._fits(request, entry):
            return None
        undos = self._constrain(request, entry, must)
        if undos is None:
            return None
        if must and not self._fits(request, entry):
            for u in reversed(undos):
                u()
            return None
        held = host.reserve(request, entry)
        whole = not entry.device.allow_multiple_allocations
        if whole:
            self.taken_here[entry.ref] = self.taken_here.get(entry.ref, 0) + 1
            self.shared.taken[entry.ref] = self.shared.taken.get(entry.ref, 0) + 1
        self.chosen.append((request, entry))

        def undo_all() -> None:
            self.chosen.pop()
            if held is not None:
                held()
            if whole:
                for taken in (self.taken_here, self.shared.taken):
                    taken[entry.ref] -= 1
                    if not taken[entry.ref]:
                        del taken[entry.ref]
            for u in reversed(undos):
                u()
        return undo_all


def _validate(claim: ResourceClaim, prepare: Callable[[DeviceRequest], list[Entry] | None]
              ) -> dict[str, list[Entry]]:
    """upstream's per-claim validation before any search: every request and sub-request through
    `prepare`, and the claim's minimum device count within `MAX_RESULTS`; All's device lists."""
    all_devices: dict[str, list[Entry]] = {}
    minimum = 0
    for request in claim.requests:
        counts = []
        for sub in request.first_available or ((request.exactly,) if request.exactly else ()):
            listed = prepare(sub)
            if listed is not None:
                all_devices[sub.name] = listed
            counts.append(len(listed) if listed is not None else max(sub.count or 1, 1))
        minimum += min(counts, default=0)
    if minimum > MAX_RESULTS:
        raise ClaimAborted(Rejection(Reason.NO_CANDIDATES, f"claim {claim.qualified_name}: number of "
                                     f"requested devices {minimum} exceeds the claim limit of "
                                     f"{MAX_RESULTS}"), claim.requests[0].name if claim.requests else "")
    return all_devices


@dataclass
class PodSearchResult:
    """The search over a pod's claims: all placed, or none."""

    placed: bool
    chosen: list[list[tuple[DeviceRequest, Entry]]] = field(default_factory=list)
    """Per claim, its devices (empty lists when not placed)."""
    failure: Rejection | None = None
    """Set when the allocator errors (the pod is aborted), not when it simply finds nothing."""
    failed_claim: int | None = None
    """The claim the error belongs to, or the claim of the deepest request the search failed to
    complete."""
    failed_request: str | None = None
    steps: int = 0


def search_pod(claims: Sequence[ResourceClaim], order: Sequence[Entry], hosts: Sequence[SearchHost], *,
               ranked: Callable[[DeviceRequest, Sequence[Entry]], Sequence[Entry]] | None = None
               ) -> PodSearchResult:
    """Allocate a pod's `claims` together as the structured allocator's one `Allocate` call does.

    `hosts[i]` is claim i's host over one working state shared by all of them (a claim's
    reservations are what the later claims see), and its `prepare` is upstream's validation
    of claim i's requests: every claim is validated before the search starts, so an error in
    any of them (a missing class) aborts the pod. On success the working state holds every
    claim's reservations; on failure it is as before.
    """
    shared = _Shared()
    runs: list[_Search] = []
    listed: list[dict[str, list[Entry]]] = []
    try:
        for claim, host in zip(claims, hosts, strict=True):
            listed.append(_validate(claim, host.prepare))
        for position, (claim, host) in enumerate(zip(claims, hosts, strict=True)):
            runs.append(_Search(claim, order, host, listed[position], ranked, shared, position))
        for current, following in pairwise(runs):
            current.then = following.start
        placed = runs[0].start() if runs else True
    except ClaimAborted as exc:
        failed = shared.active if runs else len(listed)
        return PodSearchResult(False, [[] for _ in claims], failure=exc.rejection, failed_claim=failed,
                               failed_request=exc.request, steps=shared.steps)
    if placed:
        return PodSearchResult(True, [list(r.chosen) for r in runs], steps=shared.steps)
    reached = [(i, r.deepest) for i, r in enumerate(runs) if r.deepest is not None]
    failed_claim, deepest = reached[-1] if reached else (None, None)
    return PodSearchResult(False, [[] for _ in claims], failed_claim=failed_claim,
                           failed_request=deepest[1] if deepest is not None else None, steps=shared.steps)


def search(claim: ResourceClaim, order: Sequence[Entry], host: SearchHost, *,
           prepare: Callable[[DeviceRequest], list[Entry] | None],
           ranked: Callable[[DeviceRequest, Sequence[Entry]], Sequence[Entry]] | None = None) -> SearchResult:
    """Allocate `claim` as the structured allocator does, over the host's working state.

    `prepare(request)`: upstream's per-request validation, called for every request and
    sub-request in claim order before the search; it raises `ClaimAborted` (missing class, an
    All request on an incomplete pool, a selector error while listing All's devices) and, for
    an All request, returns its device list. `ranked`: the device order per request when the
    mode prefers some devices (beta); None for upstream's first fit. On success the host's
    working state holds the claim's reservations.
    """
    try:
        run = _Search(claim, order, host, _validate(claim, prepare), ranked)
        placed = run.request_slot(0)
    except ClaimAborted as exc:
        return SearchResult(False, failure=exc.rejection, failed_request=exc.request)
    if placed:
        return SearchResult(True, list(run.chosen), steps=run.steps)
    return SearchResult(False, failed_request=run.deepest[1] if run.deepest else None, steps=run.steps)
