"""`--cluster`: the live path, through the real `kubernetes` client, against a local API server.

The server is stdlib `http.server` in a thread, speaking the API's list format: it
serves the API responses stored under `tests/data/cluster/` (a `ResourceSliceList` as
the API returns it — items without apiVersion/kind — paged by `limit`/`continue`,
discovery, and the OpenAPI v3 ResourceSlice schema), and a kubeconfig written in
`tmp_path` points the client at it. Nothing is mocked on the Python side.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from dra_affinity.policies.model.resources import ResourceClaim, ResourceSlice, parse
from dra_affinity.sources.cluster import ClusterTarget, read_resource_claims, read_resource_slices

from tests.cli import REPO, run

DATA = REPO / "tests" / "data" / "cluster"
TOKEN = "test-token-4d1f"
NOT_FOUND = {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "the server could not find the requested resource", "reason": "NotFound",
    "details": {}, "code": 404,
}
EXPIRED = {
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "The provided continue parameter is too old to display a consistent list result. "
               "You can start a new list without the continue parameter.",
    "reason": "Expired", "code": 410,
}


def _recorded(name: str) -> Any:
    return json.loads((DATA / name).read_text())


@dataclass
class FakeApiServer:
    """What the fake API server serves, and what it was asked (path, query, auth header)."""

    serves_v1: bool = True
    openapi: dict[str, Any] | None = field(default_factory=lambda: _recorded("openapi-v3-resource-v1.json"))
    expire_first_continue: bool = False
    requests: list[tuple[str, dict[str, list[str]], str | None]] = field(default_factory=list)
    raw: dict[str, bytes] = field(default_factory=dict)
    """Bodies served as they are, with status 200 (a proxy's page instead of the API's answer)."""
    lists: dict[str, Any] = field(default_factory=lambda: {
        "/apis/resource.k8s.io/v1/resourceslices": _recorded("resourceslices.json"),
        "/apis/resource.k8s.io/v1/resourceclaims": _recorded("resourceclaims.json"),
    })

    def respond(self, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
        if not self.serves_v1:
            return 404, NOT_FOUND
        if path == "/apis/resource.k8s.io/v1":
            return 200, _recorded("discovery-resource-v1.json")
        if path == "/openapi/v3/apis/resource.k8s.io/v1":
            return (200, self.openapi) if self.openapi is not None else (404, NOT_FOUND)
        if path in self.lists:
            return self.page(self.lists[path], query)
        return 404, NOT_FOUND

    def page(self, recorded: dict[str, Any], query: dict[str, list[str]]) -> tuple[int, Any]:
        """The API's chunking: `limit` items from the `continue` offset, and the next token."""
        items = recorded["items"]
        limit = int(query.get("limit", [str(len(items))])[0])
        token = query.get("continue", [None])[0]
        if token is not None and self.expire_first_continue:
            self.expire_first_continue = False
            return 410, EXPIRED
        start = int(base64.b64decode(token)) if token else 0
        end = start + limit
        metadata: dict[str, Any] = {"resourceVersion": recorded["metadata"]["resourceVersion"]}
        if end < len(items):
            metadata["continue"] = base64.b64encode(str(end).encode()).decode()
            metadata["remainingItemCount"] = len(items) - end
        return 200, {**recorded, "metadata": metadata, "items": items[start:end]}


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        fake = self.server.fake
        fake.requests.append((parts.path, query, self.headers.get("Authorization")))
        status, body = fake.respond(parts.path, query)
        data = fake.raw.get(parts.path) or json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    fake: FakeApiServer


@pytest.fixture
def api() -> Iterator[tuple[FakeApiServer, str]]:
    fake = FakeApiServer()
    server = _Server(("127.0.0.1", 0), _Handler)
    server.fake = fake
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def write_kubeconfig(path: Path, server: str, context: str = "test") -> Path:
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": context, "context": {"cluster": "c", "user": "u"}}],
    }))
    return path


@pytest.fixture
def kubeconfig(api: tuple[FakeApiServer, str], tmp_path: Path) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig", api[1])


