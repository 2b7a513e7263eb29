"""`dra-affinity serve`: the validating admission webhook under gunicorn, over TLS.

Flask, gunicorn and the webhook package are imported only when the command runs, so
`dra-affinity --help` and `lint` never pay for them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from ...policies.core.limits import KubernetesVersion
from ...webhook.settings import ENV_METRICS_BIND, WebhookSettings
from ..options import kubernetes_version_option


def _tls_paths(cert_file: str | None, key_file: str | None, cert_dir: str | None) -> tuple[str, str]:
    if cert_dir and (cert_file or key_file):
        raise click.UsageError("give either --cert-dir or --cert-file/--key-file, not both")
    if cert_dir:
        return str(Path(cert_dir) / "tls.crt"), str(Path(cert_dir) / "tls.key")
    if not (cert_file and key_file):
        raise click.UsageError("TLS is required: give --cert-dir DIR or both --cert-file and --key-file")
    return cert_file, key_file


@click.command("serve")
@click.option("--cert-file", type=click.Path(dir_okay=False), help="Serving certificate (PEM).")
@click.option("--key-file", type=click.Path(dir_okay=False), help="Its private key (PEM).")
@click.option("--cert-dir", type=click.Path(file_okay=False),
              help="Directory holding tls.crt and tls.key (a mounted kubernetes.io/tls Secret).")
@click.option("--client-ca-file", type=click.Path(dir_okay=False),
              help="Require client certificates signed by this CA (API server mTLS).")
@click.option("--tls-min-version", type=click.Choice(["1.2", "1.3"]), default="1.2", show_default=True,
              help="Lowest TLS version the admission listener accepts.")
@click.option("--host", default="0.0.0.0", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8443, show_default=True,
              help="Port of the TLS admission listener (/validate and probes).")
@click.option("--metrics-port", type=click.IntRange(0, 65535), default=8080, show_default=True,
              help="Port of the plain-HTTP listener for /metrics (and /healthz, /readyz); 0: none. "
                   "The admission port does not serve /metrics.")
@click.option("--metrics-host", default=None,
              help="Address of the metrics listener (default: --host).")
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True,
              help="Worker processes (gunicorn's).")
@click.option("--threads", type=click.IntRange(1, 256), default=4, show_default=True,
              help="Threads per worker (gthread).")
@click.option("--keepalive", type=click.IntRange(0, 3600), default=30, show_default=True,
              help="Seconds an idle keep-alive connection is kept open.")
@click.option("--worker-timeout", type=click.IntRange(1, 3600), default=30, show_default=True,
              help="Restart a worker silent for this many seconds.")
@click.option("--cert-check-interval", type=click.FloatRange(0), default=2.0, show_default=True,
              help="Seconds between checks of the certificate files for changes.")
@click.option("--pool-check/--no-pool-check", default=False, show_default=True,
              help="Also reject metadata slices that collide with their pool (SP301/SP302), "
                   "from a watch of the cluster's ResourceSlices.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False),
              help="For --pool-check outside a cluster (default: in-cluster service account).")
@click.option("--pool-sync-timeout", type=click.FloatRange(0), default=2.0, show_default=True,
              help="How long a request may wait for the first pool list before skipping the pool check.")
@click.option("--metrics-dir", type=click.Path(file_okay=False),
              help="Directory of the Prometheus multiprocess files (default: a fresh temporary directory).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
              default="info", show_default=True, help="Lowest level logged (JSON lines on stderr).")
@kubernetes_version_option
def serve(cert_file: str | None, key_file: str | None, cert_dir: str | None, client_ca_file: str | None,
          tls_min_version: str, host: str, port: int, metrics_port: int, metrics_host: str | None,
          workers: int, threads: int, keepalive: int,
          worker_timeout: int, cert_check_interval: float, pool_check: bool, kubeconfig: str | None,
          pool_sync_timeout: float, metrics_dir: str | None, log_level: str,
          kubernetes_version: KubernetesVersion) -> None:
    """Run the ValidatingWebhook for ResourceSlices: /validate over TLS, /metrics on its own port.

    POST /validate, GET /healthz and /readyz on --port (TLS); GET /metrics, /healthz and
    /readyz on --metrics-port (plain HTTP: keep it cluster-internal).

    Same rules, ids and messages as `lint`. Certificates are reloaded when their files change
    (checked every --cert-check-interval seconds), without restarting or dropping requests.
    Equivalent to `gunicorn -c webhook/gunicorn_conf.py` with the matching settings.

    Exit code 0 when stopped by SIGTERM or SIGINT; 2 when it cannot start (usage errors,
    unreadable certificates, a port that cannot be listened on); gunicorn's own 3 or 4
    when its workers cannot boot or load the application.
    """
    from ...webhook import tls

    cert, key = _tls_paths(cert_file, key_file, cert_dir)
    files = tls.TlsFiles(cert, key, client_ca_file, "1.3" if tls_min_version == "1.3" else "1.2")
    loaded = tls.load(files)  # fail now, with a message, rather than on the first connection
    if isinstance(loaded, tls.TlsProblem):
        click.echo(f"dra-affinity serve: {loaded.message}", err=True)
        sys.exit(2)
    settings = WebhookSettings(kubernetes_version=kubernetes_version, pool_check=pool_check,
                               pool_sync_timeout=pool_sync_timeout, log_level=log_level.upper(),
                               kubeconfig=kubeconfig)
    os.environ.update(settings.to_env())
    os.environ["DRA_AFFINITY_CERT_CHECK_INTERVAL"] = str(cert_check_interval)
    os.environ["DRA_AFFINITY_TLS_MIN_VERSION"] = files.min_version
    if metrics_dir:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir

    if metrics_port == port:
        raise click.UsageError(f"--metrics-port {metrics_port} is the admission port: give another, or 0")
    listeners = [(host, port)]
    if metrics_port:
        listeners.append((host if metrics_host is None else metrics_host, metrics_port))
    for address, number in listeners:
        problem = _port_problem(address, number)
        if problem is not None:  # gunicorn would retry five times, then exit 1 as if it had crashed
            click.echo(f"dra-affinity serve: cannot listen on {address}:{number}: {problem}", err=True)
            sys.exit(2)
    binds = [f"[{a}]:{n}" if ":" in a else f"{a}:{n}" for a, n in listeners]
    os.environ[ENV_METRICS_BIND] = binds[1] if metrics_port else "off"
    from ...webhook.server import WebhookServer

    overrides: dict[str, object] = {
        "bind": binds,
        "workers": workers, "threads": threads, "keepalive": keepalive, "timeout": worker_timeout,
        "certfile": cert, "keyfile": key, "ca_certs": client_ca_file,
        "proc_name": "dra-affinity-webhook",
    }
    WebhookServer(overrides).run()


def _port_problem(host: str, port: int) -> str | None:
    """Why `host:port` cannot be bound now (in use, not an address of this machine), or None."""
    import socket

    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        return str(error)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
        try:
            probe.bind(address)
        except OSError as error:
            return error.strerror or str(error)
    return None
