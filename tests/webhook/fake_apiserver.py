"""A minimal Kubernetes API server for DRA objects: paged LIST and chunked WATCH over HTTP.

Enough of the real protocol for the official `kubernetes` client (the webhook's pool watch,
`locks --cluster`, the lock exporter) to discover `resource.k8s.io/v1`, list ResourceSlices,
DeviceClasses and ResourceClaims (all namespaces), watch each from a resourceVersion and see
ADDED/MODIFIED/DELETED events as they happen, and read a Pod. One resourceVersion sequence
for all resources, as etcd has. `expire()` makes the next watch of a resource answer
`410 Gone`, as a compacted etcd does. `end_watches()` ends the running watches cleanly (as
the API server does at a watch's timeout) and `hold_watches()` keeps new ones waiting until
`release_watches()`, so writes can land while no watch is open; `outage()` cuts them
mid-stream and drops every request until `restore()`, as a restarting API server or a broken
network path does. `misbehave(mode)` makes list requests go wrong the way a hostile or broken
path does — `500`, `truncated` (a valid status and length, the body cut short), `html` (a
proxy's error page with status 200) — until `misbehave(None)`; `junk_items` adds malformed
items to every list; `inject(resource, line)` puts a raw line (garbage, an event without an
object, …) into that resource's watch streams. `list_times` keeps when each list came.
Loopback only; stopped by the fixture that starts it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

API = "/apis/resource.k8s.io/v1"
PATH = f"{API}/resourceslices"
RESOURCES = {"resourceslices": "ResourceSlice", "deviceclasses": "DeviceClass",
             "resourceclaims": "ResourceClaim"}
_KINDS = {kind: plural for plural, kind in RESOURCES.items()}
_DATA = Path(__file__).resolve().parents[1] / "data" / "cluster"


def write_kubeconfig(path: Path, port: int) -> Path:
    """A kubeconfig for http://127.0.0.1:<port> (a dummy token: the fake checks nothing)."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "fake", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
    }))
    return path


