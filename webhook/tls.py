"""The serving TLS context: built once, swapped when the certificate files change.

Why not gunicorn's default: its `ssl_context` builds a new `SSLContext` and re-reads the
certificate and key on *every accepted connection* (implicit hot reload, paid in CPU per
connection). We keep one context per worker process and look at the files' identity
(inode, size, mtime — `stat`, never a read) at most once per `check_interval`, like
controller-runtime's certwatcher polling. When they changed, a new context is built off to the
side and swapped in with one attribute assignment: handshakes in flight keep the context they
started with, new ones get the new certificate, no request is dropped.

A rewrite caught half-way (new certificate, old key) fails to load: the old context stays in
service, the failure is logged (once per state of the files) and counted
(`dra_affinity_tls_certificate_reloads_total{result="failure"}`, `/readyz` shows it as
`last_error`), and the next change of the files is tried again — cert-manager and Secret
volume updates replace files atomically, so that window is short. Files are `stat`ed through
symlinks, which is what sees a Secret volume's `..data` swap.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from cryptography import x509

from ..policies.core.cache import BoundedCache
from .logs import LOGGER_NAME

TlsVersion = Literal["1.2", "1.3"]
_VERSIONS = {"1.2": ssl.TLSVersion.TLSv1_2, "1.3": ssl.TLSVersion.TLSv1_3}
DEFAULT_CHECK_INTERVAL = 2.0
"""Seconds between two `stat`s of the certificate files (certwatcher polls every 10 s)."""


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """Where the serving pair (and, for mTLS, the client CA) lives, and the TLS floor."""

    cert_file: str
    key_file: str
    client_ca_file: str | None = None
    min_version: TlsVersion = "1.2"

    @property
    def paths(self) -> tuple[str, ...]:
        return (self.cert_file, self.key_file, *((self.client_ca_file,) if self.client_ca_file else ()))


FileIdentity = tuple[int, int, int, int] | None
"""(device, inode, size, mtime in ns) of one file, None when it cannot be `stat`ed."""


def _identity(path: str) -> FileIdentity:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def identities(files: TlsFiles) -> tuple[FileIdentity, ...]:
    return tuple(_identity(p) for p in files.paths)


@dataclass(frozen=True, slots=True)
class LoadedContext:
    """A ready context and what it serves (for readiness, metrics and logs)."""

    context: ssl.SSLContext
    not_after: float
    """Expiry of the serving certificate, Unix seconds."""
    serial: int
    identity: tuple[FileIdentity, ...]


@dataclass(frozen=True, slots=True)
class TlsProblem:
    """Why the files could not be turned into a context (a value; the caller decides)."""

    message: str


def build_context(files: TlsFiles) -> ssl.SSLContext:
    """A server context: TLS ≥ `min_version`, HTTP/1.1 ALPN, client certificates required
    and verified against `client_ca_file` when one is given (API server mTLS)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = _VERSIONS[files.min_version]
    context.load_cert_chain(certfile=files.cert_file, keyfile=files.key_file)
    if files.client_ca_file:
        context.load_verify_locations(cafile=files.client_ca_file)
        context.verify_mode = ssl.CERT_REQUIRED
    else:
        context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    return context


def load(files: TlsFiles) -> LoadedContext | TlsProblem:
    """Build a context from the files as they are now; any failure is a `TlsProblem`."""

    before = identities(files)
    try:
        with open(files.cert_file, "rb") as handle:
            leaf = x509.load_pem_x509_certificates(handle.read())[0]
        context = build_context(files)
    except (OSError, ValueError, ssl.SSLError) as exc:
        return TlsProblem(f"cannot load {files.cert_file} / {files.key_file}: {exc}")
    # The identity taken *before* reading: if the files changed while we read them, the next
    # check sees a difference and loads again, so a torn read never sticks.
    return LoadedContext(context, leaf.not_valid_after_utc.timestamp(), leaf.serial_number, before)


@dataclass(frozen=True, slots=True)
class TlsStatus:
    loaded: bool
    not_after: float | None
    serial: int | None
    reloads: int
    failures: int
    last_error: str | None


class TlsLoadError(RuntimeError):
    """The very first load failed: there is no context to fall back on."""


