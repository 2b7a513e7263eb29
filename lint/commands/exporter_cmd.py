"""`dra-affinity exporter`: the lock metrics of a live cluster, kept current from watches."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType

import click

from ...policies.core.features import SHARING_AFFINITY
from ...policies.core.limits import KubernetesVersion
from ..options import (
    GateSettings,
    feature_gate_option,
    feature_gates,
    kubernetes_version_option,
)


def _listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"{value!r}: expected HOST:PORT", param_hint="--listen")
    return host.strip("[]") or "0.0.0.0", int(port)


@click.command("exporter")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
              help="Kubeconfig file (default: $KUBECONFIG, ~/.kube/config; in a pod: its service account).")
@click.option("--context", "kube_context", default=None, metavar="NAME",
              help="Kubeconfig context (default: the current context).")
@click.option("--listen", default="0.0.0.0:9464", show_default=True, metavar="HOST:PORT",
              help="Where /metrics and /healthz are served.")
@click.option("--watch-timeout", type=click.IntRange(min=1, max=3600), default=300, show_default=True,
              metavar="SECONDS", help="Server-side timeout of one watch request (it is then resumed).")
@feature_gate_option
@kubernetes_version_option
def exporter(kubeconfig: str | None, kube_context: str | None, listen: str, watch_timeout: int,
             gate: GateSettings, kubernetes_version: KubernetesVersion) -> None:
    """Serve the cluster's affinity-lock metrics on /metrics, kept current from watches.

    Lists ResourceSlices, DeviceClasses and ResourceClaims, reconstructs every device's lock
    as a restarted scheduler does, then applies each watch event (no re-lists, except after
    410 Gone or a failure). A failure — the initial list's included — is retried with
    exponential back-off and jitter; the exporter never exits on one. Serves the series of
    `locks --format prometheus` once everything is listed, plus the exporter's health
    (dra_affinity_exporter_*: synced, failures, back-off, restarts, events, invalid objects).
    /healthz is 200 once everything is listed and says what is wrong otherwise. Stops on
    SIGTERM or SIGINT.

    Exit code 0 when stopped by SIGTERM or SIGINT; 2 when no kubeconfig or context can be
    used, or the address cannot be listened on (a failing cluster is retried, never an exit).
    """
    from ...exporter.lock_exporter import LockExporter, serve
    from ...kube.client import KubeconfigError, KubernetesResource, connect

    sharing_affinity = feature_gates(kubernetes_version, gate).enabled(SHARING_AFFINITY)
    host, port = _listen(listen)
    # the list-watch loops' lines (failing, recovered, malformed items) on stderr, as the rest
    logging.basicConfig(format="dra-affinity exporter: %(message)s", level=logging.INFO)
    try:
        client, context = connect(kubeconfig, kube_context)
    except KubeconfigError as failure:
        click.echo(f"dra-affinity exporter: {failure}", err=True)
        sys.exit(2)
    lock_exporter = LockExporter(
        lambda plural: KubernetesResource(client, plural, watch_seconds=watch_timeout),
        feature_gate=sharing_affinity, kubernetes_version=kubernetes_version)
    try:
        server = serve(lock_exporter, host, port)
    except OSError as error:
        click.echo(f"dra-affinity exporter: cannot listen on {listen}: {error.strerror or error}", err=True)
        sys.exit(2)

    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    click.echo(f"dra-affinity exporter: serving /metrics on {host}:{server.server_address[1]} "
               f"(context {context})", err=True)
    lock_exporter.start()
    announced = False
    try:
        while not stopping.wait(0.2):
            if not announced and lock_exporter.ready:
                click.echo("dra-affinity exporter: synced; watching", err=True)
                announced = True
    finally:
        lock_exporter.stop()
        server.shutdown()
        server.server_close()
