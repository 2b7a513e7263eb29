"""`--cluster` on dry-run and simulate: the cluster's ResourceSlices, DeviceClasses and
ResourceClaims, read as `locks --cluster` reads them, give what the same objects in a dump give.

The cluster is the fake API server of the webhook tests (real HTTP, the real `kubernetes` client).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli import REPO, run
from tests.webhook.fake_apiserver import FakeApiServer

DUMP = "examples/cluster/dump.yaml"
KINDS = {"ResourceSlice", "DeviceClass", "ResourceClaim"}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeApiServer, Path]]:
    fake = FakeApiServer().start()
    for doc in yaml.safe_load_all((REPO / DUMP).read_text()):
        for obj in (doc or {}).get("items", [doc]) if doc else []:
            if obj.get("kind") in KINDS:
                fake.put(copy.deepcopy(obj))
    try:
        yield fake, fake.kubeconfig(tmp_path / "kubeconfig")
    finally:
        fake.stop()


def _outcomes(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    return sorted((r["claim"], r["request"], r["pool"]["driver"], r["pool"]["name"], r["outcome"],
                   repr(r["affinity"])) for r in doc["results"])


def test_dry_run_reads_the_cluster(cluster: tuple[FakeApiServer, Path]) -> None:
    fake, kubeconfig = cluster
    files = run("dry-run", "--format", "json", DUMP)
    live = run("dry-run", "--format", "json", "--cluster", "--kubeconfig", str(kubeconfig),
               "--chunk-size", "2")
    assert live.code == files.code == 0, live.err
    assert _outcomes(live.json()) == _outcomes(files.json()) and live.json()["results"]
    assert fake.lists["resourceclaims"] >= 1 and fake.lists["deviceclasses"] >= 1
    both = run("dry-run", DUMP, "--cluster", "--kubeconfig", str(kubeconfig))
    assert both.code == 2 and "give one or the other" in both.err


def test_simulate_reads_the_cluster(cluster: tuple[FakeApiServer, Path]) -> None:
    _, kubeconfig = cluster
    files = run("simulate", "--format", "json", DUMP)
    live = run("simulate", "--format", "json", "--cluster", "--kubeconfig", str(kubeconfig))
    assert live.code == files.code == 0, live.err
    steps = [(s["claim"], s["placed"], s["allocations"]) for s in live.json()["steps"]]
    assert steps == [(s["claim"], s["placed"], s["allocations"]) for s in files.json()["steps"]] and steps
    assert live.json()["metrics"] == files.json()["metrics"]


def test_an_unreachable_cluster_is_a_usage_error(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("not: a kubeconfig\n")
    for command in ("dry-run", "simulate"):
        out = run(command, "--cluster", "--kubeconfig", str(kubeconfig))
        assert out.code == 2 and out.out == "", (command, out.out, out.err)
        assert out.err.startswith(f"dra-affinity {command}: "), out.err
