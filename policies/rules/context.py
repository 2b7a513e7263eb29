"""What a rule sees — a slice rule one slice (and the old one on UPDATE), a pool rule one pool —
and the shape of each of those two scopes (`SliceRule`, `PoolRule`; see `policies.rules.base`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

from ..analysis.slice_cost import analysable
from ..core.findings import Finding, Location, Severity
from ..core.limits import Limits
from ..core.source import FieldPath, Position, render_path
from ..model.resources import Extractor, ResourceSlice
from ..scheduler.pools import Pool
from .base import Rule, Scope
from .vap_cel import VapCel

if TYPE_CHECKING:  # the CEL engine loads on the first expression, not on `--help`
    from ..analysis.expression import ExpressionAnalysis


@dataclass(frozen=True)
class SliceContext:
    slice: ResourceSlice
    limits: Limits
    old: ResourceSlice | None = None
    options: dict[str, object] = field(default_factory=dict)

    @cached_property
    def _old_expressions(self) -> frozenset[str]:
        if self.old is None:
            return frozenset()
        return frozenset(e.expression for e in self.old.sharing_affinity if e.expression is not None)

    def ratcheted(self, extractor: Extractor) -> bool:
        """True when the expression was already stored byte for byte: not re-checked (SPEC §2)."""
        return extractor.expression is not None and extractor.expression in self._old_expressions

    def analysis(self, extractor: Extractor) -> ExpressionAnalysis | None:
        """Compilation and cost of the extractor's expression (None where SA104/SA105 apply)."""
        return analysable(extractor.expression, self.limits)

    @cached_property
    def _checked(self) -> tuple[tuple[Extractor, ExpressionAnalysis], ...]:
        pairs = []
        for extractor in self.slice.sharing_affinity:
            if self.ratcheted(extractor):
                continue
            result = self.analysis(extractor)
            if result is not None:
                pairs.append((extractor, result))
        return tuple(pairs)

    def checked_extractors(self) -> tuple[tuple[Extractor, ExpressionAnalysis], ...]:
        """Extractors subject to expression rules: analysable and not ratcheted (computed once)."""
        return self._checked

    def compiled_extractors(self) -> Iterator[tuple[Extractor, ExpressionAnalysis]]:
        """`checked_extractors` that compiled (the advisories' input)."""
        for extractor, result in self._checked:
            if result.ok and result.compiled.checked is not None:
                yield extractor, result


PARTIAL_INPUT_HINT = (
    "this is a warning because files may have been left out: pass --complete-pools when the "
    "input holds every slice of the pool to make it an error"
)
"""Why SP303/SP304 are only warnings on partial input, and how to make them errors."""


@dataclass(frozen=True)
class PoolContext:
    """What one pool rule sees: the pool, the limits, and whether the input is complete."""

    pool: Pool
    limits: Limits
    complete_pools: bool = False
    """The input holds every slice of every pool (`--complete-pools`, a cluster, the webhook)."""

    @property
    def completeness_severity(self) -> Severity:
        """SP303/SP304: an error on complete input, else a warning (files may be missing)."""
        return Severity.ERROR if self.complete_pools else Severity.WARNING

    def completeness_hint(self) -> str:
        return "" if self.complete_pools else f"; {PARTIAL_INPUT_HINT}"


def slice_location(slice_: ResourceSlice, path: FieldPath) -> Location:
    """Where a pool finding points inside one of the pool's slices."""
    return Location.at(slice_.source, path, slice_.ref)


@dataclass(frozen=True, slots=True, kw_only=True)
class SliceRule(Rule):
    """A rule over one slice, as the API server sees it (CREATE, or UPDATE against the old one)."""

    scope: ClassVar[Scope] = Scope.SLICE
    check: Callable[[SliceContext], Iterable[Finding]]
    ratchets: bool = False
    """UPDATE: skip expressions byte-identical to one the old object already had (SPEC §2)."""
    vap: Callable[[Limits], VapCel] | None = None
    """The rule as ValidatingAdmissionPolicy CEL for a release's limits, when CEL in admission
    can check it on one object (the structural rules); `policies.rules.vap` assembles them."""

    def finding(
        self,
        ctx: SliceContext,
        path: FieldPath,
        body: str,
        *,
        anchor: FieldPath | None = None,
        severity: Severity | None = None,
        inner: tuple[int, int] | None = None,
    ) -> Finding:
        """A finding on `ctx.slice` whose message reads like an API server field error.

        `anchor` is where a human should look when it differs from the reported field
        (a duplicate list entry is reported at `[i]`, but its `name` is the line to show).
        """
        obj = ctx.slice
        location = Location.at(obj.source, path, obj.ref)
        position = obj.source.locate(anchor) if anchor is not None else location.position
        at = Position(*inner) if inner is not None and inner[0] >= 1 else None
        value = obj.source.positions.get(path) if at is not None else None
        location = Location(
            field=path, file=location.file, position=position, object=obj.ref, inner=at, value=value
        )
        return Finding(
            rule=self.id,
            severity=severity or self.severity,
            message=f"{render_path(path)}: {body}",
            locations=(location,),
            pool=obj.pool,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolRule(Rule):
    """A rule over one pool (all its slices), as the scheduler sees it; see `scheduler.pools`."""

    scope: ClassVar[Scope] = Scope.POOL
    check: Callable[[PoolContext], Iterable[Finding]]

    def finding(
        self,
        ctx: PoolContext,
        message: str,
        locations: Sequence[Location],
        *,
        severity: Severity | None = None,
    ) -> Finding:
        """A finding about a whole pool, pointing at every slice involved (the first is primary)."""
        return Finding(
            rule=self.id,
            severity=severity or self.severity,
            message=message,
            locations=tuple(locations),
            pool=ctx.pool.ref,
        )
