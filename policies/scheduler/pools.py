"""Pools: what the scheduler sees across slices, and no API server can check (SPEC §4).

The API server validates each ResourceSlice alone. The scheduler gathers a pool's
slices by `(driver, pool.name)`, keeps the highest generation, skips the pool
unless it is complete, unions the extractors of its metadata slices and fails
closed for every device of the pool when that union is invalid — at scheduling
time. `build_pools` does the same gathering once, for the pool rules (SP301–SP306),
`dra-affinity pools` and the scheduler simulation, so they cannot disagree on what
a pool is.

Costs are SA108's (`analysis.slice_cost`): the pool total is the saturating sum of its
metadata slices' costs, never a second estimate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from ..analysis.slice_cost import slice_cost
from ..core.findings import PoolRef
from ..core.limits import Limits, limits_for
from ..model.resources import Device, Extractor, ResourceSlice


def saturating_add(a: int, b: int) -> int:
    """uint64 addition that sticks at the maximum, as cel-go's cost arithmetic does."""
    from ..cel.cost.estimate import MAX_UINT64  # not at import time: `--help` stays light

    return min(MAX_UINT64, a + b)


def render_cost(cost: int) -> str:
    """A cost as a message shows it: the saturated maximum reads as "unbounded"."""
    from ..cel.cost.estimate import MAX_UINT64

    return f"unbounded ({cost})" if cost >= MAX_UINT64 else str(cost)


@dataclass(frozen=True, eq=False)
class Pool:
    """One pool as the scheduler gathers it: the current generation's slices and their union.

    `slices` and `slice_costs` are parallel (device slices cost 0); `superseded`
    holds the slices of lower generations, which the scheduler ignores.
    """

    ref: PoolRef
    generation: int
    slices: tuple[ResourceSlice, ...]
    superseded: tuple[ResourceSlice, ...] = ()
    slice_costs: tuple[int, ...] = ()
    extractors: Mapping[str, tuple[Extractor, ResourceSlice]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """The union of named extractors over the metadata slices: key → (entry, slice).
    When a key is declared twice (SP301), the first declaration in input order."""
    declarations: tuple[tuple[Extractor, ResourceSlice], ...] = ()
    """Every named entry of every metadata slice, in input order, duplicates included."""
    duplicate_keys: tuple[str, ...] = ()
    """Keys declared by two or more different slices (SP301; within one slice it is SA102)."""

    @property
    def counts(self) -> tuple[int, ...]:
        """The distinct `resourceSliceCount` values of the current generation, ascending."""
        return tuple(sorted({s.resource_slice_count for s in self.slices}))

    @property
    def expected_count(self) -> int | None:
        """The agreed `resourceSliceCount`, None when the slices disagree (SP304)."""
        counts = self.counts
        return counts[0] if len(counts) == 1 else None

    @property
    def complete(self) -> bool:
        """SPEC §1: exactly `resourceSliceCount` slices at the highest generation, all agreeing."""
        return self.expected_count == len(self.slices)

    @property
    def incomplete_reason(self) -> str:
        if self.complete:
            return ""
        expected = self.expected_count
        if expected is None:
            listed = ", ".join(str(c) for c in self.counts)
            return (
                f"the slices of generation {self.generation} disagree on resourceSliceCount "
                f"({listed})"
            )
        return (
            f"{len(self.slices)} of {expected} slices (resourceSliceCount) present at generation "
            f"{self.generation}"
        )

    @property
    def total_cost(self) -> int:
        total = 0
        for cost in self.slice_costs:
            total = saturating_add(total, cost)
        return total

    @property
    def metadata_slices(self) -> tuple[ResourceSlice, ...]:
        """Slices that contribute extractors (a slice also carrying devices is SA109's problem)."""
        return tuple(s for s in self.slices if s.sharing_affinity)

    @property
    def device_slices(self) -> tuple[ResourceSlice, ...]:
        return tuple(s for s in self.slices if s.devices)

    @property
    def devices(self) -> tuple[tuple[Device, ResourceSlice], ...]:
        """Every device, in the allocator's order: slices by name (as the structured allocator
        sorts them), devices in slice order."""
        ordered = sorted(self.slices, key=lambda s: s.name) if len(self.slices) > 1 else self.slices
        return tuple((d, s) for s in ordered for d in s.devices)

    @property
    def shareable_devices(self) -> int:
        """Devices with `allowMultipleAllocations: true`: the only ones a lock constrains."""
        return sum(1 for s in self.slices for d in s.devices if d.allow_multiple_allocations)

    @property
    def declares_affinity(self) -> bool:
        return bool(self.metadata_slices)

    def cost_of(self, slice_: ResourceSlice) -> int:
        for candidate, cost in zip(self.slices, self.slice_costs, strict=True):
            if candidate is slice_:
                return cost
        return 0


def build_pools(
    slices: Iterable[ResourceSlice], limits: Limits | None = None
) -> dict[PoolRef, Pool]:
    """Group `slices` into pools as the scheduler does; ordered by (driver, pool name).

    Within a pool, slices keep their input order (file order, or the API's name order).
    """
    limits = limits or limits_for()
    grouped: dict[PoolRef, list[ResourceSlice]] = {}
    for slice_ in slices:
        grouped.setdefault(slice_.pool, []).append(slice_)
    return {ref: _pool(ref, grouped[ref], limits) for ref in sorted(grouped)}


def _pool(ref: PoolRef, members: Sequence[ResourceSlice], limits: Limits) -> Pool:
    generation = max(s.generation for s in members)
    current = tuple(s for s in members if s.generation == generation)
    superseded = tuple(s for s in members if s.generation != generation)
    declarations = tuple(
        (entry, s) for s in current if s.sharing_affinity for entry in s.sharing_affinity if entry.name
    )
    extractors: dict[str, tuple[Extractor, ResourceSlice]] = {}
    declared_by: dict[str, list[int]] = {}
    for entry, s in declarations:
        assert entry.name is not None
        extractors.setdefault(entry.name, (entry, s))
        owners = declared_by.setdefault(entry.name, [])
        if id(s) not in owners:
            owners.append(id(s))
    duplicates = tuple(name for name, owners in declared_by.items() if len(owners) > 1)
    return Pool(
        ref=ref,
        generation=generation,
        slices=current,
        superseded=superseded,
        slice_costs=tuple(slice_cost(s, limits) for s in current),
        extractors=MappingProxyType(extractors),
        declarations=declarations,
        duplicate_keys=duplicates,
    )


def pool_name(ref: PoolRef) -> str:
    return f"{ref.driver}/{ref.name}"


def slice_names(slices: Iterable[ResourceSlice]) -> str:
    return ", ".join(s.name or "<unnamed>" for s in slices)
