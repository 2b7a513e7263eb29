"""The lock exporter: a cluster's reconstructed locks kept current from watches, served on /metrics.

The scheduler keeps its affinity locks in memory only (the KEP's Drawbacks); the exporter
re-derives them as a restarted scheduler would and then follows the cluster, so the KEP's
gauges exist where a dashboard can read them. Each of ResourceSlices, DeviceClasses and
ResourceClaims has its own list-then-watch loop (`dra_affinity.kube.listwatch`, client-go's
discipline, shared with the webhook's pool cache): a complete list (paginated) is diffed into
a `LockBook` object by object, then every ADDED/MODIFIED/DELETED event is applied — only the
devices an event touches are recomputed. A watch that ends is resumed from the last
resourceVersion seen (no re-list); `410 Gone` lists again at once (a restart), and any
failure — an error status, a cut stream, a body that is not a list — backs off
exponentially with jitter and lists again. The process never exits on such a failure, the
initial list included.

/metrics serves the series of `locks --format prometheus` (computed at scrape time from the
book) only once every resource has been listed completely — before that they would read as a
cluster without locks — and the exporter's own health at all times: whether each resource is
synced (`dra_affinity_exporter_synced`, 0 until then), list-watch failures and the current
back-off, restarts, events applied and the time to apply one, malformed or unreadable objects,
and the time of the last list or event per resource. /healthz (and /readyz) answer 200 once
every resource is synced, 503 before, and list what is wrong per resource either way.
Read-only: RBAC needs `list` and `watch` on resourceslices, resourceclaims and deviceclasses,
nothing else.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Summary
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ..kube.listwatch import ListWatch, ResourceClient
from ..policies.core.api import RESOURCE_GROUP
from ..policies.core.gc_pause import gc_paused
from ..policies.core.limits import KubernetesVersion
from ..policies.model.resources import DeviceClass, ResourceClaim, ResourceSlice, parse
from ..policies.scheduler.lock_book import LockBook
from ..policies.scheduler.lock_report import LockFilters, LockReport, lock_report
from .lock_metrics import LockCollector

_log = logging.getLogger("dra_affinity.exporter")
GROUP, VERSION = RESOURCE_GROUP, "v1"
RESOURCES = (("resourceslices", "ResourceSlice"), ("deviceclasses", "DeviceClass"),
             ("resourceclaims", "ResourceClaim"))


@dataclass
class Health:
    """The exporter's own series, in its registry (no process-global state)."""

    registry: CollectorRegistry
    restarts: Counter = field(init=False)
    events: Counter = field(init=False)
    invalid: Counter = field(init=False)
    last_sync: Gauge = field(init=False)
    synced: Gauge = field(init=False)
    objects: Gauge = field(init=False)
    apply_seconds: Summary = field(init=False)
    failures: Counter = field(init=False)
    backoff: Gauge = field(init=False)

    def __post_init__(self) -> None:
        r = self.registry
        self.restarts = Counter("dra_affinity_exporter_watch_restarts", "Re-lists after a watch expired "
                                "(410) or failed.", ["resource"], registry=r)
        self.events = Counter("dra_affinity_exporter_watch_events", "Watch events applied.",
                              ["resource", "type"], registry=r)
        self.invalid = Counter("dra_affinity_exporter_invalid_objects", "Objects the model could not "
                               "read, and malformed list items and watch events (left out of the "
                               "reconstruction).", ["resource"], registry=r)
        self.last_sync = Gauge("dra_affinity_exporter_last_sync_timestamp_seconds", "Unix time of the "
                               "last list or watch event per resource.", ["resource"], registry=r)
        self.synced = Gauge("dra_affinity_exporter_synced", "1 once the resource has been listed "
                            "completely (0 before: the lock series are not served until every "
                            "resource is).", ["resource"], registry=r)
        self.objects = Gauge("dra_affinity_exporter_objects", "Objects known per resource.",
                             ["resource"], registry=r)
        self.apply_seconds = Summary("dra_affinity_exporter_event_apply_seconds",
                                     "Time to apply one watch event to the reconstruction.", registry=r)
        self.failures = Counter("dra_affinity_exporter_list_watch_failures", "Lists and watches that "
                                "failed (each followed by a back-off).", ["resource"], registry=r)
        self.backoff = Gauge("dra_affinity_exporter_backoff_seconds", "Base of the current back-off "
                             "before the next list (0 while healthy).", ["resource"], registry=r)
        for plural, _ in RESOURCES:
            self.synced.labels(plural).set(0)
            self.backoff.labels(plural).set(0)