def list_requests(fake: FakeApiServer, resource: str) -> list[dict[str, list[str]]]:
    return [q for p, q, _ in fake.requests if p.endswith(f"/{resource}")]


def test_slices_are_listed_in_pages_with_limit_and_continue(
    api: tuple[FakeApiServer, str], kubeconfig: Path
) -> None:
    fake, _ = api
    read = read_resource_slices(ClusterTarget(kubeconfig=str(kubeconfig), page_size=3))
    assert read.error is None, read.error
    assert read.pages == 2
    assert read.source == "cluster:test"
    names = [d.data["metadata"]["name"] for d in read.documents]
    assert names == [i["metadata"]["name"] for i in _recorded("resourceslices.json")["items"]]
    first, second = list_requests(fake, "resourceslices")
    assert first["limit"] == ["3"] and "continue" not in first
    assert second["limit"] == ["3"] and base64.b64decode(second["continue"][0]) == b"3"
    # read-only, authenticated with the kubeconfig's token
    assert {auth for _, _, auth in fake.requests} == {f"Bearer {TOKEN}"}
    # items come without apiVersion/kind, as the API lists them; they model as v1 slices
    models = [parse(d.data, d.source).obj for d in read.documents]
    assert all(isinstance(m, ResourceSlice) for m in models)
    meta = models[1]
    assert isinstance(meta, ResourceSlice)
    assert [e.name for e in meta.sharing_affinity] == ["partition", "nvlink-domain"]


def test_claims_are_listed_across_namespaces(api: tuple[FakeApiServer, str], kubeconfig: Path) -> None:
    read = read_resource_claims(ClusterTarget(kubeconfig=str(kubeconfig)))
    assert read.error is None, read.error
    [document] = read.documents
    claim = parse(document.data, document.source).obj
    assert isinstance(claim, ResourceClaim)
    assert claim.qualified_name == "ml/training-pod-a-nic"
    assert claim.configs[0].opaque is not None
    assert claim.configs[0].opaque.parameters["subnetID"] == "subnet-A"


def test_a_cluster_without_resource_v1_is_a_clear_error(
    api: tuple[FakeApiServer, str], kubeconfig: Path
) -> None:
    api[0].serves_v1 = False
    read = read_resource_slices(ClusterTarget(kubeconfig=str(kubeconfig)))
    assert read.documents == ()
    assert read.error is not None
    assert "does not serve resource.k8s.io/v1" in read.error
    assert "404" in read.error and "could not find the requested resource" in read.error


def test_a_cluster_without_the_field_is_a_clear_error(
    api: tuple[FakeApiServer, str], kubeconfig: Path
) -> None:
    fake, _ = api
    assert fake.openapi is not None
    spec = fake.openapi["components"]["schemas"]["io.k8s.api.resource.v1.ResourceSliceSpec"]
    del spec["properties"]["sharingAffinity"]
    read = read_resource_slices(ClusterTarget(kubeconfig=str(kubeconfig)))
    assert read.error is not None and "no spec.sharingAffinity" in read.error
    assert not list_requests(fake, "resourceslices"), "nothing is listed from such a cluster"


def test_an_unverifiable_schema_is_a_note_not_an_error(
    api: tuple[FakeApiServer, str], kubeconfig: Path
) -> None:
    api[0].openapi = None
    read = read_resource_slices(ClusterTarget(kubeconfig=str(kubeconfig)))
    assert read.error is None
    assert len(read.documents) == 5
    assert any("could not verify" in note for note in read.notes)


def test_an_expired_continue_token_restarts_the_list(
    api: tuple[FakeApiServer, str], kubeconfig: Path
) -> None:
    fake, _ = api
    fake.expire_first_continue = True
    read = read_resource_slices(ClusterTarget(kubeconfig=str(kubeconfig), page_size=2))
    assert read.error is None, read.error
    assert len(read.documents) == 5
    starts = [q for q in list_requests(fake, "resourceslices") if "continue" not in q]
    assert len(starts) == 2, "the list restarted from the beginning once"


