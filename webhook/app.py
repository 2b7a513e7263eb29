"""The Flask application: `/validate`, `/healthz`, `/readyz` and, on its own port, `/metrics`.

`create_app()` is what gunicorn loads in each worker (`dra_affinity.webhook.app:create_app()`). Everything
that can be done once per process is done here — settings, the CEL environment, the rule
catalog, metrics — so a request only parses, looks up compiled expressions and renders.

HTTP contract (what the API server and operators can rely on):

* `POST /validate` — 200 with an AdmissionReview for every well-formed AdmissionReview, whatever
  the verdict; 415 unless `Content-Type: application/json`; 413 above 7 MiB; 400 with
  `{"error": ...}` for a body that is not an AdmissionReview; 500 with `{"error": ...}` for a bug
  (logged with its traceback; the API server then applies the configuration's failurePolicy).
* `GET /healthz` — 200 while the process serves; `GET /readyz` — 200 once the CEL environment
  is built and the serving certificate is loaded and unexpired, else 503 with the reason.
* `GET /metrics` — Prometheus text, merged across workers, on the metrics listener only
  (`DRA_AFFINITY_METRICS_BIND`, plain HTTP; 404 on the admission port). That listener also
  answers `/healthz` and `/readyz` (probes that need no TLS, so they work under mTLS too) and
  nothing else: `/validate` there is 404, an admission is never answered without TLS.

The listener is told apart once per request, before any handler (`Webhook.route_by_listener`),
by the port the connection came in on (`SERVER_PORT`, which gunicorn takes from the listening
socket, not from the client's `Host` header) against `WebhookSettings.metrics_bind`.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException
from werkzeug.wsgi import get_content_length

from ..policies.core.cache import REGISTRY
from ..policies.core.clip import clip_text
from . import logs, tls
from .admission import (
    MAX_LOGGED_ID,
    Admitter,
    PoolChecker,
    ReviewProblem,
    Verdict,
    parse_review,
)
from .body import decode as decode_body
from .budget import Deadline, timeout_seconds
from .events import EventRecorder, ReviewEvent
from .metrics import CACHE_SOURCES, Metrics
from .poolcache import cluster_pool_checker
from .settings import WebhookSettings, from_env_or_exit
from .throttle import ThrottledLog

JSON = "application/json"
METRICS_ENDPOINTS = frozenset({"metrics", "healthz", "readyz"})
"""What the metrics listener serves (plain HTTP: never an admission)."""
ADMISSION_ENDPOINTS = frozenset({"validate", "healthz", "readyz"})
"""What the admission listener serves (what the API server calls, and the probes)."""
MAX_ERROR_CHARS = 1024
"""Characters of a 400 body's `error` (and its log line): never the whole input echoed."""
REJECTION_LOG_INTERVAL = 2.0
"""Seconds between log lines of rejected requests of one status code, per worker: the first
of an interval is logged at once with its error, the others counted into the next line (and
every one in `dra_affinity_admission_requests_total{decision="rejected"}`)."""


def _json(payload: dict[str, Any], status: int = 200) -> Response:
    return Response(json.dumps(payload, separators=(",", ":")), status=status, mimetype=JSON)


@dataclass(frozen=True)
class Readiness:
    """What `/readyz` reports beyond the TLS state (which is read live)."""

    cel_ready: bool
    cel_error: str | None = None


def warm_up(settings: WebhookSettings) -> Readiness:
    """Build the CEL environment and load every rule now, not on the first request."""
    try:
        from ..policies.cel.check.env import EnvKey, EnvMode, get_env
        from ..policies.rules.catalog import catalog

        catalog()
        get_env(EnvKey(settings.kubernetes_version, EnvMode.NEW_EXPRESSIONS))
    except Exception as exc:  # a broken install must show in /readyz, not crash the worker
        return Readiness(cel_ready=False, cel_error=f"{type(exc).__name__}: {exc}")
    return Readiness(cel_ready=True)


