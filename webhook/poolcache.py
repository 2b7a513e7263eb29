"""Pool-aware admission: the other slices of a pool, from a watch, for SP301/SP302 at write time.

The API server validates one ResourceSlice at a time, so two metadata slices of one pool that
declare the same key (SP301) or together exceed the pool's CEL budget (SP302) are both
accepted — and the scheduler then fails every device of the pool closed. With `--pool-check`
the webhook rejects the write that would create that state.

It needs the pool's other slices. Listing them per request would put one LIST per admission on
the API server, so each worker keeps a watch-backed index instead (`dra_affinity.kube.listwatch`,
the loop the lock exporter uses too: list once, then watch from that resourceVersion; re-list
on `410 Gone`; back off with jitter on any failure), holding only what the pool rules need: the model
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..kube.client import KubernetesResource, connect, connect_in_cluster
from ..kube.listwatch import ListWatch, ResourceClient
from ..policies.core.api import RESOURCE_GROUP
from ..policies.core.findings import Finding, PoolRef
from ..policies.model.resources import ResourceSlice, parse
from ..policies.rules.catalog import pool_rules
from ..policies.rules.engine import EngineOptions, check_pool
from ..policies.rules.pool.sp301_duplicate_key import RULE as DUPLICATE_KEY
from ..policies.rules.pool.sp302_cost_budget import RULE as POOL_COST_BUDGET
from ..policies.scheduler.pools import build_pools
from .admission import PoolVerdict
from .logs import LOGGER_NAME
from .settings import WebhookSettings

_log = logging.getLogger(LOGGER_NAME)
GROUP, VERSION, PLURAL = RESOURCE_GROUP, "v1", "resourceslices"
WRITE_TIME_RULES = frozenset({DUPLICATE_KEY.id, POOL_COST_BUDGET.id})
STALE_AFTER = 30.0
"""Seconds of failed watching after which the index is no longer trusted."""
WATCH_SECONDS = 300
"""Server-side timeout of one watch request; the loop resumes from the last resourceVersion."""
PAGE_SIZE = 500


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


@dataclass
class SliceWatch:
    """Keeps a `SliceIndex` current from `kube.listwatch` (list, then watch; back-off with
    jitter on every failure) in a daemon thread, one per worker."""

    api_factory: Callable[[], ResourceClient]
    index: SliceIndex = field(default_factory=SliceIndex)
    clock: Callable[[], float] = time.monotonic
    loop: ListWatch = field(init=False)
    skipped: int = field(default=0, init=False)
    """Items and events skipped as malformed (logged once per kind by the loop)."""

    def __post_init__(self) -> None:
        self.loop = ListWatch(PLURAL, self.api_factory, self, log=_log, clock=self.clock)

    # -- the loop's consumer -------------------------------------------------------------------

    def replace(self, items: Sequence[Mapping[str, Any]]) -> None:
        self.index.replace_all(items)

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        self.index.apply(event_type, obj)

    def malformed(self, problem: str) -> None:
        self.skipped += 1

    # -- control ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the watch thread once per process (after the fork: threads do not survive it)."""
        self.loop.start()

    def stop(self) -> None:
        self.loop.stop()

    def unavailable(self, wait: float) -> str | None:
        """None when the index can be trusted now; else why not (after waiting up to `wait`
        seconds for the first list)."""
        self.start()
        status = self.loop.status()
        if not self.loop.synced.wait(timeout=wait):
            status = self.loop.status()
            return f"no initial list of ResourceSlices yet{_suffix(status.last_error)}"
        if status.failing_since is not None and self.clock() - status.failing_since > STALE_AFTER:
            return f"watch of ResourceSlices failing for {int(self.clock() - status.failing_since)}s" \
                   f"{_suffix(status.last_error)}"
        return None


def _suffix(error: str | None) -> str:
    return f": {error}" if error else ""


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


class KubernetesSliceApi(KubernetesResource):
    """`kube.listwatch.ResourceClient` of ResourceSlices over the official `kubernetes`
    client, from a kubeconfig or the in-cluster service account."""

    def __init__(self, kubeconfig: str | None) -> None:
        api_client = connect(kubeconfig)[0] if kubeconfig else connect_in_cluster()
        super().__init__(api_client, PLURAL, watch_seconds=WATCH_SECONDS, list_timeout=30,
                         page_size=PAGE_SIZE)


def cluster_pool_checker(settings: WebhookSettings) -> PoolIndexChecker:
    """The checker `create_app` uses with `--pool-check`: a watch of the configured cluster,
    started lazily by the first request in each worker."""
    kubeconfig = settings.kubeconfig
    return PoolIndexChecker(SliceWatch(lambda: KubernetesSliceApi(kubeconfig)), settings.pool_sync_timeout)
