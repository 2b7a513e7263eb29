"""The inputs one slice rule sees: the new slice, the old one (UPDATE) and the limits."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from policies.limits import Limits
from policies.model import Extractor, ResourceSlice

if TYPE_CHECKING:  # the CEL engine loads on the first expression, not on `--help`
    from policies.expression import ExpressionAnalysis


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
        """Compilation and cost of a non-empty expression within the length limit (else None).

        Expressions over the length limit are SA105's: upstream stops there too, without
        compiling.
        """
        expression = extractor.expression
        if not expression or not expression.strip():
            return None
        if len(expression.encode("utf-8")) > self.limits.max_expression_bytes:
            return None
        from policies.expression import analyse

        return analyse(expression, self.limits.kubernetes_version)

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
