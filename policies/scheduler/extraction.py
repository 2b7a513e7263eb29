"""SPEC §5: what the scheduler extracts from one claim request for one pool.

Computed once per (claim, request, pool), never per device: per-device work is a
dictionary comparison against the result's affinity map (`dra_affinity.policies.scheduler.locks`).
Errors are values; the order of checks is the KEP's: pool-level failures first,
then every extractor against every in-scope config, slice errors dominating claim
errors, claim errors dominating strict gating.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cel.common.errors import KIND_COST_EXCEEDED, KIND_FAILED
from ..core import layers
from ..core.findings import PoolRef
from ..core.limits import KubernetesVersion, Limits, limits_for
from ..model.resources import ClaimConfig, DeviceRequest, Extractor, ResourceClaim
from .diagnostics import Diagnostic

KIND_NON_STRING = "cel expression returned non-string"
KIND_COST = KIND_COST_EXCEEDED
KIND_COLLISION = "slice key collision"
KIND_CLAIM = "claim self-inconsistent"

LIBRARY_STRING_TYPES = frozenset(
    {"net.IP", "net.CIDR", "kubernetes.Quantity", "kubernetes.URL", "kubernetes.Semver"}
)
"""Results upstream's ConvertToNative(string) accepts besides `string`."""


class Outcome(enum.Enum):
    OK = "ok"
    NOT_SATISFIED = "not-satisfied"
    CLAIM_INCONSISTENT = "claim-inconsistent"
    SLICE_ERROR = "slice-error"
    NOT_APPLICABLE = "not-applicable"
    POOL_INCOMPLETE = "pool-incomplete"
    NO_MATCHING_DEVICE = "no-matching-device"
    """A pool of the class's driver where no device passes the request's own selectors."""
    SELECTOR_ERROR = "selector-error"
    """A class or request selector fails on a device of the pool: the scheduler aborts the pod."""

    @property
    def diagnostic(self) -> Diagnostic | None:
        return {
            Outcome.NOT_SATISFIED: Diagnostic.NO_KEYS_EXTRACTED,
            Outcome.SLICE_ERROR: Diagnostic.CEL_EVALUATION_FAILURE,
        }.get(self)


@dataclass(frozen=True, slots=True)
class PoolExtractor:
    """One extractor of a pool, with where it came from (the union over metadata slices)."""

    extractor: Extractor
    slice_name: str


@dataclass(frozen=True, slots=True)
class ExtractionPool:
    """What extraction needs to know about a pool (built by `dra_affinity.policies.scheduler.pools`)."""

    ref: PoolRef
    generation: int
    extractors: tuple[PoolExtractor, ...]
    complete: bool = True
    incomplete_reason: str = ""
    duplicate_keys: tuple[str, ...] = ()
    total_cost: int = 0


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One extractor run against one config's parameters."""

    extractor: str
    config: int
    value: object
    type: str
    runtime_cost: int
    error_kind: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ExtractionProblem:
    kind: str
    message: str
    extractor: str | None = None
    config: int | None = None


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    claim: str
    request: str
    pool: PoolRef
    outcome: Outcome
    affinity: Mapping[str, str] | None = None
    unsatisfied: tuple[str, ...] = ()
    error: ExtractionProblem | None = None
    evaluations: tuple[Evaluation, ...] = ()
    configs: tuple[int, ...] = ()
    """Indexes (in `spec.devices.config`) of the configs in scope."""
    notes: tuple[str, ...] = field(default=())


def _prefix(kind: str, pool: ExtractionPool, request: str, extractor: int | None,
            key: str | None) -> str:
    """Upstream's error rendering: kind, pool, request, extractor, key, each when known."""
    text = f'{kind} for pool "{pool.ref.driver}"/"{pool.ref.name}" generation {pool.generation}'
    text += f', request "{request}"'
    if extractor is not None:
        text += f", extractor {extractor}"
    if key is not None:
        text += f', key "{key}"'
    return text


def in_scope_configs(claim: ResourceClaim, request: str, driver: str) -> tuple[ClaimConfig, ...]:
    """SPEC §5.1: opaque configs of the pool's driver for the request (or its parent), or claim-wide."""
    parent = request.split("/", 1)[0] if "/" in request else None
    names = {request} | ({parent} if parent else set())
    return tuple(
        c for c in claim.configs
        if c.opaque is not None and c.opaque.driver == driver
        and (not c.requests or names & set(c.requests))
    )


def device_requests(claim: ResourceClaim) -> dict[str, DeviceRequest]:
    """Every request a device can be allocated under (`req`, or `req/sub`), by that name: the
    one walk of `exactly` and `firstAvailable` for candidates, classes, extraction and locks."""
    out: dict[str, DeviceRequest] = {}
    for request in claim.requests:
        for sub in request.first_available or ((request.exactly,) if request.exactly else ()):
            out[sub.name] = sub
    return out


