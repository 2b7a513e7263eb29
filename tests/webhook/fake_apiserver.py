"""A minimal Kubernetes API server for ResourceSlices: paged LIST and chunked WATCH over HTTP.

Enough of the real protocol for the official `kubernetes` client (which the webhook's pool
watch uses) to list, watch from a resourceVersion, and see ADDED/MODIFIED/DELETED events as
they happen. Loopback only; stopped by the fixture that starts it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

PATH = "/apis/resource.k8s.io/v1/resourceslices"


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
        self._objects: dict[str, dict[str, Any]] = {}
        self._events: list[tuple[int, str, dict[str, Any]]] = []
        self._version = 1
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self.list_requests = 0
        self.watch_requests = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                url = urlparse(self.path)
                if url.path != PATH:
                    self._send(404, {"kind": "Status", "code": 404, "message": "not found"})
                    return
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                if query.get("watch") in {"true", "1", "True"}:
                    fake._watch(self, int(query.get("resourceVersion") or 0),
                                float(query.get("timeoutSeconds") or 30))
                else:
                    self._send(200, fake._list(int(query.get("limit") or 0), query.get("continue")))

            def _send(self, code: int, body: Mapping[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
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
        name = obj["metadata"]["name"]
        with self._cond:
            self._version += 1
            stored = json.loads(json.dumps(obj))
            stored["metadata"]["resourceVersion"] = str(self._version)
            kind = "MODIFIED" if name in self._objects else "ADDED"
            self._objects[name] = stored
            self._events.append((self._version, kind, stored))
            self._cond.notify_all()

    def delete(self, name: str) -> None:
        with self._cond:
            self._version += 1
            stored = self._objects.pop(name)
            stored["metadata"]["resourceVersion"] = str(self._version)
            self._events.append((self._version, "DELETED", stored))
            self._cond.notify_all()

    def kubeconfig(self, path: Path) -> Path:
        return write_kubeconfig(path, self.port)

    # -- the protocol --------------------------------------------------------------------

    def _list(self, limit: int, token: str | None) -> dict[str, Any]:
        with self._cond:
            self.list_requests += 1
            items = [self._objects[n] for n in sorted(self._objects)]
            version = self._version
        start = int(token or 0)
        end = start + limit if limit else len(items)
        meta: dict[str, Any] = {"resourceVersion": str(version)}
        if end < len(items):
            meta["continue"] = str(end)
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList", "metadata": meta,
                "items": items[start:end]}

    def _watch(self, handler: BaseHTTPRequestHandler, since: int, timeout: float) -> None:
        with self._cond:
            self.watch_requests += 1
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        deadline_steps = int(timeout / 0.1)
        sent = since
        try:
            for _ in range(deadline_steps):
                with self._cond:
                    pending = [e for e in self._events if e[0] > sent]
                    if not pending and not self._stopping.is_set():
                        self._cond.wait(0.1)
                        pending = [e for e in self._events if e[0] > sent]
                if self._stopping.is_set():
                    break
                for version, kind, obj in pending:
                    line = json.dumps({"type": kind, "object": obj}).encode() + b"\n"
                    handler.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                    handler.wfile.flush()
                    sent = version
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
