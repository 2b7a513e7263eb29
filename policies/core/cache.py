"""The one bounded cache type, and the registry that names every cache of the process.

Every memo in the project is a `BoundedCache`: a size bound, hit/miss/eviction counters,
`clear()`, safe to share between threads. Caches register under a dotted name (`cel.compile`,
`webhook.findings`, …) in `REGISTRY`, so tests can empty all of them between cases and the
webhook's `/metrics` can export each one's size and counters without knowing where it lives.

Why not `functools.lru_cache`: it cannot be found, named or bounded-and-inspected from outside,
and its key is whatever the call happened to pass. Why not one lock around everything: cache
hits are on the webhook's and the evaluator's hot paths, so a hit is a single dict read with no
lock (an atomic operation under the GIL); only stores, evictions and (for `lru=True`) the
reordering on a hit take the lock. Counters are `itertools.count` objects, whose `next()` is
atomic, so lock-free hits are still counted exactly.

A count bounds a cache whose entries are small and alike. Where an entry's size follows its
input — compiled expressions, slices' texts, up to the webhook's 7 MiB request — a count alone
bounds nothing: `max_bytes` with a `weigh(key, value)` estimate also keeps the entries' total
weight under a byte budget (oldest evicted first; an entry heavier than the whole budget is
computed and returned but not kept).

Keys are hashed by value. An object that compares by identity (a checked AST, an engine
environment) is held by the key itself, so it stays alive while its entry does: a key is never
the `id()` of an object that may have been freed and its address reused.
"""

from __future__ import annotations

import functools
import itertools
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, Generic, NamedTuple, ParamSpec, Protocol, TypeVar, cast

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
P = ParamSpec("P")
R = TypeVar("R")

_MISSING: Any = object()


class CacheInfo(NamedTuple):
    """A cache's counters at one moment (since it was created or last cleared)."""

    hits: int
    misses: int
    evictions: int
    size: int
    maxsize: int


def _count_of(counter: itertools.count[int]) -> int:
    """The next value an `itertools.count` would return: how many times it was advanced.

    `count` has no accessor; its repr, `count(N)`, is the documented way to see N.
    """
    return int(repr(counter)[6:-1])