def request_names(claim: ResourceClaim) -> tuple[str, ...]:
    """Every name a request can be allocated under: `req`, or `req/sub` for firstAvailable."""
    names: list[str] = []
    for request in claim.requests:
        if request.first_available:
            names.extend(sub.name for sub in request.first_available)
        else:
            names.append(request.name)
    return tuple(names)


def extract(
    claim: ResourceClaim,
    request: str,
    pool: ExtractionPool,
    *,
    kubernetes_version: KubernetesVersion | None = None,
) -> ExtractionResult:
    """The outcome of SPEC §5 for one (claim, request, pool)."""
    limits = limits_for(kubernetes_version) if kubernetes_version else limits_for()

    def done(outcome: Outcome, **details: Any) -> ExtractionResult:
        return ExtractionResult(claim.qualified_name, request, pool.ref, outcome, **details)

    if not pool.extractors:
        return done(Outcome.NOT_APPLICABLE)
    if not pool.complete:
        notes = (pool.incomplete_reason,) if pool.incomplete_reason else ()
        return done(Outcome.POOL_INCOMPLETE, notes=notes)
    if pool.duplicate_keys:
        key = pool.duplicate_keys[0]
        message = _prefix(KIND_COLLISION, pool, request, None, key) + \
            f": key {key!r} is declared by more than one extractor of the pool"
        return done(Outcome.SLICE_ERROR, error=ExtractionProblem(KIND_COLLISION, message, key))
    if pool.total_cost > limits.pool_cost_budget:
        message = _prefix(KIND_COST, pool, request, None, None) + (
            f": cost limit exceeded: estimated cost {pool.total_cost} of the pool's extractors "
            f"exceeds limit {limits.pool_cost_budget}"
        )
        return done(Outcome.SLICE_ERROR, error=ExtractionProblem(KIND_COST, message))
    compile_error = _compile_errors(pool, request, limits)
    if compile_error is not None:
        return done(Outcome.SLICE_ERROR, error=compile_error)

    configs = in_scope_configs(claim, request, pool.ref.driver)
    scope = tuple(c.index for c in configs)
    evaluations, first_error = _evaluate_all(pool, request, configs, limits)
    if first_error is not None:
        return done(Outcome.SLICE_ERROR, error=first_error, evaluations=evaluations, configs=scope)
    values: dict[str, str] = {}
    for ev in evaluations:
        if not isinstance(ev.value, str) or ev.value == "":
            continue
        if ev.extractor in values and values[ev.extractor] != ev.value:
            message = (
                f"{KIND_CLAIM} for request \"{request}\": key \"{ev.extractor}\" has the values "
                f"{values[ev.extractor]!r} and {ev.value!r} in different configs"
            )
            return done(
                Outcome.CLAIM_INCONSISTENT,
                error=ExtractionProblem(KIND_CLAIM, message, ev.extractor, ev.config),
                evaluations=evaluations, configs=scope,
            )
        values[ev.extractor] = ev.value
    names = [p.extractor.name or "" for p in pool.extractors]
    unsatisfied = tuple(n for n in names if n not in values)
    if unsatisfied:
        return done(Outcome.NOT_SATISFIED, unsatisfied=unsatisfied, evaluations=evaluations, configs=scope)
    return done(Outcome.OK, affinity=dict(sorted(values.items())), evaluations=evaluations, configs=scope)


def _tagged(o: object) -> str:
    """A value JSON cannot carry (a YAML timestamp, bytes), rendered with its type."""
    return f"{type(o).__name__}:{o!r}"


_CANONICAL = json.JSONEncoder(sort_keys=True, default=_tagged)
"""`json.dumps(..., sort_keys=True, default=_tagged)` without building an encoder per call
(one call per claim: 100,000 per `locks` of a large cluster)."""


def content_key(configs: Sequence[ClaimConfig]) -> tuple[Hashable, ...] | None:
    """What extraction reads of the in-scope configs: their indexes and parameters' contents.

    None when the parameters cannot be rendered canonically (mixed key types): then the
    request is extracted without the memo, never wrongly shared.
    """
    try:
        return tuple([(c.index, _canonical(c.opaque.parameters if c.opaque else None)) for c in configs])
    except (TypeError, ValueError):
        return None


_FLAT = (str, int, bool, type(None))
"""Value types whose equality is exact per type (not float: -0.0 == 0.0, and NaN != NaN)."""


def _canonical(parameters: object) -> Hashable:
    """The parameters' content as a key. A flat object of string keys and plain values (a claim's
    usually is) becomes its sorted (key, type, value) triples, without encoding; anything else
    its sorted-key JSON. The two forms never compare equal (a tuple is not a string)."""
    if type(parameters) is dict:
        flat = []
        for k, v in parameters.items():
            if type(k) is not str or type(v) not in _FLAT:
                break
            flat.append((k, type(v).__name__, v))
        else:
            flat.sort()
            return tuple(flat)
    return _CANONICAL.encode(parameters)


