"""The gunicorn worker: gthread, except that no thread waits for a slow client.

Why: gunicorn's gthread worker hands every accepted connection to a pool thread, which then
waits (up to 5 s) for the first byte, does the TLS handshake and reads the request headers
with a blocking socket and no deadline. With the default 2 workers × 4 threads, 200 idle TCP
connections let 0 of 5 legitimate probes through, and 64 connections that each sent one byte
held their threads until the clients left. The API server sends a whole request at once, so
a client that is slow to handshake or to send its headers is not the API server.

Here the worker's main loop (a selector, no threads) does the TLS handshake and reads the
request head without blocking, for every new or kept-alive connection; a pool thread gets the
connection only once the head is complete (`\\r\\n\\r\\n`), with the bytes already read. Each
connection has a deadline: `handshake_timeout` seconds to finish the handshake and send the
head, then the body must arrive by `request_timeout` seconds after the head began (a read
past it raises `TimeoutError`, which the application answers with 408). A connection past
its deadline in the main loop is closed. So slow connections cost a socket and a few KiB of
buffer each, never a thread; `worker_connections` bounds how many a worker holds.

Under a connection flood a legitimate client waits in the listen queue behind the attacker's
connections, so how fast the queue drains decides its latency: each wake-up of a listener
accepts up to `ACCEPT_BATCH` connections (gthread accepts one per `select` round), and a
connection that is already closed when accepted (connect-and-close) is dropped after a
one-byte `MSG_PEEK`, without building a TLS object for it. Measured with
`bench/abuse_bench.py --seconds 8` (2 workers, 4 flood threads, a shared 2-core machine): the
fresh-connection legitimate client's p99 during the flood went from 1.5–1.7 s (three runs) to
0.16–1.3 s (six runs, four under 0.35 s), the flood connections drained from ~1,500–1,950 to
~4,000–6,700 per second.

The metrics listener (`dra_affinity.webhook.settings.WebhookSettings.metrics_bind`) is served
by the same workers, so `/metrics` merges every worker's samples as before, but without TLS:
gunicorn's `certfile` applies to every listener, so the worker decides per listener (by its
port, as the application does) whether to wrap.
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from dra_affinity.webhook.settings import from_env_or_exit
from dra_affinity.webhook.tls import TlsLoadError, WorkerTls
from gunicorn import http
from gunicorn.workers.gthread import TConn, ThreadWorker

HANDSHAKE_TIMEOUT = float(os.environ.get("DRA_AFFINITY_HANDSHAKE_TIMEOUT", "5"))
"""Seconds a connection has to finish TLS and send a request's head (from accept, or from
its first byte on a kept-alive connection)."""

REQUEST_TIMEOUT = float(os.environ.get("DRA_AFFINITY_REQUEST_TIMEOUT", "10"))
"""Seconds from a request's first byte to the last byte of its body."""

ACCEPT_BATCH = 64
"""Connections accepted per wake-up of a listener (gthread: one). Under a connection flood
the listen queue is what a legitimate client waits in: draining it in batches, without a
`select` round per connection, shortens that wait."""

DEADLINE_SCAN_SECONDS = 0.25
"""How often the main loop looks for connections past their deadline (deadlines are seconds)."""

MAX_HEAD_BYTES = 64 * 1024
"""A head this long without its end goes to the parser anyway (which answers 431/400)."""

_HEAD_END = b"\r\n\r\n"


