"""The lock exporter: a cluster's reconstructed locks kept current from watches, served on /metrics.

The scheduler keeps its affinity locks in memory only (the KEP's Drawbacks); the exporter
re-derives them as a restarted scheduler would and then follows the cluster, so the KEP's
gauges exist where a dashboard can read them. It lists ResourceSlices, DeviceClasses and
ResourceClaims once (paginated), builds a `LockBook`, and then watches each resource from
its list's resourceVersion, applying every ADDED/MODIFIED/DELETED event to the book — only
the devices an event touches are recomputed. A watch that ends is resumed from the last
resourceVersion seen (no re-list); only `410 Gone` or a failure makes it list again, which
counts as a restart and is diffed into the book object by object.

/metrics serves the series of `locks --format prometheus` (computed at scrape time from the
book) and the exporter's own health: watch restarts, events applied, time to apply one,
the time of the last list or event per resource, and whether each resource is synced.
/healthz answers 200 once every resource has been listed, 503 before. Read-only: RBAC needs
`list` and `watch` on resourceslices, resourceclaims and deviceclasses, nothing else.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dra_affinity.lint.lock_metrics import LockCollector
from dra_affinity.policies.core.api import RESOURCE_GROUP
from dra_affinity.policies.core.gc_pause import gc_paused
from dra_affinity.policies.core.limits import KubernetesVersion
from dra_affinity.policies.model.resources import DeviceClass, ResourceClaim, ResourceSlice, parse
from dra_affinity.policies.scheduler.lock_book import LockBook
from dra_affinity.policies.scheduler.lock_report import LockFilters, LockReport, lock_report
from dra_affinity.webhook.poolcache import WatchExpired
from prometheus_client import CollectorRegistry, Counter, Gauge, Summary
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

_log = logging.getLogger("dra_affinity.exporter")
GROUP, VERSION = RESOURCE_GROUP, "v1"
RESOURCES = (("resourceslices", "ResourceSlice"), ("deviceclasses", "DeviceClass"),
             ("resourceclaims", "ResourceClaim"))
PAGE_SIZE = 500
MAX_BACKOFF = 30.0


class ResourceApi:
    """List pages and watch streams of one resource, raw JSON, through the `kubernetes` client."""

    def __init__(self, api_client: Any, plural: str, watch_seconds: int) -> None:
        from kubernetes import client

        self._api = client.CustomObjectsApi(api_client)
        self.plural = plural
        self.watch_seconds = watch_seconds

    def list_page(self, token: str | None) -> Mapping[str, Any]:
        kwargs: dict[str, Any] = {"limit": PAGE_SIZE, "_request_timeout": 60}
        if token:
            kwargs["_continue"] = token
        result = self._api.list_cluster_custom_object(GROUP, VERSION, self.plural, **kwargs)
        return result if isinstance(result, Mapping) else {}

    def watch(self, resource_version: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        stream = watch.Watch()
        try:
            for event in stream.stream(self._api.list_cluster_custom_object, GROUP, VERSION, self.plural,
                                       resource_version=resource_version,
                                       timeout_seconds=self.watch_seconds, allow_watch_bookmarks=True,
                                       _request_timeout=self.watch_seconds + 30):
                obj = event.get("raw_object", event.get("object"))
                kind = str(event.get("type"))
                if kind == "ERROR":
                    code = obj.get("code") if isinstance(obj, Mapping) else None
                    if code == 410:
                        raise WatchExpired()
                    raise RuntimeError(f"watch error: {obj}")
                if isinstance(obj, Mapping):
                    yield kind, obj
        except ApiException as exc:
            if exc.status == 410:
                raise WatchExpired() from exc
            raise
        finally:
            stream.stop()


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

    def __post_init__(self) -> None:
        r = self.registry
        self.restarts = Counter("dra_affinity_exporter_watch_restarts", "Re-lists after a watch expired "
                                "(410) or failed.", ["resource"], registry=r)
        self.events = Counter("dra_affinity_exporter_watch_events", "Watch events applied.",
                              ["resource", "type"], registry=r)
        self.invalid = Counter("dra_affinity_exporter_invalid_objects", "Objects the model could not "
                               "read (left out of the reconstruction).", ["resource"], registry=r)
        self.last_sync = Gauge("dra_affinity_exporter_last_sync_timestamp_seconds", "Unix time of the "
                               "last list or watch event per resource.", ["resource"], registry=r)
        self.synced = Gauge("dra_affinity_exporter_synced", "1 once the resource has been listed.",
                            ["resource"], registry=r)
        self.objects = Gauge("dra_affinity_exporter_objects", "Objects known per resource.",
                             ["resource"], registry=r)
        self.apply_seconds = Summary("dra_affinity_exporter_event_apply_seconds",
                                     "Time to apply one watch event to the reconstruction.", registry=r)


@dataclass
class LockExporter:
    """The book, the watches that keep it current, and what /metrics shows. Thread-safe."""

    api_factory: Callable[[str], ResourceApi]
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
    _stop: threading.Event = field(default_factory=threading.Event, init=False)
    _threads: list[threading.Thread] = field(default_factory=list, init=False)

    def __post_init__(self) -> None:
        self.book = LockBook(feature_gate=self.feature_gate, kubernetes_version=self.kubernetes_version)
        self.health = Health(self.registry)
        self.registry.register(LockCollector(self.report))

    # -- reading --------------------------------------------------------------------------------

    def report(self) -> LockReport:
        """Every pool, untracked ones too: a pool going incomplete shows as its devices vanishing."""
        with self._lock:
            return lock_report(self.book, LockFilters(untracked=True))

    @property
    def ready(self) -> bool:
        return self._synced >= {plural for plural, _ in RESOURCES}

    def metrics(self) -> bytes:
        return generate_latest(self.registry)

    # -- running --------------------------------------------------------------------------------

    def start(self) -> None:
        """List every resource once (in order: slices, classes, claims), then watch each."""
        versions = {}
        with gc_paused():  # the lists build the long-lived book: settle() collects once after
            for plural, _ in RESOURCES:
                versions[plural] = self._relist(self.api_factory(plural), first=True)
        settle()
        for plural, _ in RESOURCES:
            thread = threading.Thread(target=self._run, args=(plural, versions[plural]),
                                      name=f"watch-{plural}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self, plural: str, version: str) -> None:
        backoff = 0.5
        api = self.api_factory(plural)
        while not self._stop.is_set():
            try:
                if not version:
                    self.health.restarts.labels(plural).inc()
                    version = self._relist(api, first=False)
                    backoff = 0.5
                for kind, obj in api.watch(version):
                    if self._stop.is_set():
                        return
                    version = _version_of(obj) or version
                    self.apply(plural, kind, obj)
            except WatchExpired:
                version = ""
            except Exception as exc:  # API or transport failure: back off, keep the book, re-list
                _log.warning("watch of %s failing: %s", plural, f"{type(exc).__name__}: {exc}"[:300])
                version = ""
                self._stop.wait(backoff)
                backoff = min(MAX_BACKOFF, backoff * 2)

    def _relist(self, api: ResourceApi, *, first: bool) -> str:
        items: list[Mapping[str, Any]] = []
        token: str | None = None
        version = ""
        for _ in range(100_000):
            page = api.list_page(token)
            items.extend(i for i in page.get("items") or () if isinstance(i, Mapping))
            meta = page.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            token = meta.get("continue") or None
            if not token:
                break
        self._replace(api.plural, items)
        return version

    def _replace(self, plural: str, items: Sequence[Mapping[str, Any]]) -> None:
        """A (re-)list: apply what changed since the book's last view of the resource."""
        known = self._versions.get(plural, {})
        seen: dict[str, str] = {}
        with self._lock:
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


def settle() -> None:
    """After the initial reconstruction: move its objects out of the cyclic GC's reach.

    The book holds millions of long-lived objects; without this, every full collection walks
    all of them and one watch event pays seconds for it (measured: 24 s once in 1,000 events
    at 100,000 claims). New objects are still collected as usual.
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
                self._send(200 if ok else 503, b"ok\n" if ok else b"not synced\n", "text/plain")
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
