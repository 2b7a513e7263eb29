"""`dra-affinity exporter` against a local API server that lists and then streams watch events.

The installed console script runs as a real process with a kubeconfig pointing at the
stand-in (tests/webhook/fake_apiserver.py); the test changes the cluster — claims allocated
and released, a slice changing generation, a compaction (410) — and scrapes /metrics until
the gauges follow. Bounded waits only.
"""

from __future__ import annotations

import copy
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.cli import REPO, SCRIPT
from tests.webhook.fake_apiserver import FakeApiServer

DUMP = REPO / "examples" / "cluster" / "dump.yaml"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _items() -> list[dict[str, Any]]:
    return list(yaml.safe_load(DUMP.read_text())["items"])


def _by_name(name: str, namespace: str | None = None) -> dict[str, Any]:
    for obj in _items():
        meta = obj["metadata"]
        if meta["name"] == name and meta.get("namespace") == namespace:
            return copy.deepcopy(obj)
    raise KeyError(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Exporter:
    def __init__(self, port: int, proc: subprocess.Popen[bytes]) -> None:
        self.port = port
        self.proc = proc

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def samples(self) -> Samples:
        code, text = self.get("/metrics")
        assert code == 200
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    def eventually(self, check: Callable[[Samples], bool], timeout: float = 20.0) -> Samples:
        deadline = time.monotonic() + timeout
        while True:
            samples = self.samples()
            if check(samples):
                return samples
            assert self.proc.poll() is None, "the exporter exited"
            assert time.monotonic() < deadline, f"gauges did not follow: {_gauges(samples)}"
            time.sleep(0.1)


def _gauges(s: Samples) -> tuple[float, float]:
    return (s[("sharing_affinity_locked_devices", ())], s[("sharing_affinity_unreconstructable_devices", ())])


def _pool(s: Samples, pool: str, state: str) -> float:
    return s.get(("sharing_affinity_pool_devices", (("driver", "nic.example.com"), ("node", pool),
                                                    ("pool", pool), ("state", state))), -1.0)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeApiServer, Exporter]]:
    fake = FakeApiServer().start()
    for obj in _items():
        fake.put(obj)
    exporter = _spawn(fake, tmp_path)
    proc = exporter.proc
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if exporter.get("/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the exporter did not sync"
            time.sleep(0.1)
        yield fake, exporter
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        fake.stop()
        assert b"Traceback" not in err, err.decode()


def test_gauges_follow_watch_events_without_relisting(cluster: tuple[FakeApiServer, Exporter]) -> None:
    fake, exporter = cluster
    s = exporter.samples()
    assert _gauges(s) == (3, 1)
    assert s[("dra_affinity_exporter_synced", (("resource", "resourceclaims"),))] == 1
    lists = dict(fake.lists)

    # the legacy claim is released: its device drains and becomes clean
    legacy = _by_name("legacy", "team-b")
    del legacy["status"]
    fake.put(legacy)
    s = exporter.eventually(lambda s: _gauges(s) == (3, 0))
    assert _pool(s, "node-1", "clean") == 1

    # the pending frontend claim is allocated the now clean eth1: a second lock value on node-1
    frontend = _by_name("frontend-nic-x7k2p", "web")
    frontend["status"] = {"allocation": {"devices": {"results": [
        {"request": "nic", "driver": "nic.example.com", "pool": "node-1", "device": "eth1"}]}}}
    fake.put(frontend)
    s = exporter.eventually(lambda s: _gauges(s) == (4, 0))
    assert s[("sharing_affinity_pool_lock_values",
              (("driver", "nic.example.com"), ("node", "node-1"), ("pool", "node-1")))] == 2

    # both holders of node-1/eth0 go away: it is clean again
    fake.delete("team-a/a", "resourceclaims")
    fake.delete("team-a/b", "resourceclaims")
    exporter.eventually(lambda s: _gauges(s) == (3, 0) and _pool(s, "node-1", "clean") == 1)

    # node-2 moves to generation 2: while only its metadata slice is new, the device slice of
    # generation 1 is superseded (the scheduler ignores it) and the pool is incomplete; once the
    # device slice follows, its devices are back with their locks reconstructed
    meta, devices = _by_name("node-2-nic-meta"), _by_name("node-2-nic-0")
    meta["spec"]["pool"]["generation"] = 2
    fake.put(meta)
    s = exporter.eventually(lambda s: _gauges(s) == (1, 0))
    assert _pool(s, "node-2", "locked") == 0
    devices["spec"]["pool"]["generation"] = 2
    fake.put(devices)
    exporter.eventually(lambda s: _gauges(s) == (3, 0) and _pool(s, "node-2", "locked") == 2)

    s = exporter.samples()
    assert s[("dra_affinity_exporter_watch_events_total",
              (("resource", "resourceclaims"), ("type", "MODIFIED")))] >= 2
    assert s[("dra_affinity_exporter_event_apply_seconds_count", ())] >= 6
    assert fake.lists == lists, "events were applied from the watch, not by listing again"


def test_a_compacted_watch_lists_again_and_counts_a_restart(cluster: tuple[FakeApiServer, Exporter]) -> None:
    fake, exporter = cluster
    fake.expire("resourceclaims")
    legacy = _by_name("legacy", "team-b")
    del legacy["status"]
    fake.put(legacy)
    s = exporter.eventually(lambda s: s.get(("dra_affinity_exporter_watch_restarts_total",
                                             (("resource", "resourceclaims"),)), 0) >= 1
                            and _gauges(s) == (3, 0))
    assert fake.lists["resourceclaims"] >= 2 and fake.lists["resourceslices"] == 1
    assert s[("dra_affinity_exporter_last_sync_timestamp_seconds", (("resource", "resourceclaims"),))] > 0
    assert exporter.get("/healthz")[0] == 200 and exporter.get("/nope")[0] == 404


def test_an_unreachable_cluster_is_a_clear_error(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text("not: [a kubeconfig")
    proc = subprocess.run([str(SCRIPT), "exporter", "--kubeconfig", str(kubeconfig), "--listen",
                           f"127.0.0.1:{_free_port()}"], capture_output=True, timeout=60)
    assert proc.returncode == 2 and b"kubeconfig" in proc.stderr and b"Traceback" not in proc.stderr
    bad = subprocess.run([str(SCRIPT), "exporter", "--listen", "nowhere"], capture_output=True, timeout=60)
    assert bad.returncode == 2 and b"HOST:PORT" in bad.stderr


def _spawn(fake: FakeApiServer, tmp_path: Path) -> Exporter:
    """The exporter process against `fake`, on a free port (not yet serving)."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    proc = subprocess.Popen([str(SCRIPT), "exporter", "--kubeconfig", str(fake.kubeconfig(tmp_path / "kc")),
                             "--listen", f"127.0.0.1:{port}", "--watch-timeout", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    return Exporter(port, proc)


def _start(fake: FakeApiServer, tmp_path: Path) -> Exporter:
    exporter = _spawn(fake, tmp_path)
    proc = exporter.proc
    deadline = time.monotonic() + 30
    while True:
        try:
            exporter.get("/healthz")
            return exporter
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the exporter did not serve"
            time.sleep(0.1)


def _stop(exporter: Exporter) -> str:
    exporter.proc.terminate()
    try:
        _, err = exporter.proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        exporter.proc.kill()
        _, err = exporter.proc.communicate()
    return err.decode()


def _value(s: Samples, name: str, resource: str) -> float:
    return s.get((name, (("resource", resource),)), 0.0)


@pytest.mark.parametrize("mode", ["html", "500", "truncated"])
def test_a_hostile_api_server_never_reads_as_a_cluster_and_the_exporter_recovers(
        tmp_path: Path, mode: str) -> None:
    """Lists answered with a proxy's HTML page (status 200), a 500, or a body cut short: the
    exporter stays up, serves no lock series, says why on /healthz, backs off exponentially
    (the current back-off's base doubles with each failure), and once the server heals it
    lists and serves the cluster as it is."""
    fake = FakeApiServer().start()
    for obj in _items():
        fake.put(obj)
    fake.misbehave(mode)
    exporter = _start(fake, tmp_path)
    try:
        s = exporter.eventually(lambda s: _value(s, "dra_affinity_exporter_list_watch_failures_total",
                                                 "resourceslices") >= 3, timeout=60)
        assert ("sharing_affinity_locked_devices", ()) not in s  # never a false zero
        assert _value(s, "dra_affinity_exporter_synced", "resourceslices") == 0
        assert _value(s, "dra_affinity_exporter_backoff_seconds", "resourceslices") >= 3.2  # 0.8 · 2²
        code, text = exporter.get("/healthz")
        reason = {"html": "not JSON", "500": "HTTP 500", "truncated": "not JSON"}[mode]
        assert code == 503 and "not synced" in text and reason in text, text
        assert exporter.proc.poll() is None
        fake.misbehave(None)
        s = exporter.eventually(lambda s: _value(s, "dra_affinity_exporter_synced", "resourceclaims") == 1
                                and ("sharing_affinity_locked_devices", ()) in s, timeout=90)
        assert _gauges(s) == (3, 1)
        assert exporter.get("/healthz") == (200, "ok\n")
    finally:
        err = _stop(exporter)
        fake.stop()
    assert "Traceback" not in err, err
    assert "failing (backing off, retrying)" in err and "recovered" in err


def test_junk_items_and_garbage_events_are_counted_skipped_and_logged_once(tmp_path: Path) -> None:
    fake = FakeApiServer().start()
    for obj in _items():
        fake.put(obj)
    fake.junk_items = ["a string", 7, None, {"metadata": {}}, {"spec": {}}]
    exporter = _start(fake, tmp_path)
    try:
        s = exporter.eventually(lambda s: _value(s, "dra_affinity_exporter_synced", "resourceclaims") == 1
                                and ("sharing_affinity_locked_devices", ()) in s)
        assert _gauges(s) == (3, 1)
        claims = sum(1 for o in _items() if o["kind"] == "ResourceClaim")
        assert _value(s, "dra_affinity_exporter_objects", "resourceclaims") == claims
        assert _value(s, "dra_affinity_exporter_invalid_objects_total", "resourceclaims") == 5
        lists = fake.lists["resourceclaims"]
        for line in (b'{"type": "MODIFIED"}', b'{"type": "WEIRD", "object": {"metadata": {"name": "x"}}}',
                     b'{"type": "ADDED", "object": {"metadata": {}}}', b'[1, 2]'):
            fake.inject("resourceclaims", line)
        legacy = _by_name("legacy", "team-b")
        del legacy["status"]
        fake.put(legacy)  # an event after the garbage is still applied
        s = exporter.eventually(lambda s: _gauges(s) == (3, 0))
        assert _value(s, "dra_affinity_exporter_invalid_objects_total", "resourceclaims") == 5 + 4
        assert fake.lists["resourceclaims"] == lists  # skipped, not a re-list
        fake.inject("resourceclaims", b"<html>not an event</html>")  # undecodable: the watch ends
        s = exporter.eventually(
            lambda s: _value(s, "dra_affinity_exporter_list_watch_failures_total", "resourceclaims") >= 1
            and _value(s, "dra_affinity_exporter_watch_restarts_total", "resourceclaims") >= 1)
        assert _gauges(s) == (3, 0) and exporter.proc.poll() is None
    finally:
        err = _stop(exporter)
        fake.stop()
    assert "Traceback" not in err, err
    skipped = [line.split(": ", 1)[1] for line in err.splitlines() if ": skipped " in line]
    # one line per resource and kind of problem: list items not objects, without a name, and
    # each kind of bad event — not one per occurrence (each list carried the junk again)
    kinds = {(line.split(":")[0], line.split("skipped ", 1)[1].split(" ", 1)[1].split(" (")[0])
             for line in skipped}
    assert len(skipped) == len(kinds), skipped
    assert ("resourceclaims", "MODIFIED watch event without an object") in kinds
