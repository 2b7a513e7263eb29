"""What the webhook application needs to know, from one place.

Settings travel through `DRA_AFFINITY_*` environment variables because the webhook is started
two ways — `dra-affinity serve` and a plain `gunicorn -c webhook/gunicorn_conf.py` — and the
application is built inside each gunicorn worker after the fork: the environment is the one
channel both ways share. `serve` writes these variables from its options; a plain gunicorn
deployment sets them in the pod spec. gunicorn-native settings (bind, workers, threads, TLS
files) stay gunicorn settings.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..policies.core.limits import (
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

_TRUE = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"", "0", "off"})
_LABEL = r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?"
_HOSTNAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*", re.IGNORECASE)
"""A DNS name or a dotted IPv4 address (RFC 1123 labels)."""


@dataclass(frozen=True, slots=True)
class ListenAddress:
    """Where a TCP listener binds: an IP address or host name (IPv6 without brackets), a port."""

    host: str
    port: int

    @property
    def bind(self) -> str:
        """As gunicorn's `bind` takes it: `host:port`, `[v6]:port`."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


DEFAULT_METRICS_BIND = ListenAddress("0.0.0.0", 8080)
"""`/metrics` (and the probes) on a listener of their own, plain HTTP, as controller-runtime's
metrics server and kube-state-metrics' telemetry port: the admission port serves only what the
API server calls. 8080 is controller-runtime's historical metrics address; a bare port binds
this host."""


@dataclass(frozen=True, slots=True)
class SettingsProblem:
    message: str


def parse_listen_address(value: str, default_host: str) -> ListenAddress | SettingsProblem | None:
    """`host:port`, `[v6]:port`, `:port` or a bare `port` (on `default_host`); None for none
    (empty, `0`, `off`, or port 0, as `--metrics-port 0`).

    The one reading of a listener variable: gunicorn's configuration binds `bind`, the worker
    serves the port without TLS and the application answers `/metrics` on it, so they cannot
    disagree. What gunicorn would misread (a bare port is a host to it, an unbracketed IPv6
    address splits at its first colon) is refused here with what to write instead."""
    text = value.strip()
    if text.lower() in _OFF:
        return None
    expected = "expected host:port, [IPv6]:port, a port, or off"
    if text.isdigit():
        host, port = default_host, text
    elif text.startswith("["):
        inside, closed, rest = text[1:].partition("]")
        if not closed or not rest.startswith(":"):
            return SettingsProblem(f"{text!r}: {expected}")
        host, port = inside, rest[1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return SettingsProblem(f"{text!r}: {host!r} in brackets is not an IPv6 address")
    else:
        host, colon, port = text.rpartition(":")
        if not colon:
            return SettingsProblem(f"{text!r}: {expected}")
        if ":" in host:
            return SettingsProblem(f"{text!r}: an IPv6 address goes in brackets, as [{host}]:{port}")
        if host and not _HOSTNAME.fullmatch(host):
            return SettingsProblem(f"{text!r}: {host!r} is not an IP address or host name")
        host = host or default_host
    if not port.isdigit() or int(port) > 65535:
        return SettingsProblem(f"{text!r}: port {port!r} is not a number from 0 to 65535")
    return None if int(port) == 0 else ListenAddress(host, int(port))


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
    metrics_bind: ListenAddress | None = DEFAULT_METRICS_BIND
    """The plain-HTTP listener of `/metrics` and the probes; None: none, `/metrics` nowhere."""

    def to_env(self) -> dict[str, str]:
        """The variables that make `from_env` return these settings (used by `serve`)."""
        env = {
            ENV_KUBERNETES_VERSION: format_kubernetes_version(self.kubernetes_version),
            ENV_POOL_CHECK: "true" if self.pool_check else "false",
            ENV_POOL_SYNC_TIMEOUT: str(self.pool_sync_timeout),
            ENV_LOG_LEVEL: self.log_level,
            ENV_METRICS_BIND: self.metrics_bind.bind if self.metrics_bind else "off",
        }
        if self.kubeconfig:
            env[ENV_KUBECONFIG] = self.kubeconfig
        return env


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
    default = DEFAULT_METRICS_BIND
    metrics = parse_listen_address(env.get(ENV_METRICS_BIND, default.bind), default.host)
    if isinstance(metrics, SettingsProblem):
        return SettingsProblem(f"{ENV_METRICS_BIND}: {metrics.message}")
    return WebhookSettings(
        kubernetes_version=version,
        pool_check=env.get(ENV_POOL_CHECK, "").strip().lower() in _TRUE,
        pool_sync_timeout=max(0.0, timeout),
        kubeconfig=env.get(ENV_KUBECONFIG) or None,
        log_level=env.get(ENV_LOG_LEVEL, "INFO").upper(),
        metrics_bind=metrics,
    )


def from_env_or_exit() -> WebhookSettings:
    """`from_env`, or exit with its message: a bad variable found at startup (gunicorn's
    configuration, a worker, the application) is the operator's to fix, and a traceback
    would bury the one line that says which."""
    loaded = from_env()
    if isinstance(loaded, SettingsProblem):
        raise SystemExit(f"dra-affinity webhook: {loaded.message}")
    return loaded