@dataclass
class LockExporter:
    """The book, the watches that keep it current, and what /metrics shows. Thread-safe."""

    api_factory: Callable[[str], ResourceClient]
    feature_gate: bool = True
    kubernetes_version: KubernetesVersion | None = None
    clock: Callable[[], float] = time.time
    book: LockBook = field(init=False)
    registry: CollectorRegistry = field(default_factory=lambda: CollectorRegistry(auto_describe=False))
    health: Health = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _versions: dict[str, dict[str, str]] = field(default_factory=dict, init=False)
    """resource -> object key -> resourceVersion: what a re-list diffs against."""
    _synced: set[str] = field(default_factory=set, init=False)
    _settled: bool = field(default=False, init=False)
    loops: dict[str, ListWatch] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.book = LockBook(feature_gate=self.feature_gate, kubernetes_version=self.kubernetes_version)
        self.health = Health(self.registry)
        self.registry.register(_SyncedLocks(self))
        for plural, _ in RESOURCES:
            self.loops[plural] = ListWatch(
                plural, partial(self.api_factory, plural), _Resource(self, plural), log=_log,
                on_list=self.health.restarts.labels(plural).inc,
                on_failure=self.health.failures.labels(plural).inc)

    # -- reading --------------------------------------------------------------------------------

    def report(self) -> LockReport:
        """Every pool, untracked ones too: a pool going incomplete shows as its devices vanishing."""
        with self._lock:
            return lock_report(self.book, LockFilters(untracked=True))

    @property
    def ready(self) -> bool:
        """Every resource listed completely at least once."""
        return self._synced >= {plural for plural, _ in RESOURCES}

    def problems(self) -> list[str]:
        """What is wrong, per resource, for /healthz (empty: synced and healthy)."""
        now = time.monotonic()
        found = []
        for plural, loop in self.loops.items():
            # synced as the book has it (the loop's flag is set just after the book is filled)
            status = dataclasses.replace(loop.status(), synced=plural in self._synced)
            if not status.synced or status.failing_since is not None:
                found.append(f"{plural}: {status.describe(now)}")
        return found

    def metrics(self) -> bytes:
        for plural, loop in self.loops.items():
            self.health.backoff.labels(plural).set(loop.status().backoff)
        return generate_latest(self.registry)

    # -- running --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start one list-then-watch loop per resource (`dra_affinity.kube.listwatch`): each
        lists until it succeeds, backing off between failures, then watches."""
        for loop in self.loops.values():
            loop.start()

    def stop(self) -> None:
        for loop in self.loops.values():
            loop.stop()

    def malformed(self, plural: str) -> None:
        self.health.invalid.labels(plural).inc()

    def _replace(self, plural: str, items: Sequence[Mapping[str, Any]]) -> None:
        """A (re-)list: apply what changed since the book's last view of the resource."""
        known = self._versions.get(plural, {})
        seen: dict[str, str] = {}
        first = plural not in self._synced
        with self._lock, gc_paused() if first else contextlib.nullcontext():
            changed: list[Mapping[str, Any]] = []
            for obj in items:
                key = _key(obj)
                if key is None:
                    continue
                seen[key] = _version_of(obj)
                if known.get(key) != seen[key] or not seen[key]:
                    changed.append(obj)
            self._put_all(plural, changed)
            for key in set(known) - set(seen):
                self._remove(plural, key)
            self._versions[plural] = seen
            self._synced.add(plural)
            settle_now = self.ready and not self._settled
            self._settled = self._settled or settle_now
        if settle_now:  # the initial reconstruction is complete
            settle()
        self.health.synced.labels(plural).set(1)
        self.health.objects.labels(plural).set(len(seen))
        self.health.last_sync.labels(plural).set(self.clock())

    def apply(self, plural: str, kind: str, obj: Mapping[str, Any]) -> None:
        """One watch event (BOOKMARK only moves the resourceVersion)."""
        if kind not in {"ADDED", "MODIFIED", "DELETED"}:
            return
        key = _key(obj)
        if key is None:
            return
        started = time.perf_counter()
        with self._lock:
            versions = self._versions.setdefault(plural, {})
            if kind == "DELETED":
                versions.pop(key, None)
                self._remove(plural, key)
            else:
                versions[key] = _version_of(obj)
                self._put_all(plural, [obj])
            count = len(versions)
        self.health.apply_seconds.observe(time.perf_counter() - started)
        self.health.events.labels(plural, kind).inc()
        self.health.objects.labels(plural).set(count)
        self.health.last_sync.labels(plural).set(self.clock())

    def _put_all(self, plural: str, objs: Sequence[Mapping[str, Any]]) -> None:
        """Objects of one resource added or changed; claims go to the book together, so a list
        recomputes each device once (not once per claim bound to it)."""
        kind = dict(RESOURCES)[plural]
        claims: list[ResourceClaim] = []
        for obj in objs:
            doc = {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, **obj}
            model = parse(doc, trusted=True).obj
            if isinstance(model, ResourceSlice):
                self.book.put_slice(model)
            elif isinstance(model, ResourceClaim):
                claims.append(model)
            elif isinstance(model, DeviceClass):
                self.book.put_class(model)
            else:
                self.health.invalid.labels(plural).inc()
                key = _key(obj)
                if key is not None:
                    self._remove(plural, key)  # an unreadable new version must not leave the old one
        self.book.put_claims(claims)

    def _remove(self, plural: str, key: str) -> None:
        if plural == "resourceslices":
            self.book.remove_slice(key)
        elif plural == "resourceclaims":
            self.book.remove_claim(key)
        else:
            self.book.remove_class(key)


