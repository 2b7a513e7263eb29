"""Pool-aware admission (SP301/SP302 at write time) against a watch of a (fake) API server."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dra_affinity.kube.listwatch import SHORT_WATCH
from dra_affinity.policies.rules.engine import check_pools, check_slice
from dra_affinity.webhook.admission import AdmissionRequest, Admitter, parse_review
from dra_affinity.webhook.poolcache import KubernetesSliceApi, PoolIndexChecker, SliceWatch
from dra_affinity.webhook.settings import WebhookSettings

from tests.helpers import entry, model, slice_doc
from tests.webhook.fake_apiserver import FakeApiServer, write_kubeconfig
from tests.webhook.support import Server, free_port, review, start_server, stop_server

POOL = "node-a"


def _meta(name: str, *keys: str, pool: str = POOL, generation: int = 1, count: int = 3) -> dict[str, Any]:
    return slice_doc([entry(k) for k in keys], name=name, pool=pool, generation=generation, count=count)


@pytest.fixture(scope="module")
def api() -> Iterator[FakeApiServer]:
    fake = FakeApiServer().start()
    fake.put(_meta("meta-a", "subnet"))
    fake.put(slice_doc(None, devices=[{"name": "eth0", "allowMultipleAllocations": True}],
                       name="devices", count=3))
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def pool_server(tmp_path_factory: pytest.TempPathFactory, cert_dir: Path,
                api: FakeApiServer) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("pools")
    kubeconfig = api.kubeconfig(tmp / "kubeconfig")
    running = start_server(tmp, cert_dir, "--pool-check", "--kubeconfig", str(kubeconfig), workers=1)
    try:
        yield running
    finally:
        stop_server(running)


def _eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def test_duplicate_key_across_metadata_slices_is_denied(pool_server: Server) -> None:
    doc = _meta("meta-b", "subnet")
    response = pool_server.review(review(doc))["response"]
    assert response["allowed"] is False
    # the same finding `lint` gives for the two slices together
    expected = [f for f in check_pools([model(_meta("meta-a", "subnet")), model(doc)])
                if f.rule == "SP301"]
    assert len(expected) == 1
    causes = response["status"]["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.sharingAffinity[0].name"]
    assert causes[0]["message"] == expected[0].message
    assert response["auditAnnotations"]["error-rules"] == "SP301"
    assert response["auditAnnotations"]["pool-check"] == "ok"


def test_distinct_keys_pass_and_other_pools_are_independent(pool_server: Server) -> None:
    fine = pool_server.review(review(_meta("meta-b", "pkey")))["response"]
    assert fine["allowed"] is True and fine["auditAnnotations"]["pool-check"] == "ok"
    other_pool = pool_server.review(review(_meta("meta-x", "subnet", pool="node-b")))["response"]
    assert other_pool["allowed"] is True


def test_updates_replace_the_stored_version_and_unchanged_updates_are_ratcheted(
        pool_server: Server) -> None:
    old = _meta("meta-a", "subnet")
    renamed = _meta("meta-a", "subnet", "vlan")  # meta-a against its own stored self: no collision
    assert pool_server.review(review(renamed, operation="UPDATE", old=old))["response"]["allowed"] is True
    unchanged = pool_server.review(review(old, operation="UPDATE", old=old))["response"]
    assert unchanged["allowed"] is True and "pool-check" in unchanged["auditAnnotations"]


def test_watch_events_reach_the_check(pool_server: Server, api: FakeApiServer) -> None:
    candidate = review(_meta("meta-b", "rdma"))
    assert pool_server.review(candidate)["response"]["allowed"] is True
    api.put(_meta("meta-c", "rdma"))
    _eventually(lambda: pool_server.review(candidate)["response"]["allowed"] is False)
    api.delete("meta-c")
    _eventually(lambda: pool_server.review(candidate)["response"]["allowed"] is True)
    # one list at start; everything after came through the watch, not a list per request
    assert api.list_requests == 1


def test_superseded_generation_is_not_a_collision(pool_server: Server, api: FakeApiServer) -> None:
    stale = review(_meta("meta-old", "subnet", generation=0))
    assert pool_server.review(stale)["response"]["allowed"] is True


def test_device_slices_are_not_pool_checked(pool_server: Server) -> None:
    doc = slice_doc(None, devices=[{"name": "eth1"}], name="more-devices", count=3)
    response = pool_server.review(review(doc))["response"]
    assert response["allowed"] is True and "pool-check" not in response["auditAnnotations"]


def test_unreachable_api_server_skips_the_pool_check_with_a_warning(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "kubeconfig", free_port())  # nothing listens there
    watch = SliceWatch(lambda: KubernetesSliceApi(str(path)))
    settings = WebhookSettings(pool_check=True)
    admitter = Admitter(settings, PoolIndexChecker(watch, sync_timeout=0.5))
    try:
        request = parse_review(review(_meta("meta-b", "subnet")))
        assert isinstance(request, AdmissionRequest)
        response = admitter.admit(request).response()
        assert response["allowed"] is True
        assert response["auditAnnotations"]["pool-check"] == "skipped"
        assert any(w.startswith("pool check skipped (no initial list") for w in response["warnings"])
        assert all(len(w) <= 120 for w in response["warnings"])
    finally:
        watch.stop()


def test_fixture_slices_are_clean_on_their_own() -> None:
    # every denial in this module is the pool rule's alone
    assert check_slice(model(_meta("m", "a", "b"))) == []


def _keys_in_pool(watch: SliceWatch) -> dict[str, tuple[str, ...]]:
    """The pool's metadata slices as the watch's index holds them: name -> extractor names."""
    from dra_affinity.policies.core.findings import PoolRef

    slices, _ = watch.index.pool(PoolRef("networking.example.com", POOL))
    return {s.name: tuple(e.name for e in s.sharing_affinity) for s in slices}


def test_a_dropped_or_ended_watch_resumes_and_loses_no_update(tmp_path: Path) -> None:
    """The real kubernetes client against the fake. Writes land while no watch is open: after
    a watch that ended, the next resumes from its last resourceVersion (no list) and replays
    them; after a cut mid-stream with the API server unreachable, the watch lists again; when
    the resourceVersion was compacted meanwhile, the resume gets 410 Gone and lists again. After
    each, the index equals the API server's state."""
    fake = FakeApiServer().start()
    fake.put(_meta("s1", "a"))
    kubeconfig = str(fake.kubeconfig(tmp_path / "kubeconfig"))
    watch = SliceWatch(lambda: KubernetesSliceApi(kubeconfig))
    try:
        assert watch.unavailable(10.0) is None
        assert _keys_in_pool(watch) == {"s1": ("a",)}
        _eventually(lambda: fake.watches.get("resourceslices", 0) >= 1)

        # 1. The watch ends (its timeout) and writes land before the next one is answered.
        # (It has run longer than a second first: one that ends sooner without an event is a
        # failure, as client-go's "very short watch", and lists again.)
        lists, watches = fake.lists["resourceslices"], fake.watches["resourceslices"]
        last_seen = fake.watch_versions[-1]
        time.sleep(SHORT_WATCH + 0.2)
        fake.hold_watches()
        fake.end_watches()
        _eventually(lambda: fake.watches["resourceslices"] > watches)  # resume sent, held
        fake.put(_meta("s2", "b"))
        fake.put(_meta("s1", "a", "x"))
        fake.release_watches()
        _eventually(lambda: _keys_in_pool(watch) == {"s1": ("a", "x"), "s2": ("b",)}, timeout=20)
        assert fake.lists["resourceslices"] == lists  # no re-list: resumed from its version
        assert fake.watch_versions[watches] == last_seen

        # 2. Cut mid-stream, API server unreachable while slices change: listed again.
        fake.outage()
        _eventually(lambda: watch.loop.status().last_error is not None, timeout=20)  # it noticed
        fake.put(_meta("s3", "c"))
        fake.delete("s1")
        fake.put(_meta("s2", "b", "d"))
        fake.restore()
        _eventually(lambda: _keys_in_pool(watch) == {"s2": ("b", "d"), "s3": ("c",)}, timeout=40)
        assert fake.lists["resourceslices"] > lists
        assert watch.unavailable(0) is None

        # 3. The watch ends, writes land, and etcd compacts: the resume gets 410, then a list.
        lists, watches = fake.lists["resourceslices"], fake.watches["resourceslices"]
        _eventually(lambda: fake.watches["resourceslices"] > 0)
        time.sleep(SHORT_WATCH + 0.2)
        fake.hold_watches()
        fake.end_watches()
        _eventually(lambda: fake.watches["resourceslices"] > watches)
        fake.put(_meta("s4", "e"))
        fake.delete("s3")
        fake.expire("resourceslices")
        fake.release_watches()
        _eventually(lambda: _keys_in_pool(watch) == {"s2": ("b", "d"), "s4": ("e",)}, timeout=40)
        assert fake.gone >= 1 and fake.lists["resourceslices"] > lists
    finally:
        watch.stop()
        fake.stop()
