"""What the webhook application needs to know, from one place.

Settings travel through `DRA_AFFINITY_*` environment variables because the webhook is started
two ways — `dra-affinity serve` and a plain `gunicorn -c webhook/gunicorn_conf.py` — and the
application is built inside each gunicorn worker after the fork: the environment is the one
channel both ways share. `serve` writes these variables from its options; a plain gunicorn
deployment sets them in the pod spec. gunicorn-native settings (bind, workers, threads, TLS
files) stay gunicorn settings.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from dra_affinity.policies.core.limits import (
    DEFAULT_KUBERNETES_VERSION,
    KubernetesVersion,
    VersionError,
    format_kubernetes_version,
    parse_kubernetes_version,
)

MAX_BODY_BYTES = 7 * 1024 * 1024
"""controller-runtime's cap: old and new object (≤ 3 MiB each) plus a 1 MiB envelope."""

ENV_KUBERNETES_VERSION = "DRA_AFFINITY_KUBERNETES_VERSION"
ENV_POOL_CHECK = "DRA_AFFINITY_POOL_CHECK"
ENV_POOL_SYNC_TIMEOUT = "DRA_AFFINITY_POOL_SYNC_TIMEOUT"
ENV_LOG_LEVEL = "DRA_AFFINITY_LOG_LEVEL"
ENV_KUBECONFIG = "DRA_AFFINITY_KUBECONFIG"
ENV_METRICS_BIND = "DRA_AFFINITY_METRICS_BIND"
DEFAULT_METRICS_BIND = "0.0.0.0:8080"
"""`/metrics` (and the probes) on a listener of their own, plain HTTP, as controller-runtime's
metrics server and kube-state-metrics' telemetry port: the admission port serves only what the
API server calls. 8080 is controller-runtime's historical metrics address."""

_TRUE = frozenset({"1", "true", "yes", "on"})


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    kubernetes_version: KubernetesVersion = DEFAULT_KUBERNETES_VERSION
    pool_check: bool = False
    """Also apply the pool rules SP301/SP302 to metadata slices, from a watch of the cluster."""
    pool_sync_timeout: float = 2.0
    """How long a request may wait for the pool watch's initial list (then: skipped). Short:
    the API server's webhook timeout covers the whole review."""
    kubeconfig: str | None = None
    """Where the pool watch finds its cluster; None: the in-cluster service account."""
    max_body_bytes: int = MAX_BODY_BYTES
    log_level: str = "INFO"

    def to_env(self) -> dict[str, str]:
        """The variables that make `from_env` return these settings (used by `serve`)."""
        env = {
            ENV_KUBERNETES_VERSION: format_kubernetes_version(self.kubernetes_version),
            ENV_POOL_CHECK: "true" if self.pool_check else "false",
            ENV_POOL_SYNC_TIMEOUT: str(self.pool_sync_timeout),
            ENV_LOG_LEVEL: self.log_level,
        }
        if self.kubeconfig:
            env[ENV_KUBECONFIG] = self.kubeconfig
        return env


@dataclass(frozen=True, slots=True)
class SettingsProblem:
    message: str


def metrics_bind(environ: Mapping[str, str] | None = None) -> str | None:
    """The metrics listener's `host:port`, or None when switched off (empty, `0` or `off`).

    Read by the gunicorn configuration (to bind it), the worker (to serve it without TLS) and
    the application (to answer `/metrics` only there), so all three agree."""
    env = os.environ if environ is None else environ
    value = env.get(ENV_METRICS_BIND, DEFAULT_METRICS_BIND).strip()
    if value.lower() in ("", "0", "off") or value.endswith(":0"):
        return None
    return value


def metrics_port(environ: Mapping[str, str] | None = None) -> int | None:
    """The port of `metrics_bind`, or None (off, or not a `host:port`)."""
    bind = metrics_bind(environ)
    if bind is None:
        return None
    port = bind.rpartition(":")[2]
    return int(port) if port.isdigit() else None


def from_env(environ: Mapping[str, str] | None = None) -> WebhookSettings | SettingsProblem:
    """Settings from `DRA_AFFINITY_*`; unset variables keep their defaults."""
    env = os.environ if environ is None else environ
    try:
        version = parse_kubernetes_version(
            env.get(ENV_KUBERNETES_VERSION, format_kubernetes_version(DEFAULT_KUBERNETES_VERSION))
        )
    except VersionError as exc:
        return SettingsProblem(f"{ENV_KUBERNETES_VERSION}: {exc}")
    try:
        timeout = float(env.get(ENV_POOL_SYNC_TIMEOUT, "2"))
    except ValueError:
        return SettingsProblem(f"{ENV_POOL_SYNC_TIMEOUT}: not a number of seconds")
    return WebhookSettings(
        kubernetes_version=version,
        pool_check=env.get(ENV_POOL_CHECK, "").strip().lower() in _TRUE,
        pool_sync_timeout=max(0.0, timeout),
        kubeconfig=env.get(ENV_KUBECONFIG) or None,
        log_level=env.get(ENV_LOG_LEVEL, "INFO").upper(),
    )