class GuardedSocket:
    """The connection's socket as the request parser reads it: bytes the main loop already
    read come first, then `recv` waits at most until the current request's deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.buffer = bytearray()
        self.deadline: float | None = None

    def recv(self, size: int, *args: Any) -> bytes:
        if self.buffer:
            chunk = bytes(self.buffer[:size])
            del self.buffer[:size]
            return chunk
        if self.deadline is not None:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("request not received within its deadline")
            self._sock.settimeout(remaining)
        return self._sock.recv(size, *args)

    def setblocking(self, flag: bool) -> None:
        self._sock.setblocking(flag)

    def sendall(self, data: bytes, *args: Any) -> None:
        # A reply goes out under its own bound, not what is left of the read deadline.
        self._sock.settimeout(REQUEST_TIMEOUT)
        self._sock.sendall(data, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


@dataclass(eq=False)
class _Pending:
    """A connection the main loop is still reading: handshake, then the request head."""

    raw: socket.socket
    client: Any
    server: Any
    deadline: float
    tls: ssl.SSLSocket | None = None
    handshaken: bool = False
    conn: TConn | None = None  # a kept-alive connection coming back for its next request
    started: float = field(default_factory=time.monotonic)
    head: bytearray = field(default_factory=bytearray)


class BoundedThreadWorker(ThreadWorker):  # gunicorn ships no type hints
    """gthread with the handshake and request head read in the main loop (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reading: dict[_Pending, None] = {}
        """Connections whose handshake or head is being read (a dict: O(1) removal, in order)."""
        self._next_deadline_scan = 0.0
        metrics = from_env_or_exit().metrics_bind
        self.plain_ports: frozenset[int] = frozenset(() if metrics is None else (metrics.port,))
        """Ports of listeners served without TLS: the metrics listener."""
        self.tls: WorkerTls | None = WorkerTls.from_gunicorn(self.cfg) if self.cfg.is_ssl else None
        """The serving context, its settings read here once (gunicorn's `ssl_context` hook reads
        them on every connection)."""

    # --- new connections -----------------------------------------------------------------

    def accept(self, listener: socket.socket) -> None:
        """Accept what the listen queue holds, up to `ACCEPT_BATCH` connections."""
        for _ in range(ACCEPT_BATCH):
            if self.nr_conns >= self.worker_connections:
                return
            try:
                client_sock, client_addr = listener.accept()
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                    raise
                return
            self._admit(listener, client_sock, client_addr)

    def _admit(self, listener: socket.socket, client_sock: socket.socket, client_addr: Any) -> None:
        client_sock.setblocking(False)
        try:  # gone before sending a byte (a connect-and-close flood): no TLS object for it
            if client_sock.recv(1, socket.MSG_PEEK) == b"":
                client_sock.close()
                return
        except BlockingIOError:
            pass
        except OSError:
            client_sock.close()
            return
        self.nr_conns += 1
        address = listener.getsockname()
        pending = _Pending(client_sock, client_addr, address, time.monotonic() + HANDSHAKE_TIMEOUT)
        if self.tls is not None and not self._is_plain(address):
            try:
                pending.tls = self.tls.context().wrap_socket(
                    client_sock, server_side=True, do_handshake_on_connect=False,
                    suppress_ragged_eofs=self.cfg.suppress_ragged_eofs)
            except (OSError, ssl.SSLError, ValueError, TlsLoadError):  # never loaded: drop, retry next
                self._drop(pending)
                return
        else:
            pending.handshaken = True
        self._start_reading(pending)

    def _start_reading(self, pending: _Pending) -> None:
        """The main loop reads `pending` from now on: what has arrived at once, the rest as it comes."""
        self.reading[pending] = None
        self._watch(pending, selectors.EVENT_READ)
        self._advance(pending)

    def _is_plain(self, address: Any) -> bool:
        """Whether the listener at `address` is the metrics one, served without TLS."""
        return isinstance(address, tuple) and address[1] in self.plain_ports

    def _socket(self, pending: _Pending) -> socket.socket:
        return pending.tls if pending.tls is not None else pending.raw

    def _watch(self, pending: _Pending, events: int) -> None:
        sock = self._socket(pending)
        callback: Callable[[Any], None] = partial(self._on_io, pending)
        try:
            self.poller.modify(sock, events, callback)
        except KeyError:
            self.poller.register(sock, events, callback)

    def _on_io(self, pending: _Pending, _fileobj: Any) -> None:
        self._advance(pending)

    def _advance(self, pending: _Pending) -> None:
        """One step without blocking: handshake, then read what has arrived."""
        if pending not in self.reading:
            return
        try:
            if not pending.handshaken:
                assert pending.tls is not None
                try:
                    pending.tls.do_handshake()
                except ssl.SSLWantReadError:
                    self._watch(pending, selectors.EVENT_READ)
                    return
                except ssl.SSLWantWriteError:
                    self._watch(pending, selectors.EVENT_WRITE)
                    return
                pending.handshaken = True
                self._watch(pending, selectors.EVENT_READ)
            buffer = self._buffer(pending)
            sock = self._socket(pending)
            while True:
                try:
                    data = sock.recv(65536)
                except (ssl.SSLWantReadError, BlockingIOError):
                    break
                except ssl.SSLWantWriteError:
                    self._watch(pending, selectors.EVENT_WRITE)
                    return
                if not data:  # the client left
                    self._drop(pending)
                    return
                buffer += data
                if len(buffer) > MAX_HEAD_BYTES:
                    break
        except (OSError, ssl.SSLError):
            self._drop(pending)
            return
        if _HEAD_END in buffer or len(buffer) > MAX_HEAD_BYTES:
            self._dispatch(pending)

    def _buffer(self, pending: _Pending) -> bytearray:
        if pending.conn is not None:
            guarded = pending.conn.sock
            assert isinstance(guarded, GuardedSocket)
            return guarded.buffer
        return pending.head

    def _dispatch(self, pending: _Pending) -> None:
        """The head is complete: a pool thread parses and serves the request."""
        del self.reading[pending]
        sock = self._socket(pending)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(sock)
        conn = pending.conn
        if conn is None:
            guarded = GuardedSocket(sock)
            guarded.buffer = self._buffer(pending)
            conn = TConn(self.cfg, guarded, pending.client, pending.server)
            conn.parser = http.get_parser(self.cfg, guarded, pending.client)
            conn.initialized = True
        assert isinstance(conn.sock, GuardedSocket)
        conn.sock.deadline = pending.started + REQUEST_TIMEOUT
        conn.data_ready = True
        conn.sock.setblocking(True)
        self.enqueue_req(conn)

    def _drop(self, pending: _Pending) -> None:
        self.reading.pop(pending, None)
        sock = self._socket(pending)
        self._close(sock, sock)

    def _close(self, registered: Any, connection: socket.socket | TConn) -> None:
        """Let go of a connection this worker counts, whatever state it is in: off the poller
        (under `registered`), out of `nr_conns`, closed."""
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(registered)
        self.nr_conns -= 1
        with contextlib.suppress(OSError):
            connection.close()

    # --- kept-alive connections: their next request's head is read here as well ------------

    def on_client_socket_readable(self, conn: TConn, client: Any) -> None:
        self.poller.unregister(client)
        self.keepalived_conns.remove(conn)
        guarded = conn.sock
        if not isinstance(guarded, GuardedSocket):  # not one of ours: gthread's own path
            self.enqueue_req(conn)
            return
        sock = guarded._sock
        pending = _Pending(sock, conn.client, conn.server, time.monotonic() + HANDSHAKE_TIMEOUT,
                           tls=sock if isinstance(sock, ssl.SSLSocket) else None,
                           handshaken=True, conn=conn)
        guarded.deadline = None
        sock.setblocking(False)
        self._start_reading(pending)

    # --- graceful stop ---------------------------------------------------------------------

    def set_accept_enabled(self, enabled: bool) -> None:
        """As gthread, and on the way out (SIGTERM: `alive` is False) also close this process's
        copies of the listening sockets and its idle kept-alive connections. The master closes
        its own first; once every worker has closed its copy the kernel refuses new connections
        (RST), where gthread kept them open — queued, never accepted — until the worker exited
        after draining, up to `graceful_timeout` later. Requests in flight are unaffected: they
        are on their own sockets, and the drain loop waits for them."""
        super().set_accept_enabled(enabled)
        if not enabled and not self.alive:
            for listener in self.sockets:
                with contextlib.suppress(OSError):
                    listener.close()
            # Idle kept-alive connections carry no request: close them now (as Go's
            # `http.Server.Shutdown` does) instead of letting them hold the drain open until
            # their keep-alive ends, past `graceful_timeout`.
            while self.keepalived_conns:
                conn = self.keepalived_conns.popleft()
                self._close(conn.sock, conn)

    def murder_pending(self) -> None:
        super().murder_pending()
        now = time.monotonic()
        if now < self._next_deadline_scan:
            return
        self._next_deadline_scan = now + DEADLINE_SCAN_SECONDS
        for pending in [p for p in self.reading if p.deadline <= now]:
            self._drop(pending)