def pool_key(pool: ExtractionPool) -> tuple[Hashable, ...]:
    """Everything of a pool extraction reads except its name (which only appears in errors)."""
    return (tuple((p.extractor.name, p.extractor.expression) for p in pool.extractors), pool.complete,
            pool.incomplete_reason, pool.duplicate_keys, pool.total_cost)


EXTRACTION_MEMO = layers.declare(
    "extraction-memo",
    "a cluster's pools usually publish the same extractors and its claims come from a few "
    "templates, so most (claim, request, pool) triples repeat an extraction already done: one "
    "result per (pool extractors, request, in-scope config contents), relabelled for the asking "
    "claim and pool")


class ExtractionMemo:
    """`extract` for the scheduler model's runs, memoised by (pool extractors, request, in-scope
    config contents) while the `extraction-memo` layer is on.

    A hit is relabelled with the asking claim and pool (`extract`; `shared` gives it as
    memoised, for callers that read only its outcome and map); a slice error names its pool
    and generation, so it is only shared within one pool. Entries are few (distinct contents),
    and the memo lives as long as the dry run, simulation or `LockBook` that owns it.

    `misses`: the distinct extractions (by that key) the run needed; `evaluations`: the CEL
    evaluations they hold. Both count the same with the layer off, where every call runs
    `extract`: they are figures of the input, not of the memo. The layer is asked once, when
    the memo is made (a memo serves one run).
    """

    def __init__(self, kubernetes_version: KubernetesVersion | None = None) -> None:
        self._version = kubernetes_version
        self._memoised = EXTRACTION_MEMO.on
        self._results: dict[tuple[Hashable, ...], ExtractionResult] = {}
        self._counted: set[tuple[Hashable, ...]] = set()
        """Keys of the extractions counted with the layer off (where `_results` stays empty)."""
        self._scopes: dict[tuple[str, str], tuple[Hashable, ...] | None] = {}
        """(request, driver) -> content, for the claim `_scoped` only."""
        self._scoped: ResourceClaim | None = None
        """The claim object `_scopes` are of (by identity: a claim put again under its name, as a
        `LockBook` is given it, may read differently)."""
        self._contents: dict[tuple[Hashable, ...], tuple[Hashable, ...]] = {}
        self._pools: dict[PoolRef, tuple[ExtractionPool, tuple[Hashable, ...]]] = {}
        """pool -> (its summary, `pool_key`): computed once, not per claim."""
        self.misses = 0
        self.evaluations = 0

    def content(self, claim: ResourceClaim, request: str, driver: str) -> tuple[Hashable, ...] | None:
        """What extraction reads of the claim for `request` on `driver`'s pools (None: unkeyable)."""
        if claim is not self._scoped:  # one claim's scopes at a time: 100,000 claims keep no entry each
            self._scopes.clear()
            self._scoped = claim
        scope_key = (request, driver)
        if scope_key in self._scopes:
            return self._scopes[scope_key]
        content = content_key(in_scope_configs(claim, request, driver))
        if content is not None:  # equal contents share one key object, however many claims hold it
            content = self._contents.setdefault(content, content)
        self._scopes[scope_key] = content
        return content

    def extract(self, claim: ResourceClaim, request: str, pool: ExtractionPool) -> ExtractionResult:
        """`extract(claim, request, pool)`, from the memo when the contents were seen."""
        return relabel(self.shared(claim, request, pool), claim.qualified_name, pool.ref)

    def shared(self, claim: ResourceClaim, request: str, pool: ExtractionPool) -> ExtractionResult:
        """`extract`'s result as memoised: its outcome, map and evaluations are this claim's, its
        claim and pool names may be another's (one object per distinct content, not per claim)."""
        content = self.content(claim, request, pool.ref.driver)
        if content is None:
            return self._run(claim, request, pool)
        keyed = self._pools.get(pool.ref)
        if keyed is None or keyed[0] is not pool:
            keyed = (pool, pool_key(pool))
            self._pools[pool.ref] = keyed
        key: tuple[Hashable, ...] = (keyed[1], request, content)
        if not self._memoised:
            return self._counted_run(key, claim, request, pool)
        hit = self._results.get(key)
        if hit is not None and hit.outcome is Outcome.SLICE_ERROR:
            # its message names the pool and generation: shared by that pool at that generation only
            # (a `LockBook` reloads a pool under its name)
            key = (*key, pool.ref, pool.generation)
            hit = self._results.get(key)
        if hit is None:
            hit = self._run(claim, request, pool)
            self._results[key] = hit
            if hit.outcome is Outcome.SLICE_ERROR and len(key) == 3:
                self._results[(*key, pool.ref, pool.generation)] = hit
        return hit

    def _run(self, claim: ResourceClaim, request: str, pool: ExtractionPool) -> ExtractionResult:
        self.misses += 1
        result = extract(claim, request, pool, kubernetes_version=self._version)
        self.evaluations += len(result.evaluations)
        return result

    def _counted_run(self, key: tuple[Hashable, ...], claim: ResourceClaim, request: str,
                     pool: ExtractionPool) -> ExtractionResult:
        """`extract`, counted as the memo counts it: once per key (with the pool and generation
        for a slice error, whose message names them)."""
        result = extract(claim, request, pool, kubernetes_version=self._version)
        if result.outcome is Outcome.SLICE_ERROR:
            key = (*key, pool.ref, pool.generation)
        if key not in self._counted:
            self._counted.add(key)
            self.misses += 1
            self.evaluations += len(result.evaluations)
        return result


