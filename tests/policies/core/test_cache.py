"""The one bounded cache type and its registry (policies/core/cache.py)."""

from __future__ import annotations

import gc
import importlib
import threading

import pytest
from dra_affinity.policies.core.cache import REGISTRY, BoundedCache, CacheInfo, CacheRegistry, cached


def test_bound_evicts_least_recently_used_and_counts() -> None:
    cache: BoundedCache[str, int] = BoundedCache("test.lru", 2, register=False)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recently used
    cache.put("c", 3)  # evicts b
    assert "b" not in cache
    assert cache.get("b") is None
    assert cache.get("c") == 3
    assert cache.info() == CacheInfo(hits=2, misses=1, evictions=1, size=2, maxsize=2)


def test_fifo_mode_evicts_oldest_stored_whatever_was_read() -> None:
    cache: BoundedCache[str, int] = BoundedCache("test.fifo", 2, lru=False, register=False)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1
    cache.put("c", 3)
    assert "a" not in cache and "b" in cache and "c" in cache


def test_get_or_compute_computes_once_per_key() -> None:
    calls: list[int] = []
    cache: BoundedCache[int, int] = BoundedCache("test.compute", 8, register=False)

    def square(n: int) -> int:
        calls.append(n)
        return n * n

    assert [cache.get_or_compute(n % 3, lambda n=n: square(n % 3)) for n in range(9)] == [0, 1, 4] * 3
    assert calls == [0, 1, 2]
    assert cache.info()[:2] == (6, 3)


def test_clear_drops_entries_and_restarts_counters() -> None:
    cache: BoundedCache[str, int] = BoundedCache("test.clear", 4, register=False)
    cache.put("a", 1)
    cache.get("a")
    cache.get("zz")
    cache.clear()
    assert cache.info() == CacheInfo(0, 0, 0, 0, 4)
    assert cache.get("a") is None
    assert cache.info().misses == 1


def test_a_byte_budget_evicts_oldest_first_and_keeps_no_entry_heavier_than_itself() -> None:
    cache: BoundedCache[str, str] = BoundedCache("test.bytes", 100, lru=False, register=False,
                                                 max_bytes=10, weigh=lambda _key, value: len(value))
    cache.put("a", "xxxx")
    cache.put("b", "xxxx")
    cache.put("a", "xx")  # replacing an entry re-weighs it (and makes it the youngest)
    assert cache.weight == 6
    cache.put("c", "xxxxx")  # 11 > 10: the oldest (b) goes
    assert "b" not in cache and "a" in cache and "c" in cache and cache.weight == 7
    cache.put("huge", "x" * 11)  # heavier than the whole budget: not kept, nothing evicted for it
    assert "huge" not in cache and len(cache) == 2 and cache.weight == 7
    assert cache.info().evictions == 2
    cache.clear()
    assert cache.weight == 0 and len(cache) == 0


def test_a_byte_budget_needs_its_weigher() -> None:
    with pytest.raises(ValueError, match="together"):
        BoundedCache("test.half", 4, register=False, max_bytes=10)


def test_text_weight_counts_wide_strings_at_their_width() -> None:
    from dra_affinity.policies.core.cache import text_weight

    ascii_text, astral = "x" * 1000, "\U0001F600" + "x" * 999
    assert text_weight([ascii_text, None, 3]) < 1100
    assert text_weight([astral]) > 4000  # one character past U+FFFF: 4 bytes each


def test_a_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        BoundedCache("test.zero", 0, register=False)


def test_cached_function_keys_by_arguments_and_registers() -> None:
    calls: list[tuple[int, int]] = []

    @cached("test.cached_function", 2)
    def add(a: int, b: int) -> int:
        calls.append((a, b))
        return a + b

    assert REGISTRY.get("test.cached_function") is add.cache
    assert add(1, 2) == 3 and add(1, 2) == 3 and add(2, 1) == 3
    assert calls == [(1, 2), (2, 1)]
    assert add.cache_info()[:4] == (1, 2, 0, 2)
    assert add.__name__ == "add" and add.__wrapped__(5, 5) == 10
    with pytest.raises(TypeError, match="positional"):
        add(1, b=2)
    add.cache_clear()
    assert add.cache_info().size == 0


def test_identity_keys_hold_their_object_so_no_address_is_reused() -> None:
    """An object that compares by identity is a key by itself: the entry keeps it alive, so a
    new object can never be taken for a freed one whose address it got."""

    class Ast:
        pass

    cache: BoundedCache[Ast, str] = BoundedCache("test.identity", 4, register=False)
    first = Ast()
    cache.put(first, "first")
    del first
    gc.collect()
    others = [Ast() for _ in range(100)]
    assert all(cache.get(o) is None for o in others)
    assert cache.info().size == 1


def test_threads_share_a_cache_without_losing_entries_or_counts() -> None:
    cache: BoundedCache[int, int] = BoundedCache("test.threads", 64, lru=True, register=False)
    fifo: BoundedCache[int, int] = BoundedCache("test.threads_fifo", 64, lru=False, register=False)
    rounds = 2000

    def work(offset: int) -> None:
        for i in range(rounds):
            key = (i + offset) % 100
            for c in (cache, fifo):
                c.get_or_compute(key, lambda key=key: key * 2)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in (cache, fifo):
        info = c.info()
        assert info.hits + info.misses == 4 * rounds
        assert info.size <= 64
        assert info.misses - info.evictions >= info.size
        assert all(c.get(k) in (None, k * 2) for k in range(100))


def test_registry_lists_clears_and_replaces_by_name() -> None:
    registry = CacheRegistry()
    one: BoundedCache[str, int] = BoundedCache("x.one", 2, register=False)
    two: BoundedCache[str, int] = BoundedCache("x.two", 2, register=False)
    registry.register(two)
    registry.register(one)
    one.put("a", 1)
    two.put("b", 2)
    assert registry.names() == ("x.one", "x.two")
    assert registry.infos()["x.one"].size == 1
    registry.clear()
    assert len(one) == 0 and len(two) == 0
    again: BoundedCache[str, int] = BoundedCache("x.one", 2, register=False)
    registry.register(again)
    assert registry.get("x.one") is again


def test_every_project_cache_is_registered_under_a_dotted_name() -> None:
    """Importing the engine registers its caches, a webhook admitter its own; none is anonymous."""
    for module in ("dra_affinity.policies.analysis.device", "dra_affinity.policies.analysis.expression",
                   "dra_affinity.policies.cel.compile", "dra_affinity.webhook.tls"):
        importlib.import_module(module)
    from dra_affinity.webhook.admission import FindingsCache

    FindingsCache()

    names = set(REGISTRY.names())
    expected = {"cel.compile", "cel.environments", "cel.eval.bridges", "cel.eval.programs",
                "cel.eval.plans", "analysis.expression", "analysis.selectors", "webhook.findings",
                "webhook.tls_contexts", "model.extractors"}
    assert expected <= names, sorted(expected - names)
    assert all("." in name for name in names)
