"""Prometheus metrics that add up across gunicorn workers.

gunicorn runs several worker processes; each would otherwise expose only its own counts.
prometheus_client's multiprocess mode (a directory named by `PROMETHEUS_MULTIPROC_DIR`, set by
`gunicorn_conf.on_starting` before any worker imports prometheus_client) has every process write
its samples to files there, and `/metrics` merges them. Its limits shape this module: no custom
collectors, so the compile cache's and the TLS context's own counters are copied in as *deltas*
into real Counters after each request; gauges declare how they merge (`livemin` for the
certificate expiry: the soonest-expiring certificate any live worker serves; labelled, so a
worker that has not served TLS yet contributes nothing rather than a 0).

Names follow the Prometheus conventions (one prefix, base units, `_total` counters); labels are
bounded (decision, operation, rule id — never a uid or object name). Latency buckets reach 10 s
(the API server's default webhook timeout), finer at the low end where a healthy webhook lives.
"""

from __future__ import annotations

import glob
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..policies.core.cache import REGISTRY, CacheInfo
from .multiproc import multiprocess_dir

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@dataclass(frozen=True, slots=True)
class CacheCounts:
    hits: int
    misses: int


class _Deltas:
    """Turns monotonically growing per-process totals into Counter increments."""

    def __init__(self) -> None:
        self._last: dict[tuple[str, ...], int] = {}
        self._lock = threading.Lock()

    def advance(self, key: tuple[str, ...], total: int) -> int:
        with self._lock:
            previous = self._last.get(key, 0)
            self._last[key] = total
        return total - previous if total >= previous else total  # a reset starts over


class Metrics:
    """The webhook's metrics, registered in a registry of their own (not the global one), so
    creating a second app in one process (tests) does not collide."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self.requests = Counter(
            "dra_affinity_admission_requests", "AdmissionReview requests by outcome.",
            ["decision", "operation", "dry_run"], registry=reg)
        self.rule_requests = Counter(
            "dra_affinity_admission_rule_requests",
            "Admission requests in which a rule reported a finding, by rule and the request's decision.",
            ["rule", "severity", "decision"], registry=reg)
        self.duration = Histogram(
            "dra_affinity_admission_duration_seconds",
            "Time from receiving an AdmissionReview to having its reply, in seconds.",
            ["decision"], buckets=LATENCY_BUCKETS, registry=reg)
        self.cel_cache = Counter(
            "dra_affinity_cel_cache_lookups", "CEL cache lookups by cache and result (hit/miss).",
            ["cache", "result"], registry=reg)
        self.cache_lookups = Counter(
            "dra_affinity_cache_lookups", "Lookups in each registered cache by result (hit/miss).",
            ["cache", "result"], registry=reg)
        self.cache_evictions = Counter(
            "dra_affinity_cache_evictions", "Entries evicted from each registered cache by its bound.",
            ["cache"], registry=reg)
        self.cache_entries = Gauge(
            "dra_affinity_cache_entries", "Entries held in each registered cache (summed over live workers).",
            ["cache"], registry=reg, multiprocess_mode="livesum")
        self.tls_expiry = Gauge(
            "dra_affinity_tls_certificate_expiry_timestamp_seconds",
            "NotAfter of the serving certificate in use (earliest across live workers).",
            ["certificate"], registry=reg, multiprocess_mode="livemin")
        self.tls_reloads = Counter(
            "dra_affinity_tls_certificate_reloads", "Serving-certificate reloads by result.",
            ["result"], registry=reg)
        self.pool_checks = Counter(
            "dra_affinity_pool_checks", "Pool-aware checks of metadata slices by result (ok/skipped).",
            ["result"], registry=reg)
        self._deltas = _Deltas()
        self._children: dict[tuple[object, ...], Any] = {}

    def _child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, memoized: label sets are few and bounded (see the module
        doc), and `labels()` validates and locks on every call, a large share of a request's metrics
        cost."""
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe_request(self, decision: str, operation: str, dry_run: bool, seconds: float,
                        rule_severities: Iterable[tuple[str, str]] = (),
                        pool_check: str | None = None) -> None:
        """Count one request; `rule_severities` are its findings' distinct (rule, severity)."""
        self.count_requests(decision, operation, dry_run)
        self.observe_duration(decision, seconds)
        for rule, severity in rule_severities:
            self.count_rule(rule, severity, decision)
        if pool_check is not None:
            self.count_pool_checks(pool_check)

    # The parts of `observe_request`, for callers that aggregate a batch of requests first
    # (`dra_affinity.webhook.events`): counters take the batch's count in one increment.

    def count_requests(self, decision: str, operation: str, dry_run: bool, count: int = 1) -> None:
        self._child(self.requests, decision, operation or "unknown",
                    "true" if dry_run else "false").inc(count)

    def observe_duration(self, decision: str, seconds: float) -> None:
        self._child(self.duration, decision).observe(seconds)

    def count_rule(self, rule: str, severity: str, decision: str, count: int = 1) -> None:
        self._child(self.rule_requests, rule, severity, decision).inc(count)

    def count_pool_checks(self, result: str, count: int = 1) -> None:
        self._child(self.pool_checks, result).inc(count)

    def sync_cache(self, cache: str, counts: CacheCounts) -> None:
        """Copy a process-local cache's hit/miss totals in (as increments since last time)."""
        for result, total in (("hit", counts.hits), ("miss", counts.misses)):
            delta = self._deltas.advance((cache, result), total)
            if delta:
                self.cel_cache.labels(cache, result).inc(delta)

    def sync_caches(self, infos: Mapping[str, CacheInfo]) -> None:
        """Copy every registered cache's counters in (increments since last time) and its size."""
        for name, info in infos.items():
            for result, total in (("hit", info.hits), ("miss", info.misses)):
                delta = self._deltas.advance(("cache", name, result), total)
                if delta:
                    self._child(self.cache_lookups, name, result).inc(delta)
            evicted = self._deltas.advance(("cache", name, "evicted"), info.evictions)
            if evicted:
                self._child(self.cache_evictions, name).inc(evicted)
            self._child(self.cache_entries, name).set(info.size)

    def sync_tls(self, not_after: float | None, reloads: int, failures: int) -> None:
        if not_after is not None:
            self.tls_expiry.labels("serving").set(not_after)
        for result, total in (("success", reloads), ("failure", failures)):
            delta = self._deltas.advance(("tls", result), total)
            if delta:
                self.tls_reloads.labels(result).inc(delta)

    def exposition(self) -> tuple[bytes, str]:
        """The text exposition: merged across workers in multiprocess mode."""
        directory = multiprocess_dir()
        if directory is None:
            return generate_latest(self.registry), CONTENT_TYPE_LATEST

        merged = CollectorRegistry()
        _WrittenFiles(merged, path=directory)
        return generate_latest(merged), CONTENT_TYPE_LATEST


