"""gunicorn configuration for the webhook (also what `dra-affinity serve` starts from).

Plain gunicorn, e.g. in a container whose Secret is mounted at /certs:

    DRA_AFFINITY_CERT_DIR=/certs gunicorn -c python:dra_affinity.webhook.gunicorn_conf

or with gunicorn's own flags (they override this file):

    gunicorn -c webhook/gunicorn_conf.py --bind 0.0.0.0:8443 \\
        --certfile /certs/tls.crt --keyfile /certs/tls.key [--ca-certs /etc/apiserver-ca.crt]

Why these choices:

* `gthread` workers (`dra_affinity.webhook.worker`): they keep connections alive between
  requests (the API server reuses its connections; sync workers close each one). Ours do the
  TLS handshake and read each request's head in the main loop, with deadlines, so a slow or
  idle client never holds a thread. Several processes because CEL compilation holds the GIL.
* `ssl_context` hook → `dra_affinity.webhook.tls`: one SSLContext per worker, swapped when the
  certificate files change, instead of gunicorn's default of re-reading the files on every
  connection. Our worker goes to the same context through `tls.WorkerTls`, whose settings it
  reads once; the hook serves any other worker class.
* Two listeners: the admission port (TLS) and `DRA_AFFINITY_METRICS_BIND` (default
  0.0.0.0:8080, plain HTTP; `off` for none) for `/metrics` and the probes, served by the same
  workers (`dra_affinity.webhook.worker` skips TLS there), so the samples still merge. The
  variable is read by `dra_affinity.webhook.settings.from_env` alone, here as in the worker
  and the application; a value it cannot read stops the server before it binds anything.
* `pre_fork` (in the master, before each worker is forked) brings the master's serving context
  up to date with the files, and the worker inherits it: a worker started while the files are
  broken (a replacement for a killed one, mid-rotation) serves the last good certificate
  instead of failing to boot over and over. `post_worker_init` then makes sure each worker
  has its context before its first connection, so `/readyz` reports the certificate even when
  only the plain probe port is hit.
* `on_starting` prepares the prometheus multiprocess directory *before* any worker imports
  prometheus_client; `child_exit` retires a dead worker's samples.
* `post_worker_init` tunes the garbage collector for a server of long-lived state and large
  short-lived documents. `gc.freeze()` takes everything the worker loaded (CEL environments,
  rule catalog, libraries) out of collections: without it every full collection would walk
  it again, a cost that requests pay. A young-generation threshold of 10,000 instead of 700
  lets a request's decoded AdmissionReview (thousands of containers, all freed by reference
  counting when the request ends) die before a collection promotes it, and with it the full
  collections those promotions would set off.
* `timeout`: a worker whose main loop stops heart-beating this long is killed and replaced, so
  no worker stays hung; per-request CEL work is bounded anyway (see `dra_affinity.webhook.admission`).
"""

from __future__ import annotations

import gc
import os
from typing import Any

from dra_affinity.webhook import logs, multiproc, settings, tls

_env = os.environ.get
_cert_dir = _env("DRA_AFFINITY_CERT_DIR")

wsgi_app = "dra_affinity.webhook.app:create_app()"
_metrics = settings.from_env_or_exit().metrics_bind  # a bad variable: one line, exit 1, before binding
bind = [_env("DRA_AFFINITY_BIND", "0.0.0.0:8443"), *([_metrics.bind] if _metrics else [])]
worker_class = "dra_affinity.webhook.worker.BoundedThreadWorker"
workers = int(_env("DRA_AFFINITY_WORKERS", "2"))
threads = int(_env("DRA_AFFINITY_THREADS", "4"))
keepalive = int(_env("DRA_AFFINITY_KEEPALIVE", "30"))
timeout = int(_env("DRA_AFFINITY_WORKER_TIMEOUT", "30"))
graceful_timeout = 20
certfile = _env("DRA_AFFINITY_CERT_FILE") or (os.path.join(_cert_dir, "tls.crt") if _cert_dir else None)
keyfile = _env("DRA_AFFINITY_KEY_FILE") or (os.path.join(_cert_dir, "tls.key") if _cert_dir else None)
ca_certs = _env("DRA_AFFINITY_CLIENT_CA_FILE") or None
accesslog = None
logger_class = "dra_affinity.webhook.gunicorn_logging.JsonLogger"  # JSON from the first line
control_socket_disable = True  # gunicorn ≥ 25.1: no control socket in $HOME, one per pod would collide
ssl_context = tls.gunicorn_ssl_context


def on_starting(server: Any) -> None:
    logs.use_json_for_gunicorn(server.log)
    logs.configure(_env(settings.ENV_LOG_LEVEL, "INFO").upper())  # the master's lines: JSON too
    path, created = multiproc.prepare()
    server.dra_affinity_metrics_dir = path if created else None


def on_exit(server: Any) -> None:
    created = getattr(server, "dra_affinity_metrics_dir", None)
    if created:
        multiproc.cleanup(created)


def child_exit(server: Any, worker: Any) -> None:
    multiproc.mark_worker_dead(worker.pid)


GC_YOUNG_THRESHOLD = 10_000
"""Allocations between young-generation collections (CPython's default: 700)."""


def _refresh_serving_context(process: Any) -> None:
    """Load the serving context, or bring it up to date with the files, in the master (then
    each worker forks with it) or a worker (before its first connection); a failure is logged
    and the process goes on: a worker retries on each connection, `/readyz` says so."""
    if process.cfg.is_ssl:
        try:
            tls.REGISTRY.get(tls.files_from_gunicorn(process.cfg), tls.check_interval_from_env()).check()
        except tls.TlsLoadError as exc:
            process.log.error("serving certificate not loaded: %s", exc)


def pre_fork(server: Any, worker: Any) -> None:
    _refresh_serving_context(server)


def post_worker_init(worker: Any) -> None:
    _refresh_serving_context(worker)
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
