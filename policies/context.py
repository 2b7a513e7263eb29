"""The inputs one slice rule sees: the new slice, the old one (UPDATE) and the limits."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from policies.limits import Limits
from policies.model import Extractor, ResourceSlice


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
