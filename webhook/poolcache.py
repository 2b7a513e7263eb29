"""Pool-aware admission: the other slices of a pool, from a watch, for SP301/SP302 at write time.

The API server validates one ResourceSlice at a time, so two metadata slices of one pool that
declare the same key (SP301) or together exceed the pool's CEL budget (SP302) are both
accepted — and the scheduler then fails every device of the pool closed. With `--pool-check`
the webhook rejects the write that would create that state.

It needs the pool's other slices. Listing them per request would put one LIST per admission on
the API server, so each worker keeps a watch-backed index instead (list once, then watch from
that resourceVersion; re-list on `410 Gone`), holding only what the pool rules need: the model
of every metadata slice, and the generation of every slice (a device slice of a newer
generation supersedes older metadata slices). RBAC: `get, list, watch` on
`resource.k8s.io/resourceslices`, nothing else.

Failure is explicit, never a guess: until the first list has completed (the first request
waits up to `pool_sync_timeout`), or while the watch has been failing for more than
`STALE_AFTER` seconds, the slice-level verdict stands alone and the response carries a warning
that the pool check was skipped.

What is checked, and against what: the new slice replaces its stored version; the pool is
built exactly as `lint` builds it (`policies.scheduler.pools.build_pools`), the pool rules run with
`complete_pools` (a watch sees every slice), and only SP301/SP302 findings that involve the new
slice count — a collision between two *other* slices is not this write's fault. An UPDATE that
leaves `sharingAffinity`, pool and generation unchanged is not pool-checked (ratcheting: an
unrelated edit must not be blocked by the pool's state).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from dra_affinity.policies.core.api import RESOURCE_GROUP
from dra_affinity.policies.core.findings import Finding, PoolRef
from dra_affinity.policies.model.resources import ResourceSlice, parse
from dra_affinity.policies.rules.catalog import pool_rules
from dra_affinity.policies.rules.engine import EngineOptions, check_pool
from dra_affinity.policies.rules.pool.sp301_duplicate_key import RULE as DUPLICATE_KEY
from dra_affinity.policies.rules.pool.sp302_cost_budget import RULE as POOL_COST_BUDGET
from dra_affinity.policies.scheduler.pools import build_pools
from dra_affinity.webhook.admission import PoolVerdict
from dra_affinity.webhook.logs import LOGGER_NAME
from dra_affinity.webhook.settings import WebhookSettings

_log = logging.getLogger(LOGGER_NAME)
GROUP, VERSION, PLURAL = RESOURCE_GROUP, "v1", "resourceslices"
WRITE_TIME_RULES = frozenset({DUPLICATE_KEY.id, POOL_COST_BUDGET.id})
STALE_AFTER = 30.0
"""Seconds of failed watching after which the index is no longer trusted."""
WATCH_SECONDS = 300
"""Server-side timeout of one watch request; the loop resumes from the last resourceVersion."""
PAGE_SIZE = 500
MAX_BACKOFF = 30.0


@dataclass(frozen=True, slots=True)
class _Entry:
    pool: PoolRef
    generation: int
    model: ResourceSlice | None
    """Parsed only for metadata slices: the rules need nothing else from device slices."""


def _entry(obj: Mapping[str, Any]) -> tuple[str, _Entry] | None:
    """The index entry of one ResourceSlice as the API returns it (None if unusable)."""
    meta = obj.get("metadata")
    spec = obj.get("spec")
    if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
        return None
    name, driver, pool = meta.get("name"), spec.get("driver"), spec.get("pool")
    if not isinstance(name, str) or not isinstance(driver, str) or not isinstance(pool, Mapping):
        return None
    pool_name, generation = pool.get("name"), pool.get("generation")
    if not isinstance(pool_name, str) or not isinstance(generation, int):
        return None
    model = None
    if spec.get("sharingAffinity") is not None:
        parsed = parse(obj)
        model = parsed.obj if isinstance(parsed.obj, ResourceSlice) else None
    return name, _Entry(PoolRef(driver, pool_name), generation, model)


class SliceIndex:
    """Every ResourceSlice of the cluster, reduced to what pool rules need. Thread-safe."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._by_pool: dict[PoolRef, set[str]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def _put(self, name: str, entry: _Entry) -> None:
        self._drop(name)
        self._entries[name] = entry
        self._by_pool.setdefault(entry.pool, set()).add(name)

    def _drop(self, name: str) -> None:
        old = self._entries.pop(name, None)
        if old is not None:
            members = self._by_pool.get(old.pool)
            if members is not None:
                members.discard(name)
                if not members:
                    del self._by_pool[old.pool]

    def replace_all(self, objects: Iterable[Mapping[str, Any]]) -> None:
        entries = [e for e in (_entry(o) for o in objects) if e is not None]
        with self._lock:
            self._entries.clear()
            self._by_pool.clear()
            for name, entry in entries:
                self._put(name, entry)

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """One watch event: ADDED / MODIFIED / DELETED (BOOKMARK carries no object change)."""
        if event_type not in {"ADDED", "MODIFIED", "DELETED"}:
            return
        found = _entry(obj)
        if found is None:
            return
        name, entry = found
        with self._lock:
            if event_type == "DELETED":
                self._drop(name)
            else:
                self._put(name, entry)

    def pool(self, ref: PoolRef) -> tuple[tuple[ResourceSlice, ...], int | None]:
        """The pool's metadata slices and its highest generation (None: no slice known)."""
        with self._lock:
            entries = [self._entries[n] for n in sorted(self._by_pool.get(ref, ()))]
        generation = max((e.generation for e in entries), default=None)
        return tuple(e.model for e in entries if e.model is not None), generation