def relabel(result: ExtractionResult, claim: str, pool: PoolRef) -> ExtractionResult:
    """A memoised result as the asking claim and pool's own (the same object when it already is)."""
    if result.claim == claim and result.pool == pool:
        return result
    return ExtractionResult(claim=claim, request=result.request, pool=pool, outcome=result.outcome,
                            affinity=result.affinity, unsatisfied=result.unsatisfied, error=result.error,
                            evaluations=result.evaluations, configs=result.configs, notes=result.notes)


def _compile_errors(pool: ExtractionPool, request: str, limits: Limits) -> ExtractionProblem | None:
    """The scheduler cannot compile an extractor (SA106) or rejects its estimated cost (SA108)."""
    from ..analysis.scheduler_cel import scheduler_compile

    for index, item in enumerate(pool.extractors):
        expression = item.extractor.expression or ""
        compiled, cost_max = scheduler_compile(expression, limits.kubernetes_version)
        key = item.extractor.name
        if not compiled.ok and not compiled.engine_limited:
            message = _prefix(KIND_FAILED, pool, request, index, key) + \
                f": compile CEL expression: {compiled.error_text}"
            return ExtractionProblem(KIND_FAILED, message, key)
        if cost_max is not None and cost_max > limits.runtime_cost_per_evaluation:
            message = _prefix(KIND_COST, pool, request, index, key) + (
                f": cost limit exceeded: estimated cost {cost_max} exceeds limit "
                f"{limits.runtime_cost_per_evaluation}"
            )
            return ExtractionProblem(KIND_COST, message, key)
    return None


def _evaluate_all(
    pool: ExtractionPool, request: str, configs: Sequence[ClaimConfig], limits: Limits
) -> tuple[tuple[Evaluation, ...], ExtractionProblem | None]:
    from ..analysis.scheduler_cel import scheduler_compile
    from ..cel.common.jsonvalue import try_decode_k8s_json
    from ..cel.eval.runtime import evaluate

    evaluations: list[Evaluation] = []
    first_error: ExtractionProblem | None = None
    decoded: list[tuple[ClaimConfig, object]] = []
    for config in configs:
        assert config.opaque is not None
        value, problem = try_decode_k8s_json(config.opaque.parameters)
        if problem is None and not isinstance(value, dict):
            problem = "must be a valid JSON object"
        if problem is not None:
            message = _prefix(KIND_FAILED, pool, request, None, None) + \
                f": unmarshal opaque parameters: {problem}"
            return (), ExtractionProblem(KIND_FAILED, message, None, config.index)
        decoded.append((config, value))
    for index, item in enumerate(pool.extractors):
        key: str = item.extractor.name or ""
        compiled, _ = scheduler_compile(item.extractor.expression or "", limits.kubernetes_version)
        for config, params in decoded:
            result = evaluate(compiled, {"object": params},
                              cost_limit=limits.runtime_cost_per_evaluation)
            kind, detail, value = classify(result)
            evaluations.append(Evaluation(key, config.index, value, result.cel_type,
                                          result.runtime_cost, kind, detail))
            if kind is not None and first_error is None:
                full = _prefix(kind, pool, request, index, key) + f": {detail}"
                first_error = ExtractionProblem(kind, full, key, config.index)
    return tuple(evaluations), first_error


def classify(result: Any) -> tuple[str | None, str | None, object]:
    """Upstream's classification of an evaluation: error kind and message, or the string value."""
    from ..cel.k8s_library import display_value, native_string

    if result.error is not None:
        return result.error.kind, result.error.message, None
    if result.cel_type == "string":
        return None, None, result.value
    if result.cel_type in LIBRARY_STRING_TYPES:
        text = native_string(result.value)
        if text is not None:
            return None, None, text
    return (
        KIND_NON_STRING,
        f"non-string result: CEL result of type {result.cel_type} could not be converted to string",
        display_value(result.value),
    )