class Webhook:
    """The request handlers, with the per-process state they share (all read-only but metrics)."""

    def __init__(self, settings: WebhookSettings, pools: PoolChecker | None = None) -> None:
        self.settings = settings
        bind = settings.metrics_bind
        self.metrics_port = None if bind is None else str(bind.port)
        """The metrics listener's port (as WSGI's `SERVER_PORT` spells it); None: no metrics."""
        self.log = logs.configure(settings.log_level)
        self.metrics = Metrics()
        self.events = EventRecorder(self.log, self.metrics, self._sync_process_metrics)
        self.admitter = Admitter(settings, pools)
        self.readiness = warm_up(settings)
        self.rejections = ThrottledLog(self.log, None, REJECTION_LOG_INTERVAL)

    def route_by_listener(self) -> Response | None:
        """Flask's `before_request`: 404 for an endpoint the listener the request came in on
        does not serve; None lets the handler (or the router's own 404/405) answer."""
        endpoint = request.endpoint
        if endpoint is None:
            return None
        on_metrics = self.metrics_port is not None and request.environ.get("SERVER_PORT") == self.metrics_port
        if endpoint in (METRICS_ENDPOINTS if on_metrics else ADMISSION_ENDPOINTS):
            return None
        return _json({"error": "not found on this port", "code": 404}, 404)

    def validate(self) -> Response:
        started = time.perf_counter()
        started_monotonic = time.monotonic()
        environ = request.environ
        if environ.get("CONTENT_TYPE") != JSON:  # the API server's exact header; else parse it
            mimetype = request.mimetype
            if mimetype != JSON:
                return self._reject(415, f"Content-Type must be {JSON}, got {mimetype or 'none'!r}",
                                    started)
        try:
            data = self._body(environ)
        except TimeoutError:
            return self._reject(408, "request body not received within the request deadline", started)
        except (OSError, ValueError) as exc:
            # gunicorn's chunked-body errors (InvalidChunkSize, ChunkMissingTerminator, ...) are
            # IOErrors: the client sent a malformed body.
            return self._reject(400, f"body is not valid HTTP/1.1: {type(exc).__name__}", started)
        if data is None:
            return self._reject(413, f"body larger than {self.settings.max_body_bytes} bytes", started)
        try:
            body = decode_body(data)
        except (ValueError, RecursionError) as exc:
            return self._reject(400, f"body is not JSON: {exc}", started)
        parsed = parse_review(body)
        if isinstance(parsed, ReviewProblem):
            return self._reject(400, parsed.message, started)
        try:
            deadline = Deadline.for_request(started_monotonic, timeout_seconds(
                request.args.get("timeout")))
            verdict = self.admitter.admit(parsed, deadline)
            reply = verdict.review_json()
        except Exception as exc:
            return self._internal_error(parsed.uid, started, exc)
        self._record(verdict, started)
        return Response(reply, status=200, mimetype=JSON)

    def _body(self, environ: dict[str, Any]) -> bytes | None:
        """The request body, or None when it exceeds the size limit.

        Why not `request.get_data()` under Flask's `MAX_CONTENT_LENGTH`: gunicorn marks its
        input as terminated, and werkzeug then wraps it in a limiting stream that reads in
        chunks and copies them, a visible share of a large request's cost. A declared length
        above the limit is refused before anything is read; a body without one (chunked) is
        read up to one byte past the limit. A server that neither declares a length nor
        terminates its input gets an empty body, as werkzeug would give.
        """
        limit = self.settings.max_body_bytes
        length = get_content_length(environ)
        if length is not None and length > limit:
            return None
        if length is None and "wsgi.input_terminated" not in environ:
            return b""
        data: bytes = environ["wsgi.input"].read(limit + 1 if length is None else length)
        return None if len(data) > limit else data

    def _record(self, verdict: Verdict, started: float) -> None:
        seconds = time.perf_counter() - started
        fields = verdict.log_fields()
        fields["duration_s"] = round(seconds, 6)
        request = verdict.request
        self.events.record(ReviewEvent(time.time(), fields, verdict.decision, request.operation,
                                       request.dry_run, seconds, verdict.rule_severities,
                                       verdict.pool_check))

    def _sync_process_metrics(self) -> None:
        for name, source in CACHE_SOURCES:
            self.metrics.sync_cache(name, source())
        self.metrics.sync_caches(REGISTRY.infos())
        for status in tls.REGISTRY.statuses():
            self.metrics.sync_tls(status.not_after, status.reloads, status.failures)

    def _reject(self, code: int, message: str, started: float) -> Response:
        seconds = time.perf_counter() - started
        self.metrics.observe_request("rejected", "", False, seconds)
        message = clip_text(message, MAX_ERROR_CHARS)
        self.rejections.record(f"rejected-request:{code}", "request rejected", {
            "code": code, "error": message, "path": clip_text(request.path),
            "duration_s": round(seconds, 6)})
        return _json({"error": message, "code": code}, code)

    def _internal_error(self, uid: str | None, started: float, exc: BaseException) -> Response:
        seconds = time.perf_counter() - started
        self.metrics.observe_request("error", "", False, seconds)
        uid = None if uid is None else clip_text(uid, MAX_LOGGED_ID)
        self.log.error("internal error", exc_info=exc, extra={"fields": {
            "uid": uid, "requestID": uid, "code": 500, "duration_s": round(seconds, 6)}})
        return _json({"error": "internal error while reviewing the request; see the webhook log",
                      "uid": uid, "code": 500}, 500)

    def readyz(self) -> Response:
        problems: list[str] = []
        if not self.readiness.cel_ready:
            problems.append(f"CEL environment not built: {self.readiness.cel_error}")
        statuses = tls.REGISTRY.statuses()
        now = time.time()
        for status in statuses:
            if not status.loaded:
                problems.append("serving certificate not loaded")
            elif status.not_after is not None and status.not_after <= now:
                problems.append("serving certificate expired")
        body: dict[str, Any] = {"ready": not problems, "cel": self.readiness.cel_ready,
                                "tls": [{"loaded": s.loaded, "not_after": s.not_after, "reloads": s.reloads,
                                         "last_error": s.last_error} for s in statuses]}
        if problems:
            body["problems"] = problems
        return _json(body, 200 if not problems else 503)

    def metrics_endpoint(self) -> Response:
        self.events.flush(block=False)
        self._sync_process_metrics()
        data, content_type = self.metrics.exposition()
        return Response(data, status=200, content_type=content_type)

    def http_error(self, error: HTTPException) -> Response:
        code = error.code or 500
        return _json({"error": error.description or error.name, "code": code}, code)

    def unexpected(self, error: Exception) -> Response:
        return self._internal_error(None, time.perf_counter(), error)


def create_app(settings: WebhookSettings | None = None, pools: PoolChecker | None = None) -> Flask:
    """The WSGI application. Without arguments, settings (the metrics listener among them)
    come from `DRA_AFFINITY_*` and the pool checker (when enabled) from the cluster the
    process runs in."""
    if settings is None:
        settings = from_env_or_exit()
    if pools is None and settings.pool_check:

        checker = cluster_pool_checker(settings)
        checker.watch.start()  # list now, in this worker, not on the first request
        pools = checker
    webhook = Webhook(settings, pools)
    app = Flask("dra_affinity_webhook")
    app.extensions["dra_affinity"] = webhook
    app.add_url_rule("/validate", "validate", webhook.validate, methods=["POST"])
    app.add_url_rule("/healthz", "healthz", lambda: _json({"ok": True}), methods=["GET"])
    app.add_url_rule("/readyz", "readyz", webhook.readyz, methods=["GET"])
    app.add_url_rule("/metrics", "metrics", webhook.metrics_endpoint, methods=["GET"])
    app.before_request(webhook.route_by_listener)
    app.register_error_handler(HTTPException, webhook.http_error)
    app.register_error_handler(Exception, webhook.unexpected)
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    return app