@dataclass
class ReloadingContext:
    """One worker's serving context, re-checked at most every `check_interval` seconds."""

    files: TlsFiles
    check_interval: float = DEFAULT_CHECK_INTERVAL
    clock: Callable[[], float] = time.monotonic
    _current: LoadedContext | None = field(default=None, init=False)
    _next_check: float = field(default=0.0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _reloads: int = field(default=0, init=False)
    _failures: int = field(default=0, init=False)
    _last_error: str | None = field(default=None, init=False)
    _failed_identity: tuple[FileIdentity, ...] | None = field(default=None, init=False)
    """The files' identity when they last failed to load: not retried until they change."""

    def __post_init__(self) -> None:
        first = load(self.files)
        if isinstance(first, TlsProblem):
            raise TlsLoadError(first.message)
        self._current = first
        self._next_check = self.clock() + self.check_interval

    def context(self) -> ssl.SSLContext:
        """The context for a new connection. Cheap: a clock read, and a few `stat`s when due."""
        if self.clock() >= self._next_check:
            self.check()
        assert self._current is not None
        return self._current.context

    def check(self) -> bool:
        """Compare the files with the loaded ones; reload on change. True when swapped.

        Never blocks a connection: if another thread is already checking, return at once.
        """
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._next_check = self.clock() + self.check_interval
            assert self._current is not None
            now = identities(self.files)
            if now == self._current.identity or now == self._failed_identity:
                return False
            loaded = load(self.files)
            if isinstance(loaded, TlsProblem):
                self._failures += 1
                self._last_error = loaded.message
                self._failed_identity = now
                logging.getLogger(LOGGER_NAME).error(
                    "certificate reload failed; still serving the previous certificate",
                    extra={"fields": {"error": loaded.message, "serial": self._current.serial}})
                return False
            self._failed_identity = None
            self._current = loaded
            self._reloads += 1
            self._last_error = None
            return True
        finally:
            self._lock.release()

    def status(self) -> TlsStatus:
        current = self._current
        return TlsStatus(
            loaded=current is not None,
            not_after=current.not_after if current else None,
            serial=current.serial if current else None,
            reloads=self._reloads,
            failures=self._failures,
            last_error=self._last_error,
        )


class ContextRegistry:
    """The reloading contexts of this process, by configuration: an explicit bounded cache.

    gunicorn's `ssl_context` hook only receives its config, so the hook looks the context up
    here; `/readyz` and `/metrics` read the same entries to report what is being served. A
    configuration whose first load failed has no context, but is remembered as a status
    that is not loaded (until a load succeeds), so `/readyz` says so instead of reporting
    ready with no certificate to serve.
    """

    def __init__(self, maxsize: int = 4) -> None:
        self._entries: BoundedCache[tuple[TlsFiles, float], ReloadingContext] = BoundedCache(
            "webhook.tls_contexts", maxsize)
        self._never_loaded: BoundedCache[tuple[TlsFiles, float], tuple[tuple[TlsFiles, float], TlsStatus]] = (
            BoundedCache("webhook.tls_never_loaded", maxsize))
        """Configurations whose every load failed so far: (key, status), by key."""
        self._lock = threading.Lock()  # one context per configuration, even when threads race

    def get(self, files: TlsFiles, check_interval: float = DEFAULT_CHECK_INTERVAL) -> ReloadingContext:
        """The configuration's context; `TlsLoadError` (remembered) while it never loaded."""
        key = (files, check_interval)
        with self._lock:
            try:
                return self._entries.get_or_compute(key, lambda: ReloadingContext(files, check_interval))
            except TlsLoadError as exc:
                previous = self._never_loaded.get(key)
                failures = 1 + (previous[1].failures if previous is not None else 0)
                self._never_loaded.put(key, (key, TlsStatus(False, None, None, 0, failures, str(exc))))
                raise

    def statuses(self) -> list[TlsStatus]:
        loaded = [entry.status() for entry in self._entries.values()]
        return loaded + [status for key, status in self._never_loaded.values() if key not in self._entries]


REGISTRY = ContextRegistry()


def files_from_gunicorn(conf: Any) -> TlsFiles:
    """The `TlsFiles` described by gunicorn's own settings (`--certfile`, `--keyfile`,
    `--ca-certs`), so plain `gunicorn -c webhook/gunicorn_conf.py` works. A client CA is only
    ever given to authenticate the API server, so it always means "client certificate required"
    (whatever `--cert-reqs` says: an optional check would let any caller through)."""
    ca = getattr(conf, "ca_certs", None)
    version = os.environ.get("DRA_AFFINITY_TLS_MIN_VERSION", "1.2")
    return TlsFiles(
        cert_file=str(conf.certfile),
        key_file=str(conf.keyfile),
        client_ca_file=str(ca) if ca else None,
        min_version="1.3" if version == "1.3" else "1.2",
    )


def check_interval_from_env() -> float:
    try:
        return max(0.0, float(os.environ.get("DRA_AFFINITY_CERT_CHECK_INTERVAL", DEFAULT_CHECK_INTERVAL)))
    except ValueError:
        return DEFAULT_CHECK_INTERVAL


def gunicorn_ssl_context(conf: Any, default_factory: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """gunicorn's `ssl_context` hook: the cached, hot-reloaded context instead of a new one.

    gunicorn calls it per connection with nothing but its config, so it reads the settings
    each time; `dra_affinity.webhook.worker` uses a `WorkerTls` instead, which reads them once."""
    return WorkerTls.from_gunicorn(conf).context()


@dataclass
class WorkerTls:
    """One worker's way to its serving context: gunicorn's TLS settings and the environment
    (`DRA_AFFINITY_TLS_MIN_VERSION`, `DRA_AFFINITY_CERT_CHECK_INTERVAL`) read once, when the
    worker is made, not per accepted connection; the registry entry found once it has loaded.

    Until the first load succeeds (files missing or broken when the worker booted) every
    `context()` tries again and raises `TlsLoadError`: the connection is dropped, the next
    one may find the files repaired."""

    files: TlsFiles
    check_interval: float = DEFAULT_CHECK_INTERVAL
    _holder: ReloadingContext | None = field(default=None, init=False)

    @classmethod
    def from_gunicorn(cls, conf: Any) -> WorkerTls:
        return cls(files_from_gunicorn(conf), check_interval_from_env())

    def context(self) -> ssl.SSLContext:
        """The context for a new connection; `TlsLoadError` while never loaded."""
        if self._holder is None:
            self._holder = REGISTRY.get(self.files, self.check_interval)
        return self._holder.context()