class _WrittenFiles(multiprocess.MultiProcessCollector):
    """The multiprocess collector, leaving out a value file that holds no header yet.

    prometheus_client creates a worker's file and only then sizes it; a scrape in between
    (a worker booting, or one killed at that moment) read an empty file and failed the whole
    `/metrics` with `struct.error` (seen in the worker-killed test). Such a file holds no
    sample, so leaving it out loses none."""

    def collect(self) -> Any:
        files = [f for f in glob.glob(os.path.join(self._path, "*.db")) if _has_header(f)]
        return self.merge(files, accumulate=True)


def _has_header(path: str) -> bool:
    try:
        return os.path.getsize(path) >= 8
    except OSError:
        return False  # removed since it was listed


def _counts(name: str) -> CacheCounts:
    cache = REGISTRY.get(name)
    info = cache.info() if cache is not None else None
    return CacheCounts(info.hits, info.misses) if info is not None else CacheCounts(0, 0)


CACHE_SOURCES: tuple[tuple[str, Callable[[], CacheCounts]], ...] = (
    ("compile", lambda: _counts("cel.compile")),
    ("analysis", lambda: _counts("analysis.expression")),
)
"""The two caches `dra_affinity_cel_cache_lookups` has always counted, under their old labels;
`dra_affinity_cache_*` covers every registered cache by its registry name."""


class ConnectionMetrics:
    """Connections a worker's main loop refused or timed out (`dra_affinity.webhook.worker`).

    Created in each worker after the fork (its own registry: the multiprocess files merge by
    metric name, whatever registry wrote them)."""

    def __init__(self) -> None:
        registry = CollectorRegistry()
        self.rejected = Counter(
            "dra_affinity_connections_rejected",
            "Connections refused before any request was read, by reason.",
            ["reason"], registry=registry)
        self.timed_out = Counter(
            "dra_affinity_connections_timed_out",
            "Connections past their deadline, by what was still missing (handshake, head, body).",
            ["phase"], registry=registry)

    def count(self, kind: str) -> None:
        """`kind` as `rejected:<reason>` or `timeout:<phase>` (`dra_affinity.webhook.throttle`)."""
        category, _, detail = kind.partition(":")
        (self.rejected if category == "rejected" else self.timed_out).labels(detail).inc()
