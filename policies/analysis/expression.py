"""One extractor expression, analysed once: compiled, typed and costed.

Every rule about an expression (SA106–SA108, the advisories, extraction) starts
here, and the webhook sees the same expressions over and over, so the analysis is
cached by (expression, target version) on top of the compile cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from ..cel.check.env import EnvKey, EnvMode
from ..cel.compile import CACHE_BYTES, CompileResult, compile_expression, result_weight
from ..cel.cost.estimate import CostReport, estimate_cost
from ..core.cache import cached
from ..core.limits import KubernetesVersion, limits_for
from .advice import (
    EVALUATIONS_PER_EXPRESSION,
    OversizedFormat,
    Path,
    Reproduced,
    UnguardedSelect,
    depends_on_object,
    foreign_outcome,
    has_schema_guard,
    mentioned_fields,
    missing_field_witness,
    non_string_witness,
    oversized_format_verbs,
    run_extractor,
    unguarded_selects,
)

ANALYSIS_CACHE_SIZE = 4096


@dataclass(frozen=True, eq=False)
class ExpressionAnalysis:
    """Compilation in the environment that validates new expressions, and its static cost.

    `cost` is None when the expression did not compile. The estimate uses no size
    knowledge of `object` and no Kubernetes-library pricing, exactly like the
    scheduler's estimator (reference §1.4), so "unbounded" here is what the
    scheduler will reject.
    """

    compiled: CompileResult
    cost: CostReport | None
    kubernetes_version: KubernetesVersion | None = None

    @property
    def ok(self) -> bool:
        return self.compiled.ok

    # The advisories' questions, answered once per expression: the webhook sees the same
    # expressions on every write of a slice, and these walks cost as much as a compile.

    @cached_property
    def unguarded_reads(self) -> tuple[tuple[UnguardedSelect, Reproduced], ...]:
        """Each unguarded read with a config on which it fails; a read no built config makes
        fail is left out (nothing proves the "missing field" abort it would announce)."""
        ast = self.compiled.checked
        if ast is None or not self._runnable:
            return ()
        found = []
        budget = [EVALUATIONS_PER_EXPRESSION]
        for read in unguarded_selects(ast):
            witness = missing_field_witness(self.compiled, read, self._fields, self._cost_limit, budget)
            if witness is not None:
                found.append((read, witness))
        return tuple(found)

    @cached_property
    def foreign_outcome(self) -> Reproduced | None:
        """What the expression gives a config of another schema when it does not decline it
        (None: it returns "" for one, or it does not read `object`)."""
        if not self.depends_on_object or not self._runnable:
            return None
        return foreign_outcome(self.compiled, self._fields, self._cost_limit)

    @cached_property
    def constant_outcome(self) -> Reproduced | None:
        """What an expression that does not read `object` gives every config (None: it reads
        `object`, or the scheduler would not run it)."""
        if self.depends_on_object or not self._runnable:
            return None
        return run_extractor(self.compiled, {}, self._cost_limit)

    @cached_property
    def non_string(self) -> Reproduced | None:
        """For a `dyn` expression: a config on which it returns a non-string (None: none found)."""
        if self.compiled.output_type != "dyn" or not self._runnable:
            return None
        return non_string_witness(self.compiled, self._fields, self._cost_limit)

    @property
    def can_decline(self) -> bool:
        return self.foreign_outcome is None

    @cached_property
    def _fields(self) -> dict[Path, list[object]]:
        ast = self.compiled.checked
        return mentioned_fields(ast) if ast is not None else {}

    @property
    def _cost_limit(self) -> int:
        version = self.kubernetes_version
        return (limits_for(version) if version else limits_for()).runtime_cost_per_evaluation

    @property
    def _runnable(self) -> bool:
        """Evaluated only when the scheduler would run it: compiled, within the cost budget,
        and free of format clauses the engine renders unbounded (SA208)."""
        if not self.compiled.ok or self.compiled.program is None or self.oversized_formats:
            return False
        return self.cost is None or self.cost.max <= self._cost_limit

    @cached_property
    def depends_on_object(self) -> bool:
        ast = self.compiled.checked
        return ast is not None and depends_on_object(ast)

    @cached_property
    def has_schema_guard(self) -> bool:
        ast = self.compiled.checked
        return ast is not None and has_schema_guard(ast)

    @cached_property
    def oversized_formats(self) -> tuple[OversizedFormat, ...]:
        ast = self.compiled.checked
        return tuple(oversized_format_verbs(ast)) if ast is not None else ()



@cached("analysis.expression", ANALYSIS_CACHE_SIZE, max_bytes=CACHE_BYTES,
        weigh=lambda _args, analysis: result_weight(analysis.compiled))
def analyse(expression: str, kubernetes_version: KubernetesVersion) -> ExpressionAnalysis:
    """Analyse `expression` as the API server of `kubernetes_version` would on write."""
    compiled = compile_expression(expression, EnvKey(kubernetes_version, EnvMode.NEW_EXPRESSIONS))
    cost = None
    if compiled.ok and compiled.checked is not None:
        cost = estimate_cost(compiled.checked, presence_test_cost=0)
    return ExpressionAnalysis(compiled, cost, kubernetes_version)
