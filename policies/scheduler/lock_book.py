"""SPEC §6 reconstruction kept current: every device's lock from slices and bound claims.

The scheduler re-derives its in-memory locks from `status.allocation` after a restart;
`locks.reconstruct` is that rule for one device. A `LockBook` applies it to a whole
cluster and keeps the result current one object at a time — a slice, claim or DeviceClass
put or removed — recomputing only the devices the change touches, so the exporter can
follow watch events and `locks`, `explain` and `simulate` all start from the same
reconstruction.

Extraction is memoised by content, through the `ExtractionMemo` dry-run and simulate use: bound
claims that share their in-scope config contents and a pool's extractors (every node of a driver
usually publishes the same ones) are evaluated once; a slice error, whose message names its pool
and generation, only within that pool at that generation.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from ..core.findings import PoolRef
from ..core.limits import KubernetesVersion, limits_for
from ..model.resources import (
    Device,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
)
from . import locks
from .candidates import match_pool
from .dryrun import to_extraction_pool
from .extraction import (
    ExtractionMemo,
    ExtractionPool,
    ExtractionResult,
    device_requests,
    relabel,
)
from .locks import DeviceRef, DeviceState, Holder, LockStatus
from .pools import Pool, build_pools


def untracked_reason(pool: Pool, feature_gate: bool) -> str:
    """Why the scheduler keeps no lock for the pool's devices; empty when it does."""
    if not pool.complete:  # first: a metadata slice not yet published is not "no sharingAffinity"
        return f"the pool is incomplete ({pool.incomplete_reason})"
    if not pool.declares_affinity:
        return "the pool declares no sharingAffinity"
    if not feature_gate:
        return "the DRASharingAffinity feature gate is off"
    if not pool.extractors:
        return "the pool's sharingAffinity entries have no names"
    return ""


def pool_node(pool: Pool) -> str:
    """The node the pool's slices publish for (`nodeName`), `*` for `allNodes`, else `-`."""
    for slice_ in pool.slices:
        spec = slice_.raw.get("spec") if isinstance(slice_.raw, Mapping) else None
        if not isinstance(spec, Mapping):
            continue
        node = spec.get("nodeName")
        if isinstance(node, str) and node:
            return node
        if spec.get("allNodes") is True:
            return "*"
    return "-"


