"""AdmissionReview ⇄ `policies` ⇄ AdmissionReview: the webhook's only decision logic.

`parse_review` checks the envelope (a malformed one is the caller's bug: HTTP 400);
`Admitter.admit` turns one request into a `Verdict` through exactly the calls the CLI makes —
`model.resources.parse`, then `rules.engine.check_slice(new, old, options)` — so rule ids and
messages are the CLI's. Requests the webhook is not meant for (other kinds or versions, DELETE,
CONNECT, sub-resources, no object) are allowed and say why in the log: a mis-scoped webhook
configuration must not block the cluster.

dryRun requests take the same path: nothing here has side effects.

CEL work per request is bounded: at most `max_entries` (8) expressions of at most 10 KiB are
compiled. Beyond 8 entries the slice is denied by SA101 anyway, and the API server's own list
validation stops there too (`validateSet` returns on "Too many"), so the expression rules are
skipped for that request rather than compiling whatever a 7 MiB body can hold.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..policies.analysis.slice_cost import analysable
from ..policies.core.cache import BoundedCache, text_weight
from ..policies.core.clip import clip_text, clip_value
from ..policies.core.findings import Finding, Severity
from ..policies.model.resources import SLICE_VERSIONS, ResourceSlice, parse
from ..policies.rules.catalog import slice_rules
from ..policies.rules.engine import EngineOptions, check_slice
from ..policies.rules.pool.sp301_duplicate_key import RULE as DUPLICATE_KEY
from ..policies.rules.pool.sp302_cost_budget import RULE as POOL_COST_BUDGET
from .budget import HEAVY_BYTES, ON_BUDGET_ALLOW, Deadline, HeavyGate
from .render import (
    MAX_WARNING_CHARS,
    SLICE_GROUP,
    SLICE_KIND,
    audit_annotations,
    bad_request_status,
    fit_warnings,
    invalid_status,
    warning_text,
)
from .settings import WebhookSettings

MAX_LOGGED_ID = 128
"""Characters of a uid in a log line (the API server's are 36-character UUIDs)."""

REVIEW_API_VERSIONS = frozenset({"admission.k8s.io/v1", "admission.k8s.io/v1beta1"})
_WANTED_VERSIONS = ", ".join(sorted(REVIEW_API_VERSIONS))
CHECKED_OPERATIONS = frozenset({"CREATE", "UPDATE"})


@dataclass(frozen=True, slots=True)
class ReviewProblem:
    """The body is not a usable AdmissionReview (HTTP 400)."""

    message: str


@dataclass(slots=True)
class AdmissionRequest:
    api_version: str
    uid: str
    group: str
    version: str
    kind: str
    operation: str
    name: str
    sub_resource: str
    dry_run: bool
    object: Any
    old_object: Any


def _gvk(value: object) -> tuple[str, str, str] | None:
    if not isinstance(value, Mapping):
        return None
    parts = (value.get("group", ""), value.get("version"), value.get("kind"))
    if not all(isinstance(p, str) for p in parts):
        return None
    return (str(parts[0]), str(parts[1]), str(parts[2]))


def _object_type_problem(field: str, obj: object) -> ReviewProblem | None:
    """Why `request.<field>` cannot be an object the API server sent, else None.

    The API server serialises typed Go objects: `kind` and `apiVersion` are strings, so a
    list or map there is a client's bug (Go's decoder refuses it: a 400, not a denial)."""
    if obj is None:
        return None
    if not isinstance(obj, Mapping):
        return ReviewProblem(f"request.{field}: Invalid value: must be a JSON object")
    for key in ("kind", "apiVersion"):
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            return ReviewProblem(f"request.{field}.{key}: Invalid value: {clip_value(value)}: "
                               f"must be a string")
    return None


def parse_review(body: object) -> AdmissionRequest | ReviewProblem:
    """The request stanza of an AdmissionReview, or why the envelope is unusable."""
    if not isinstance(body, Mapping):
        return ReviewProblem("body must be a JSON object (an AdmissionReview)")
    api_version = body.get("apiVersion")
    kind = body.get("kind")
    problems = []
    if kind is None:
        problems.append("kind: Required value: must be AdmissionReview")
    elif kind != "AdmissionReview":
        problems.append(f"kind: Unsupported value: {clip_value(kind)}: must be AdmissionReview")
    if api_version is None:
        problems.append(f"apiVersion: Required value: one of {_WANTED_VERSIONS}")
    elif api_version not in REVIEW_API_VERSIONS:
        problems.append(f"apiVersion: Unsupported value: {clip_value(api_version)}: "
                        f"supported values: {_WANTED_VERSIONS}")
    if problems:
        return ReviewProblem("; ".join(problems))
    request = body.get("request")
    if not isinstance(request, Mapping):
        return ReviewProblem("request: Required value: an AdmissionReview must carry a request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        return ReviewProblem("request.uid: Required value")
    gvk = _gvk(request.get("kind"))
    if gvk is None:
        return ReviewProblem("request.kind: Required value: {group, version, kind}")
    operation = request.get("operation")
    if not isinstance(operation, str) or not operation:
        return ReviewProblem("request.operation: Required value")
    dry_run = request.get("dryRun", False)
    if dry_run is not None and not isinstance(dry_run, bool):
        return ReviewProblem("request.dryRun: Invalid value: must be a boolean")
    for stanza in ("object", "oldObject"):
        problem = _object_type_problem(stanza, request.get(stanza))
        if problem is not None:
            return problem
    name = request.get("name")
    sub_resource = request.get("subResource")
    return AdmissionRequest(
        api_version=str(api_version),
        uid=uid,
        group=gvk[0],
        version=gvk[1],
        kind=gvk[2],
        operation=operation,
        name=name if isinstance(name, str) else "",
        sub_resource=sub_resource if isinstance(sub_resource, str) else "",
        dry_run=bool(dry_run),
        object=request.get("object"),
        old_object=request.get("oldObject"),
    )


@dataclass(frozen=True, slots=True)
class PoolVerdict:
    """The pool rules' findings for one slice, or why they could not be checked."""

    findings: tuple[Finding, ...] = ()
    skipped: str | None = None


class PoolChecker(Protocol):
    """Applies the pool rules to a slice being written (see `dra_affinity.webhook.poolcache`)."""

    def check(self, new: ResourceSlice, old: ResourceSlice | None, options: EngineOptions) -> PoolVerdict: ...


@dataclass(slots=True)
class Verdict:
    request: AdmissionRequest
    allowed: bool
    decision: str
    """`allowed`, `denied`, or `skipped` (not a request this webhook checks)."""
    name: str = ""
    findings: tuple[Finding, ...] = ()
    skip_reason: str | None = None
    pool_check: str | None = None
    """None (not applicable), `ok`, or `skipped`."""
    extra_warnings: tuple[str, ...] = field(default=())
    budget: str | None = None
    """Why the review ran out of time (`webhook.budget`): the answer says so, nothing else."""
    undecodable: bool = False
    """The object is not a readable ResourceSlice (SA000: a wrongly typed or missing structural
    field): denied with status 400 BadRequest, as controller-runtime answers a decode error."""
    cached: CachedFindings | None = None
    """The findings-cache entry `findings` is, when no pool findings were added to it: what is
    derived from the findings alone is then computed once per entry, not per request."""

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)

    @property
    def rule_severities(self) -> tuple[tuple[str, str], ...]:
        """Sorted distinct (rule id, severity label) pairs of the findings."""
        if self.cached is not None:
            return self.cached.rule_severities
        return _rule_severities(self.findings)

    @property
    def rule_ids(self) -> list[str]:
        return sorted({rule for rule, _ in self.rule_severities})

    def warnings(self) -> list[str]:
        advisories = (warning_text(f) for f in self.findings if f.severity is Severity.WARNING)
        return fit_warnings([*self.extra_warnings, *advisories])

    def response(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uid": self.request.uid, "allowed": self.allowed}
        if self.budget is not None:
            if self.allowed:
                out["warnings"] = [self.budget[:MAX_WARNING_CHARS]]
            else:
                out["status"] = {"status": "Failure", "code": 503, "reason": "ServiceUnavailable",
                                 "message": self.budget}
            out["auditAnnotations"] = {"decision": self.decision}
            return out
        if not self.allowed:
            out["status"] = (bad_request_status if self.undecodable else invalid_status)(
                self.name, self.errors)
        if self.decision != "skipped":
            warnings = self.warnings()
            if warnings:
                out["warnings"] = warnings
            out["auditAnnotations"] = audit_annotations(self.decision, self.findings, self.pool_check)
        return out

    def review(self) -> dict[str, Any]:
        """The reply: an AdmissionReview in the apiVersion the request used."""
        return {"apiVersion": self.request.api_version, "kind": "AdmissionReview",
                "response": self.response()}

    def review_json(self) -> str:
        """`review()` serialized as compact JSON, in the same key order.

        Why a memo: rendering warnings, audit annotations and a status, then serializing them,
        costs more than the rest of a request whose findings are cached, and drivers resend
        the same slices. Such replies differ only by their uid, so the text around it is kept
        in the cache entry, per everything else the reply depends on.
        """
        if self.cached is None:
            return _compact(self.review())
        key = (self.request.api_version, self.allowed, self.decision, self.name, self.pool_check,
               self.extra_warnings)
        parts = self.cached.replies.get(key)
        uid = json.dumps(self.request.uid)
        if parts is None:
            text = _compact(self.review())
            head, found, tail = text.partition(f'"uid":{uid}')
            if found:  # always, for a reply built by `review()`; never memoize a guess
                self.cached.remember_reply(key, (head + '"uid":', tail))
            return text
        return parts[0] + uid + parts[1]

    def log_fields(self) -> dict[str, Any]:
        req = self.request
        uid = clip_text(req.uid, MAX_LOGGED_ID)
        fields: dict[str, Any] = {
            "uid": uid, "requestID": uid,  # controller-runtime's name for the uid
            "kind": clip_text(f"{req.kind}.{req.group}" if req.group else req.kind),
            "version": clip_text(req.version), "name": clip_text(self.name or req.name),
            "operation": clip_text(req.operation),
            "dry_run": req.dry_run, "decision": self.decision, "allowed": self.allowed,
            "rules": self.rule_ids,
        }
        if not self.allowed:
            fields["code"] = 503 if self.budget is not None else 400 if self.undecodable else 422
        if self.budget is not None:
            fields["budget"] = self.budget
        if self.skip_reason:
            fields["skip_reason"] = self.skip_reason
        if self.pool_check:
            fields["pool_check"] = self.pool_check
        return fields


def _object_name(obj: Mapping[str, Any], fallback: str) -> str:
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        for key in ("name", "generateName"):
            value = meta.get(key)
            if isinstance(value, str) and value:
                return value
    return fallback


def _with_name(obj: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """CREATE with `generateName` may reach us before the name is set; the model needs one."""
    meta = obj.get("metadata")
    # Only a missing (or empty) name is filled in: a wrongly typed one is the model's to report.
    if isinstance(meta, Mapping) and meta.get("name") in (None, "") and name:
        return {**obj, "metadata": {**meta, "name": name}}
    return obj


SliceKey = tuple[object, ...]


def _compact(payload: dict[str, Any]) -> str:
    return json.dumps(payload, separators=(",", ":"))


def _rule_severities(findings: tuple[Finding, ...]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({(f.rule, f.severity.label) for f in findings}))


class CachedFindings:
    """One findings-cache entry: the findings and what requests derive from them alone."""

    MAX_REPLIES = 16
    """Reply variants kept per entry (api version, decision, pool-check state...): few in
    practice; past the bound the memo starts over."""
    MAX_REPLY_CHARS = 2048
    """A longer reply (a long denial) is rendered each time, not kept: with `MAX_REPLIES`,
    what an entry's memo may grow to after it is weighed (`FindingsCache.weigh`)."""

    __slots__ = ("findings", "has_errors", "replies", "rule_severities")

    def __init__(self, findings: tuple[Finding, ...]) -> None:
        self.findings = findings
        self.has_errors = any(f.severity is Severity.ERROR for f in findings)
        self.rule_severities = _rule_severities(findings)
        self.replies: dict[tuple[object, ...], tuple[str, str]] = {}

    def remember_reply(self, key: tuple[object, ...], parts: tuple[str, str]) -> None:
        # Threads racing here store equal parts; a dict store is atomic under the GIL.
        if len(parts[0]) + len(parts[1]) > self.MAX_REPLY_CHARS:
            return
        if len(self.replies) >= self.MAX_REPLIES:
            self.replies = {}
        self.replies[key] = parts


class FindingsCache:
    """Slice-rule findings in a bounded cache (`webhook.findings`), keyed by everything they
    depend on.

    Drivers republish the same metadata slices over and over (every reconcile bumps the
    generation, not the extractors), so the verdict for identical content is computed
    once per process. The key holds what slice rules read — identity fields, presence of
    `devices` and `sharingAffinity`, every (name, expression), the old object's
    expressions (ratcheting) and the engine options — and never device contents, which
    no slice rule reads beyond their presence.
    """

    MAX_BYTES = 40 * 1024 * 1024
    """Budget of the entries (`weigh`), per worker. The key holds the slice's texts, and a
    request may carry 7 MiB of them (28 MiB as Python strings with one character past
    U+FFFF): by count alone, 1,024 entries could hold 28 GiB in a 512 Mi pod. An entry of
    a small slice weighs ~36 KB (mostly its reply memo's allowance): the 1,024 still fit."""

    def __init__(self, maxsize: int = 1024, max_bytes: int = MAX_BYTES) -> None:
        self.cache: BoundedCache[SliceKey, CachedFindings] = BoundedCache(
            "webhook.findings", maxsize, max_bytes=max_bytes, weigh=self.weigh)

    @staticmethod
    def weigh(key: SliceKey, entry: CachedFindings) -> int:
        """Estimated bytes of an entry: the key's texts, the findings, and the most its reply
        memo can grow to (`CachedFindings.MAX_REPLIES` replies of `MAX_REPLY_CHARS`)."""
        texts: list[object] = [*key[:3]]
        for part in key[5:7]:  # the (name, expression) pairs, the old object's expressions
            if isinstance(part, (tuple, frozenset)):
                for item in part:
                    texts.extend(item if isinstance(item, tuple) else (item,))
        findings = entry.findings
        return (text_weight(texts) + text_weight(f.message for f in findings) + 512 * (1 + len(findings))
                + CachedFindings.MAX_REPLIES * (CachedFindings.MAX_REPLY_CHARS + 128))

    @staticmethod
    def key(new: ResourceSlice, old: ResourceSlice | None, options: EngineOptions) -> SliceKey:
        old_expressions = (
            frozenset(e.expression for e in old.sharing_affinity) if old is not None else None
        )
        entries = tuple((e.name, e.expression) for e in new.sharing_affinity)
        # `weigh` reads this layout: texts first, the pairs and the old expressions at 5 and 6.
        return (new.name, new.driver, new.pool_name, new.devices_set, new.sharing_affinity_set,
                entries, old_expressions, options)

    def has(self, new: ResourceSlice, old: ResourceSlice | None, options: EngineOptions) -> bool:
        return self.key(new, old, options) in self.cache

    def entry(self, new: ResourceSlice, old: ResourceSlice | None,
              options: EngineOptions) -> CachedFindings:
        """The slice rules' findings for this content (the same entry while it lives)."""
        key = self.key(new, old, options)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        computed = CachedFindings(tuple(check_slice(new, old, options)))
        self.cache.put(key, computed)
        return computed


_NO_POOL_CHECK = PoolVerdict()


class Admitter:
    """Decides one request. Holds only immutable configuration (and the pool checker)."""

    def __init__(self, settings: WebhookSettings, pools: PoolChecker | None = None) -> None:
        self.settings = settings
        self.pools = pools if settings.pool_check else None
        self.cache = FindingsCache()
        self.gate = HeavyGate()
        self.options = EngineOptions(kubernetes_version=settings.kubernetes_version)
        self.max_entries = self.options.limits.max_entries
        expression_rules = frozenset(r.id for r in slice_rules() if r.ratchets)
        self.bounded_options = EngineOptions(
            kubernetes_version=settings.kubernetes_version,
            disabled_rules=self.options.disabled_rules | expression_rules,
        )

    def _skip(self, request: AdmissionRequest, reason: str) -> Verdict:
        return Verdict(request, allowed=True, decision="skipped", name=request.name, skip_reason=reason)

    def admit(self, request: AdmissionRequest, deadline: Deadline | None = None) -> Verdict:
        if request.group != SLICE_GROUP or request.kind != SLICE_KIND:
            return self._skip(request, f"kind {request.kind}.{request.group or 'core'} is not checked")
        if request.version not in SLICE_VERSIONS:
            return self._skip(request, f"{SLICE_GROUP}/{request.version} is not a checked version")
        if request.operation not in CHECKED_OPERATIONS:
            return self._skip(request, f"operation {request.operation} is not checked")
        if request.sub_resource:
            return self._skip(request, f"subresource {request.sub_resource} is not checked")
        if not isinstance(request.object, Mapping):
            return self._skip(request, "request carries no object")
        name = _object_name(request.object, request.name)
        parsed = parse(_with_name(request.object, name), trusted=True, with_devices=False)
        if not isinstance(parsed.obj, ResourceSlice):
            if parsed.findings:  # a ResourceSlice that fails the structural check: SA000
                return Verdict(request, allowed=False, decision="denied", name=name,
                               findings=parsed.findings, undecodable=True)
            return self._skip(request, "object is not a ResourceSlice")
        old = None
        if request.operation == "UPDATE" and isinstance(request.old_object, Mapping):
            old_parsed = parse(request.old_object, trusted=True, with_devices=False)
            old = old_parsed.obj if isinstance(old_parsed.obj, ResourceSlice) else None
        new = parsed.obj
        over_limit = len(new.sharing_affinity) > self.max_entries
        options = self.bounded_options if over_limit else self.options
        if deadline is not None and not over_limit and not self.cache.has(new, old, options):
            late = self._analyse_within(new, deadline)
            if late is not None:
                allowed = ON_BUDGET_ALLOW
                return Verdict(request, allowed=allowed, decision="allowed" if allowed
                               else "budget-exceeded", name=name, budget=late)
        cached = self.cache.entry(new, old, options)
        # Over the entry limit the pool check is skipped too: its cost sum would compile every
        # entry, and SA101 denies the slice anyway.
        extra: tuple[str, ...] = ()
        if over_limit or self.pools is None:
            pool_check = _NO_POOL_CHECK
        else:
            pool_check, extra = self._pool(new, old, options)
        if pool_check.findings:
            findings = cached.findings + pool_check.findings
            allowed = not any(f.severity is Severity.ERROR for f in findings)
        else:
            findings, allowed = cached.findings, not cached.has_errors
        return Verdict(
            request,
            allowed=allowed,
            decision="allowed" if allowed else "denied",
            name=name,
            findings=findings,
            cached=cached if findings is cached.findings else None,
            pool_check=None if self.pools is None or not new.is_metadata_slice or over_limit
            else ("skipped" if pool_check.skipped else "ok"),
            extra_warnings=extra,
        )

    def _analyse_within(self, new: ResourceSlice, deadline: Deadline) -> str | None:
        """Analyse the slice's expressions (into the analysis cache) before `deadline`; why not,
        or None when every one is done (`check_slice` then reads them from the cache)."""
        weight = sum(len(e.expression or "") for e in new.sharing_affinity)
        heavy = weight > HEAVY_BYTES
        if heavy and not self.gate.acquire(deadline):
            return self._late(deadline, "busy with other large slices")
        try:
            limits = self.options.limits
            for extractor in new.sharing_affinity:
                if deadline.passed():
                    return self._late(deadline, "its expressions take too long to analyse")
                result = analysable(extractor.expression, limits)
                if result is not None and result.ok:
                    # the advisories' walks and their bounded evaluations (advice.py)
                    _ = (result.unguarded_reads, result.depends_on_object, result.has_schema_guard,
                         result.can_decline, result.oversized_formats, result.non_string,
                         result.constant_outcome)
        finally:
            if heavy:
                self.gate.release()
        return self._late(deadline, "its expressions take too long to analyse") \
            if deadline.passed() else None

    @staticmethod
    def _late(deadline: Deadline, why: str) -> str:
        return (f"the dra-affinity webhook could not finish checking this ResourceSlice within "
                f"its {deadline.seconds:g}s budget ({why}); retry: the work done so far is kept")

    def _pool(self, new: ResourceSlice, old: ResourceSlice | None,
              options: EngineOptions) -> tuple[PoolVerdict, tuple[str, ...]]:
        if self.pools is None or not new.is_metadata_slice:
            return PoolVerdict(), ()
        verdict = self.pools.check(new, old, options)
        if verdict.skipped:
            note = (f"pool check skipped ({verdict.skipped}); "
                    f"{DUPLICATE_KEY.id}/{POOL_COST_BUDGET.id} not verified")
            return verdict, (note[:117] + "..." if len(note) > MAX_WARNING_CHARS else note,)
        return verdict, ()