class BoundedCache(Generic[K, V]):
    """A bounded, thread-safe map from value keys to computed values, with counters.

    `lru=True` moves a hit to the young end (least recently *used* is evicted first); this
    takes the lock on every hit. `lru=False` leaves hits lock-free and evicts the oldest
    *stored* entry: for hot caches whose working set sits far under the bound, where a hit
    must cost one dict read.
    """

    __slots__ = ("_base", "_data", "_evictions", "_hits", "_lock", "_lru", "_misses", "_weigh",
                 "_weights", "max_bytes", "maxsize", "name", "weight")

    def __init__(self, name: str, maxsize: int, *, lru: bool = True, register: bool = True,
                 max_bytes: int | None = None, weigh: Callable[[K, V], int] | None = None) -> None:
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        if (max_bytes is None) != (weigh is None):
            raise ValueError("max_bytes and weigh go together")
        self.name = name
        self.maxsize = maxsize
        self.max_bytes = max_bytes
        """Budget for the sum of the entries' `weigh` estimates; None: bounded by count only."""
        self.weight = 0
        """The entries' current total weight (0 without `weigh`)."""
        self._weigh = weigh
        self._weights: dict[K, int] = {}
        self._lru = lru
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        # The counters only ever grow (closures in `cached` hold them); `clear()` moves the
        # baseline they are read against.
        self._hits = itertools.count()
        self._misses = itertools.count()
        self._evictions = itertools.count()
        self._base = (0, 0, 0)
        if register:
            REGISTRY.register(self)

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value stored for `key` (a hit), or `default` (a miss)."""
        value = self._data.get(key, _MISSING)
        if value is _MISSING:
            next(self._misses)
            return default
        next(self._hits)
        if self._lru:
            self._touch(key)
        return cast(V, value)

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        """The stored value, or `compute()` stored and returned.

        `compute` runs outside the lock: two threads missing on one key may both compute, and
        the later result replaces the earlier (every use here is deterministic per key).
        """
        value = self._data.get(key, _MISSING)
        if value is not _MISSING:
            next(self._hits)
            if self._lru:
                self._touch(key)
            return cast(V, value)
        next(self._misses)
        computed = compute()
        self.put(key, computed)
        return computed

    def put(self, key: K, value: V) -> None:
        """Store `value`, evicting the oldest entries beyond the bounds (count, and weight)."""
        if self._weigh is not None:
            self._put_weighed(key, value, self._weigh(key, value))
            return
        data = self._data
        with self._lock:
            data[key] = value
            data.move_to_end(key)
            while len(data) > self.maxsize:
                data.popitem(last=False)
                next(self._evictions)

    def _put_weighed(self, key: K, value: V, weight: int) -> None:
        assert self.max_bytes is not None
        data, weights = self._data, self._weights
        with self._lock:
            self.weight -= weights.pop(key, 0)
            data.pop(key, None)
            if weight > self.max_bytes:  # would evict everything else and still not fit
                next(self._evictions)
                return
            data[key] = value
            weights[key] = weight
            self.weight += weight
            while len(data) > self.maxsize or self.weight > self.max_bytes:
                oldest, _ = data.popitem(last=False)
                self.weight -= weights.pop(oldest)
                next(self._evictions)

    def _touch(self, key: K) -> None:
        # Not contextlib.suppress: it costs more than the rest of a hit.
        with self._lock:
            try:  # noqa: SIM105
                self._data.move_to_end(key)
            except KeyError:  # evicted by another thread since the read: nothing to move
                pass

    def values(self) -> list[V]:
        """The stored values, oldest first (a snapshot)."""
        with self._lock:
            return list(self._data.values())

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def _totals(self) -> tuple[int, int, int]:
        return _count_of(self._hits), _count_of(self._misses), _count_of(self._evictions)

    def info(self) -> CacheInfo:
        """Current counters (since creation or the last `clear()`) and size."""
        with self._lock:
            hits, misses, evictions = (t - b for t, b in zip(self._totals(), self._base, strict=True))
            return CacheInfo(hits, misses, evictions, len(self._data), self.maxsize)

    def clear(self) -> None:
        """Drop every entry and start the counters over."""
        with self._lock:
            self._data.clear()
            self._weights.clear()
            self.weight = 0
            self._base = self._totals()


def text_weight(texts: Iterable[object]) -> int:
    """Bytes the strings among `texts` occupy (`sys.getsizeof`: a string with one character
    past U+FFFF takes 4 bytes per character, so a 7 MiB request may hold 28 MiB of text)."""
    return sum(sys.getsizeof(t) for t in texts if isinstance(t, str))


class CachedFunction(Protocol[P, R]):
    """What `cached` returns: the function, plus its cache (lru_cache's two methods kept)."""

    cache: BoundedCache[Any, Any]
    __wrapped__: Callable[P, R]

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R: ...

    def cache_info(self) -> CacheInfo: ...

    def cache_clear(self) -> None: ...


def cached(name: str, maxsize: int, *, lru: bool = True, max_bytes: int | None = None,
           weigh: Callable[[Any, Any], int] | None = None,
           ) -> Callable[[Callable[P, R]], CachedFunction[P, R]]:
    """Decorator: memoize a function in a registered `BoundedCache` keyed by its positional
    arguments (the replacement for `functools.lru_cache`; keyword arguments are refused, so
    one call has one key). The wrapper is a closure over the cache's parts: a hit costs a dict
    read and a counter step, close to lru_cache's C implementation. `weigh` receives the
    arguments tuple and the result."""

    def decorate(function: Callable[P, R]) -> CachedFunction[P, R]:
        cache: BoundedCache[Any, Any] = BoundedCache(name, maxsize, lru=lru, max_bytes=max_bytes,
                                                     weigh=weigh)
        lookup = cache._data.get
        hit = cache._hits.__next__
        miss = cache._misses.__next__
        touch = cache._touch
        put = cache.put
        call = cast(Callable[..., R], function)

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                raise TypeError(f"{name}: a cached function takes positional arguments only")
            value = lookup(args, _MISSING)
            if value is not _MISSING:
                hit()
                if lru:
                    touch(args)
                return value
            miss()
            result = call(*args)
            put(args, result)
            return result

        out = cast(Any, wrapper)
        out.cache = cache
        out.cache_info = cache.info
        out.cache_clear = cache.clear
        return cast(CachedFunction[P, R], out)

    return decorate


class CacheRegistry:
    """Every registered cache of the process, by name (one cache per name)."""

    def __init__(self) -> None:
        self._caches: dict[str, BoundedCache[Any, Any]] = {}
        self._lock = threading.Lock()

    def register(self, cache: BoundedCache[Any, Any]) -> None:
        """Add `cache`; a later cache of the same name replaces the earlier one (an object
        built again, e.g. a second webhook app in one process: the one in use is the latest)."""
        with self._lock:
            self._caches[cache.name] = cache

    def get(self, name: str) -> BoundedCache[Any, Any] | None:
        return self._caches.get(name)

    def names(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(self._caches))

    def __iter__(self) -> Iterator[BoundedCache[Any, Any]]:
        with self._lock:
            caches = sorted(self._caches.values(), key=lambda c: c.name)
        return iter(caches)

    def infos(self) -> dict[str, CacheInfo]:
        """Each cache's counters, by name."""
        return {cache.name: cache.info() for cache in self}

    def clear(self) -> None:
        """Empty every registered cache (tests start from cold caches)."""
        for cache in self:
            cache.clear()


REGISTRY = CacheRegistry()
"""The process's caches. Module-level state on purpose: the one registry of the one kind of
mutable global the project allows (see the module doc)."""