def test_a_list_that_is_not_a_list_is_an_error_never_an_empty_cluster(
    api: tuple[FakeApiServer, str], kubeconfig: Path
) -> None:
    """The list half of `kube.listwatch`, as the exporter and the pool cache run it."""
    fake, _ = api
    fake.raw["/apis/resource.k8s.io/v1/resourceslices"] = b"<html>Service Unavailable</html>"
    read = read_resource_slices(ClusterTarget(kubeconfig=str(kubeconfig)))
    assert read.documents == ()
    assert read.error is not None
    assert read.error.startswith("listing resourceslices: the response is not JSON"), read.error
    fake.raw.clear()
    recorded = _recorded("resourceslices.json")
    fake.lists["/apis/resource.k8s.io/v1/resourceslices"] = {
        **recorded, "items": [*recorded["items"], {"spec": {}}, "junk"]}
    read = read_resource_slices(ClusterTarget(kubeconfig=str(kubeconfig)))
    assert read.error is None and len(read.documents) == len(recorded["items"])
    assert "1 list item without metadata.name in the ResourceSliceList; skipped" in read.notes
    assert "1 list item not an object in the ResourceSliceList; skipped" in read.notes


def test_bad_kubeconfig_context_and_unreachable_server(tmp_path: Path) -> None:
    config = write_kubeconfig(tmp_path / "kc", "http://127.0.0.1:9")  # discard port: refused
    missing_context = read_resource_slices(ClusterTarget(kubeconfig=str(config), context="prod"))
    assert missing_context.error == "context 'prod' not found in kubeconfig (contexts: test)"
    unreachable = read_resource_slices(ClusterTarget(kubeconfig=str(config), timeout=5))
    assert unreachable.error is not None and unreachable.error.startswith("cannot reach http://127.0.0.1:9")
    absent = read_resource_slices(ClusterTarget(kubeconfig=str(tmp_path / "nope")))
    assert absent.error is not None and absent.error.startswith("cannot load kubeconfig")


def test_lint_cluster_end_to_end(api: tuple[FakeApiServer, str], kubeconfig: Path) -> None:
    result = run("lint", "--cluster", "--kubeconfig", str(kubeconfig), "--chunk-size", "3",
                 "--format", "json")
    assert result.code == 1, result.err
    findings = result.json()["findings"]
    by_rule = {f["rule"]: f for f in findings}
    assert set(by_rule) == {"SP301", "SP303", "SP306"}, findings
    assert by_rule["SP301"]["severity"] == "error"
    assert [loc["object"]["name"] for loc in by_rule["SP301"]["locations"]] == [
        "gpu-node-a-meta-1", "gpu-node-a-meta-2"
    ]
    assert {loc["field"] for loc in by_rule["SP301"]["locations"]} == {
        "spec.sharingAffinity[0].name", "spec.sharingAffinity[1].name"
    }
    # a cluster holds every slice: an incomplete pool is an error, with no --complete-pools hint
    assert by_rule["SP303"]["severity"] == "error"
    assert "--complete-pools" not in by_rule["SP303"]["message"]
    assert by_rule["SP303"]["file"] == "cluster:test" and by_rule["SP303"]["line"] is None
    assert len(list_requests(api[0], "resourceslices")) == 2


def test_pools_cluster_and_cli_errors(api: tuple[FakeApiServer, str], kubeconfig: Path) -> None:
    report = run("pools", "--cluster", "--kubeconfig", str(kubeconfig), "--format", "json").json()
    gpu = next(p for p in report["pools"] if p["driver"] == "gpu.example.com")
    assert (gpu["complete"], gpu["present"], gpu["expected"]) == (True, 3, 3)
    assert gpu["keys"] == [{"key": "nvlink-domain", "slice": "gpu-node-a-meta-1"},
                           {"key": "partition", "slice": "gpu-node-a-meta-2"}]
    assert gpu["duplicateKeys"] == ["nvlink-domain"]
    assert (gpu["devices"], gpu["shareableDevices"]) == (2, 1)
    api[0].serves_v1 = False
    failed = run("lint", "--cluster", "--kubeconfig", str(kubeconfig))
    assert failed.code == 2
    assert "does not serve resource.k8s.io/v1" in failed.err
    assert failed.out == ""
