"""The lock exporter against a hostile API server: `abuse_bench.py --phases exporter`.

The installed `dra-affinity exporter` runs against `tests.webhook.fake_apiserver.FakeApiServer`
holding `examples/cluster/dump.yaml`, whose lists answer in turn 500s, bodies cut in half and
a proxy's HTML page with status 200 (`heal_after` seconds in all), with junk items in every
list; then the server heals, and once synced the claims' watch gets garbage lines. /metrics is
scraped every 0.2 s throughout. Figures: whether the process ever exited; scrapes that showed
lock series before the first complete list, or values other than the cluster's (3 locked,
1 unreconstructable); the gaps between list attempts of ResourceSlices while failing; each
resource's back-off base when the server healed and the seconds until synced after it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from itertools import pairwise
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.webhook.fake_apiserver import FakeApiServer  # noqa: E402

GARBAGE = (b"<html>not an event</html>", b'{"type": "MODIFIED"}', b'{"type": "WEIRD", "object": {}}')
JUNK = ["a string", 7, None, {"metadata": {}}]
RESOURCES = ("resourceslices", "deviceclasses", "resourceclaims")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            text = response.read().decode()
    except (OSError, urllib.error.URLError):
        return None
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def hostile_api_server(heal_after: float, tmp: Path) -> dict[str, Any]:
    fake = FakeApiServer().start()
    for obj in yaml.safe_load((REPO / "examples" / "cluster" / "dump.yaml").read_text())["items"]:
        fake.put(obj)
    fake.junk_items = list(JUNK)
    port = _free_port()
    script = Path(sys.executable).with_name("dra-affinity")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    proc = subprocess.Popen([str(script), "exporter", "--kubeconfig", str(fake.kubeconfig(tmp / "kc")),
                             "--listen", f"127.0.0.1:{port}", "--watch-timeout", "5"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    stderr: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr.append(proc.stderr.read() if proc.stderr else b""),
                              daemon=True)
    reader.start()
    scrapes = false_cluster = exited = 0
    synced_at: float | None = None
    backoffs: dict[str, float] = {}
    modes = ("500", "truncated", "html")
    started = time.monotonic()
    healed_at: float | None = None
    try:
        while True:
            now = time.monotonic() - started
            if healed_at is None:
                fake.misbehave(modes[min(len(modes) - 1, int(now / (heal_after / len(modes))))])
                if now >= heal_after:
                    samples = _scrape(port) or {}
                    backoffs = {r: samples.get(("dra_affinity_exporter_backoff_seconds",
                                                (("resource", r),)), 0.0) for r in RESOURCES}
                    fake.misbehave(None)
                    healed_at = now
            if proc.poll() is not None:
                exited = 1
                break
            samples = _scrape(port)
            if samples is not None:
                scrapes += 1
                locked = samples.get(("sharing_affinity_locked_devices", ()))
                unknown = samples.get(("sharing_affinity_unreconstructable_devices", ()))
                if locked is not None and (healed_at is None or (locked, unknown) != (3, 1)):
                    false_cluster += 1
                if locked is not None and healed_at is not None and synced_at is None:
                    synced_at = now
                    for line in GARBAGE:  # into the watches that follow the list
                        fake.inject("resourceclaims", line)
            if synced_at is not None and now > synced_at + 8:  # the garbage events after the sync too
                break
            if healed_at is not None and now > healed_at + 120:
                break
            time.sleep(0.2)
        times = fake.list_times.get("resourceslices", [])
        failing = [t - started for t in times if t - started < (healed_at or 0)]
        gaps = [round(b - a, 2) for a, b in pairwise(failing)]
        samples = _scrape(port) or {}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        reader.join(5)
        fake.stop()
    err = b"".join(stderr).decode(errors="replace")
    return {
        "phase": "exporter", "heal_after_s": heal_after, "exited": bool(exited), "scrapes": scrapes,
        "scrapes_showing_a_cluster_not_read": false_cluster,
        "list_attempts_while_failing": len(failing), "gaps_between_lists_s": gaps,
        "backoff_base_at_heal_s": backoffs,
        "synced_after_heal_s": None if synced_at is None or healed_at is None
        else round(synced_at - healed_at, 2),
        # the wait in progress at the heal is at most twice its base (jitter 1.0); synced needs
        # every resource, so the longest of the three waits
        "recovered_within_one_backoff_period": synced_at is not None and healed_at is not None
        and synced_at - healed_at <= 2 * max(backoffs.values(), default=0.0) + 1.0,
        "invalid_objects": {r: samples.get(("dra_affinity_exporter_invalid_objects_total",
                                            (("resource", r),)))
                            for r in RESOURCES},
        "tracebacks": err.count("Traceback"), "stderr_lines": len(err.splitlines()),
    }


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        heal_after = float(sys.argv[1]) if len(sys.argv) > 1 else 20
        print(json.dumps(hostile_api_server(heal_after, Path(directory))))