class ResourceSliceApi(Protocol):
    """The two calls the watch makes (the `kubernetes` client's CustomObjectsApi shape)."""

    def list_page(self, limit: int, continue_token: str | None) -> Mapping[str, Any]: ...

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[Mapping[str, Any]]: ...


class WatchExpired(Exception):
    """The resourceVersion is too old (HTTP 410): list again."""


@dataclass
class SliceWatch:
    """Keeps a `SliceIndex` current from list + watch in a daemon thread (one per worker)."""

    api_factory: Callable[[], ResourceSliceApi]
    index: SliceIndex = field(default_factory=SliceIndex)
    clock: Callable[[], float] = time.monotonic
    _synced: threading.Event = field(default_factory=threading.Event, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _thread: threading.Thread | None = field(default=None, init=False)
    _failing_since: float | None = field(default=None, init=False)
    _last_error: str | None = field(default=None, init=False)
    _stop: threading.Event = field(default_factory=threading.Event, init=False)

    def start(self) -> None:
        """Start the watch thread once per process (after the fork: threads do not survive it)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="resourceslice-watch", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def unavailable(self, wait: float) -> str | None:
        """None when the index can be trusted now; else why not (after waiting up to `wait`
        seconds for the first list)."""
        self.start()
        if not self._synced.wait(timeout=wait):
            return f"no initial list of ResourceSlices yet{self._error_suffix()}"
        failing_since = self._failing_since
        if failing_since is not None and self.clock() - failing_since > STALE_AFTER:
            return f"watch of ResourceSlices failing for {int(self.clock() - failing_since)}s" \
                   f"{self._error_suffix()}"
        return None

    def _error_suffix(self) -> str:
        return f": {self._last_error}" if self._last_error else ""

    def _run(self) -> None:
        backoff = 0.5
        api: ResourceSliceApi | None = None
        while not self._stop.is_set():
            try:
                api = api or self.api_factory()
                version = self._list(api)
                self._healthy()
                backoff = 0.5
                while not self._stop.is_set():
                    version = self._watch(api, version)
            except WatchExpired:
                continue  # list again at once
            except Exception as exc:  # any API/transport failure: back off, keep the index
                self._failed(f"{type(exc).__name__}: {exc}"[:300])
                self._stop.wait(backoff)
                backoff = min(MAX_BACKOFF, backoff * 2)

    def _list(self, api: ResourceSliceApi) -> str:
        items: list[Mapping[str, Any]] = []
        token: str | None = None
        version = ""
        while True:
            page = api.list_page(PAGE_SIZE, token)
            items.extend(page.get("items") or ())
            meta = page.get("metadata") or {}
            version = str(meta.get("resourceVersion") or version)
            token = meta.get("continue") or None
            if not token:
                break
        self.index.replace_all(items)
        self._synced.set()
        return version

    def _watch(self, api: ResourceSliceApi, version: str) -> str:
        for event in api.watch(version, WATCH_SECONDS):
            self._healthy()
            kind = str(event.get("type"))
            obj = event.get("object")
            if kind == "ERROR":
                code = obj.get("code") if isinstance(obj, Mapping) else None
                if code == 410:
                    raise WatchExpired()
                raise RuntimeError(f"watch error: {obj}")
            if not isinstance(obj, Mapping):
                continue
            meta = obj.get("metadata")
            if isinstance(meta, Mapping) and meta.get("resourceVersion"):
                version = str(meta["resourceVersion"])
            self.index.apply(kind, obj)
        return version

    def _healthy(self) -> None:
        if self._failing_since is not None:
            _log.info("resourceslice watch recovered", extra={"fields": {"slices": len(self.index)}})
        self._failing_since = None
        self._last_error = None

    def _failed(self, message: str) -> None:
        if self._failing_since is None:  # log transitions, not every retry
            self._failing_since = self.clock()
            _log.warning("resourceslice watch failing", extra={"fields": {"err": message}})
        self._last_error = message


class PoolIndexChecker:
    """`admission.PoolChecker` backed by a `SliceWatch`."""

    def __init__(self, watch: SliceWatch, sync_timeout: float) -> None:
        self.watch = watch
        self.sync_timeout = sync_timeout
        self._others = frozenset(r.id for r in pool_rules()) - WRITE_TIME_RULES

    def check(self, new: ResourceSlice, old: ResourceSlice | None, options: EngineOptions) -> PoolVerdict:
        if old is not None and old.sharing_affinity == new.sharing_affinity and old.pool == new.pool \
                and old.generation == new.generation:
            return PoolVerdict()
        reason = self.watch.unavailable(self.sync_timeout)
        if reason is not None:
            return PoolVerdict(skipped=reason)
        stored, generation = self.watch.index.pool(new.pool)
        if generation is not None and new.generation < generation:
            return PoolVerdict()  # superseded on arrival: the scheduler ignores this slice
        siblings = [s for s in stored if s.name != new.name]
        pool = build_pools([*siblings, new], options.limits)[new.pool]
        pool_options = EngineOptions(kubernetes_version=options.kubernetes_version,
                                     disabled_rules=options.disabled_rules | self._others)
        findings = check_pool(pool, pool_options, complete_pools=True)
        return PoolVerdict(tuple(f for f in findings if _involves(f, new)))


def _involves(finding: Finding, new: ResourceSlice) -> bool:
    return finding.rule in WRITE_TIME_RULES and any(
        loc.object is not None and loc.object.name == new.name for loc in finding.locations
    )


class KubernetesSliceApi:
    """`ResourceSliceApi` over the official `kubernetes` client, raw JSON (the typed models
    would drop fields they do not know, `sharingAffinity` first among them)."""

    def __init__(self, kubeconfig: str | None) -> None:
        from kubernetes import client, config

        if kubeconfig:
            api_client = config.new_client_from_config(config_file=kubeconfig)
        else:
            config.load_incluster_config()
            api_client = client.ApiClient()
        self._api = client.CustomObjectsApi(api_client)

    def list_page(self, limit: int, continue_token: str | None) -> Mapping[str, Any]:
        kwargs: dict[str, Any] = {"limit": limit, "_request_timeout": 30}
        if continue_token:
            kwargs["_continue"] = continue_token
        result = self._api.list_cluster_custom_object(GROUP, VERSION, PLURAL, **kwargs)
        return result if isinstance(result, Mapping) else {}

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[Mapping[str, Any]]:
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        stream = watch.Watch()
        try:
            for event in stream.stream(
                self._api.list_cluster_custom_object, GROUP, VERSION, PLURAL,
                resource_version=resource_version, timeout_seconds=timeout_seconds,
                allow_watch_bookmarks=True, _request_timeout=timeout_seconds + 30,
            ):
                yield {"type": event.get("type"), "object": event.get("raw_object", event.get("object"))}
        except ApiException as exc:
            if exc.status == 410:
                raise WatchExpired() from exc
            raise
        finally:
            stream.stop()


def cluster_pool_checker(settings: WebhookSettings) -> PoolIndexChecker:
    """The checker `create_app` uses with `--pool-check`: a watch of the configured cluster,
    started lazily by the first request in each worker."""
    kubeconfig = settings.kubeconfig
    return PoolIndexChecker(SliceWatch(lambda: KubernetesSliceApi(kubeconfig)), settings.pool_sync_timeout)