class FakeApiServer:
    def __init__(self) -> None:
        self._objects: dict[str, dict[str, dict[str, Any]]] = {r: {} for r in RESOURCES}
        self._pods: dict[str, dict[str, Any]] = {}
        self._events: list[tuple[int, str, str, dict[str, Any]]] = []
        self._compacted: dict[str, int] = {}
        """resource -> a watch from a resourceVersion below this gets 410 Gone (etcd compaction)."""
        self._version = 1
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._down = threading.Event()
        self._held = threading.Event()
        self.gone = 0
        """Watches answered with 410 Gone."""
        self._watch_round = 0
        """Bumped by `end_watches`: a running watch from an older round ends."""
        self.watch_versions: list[int] = []
        """The resourceVersion of every watch request, in order."""
        self.list_requests = 0
        self.list_times: dict[str, list[float]] = {}
        self.mode: str | None = None
        self.junk_items: list[Any] = []
        self.watch_requests = 0
        self.lists: dict[str, int] = {}
        self.watches: dict[str, int] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if fake._down.is_set():  # no answer at all: the client sees the connection drop
                    self.close_connection = True
                    fake._cut(self)
                    return
                url = urlparse(self.path)
                resource = url.path.removeprefix(API + "/") if url.path.startswith(API + "/") else ""
                if url.path == API:
                    self._send(200, json.loads((_DATA / "discovery-resource-v1.json").read_text()))
                    return
                if url.path == "/openapi/v3" + API:
                    self._send(200, json.loads((_DATA / "openapi-v3-resource-v1.json").read_text()))
                    return
                if url.path.startswith("/api/v1/namespaces/") and "/pods/" in url.path:
                    parts = url.path.split("/")
                    pod = fake._pods.get(f"{parts[4]}/{parts[6]}")
                    if pod is None:
                        self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound",
                                         "message": f'pods "{parts[6]}" not found'})
                    else:
                        self._send(200, pod)
                    return
                if resource not in RESOURCES:
                    self._send(404, {"kind": "Status", "code": 404, "message": "not found"})
                    return
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                if query.get("watch") in {"true", "1", "True"}:
                    fake._watch(self, resource, int(query.get("resourceVersion") or 0),
                                float(query.get("timeoutSeconds") or 30))
                elif fake.mode is not None:
                    fake._misbehave(self, resource)
                else:
                    self._send(200, fake._list(resource, int(query.get("limit") or 0),
                                               query.get("continue")))

            def _send(self, code: int, body: Mapping[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]
        # (a client closing a watch early is normal, not worth a traceback on stderr)
        self.port = int(self.httpd.server_address[1])
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    # -- what tests do -------------------------------------------------------------------

    def start(self) -> FakeApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()

    def put(self, obj: Mapping[str, Any]) -> None:
        """Create or replace an object (its `kind` picks the resource; default ResourceSlice)."""
        if obj.get("kind") == "Pod":
            meta = obj["metadata"]
            self._pods[f"{meta.get('namespace') or 'default'}/{meta['name']}"] = json.loads(json.dumps(obj))
            return
        resource = _KINDS.get(str(obj.get("kind")), "resourceslices")
        key = _key(obj)
        with self._cond:
            self._version += 1
            stored = json.loads(json.dumps(obj))
            stored["metadata"]["resourceVersion"] = str(self._version)
            kind = "MODIFIED" if key in self._objects[resource] else "ADDED"
            self._objects[resource][key] = stored
            self._events.append((self._version, resource, kind, stored))
            self._cond.notify_all()

    def delete(self, name: str, resource: str = "resourceslices") -> None:
        """Delete `name` (`namespace/name` for a claim) of `resource`."""
        with self._cond:
            self._version += 1
            stored = self._objects[resource].pop(name)
            stored["metadata"]["resourceVersion"] = str(self._version)
            self._events.append((self._version, resource, "DELETED", stored))
            self._cond.notify_all()

    def expire(self, resource: str) -> None:
        """Compact `resource`: running watches end, and a watch from an older resourceVersion
        gets `410 Gone` until the client lists again."""
        with self._cond:
            self._version += 1
            self._compacted[resource] = self._version
            self._cond.notify_all()

    def end_watches(self) -> None:
        """End every running watch normally (the client resumes from its resourceVersion)."""
        with self._cond:
            self._watch_round += 1
            self._cond.notify_all()

    def hold_watches(self) -> None:
        """New watch requests wait (before answering) until `release_watches()`."""
        self._held.set()

    def release_watches(self) -> None:
        self._held.clear()

    def outage(self) -> None:
        """Cut running watches mid-stream and drop every request until `restore()`."""
        self._down.set()
        with self._cond:
            self._cond.notify_all()

    def restore(self) -> None:
        self._down.clear()

    def misbehave(self, mode: str | None) -> None:
        """Answer lists with `mode` (`500`, `truncated`, `html`) from now on; None: correctly."""
        self.mode = mode

    def inject(self, resource: str, line: bytes) -> None:
        """A raw line in `resource`'s watch streams, after the events so far."""
        with self._cond:
            self._version += 1
            self._events.append((self._version, resource, "RAW", {"line": line}))
            self._cond.notify_all()

    def _misbehave(self, handler: BaseHTTPRequestHandler, resource: str) -> None:
        with self._cond:
            self.list_requests += 1
            self.lists[resource] = self.lists.get(resource, 0) + 1
            self.list_times.setdefault(resource, []).append(time.monotonic())
        mode = self.mode
        if mode == "html":
            body, code, kind = b"<html><body><h1>502 Bad Gateway</h1></body></html>", 200, "text/html"
        elif mode == "500":
            body = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
                               "reason": "InternalError", "message": "etcdserver: leader changed"}).encode()
            code, kind = 500, "application/json"
        else:
            full = json.dumps(self._list(resource, 0, None, count=False)).encode()
            body, code, kind = full[:len(full) // 2], 200, "application/json"
        handler.send_response(code)
        handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    @staticmethod
    def _cut(handler: BaseHTTPRequestHandler) -> None:
        with contextlib.suppress(OSError):
            handler.connection.shutdown(socket.SHUT_RDWR)

    def kubeconfig(self, path: Path) -> Path:
        return write_kubeconfig(path, self.port)

    # -- the protocol --------------------------------------------------------------------

    def _list(self, resource: str, limit: int, token: str | None, count: bool = True) -> dict[str, Any]:
        with self._cond:
            if count:
                self.list_requests += 1
                self.lists[resource] = self.lists.get(resource, 0) + 1
                self.list_times.setdefault(resource, []).append(time.monotonic())
            objects = self._objects[resource]
            items = [objects[n] for n in sorted(objects)]
            version = self._version
        start = int(token or 0)
        end = start + limit if limit else len(items)
        meta: dict[str, Any] = {"resourceVersion": str(version)}
        if end < len(items):
            meta["continue"] = str(end)
        page = items[start:end]
        if not start:
            page = [*self.junk_items, *page]
        return {"apiVersion": "resource.k8s.io/v1", "kind": f"{RESOURCES[resource]}List", "metadata": meta,
                "items": page}

    def _watch(self, handler: BaseHTTPRequestHandler, resource: str, since: int, timeout: float) -> None:
        with self._cond:
            self.watch_requests += 1
            self.watches[resource] = self.watches.get(resource, 0) + 1
            self.watch_versions.append(since)
        while self._held.is_set() and not self._stopping.is_set():
            self._stopping.wait(0.02)
        with self._cond:
            expired = since < self._compacted.get(resource, 0)
            self.gone += expired
            round_ = self._watch_round
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        deadline_steps = int(timeout / 0.1)
        sent = since
        try:
            if expired:
                gone = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired",
                        "code": 410, "message": f"too old resource version: {since}"}
                self._chunk(handler, {"type": "ERROR", "object": gone})
                deadline_steps = 0
            for _ in range(deadline_steps):
                with self._cond:
                    pending = [e for e in self._events if e[0] > sent and e[1] == resource]
                    if not pending and not self._stopping.is_set():
                        self._cond.wait(0.1)
                        pending = [e for e in self._events if e[0] > sent and e[1] == resource]
                    cut = since < self._compacted.get(resource, 0)
                    ended = round_ != self._watch_round
                if self._down.is_set():
                    self._cut(handler)  # mid-stream: no terminating chunk
                    return
                if self._stopping.is_set() or cut or ended:
                    break  # an expiry ends the running watch; the next one gets 410
                for version, _, kind, obj in pending:
                    if kind == "RAW":
                        self._raw_chunk(handler, obj["line"])
                    else:
                        self._chunk(handler, {"type": kind, "object": obj})
                    sent = version
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass

    @classmethod
    def _chunk(cls, handler: BaseHTTPRequestHandler, event: Mapping[str, Any]) -> None:
        cls._raw_chunk(handler, json.dumps(event).encode())

    @staticmethod
    def _raw_chunk(handler: BaseHTTPRequestHandler, line: bytes) -> None:
        line += b"\n"
        handler.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
        handler.wfile.flush()


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])