@dataclass
class LockBook:
    """The reconstructed lock state of every device, updated object by object."""

    feature_gate: bool = True
    kubernetes_version: KubernetesVersion | None = None
    fractional_range: bool | None = None
    """`DRAFractionalCapacityRange` for the allocations `explain` tries (None: the release's)."""
    states: dict[DeviceRef, DeviceState] = field(default_factory=dict)
    devices: dict[DeviceRef, Device] = field(default_factory=dict)
    pools: dict[PoolRef, Pool] = field(default_factory=dict)
    claims: dict[str, ResourceClaim] = field(default_factory=dict)
    classes: dict[str, DeviceClass] = field(default_factory=dict)
    scope: frozenset[PoolRef] | None = None
    """The pools whose locks are reconstructed (None: every pool). A book built for `focus`
    claims holds only the claims allocated in its scope: other pools' devices show no holders."""
    _slices: dict[str, ResourceSlice] = field(default_factory=dict)
    _members: dict[PoolRef, dict[str, ResourceSlice]] = field(default_factory=dict)
    _summaries: dict[PoolRef, ExtractionPool] = field(default_factory=dict)
    _pool_devices: dict[PoolRef, tuple[DeviceRef, ...]] = field(default_factory=dict)
    _nodes: dict[PoolRef, str] = field(default_factory=dict)
    _bound: dict[DeviceRef, dict[str, tuple[Holder, ...]]] = field(default_factory=dict)
    """device -> claim -> the claim's holders on it (a claim may hold a device twice)."""
    _claim_refs: dict[str, tuple[DeviceRef, ...]] = field(default_factory=dict)
    _extractions: dict[str, dict[tuple[str, PoolRef], ExtractionResult]] = field(default_factory=dict)
    """claim -> (request, pool) -> its extraction: dropped with the claim or the pool's change."""
    _memo: ExtractionMemo = field(init=False)

    def __post_init__(self) -> None:
        self._memo = ExtractionMemo(self.kubernetes_version)

    @property
    def evaluations(self) -> int:
        """CEL evaluations run so far (the KEP's `sharing_affinity_extractor_evaluations_total`)."""
        return self._memo.evaluations

    # -- building -------------------------------------------------------------------------------

    @classmethod
    def build(cls, slices: Iterable[ResourceSlice], claims: Iterable[ResourceClaim],
              classes: Iterable[DeviceClass] = (), *, feature_gate: bool = True,
              kubernetes_version: KubernetesVersion | None = None,
              focus: Collection[str] = (), fractional_range: bool | None = None) -> LockBook:
        """The reconstruction of a whole input at once (what a restarted scheduler does).

        `focus`: the claims (`namespace/name`) to be explained. Only the pools their requests can
        be offered (DeviceClass and selectors, as the allocator matches them) and the pools they
        hold are reconstructed, from the claims allocated there: a device's lock depends only on
        the claims bound to it, so those pools' states are exactly the full book's, and one
        claim of a 100,000-claim cluster costs its candidate pools, not the cluster.
        """
        book = cls(feature_gate=feature_gate, kubernetes_version=kubernetes_version,
                   fractional_range=fractional_range)
        slices = list(slices)
        book._slices = {s.name: s for s in slices}
        grouped: dict[PoolRef, dict[str, ResourceSlice]] = {}
        for s in slices:
            grouped.setdefault(s.pool, {})[s.name] = s
        book._members = grouped
        book.classes = {c.name: c for c in classes}
        for ref in sorted(grouped):
            book._load_pool(ref)
        bound = [c for c in claims if c.kind == "ResourceClaim"]  # a template holds nothing
        if focus:
            book.scope = book._focus_pools([c for c in bound if c.qualified_name in focus])
            scope = book.scope
            bound = [c for c in bound if c.qualified_name in focus
                     or any(PoolRef(a.driver, a.pool) in scope for a in c.allocation)]
        for claim in bound:
            book.claims[claim.qualified_name] = claim
            book._bind(claim)
        for dref in book.devices:
            book._recompute(dref)
        return book

    def _focus_pools(self, claims: Iterable[ResourceClaim]) -> frozenset[PoolRef]:
        """The pools any request of `claims` can be offered, and the pools they hold."""
        out: set[PoolRef] = set()
        for claim in claims:
            out.update(PoolRef(a.driver, a.pool) for a in claim.allocation)
            for request in device_requests(claim).values():
                out.update(ref for ref, pool in self.pools.items() if ref not in out and match_pool(
                    request, self.classes, pool, kubernetes_version=self.kubernetes_version).candidate)
        return frozenset(out)

    # -- updates (one watch event each) ---------------------------------------------------------

    def put_slice(self, slice_: ResourceSlice) -> None:
        """A slice added or changed: its pool (old and new, if it moved) is gathered again."""
        touched = {slice_.pool}
        old = self._slices.get(slice_.name)
        if old is not None and old.pool != slice_.pool:
            self._members.get(old.pool, {}).pop(old.name, None)
            touched.add(old.pool)
        self._slices[slice_.name] = slice_
        self._members.setdefault(slice_.pool, {})[slice_.name] = slice_
        for ref in touched:
            self._reload_pool(ref)

    def remove_slice(self, name: str) -> None:
        old = self._slices.pop(name, None)
        if old is None:
            return
        self._members.get(old.pool, {}).pop(name, None)
        self._reload_pool(old.pool)

    def put_claim(self, claim: ResourceClaim) -> None:
        """A claim added or changed (allocated, released, re-configured)."""
        self.put_claims((claim,))

    def put_claims(self, claims: Iterable[ResourceClaim]) -> None:
        """Claims added or changed at once (a list or re-list): every device they touch is
        recomputed once, not once per claim bound to it (a device's state depends only on its
        bound claims, so the order does not matter)."""
        touched: dict[DeviceRef, None] = {}
        for claim in claims:
            if claim.kind != "ResourceClaim":
                continue
            name = claim.qualified_name
            touched.update(dict.fromkeys(self._unbind(name)))
            self.claims[name] = claim
            self._extractions.pop(name, None)
            touched.update(dict.fromkeys(self._bind(claim)))
        for ref in touched:
            if ref in self.devices:
                self._recompute(ref)

    def remove_claim(self, name: str) -> None:
        touched = self._unbind(name)
        self.claims.pop(name, None)
        self._extractions.pop(name, None)
        for ref in touched:
            if ref in self.devices:
                self._recompute(ref)

    def put_class(self, device_class: DeviceClass) -> None:
        self.classes[device_class.name] = device_class

    def remove_class(self, name: str) -> None:
        self.classes.pop(name, None)

    # -- reading --------------------------------------------------------------------------------

    def tracked(self, pool: Pool) -> bool:
        """The scheduler keeps locks for the pool's devices (gate on, complete, named extractors)."""
        return self.feature_gate and pool.complete and bool(pool.extractors)

    def slice(self, name: str) -> ResourceSlice | None:
        """The slice of that name as last put (None when absent)."""
        return self._slices.get(name)

    def pool_devices(self, ref: PoolRef) -> tuple[DeviceRef, ...]:
        return self._pool_devices.get(ref, ())

    def node(self, ref: PoolRef) -> str:
        return self._nodes.get(ref, "-")

    def summary(self, ref: PoolRef) -> ExtractionPool:
        return self._summaries[ref]

    def held_by(self, claim: str) -> tuple[DeviceRef, ...]:
        """The devices of the input `claim`'s allocation names (in allocation order)."""
        return tuple(r for r in self._claim_refs.get(claim, ()) if r in self.devices)

    def missing_devices(self, claim: str) -> tuple[DeviceRef, ...]:
        """Allocated devices that no slice of the input publishes."""
        return tuple(r for r in self._claim_refs.get(claim, ()) if r not in self.devices)

    def extraction(self, claim: ResourceClaim, request: str, ref: PoolRef) -> ExtractionResult:
        """SPEC §5 for (claim, request, pool), once per triple and once per content."""
        return relabel(self._shared_extraction(claim, request, ref), claim.qualified_name, ref)

    def _shared_extraction(self, claim: ResourceClaim, request: str, ref: PoolRef) -> ExtractionResult:
        """The extraction as memoised: its outcome and map are this claim's, its names may be
        another's (reconstruction reads only the outcome and the map)."""
        per_claim = self._extractions.setdefault(claim.qualified_name, {})
        key = (request, ref)
        cached = per_claim.get(key)
        if cached is not None:
            return cached
        result = self._memo.shared(claim, request, self._summaries[ref])
        per_claim[key] = result
        return result

    # -- internals ------------------------------------------------------------------------------

    def _load_pool(self, ref: PoolRef) -> None:
        members = self._members.get(ref) or {}
        if not members:
            self.pools.pop(ref, None)
            self._summaries.pop(ref, None)
            self._pool_devices.pop(ref, None)
            self._nodes.pop(ref, None)
            return
        limits = limits_for(self.kubernetes_version) if self.kubernetes_version else limits_for()
        pool = build_pools(members.values(), limits)[ref]
        self.pools[ref] = pool
        self._summaries[ref] = to_extraction_pool(pool)
        self._nodes[ref] = pool_node(pool)
        refs: list[DeviceRef] = []
        for device, _ in pool.devices:
            dref = DeviceRef(ref.driver, ref.name, device.name)
            if dref not in self.devices:  # a device published twice counts once (the first)
                self.devices[dref] = device
                refs.append(dref)
        self._pool_devices[ref] = tuple(refs)

    def _reload_pool(self, ref: PoolRef) -> None:
        for dref in self._pool_devices.get(ref, ()):
            self.devices.pop(dref, None)
            self.states.pop(dref, None)
            for claim_name in self._bound.get(dref, {}):
                for key in [k for k in self._extractions.get(claim_name, {}) if k[1] == ref]:
                    del self._extractions[claim_name][key]
        self._load_pool(ref)
        if ref in self.pools:
            self.pools = dict(sorted(self.pools.items()))
        # holders name devices by reference: re-derive what they consume on the new device
        for dref in self._pool_devices.get(ref, ()):
            for claim_name in list(self._bound.get(dref, {})):
                self._bound[dref][claim_name] = self._holders(self.claims[claim_name], dref)
            self._recompute(dref)

    def _bind(self, claim: ResourceClaim) -> list[DeviceRef]:
        if not claim.allocation:
            return []
        name = claim.qualified_name
        by_device: dict[DeviceRef, list[Holder]] = {}
        for result in claim.allocation:  # one pass, in allocation order
            ref = DeviceRef(result.driver, result.pool, result.device)
            holder = locks.bound_holder(name, result)
            if holder is not None:
                by_device.setdefault(ref, []).append(holder)
        self._claim_refs[name] = tuple(by_device)
        for ref, holders in by_device.items():
            self._bound.setdefault(ref, {})[name] = tuple(holders)
        return list(by_device)

    def _unbind(self, name: str) -> list[DeviceRef]:
        refs = self._claim_refs.pop(name, ())
        for ref in refs:
            bound = self._bound.get(ref)
            if bound is not None:
                bound.pop(name, None)
                if not bound:
                    del self._bound[ref]
        return list(refs)

    def _holders(self, claim: ResourceClaim, ref: DeviceRef) -> tuple[Holder, ...]:
        holders = []
        for result in claim.allocation:
            if (result.driver, result.pool, result.device) != (ref.driver, ref.pool, ref.device):
                continue
            holder = locks.bound_holder(claim.qualified_name, result)
            if holder is not None:
                holders.append(holder)
        return tuple(holders)

    def _recompute(self, ref: DeviceRef) -> None:
        pool = self.pools[ref.pool_ref]
        bound = self._bound.get(ref, {})
        holders = [h for name in sorted(bound) for h in bound[name]]
        if not self.tracked(pool):
            self.states[ref] = DeviceState(LockStatus.UNTRACKED, holders=tuple(holders))
            return
        self.states[ref] = locks.reconstruct(
            [(h, self._shared_extraction(self.claims[h.claim], h.request, pool.ref)) for h in holders])