class _Resource:
    """The list-watch loop's consumer for one resource of the exporter."""

    def __init__(self, exporter: LockExporter, plural: str) -> None:
        self._exporter = exporter
        self._plural = plural

    def replace(self, items: Sequence[Mapping[str, Any]]) -> None:
        self._exporter._replace(self._plural, items)

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        self._exporter.apply(self._plural, event_type, obj)

    def malformed(self, problem: str) -> None:
        self._exporter.malformed(self._plural)


class _SyncedLocks(Collector):
    """The lock series, only once every resource has been listed: before that they would
    read as a cluster without locks."""

    def __init__(self, exporter: LockExporter) -> None:
        self._exporter = exporter
        self._locks = LockCollector(exporter.report)

    def collect(self) -> Iterator[Metric]:
        if self._exporter.ready:
            yield from self._locks.collect()


def settle() -> None:
    """After the initial reconstruction: move its objects out of the cyclic GC's reach.

    The book holds millions of long-lived objects; without this, every full collection walks
    all of them, and the watch event that sets one off pays for the whole walk. New objects
    are still collected as usual.
    """
    gc.collect()
    gc.freeze()


def _key(obj: Mapping[str, Any]) -> str | None:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
        return None
    namespace = meta.get("namespace")
    return f"{namespace}/{meta['name']}" if isinstance(namespace, str) and namespace else str(meta["name"])


def _version_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def serve(exporter: LockExporter, host: str, port: int) -> ThreadingHTTPServer:
    """/metrics and /healthz on (host, port); the caller runs `serve_forever`."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, exporter.metrics(), CONTENT_TYPE_LATEST)
            elif path in {"/healthz", "/readyz"}:
                ok = exporter.ready
                lines = exporter.problems()
                text = ("ok" if ok else "not synced") + "".join(f"\n{line}" for line in lines) + "\n"
                self._send(200 if ok else 503, text.encode(), "text/plain; charset=utf-8")
            else:
                self._send(404, b"not found\n", "text/plain")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
