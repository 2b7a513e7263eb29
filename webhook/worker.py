"""The gunicorn worker: gthread, except that no thread waits for a slow client.

Why: gunicorn's gthread worker hands every accepted connection to a pool thread, which then
waits (up to 5 s) for the first byte, does the TLS handshake and reads the request headers
with a blocking socket and no deadline. With the default 2 workers × 4 threads, 200 idle TCP
connections let 0 of 5 legitimate probes through, and 64 connections that each sent one byte
held their threads until the clients left. The API server sends a whole request at once, so
a client that is slow to handshake or to send its headers is not the API server.

Here the worker's main loop (a selector, no threads) does the TLS handshake and reads the
request head *and body* without blocking, for every new or kept-alive connection; a pool
thread gets the connection only once the whole request has arrived (the head's
`Content-Length`, or a chunked body's last chunk), with the bytes already read. The API
server sends the body with the head, so a body gets `BODY_TIMEOUT` seconds after its head:
past that the main loop answers 408 itself and closes the connection (read by a pool thread,
a trickled body would hold the thread and log a traceback per connection). A body the application
refuses unread (a declared length over the size limit, a malformed chunk) is handed over at
once and its connection closed after the reply, so no thread reads the rest. Each connection
also has `HANDSHAKE_TIMEOUT` seconds to finish the handshake and send the head; past it the
connection is closed. So slow connections cost a socket and their buffered bytes, never a
thread; `worker_connections` bounds how many a worker holds, `MAX_CONNECTIONS_PER_SOURCE`
how many of them one client address may hold.

A handshake flood must not delay the API server, which reuses its connections: the main loop
handles the events of established connections (a kept-alive connection's next request, a
request being read) before handshakes, handshakes at most `HANDSHAKE_STEPS_PER_ROUND` per
round, and it stops accepting while `MAX_HANDSHAKES` handshakes are in flight (begun, not
ended; the rest wait in the listen queue, which costs them nothing here). Plain HTTP sent to the TLS port is
answered as Go's TLS server answers it (`400`, "Client sent an HTTP request to an HTTPS
server."), then closed.

Connections rejected (per-source bound, plain HTTP) and timed out (handshake, head, body)
are counted in `/metrics` (`dra_affinity_connections_rejected_total`,
`dra_affinity_connections_timed_out_total`) and logged at most once per `ATTACK_LOG_INTERVAL`
per kind, with the count since the last line: an attack must not become a log flood.

Under a connection flood a legitimate client waits in the listen queue behind the attacker's
connections, so how fast the queue drains decides its latency: each wake-up of a listener
accepts up to `ACCEPT_BATCH` connections (gthread accepts one per `select` round), and a
connection that is already closed when accepted (connect-and-close) is dropped after a
one-byte `MSG_PEEK`, without building a TLS object for it (`bench/abuse_bench.py` measures
the drain rate and the legitimate client's p99: docs/performance.md, "The webhook").

The metrics listener (`dra_affinity.webhook.settings.WebhookSettings.metrics_bind`) is served
by the same workers, so `/metrics` merges every worker's samples, but without TLS:
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
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gunicorn import http
from gunicorn.workers.gthread import TConn, ThreadWorker

from .settings import from_env_or_exit
from .throttle import ThrottledLog
from .tls import TlsLoadError, WorkerTls

HANDSHAKE_TIMEOUT = float(os.environ.get("DRA_AFFINITY_HANDSHAKE_TIMEOUT", "5"))
"""Seconds a connection has to finish TLS and send a request's head (from accept, or from
its first byte on a kept-alive connection)."""

REQUEST_TIMEOUT = float(os.environ.get("DRA_AFFINITY_REQUEST_TIMEOUT", "10"))
"""Seconds from a request's first byte to the last byte of its body (and the bound of a
reply's write)."""

BODY_TIMEOUT = float(os.environ.get("DRA_AFFINITY_BODY_TIMEOUT", "2"))
"""Seconds from the end of a request's head to the last byte of its body. The API server
writes the body right after the head; a client that takes longer is answered 408."""

MAX_CONNECTIONS_PER_SOURCE = int(os.environ.get("DRA_AFFINITY_MAX_CONNECTIONS_PER_SOURCE", "512"))
"""Connections one client address may hold in a worker (any state); more are closed at
accept. Generous: the API server's replicas reach the webhook from few addresses, and a
slow connection costs no thread here, only a socket."""

MAX_HANDSHAKES = int(os.environ.get("DRA_AFFINITY_MAX_HANDSHAKES", "128"))
"""TLS handshakes begun and not ended per worker; at the bound the worker stops accepting
until one ends (or times out: a stalled one is closed at `HANDSHAKE_TIMEOUT`)."""

HANDSHAKE_STEPS_PER_ROUND = 16
"""Handshake events handled per round of the main loop, after every established connection's
event: a handshake costs CPU (the key exchange), and a flood of them must not delay requests
on kept-alive connections. Unhandled ones stay readable and come back next round."""

ATTACK_LOG_INTERVAL = 10.0
"""Seconds between log lines of one kind of rejected or timed-out connection (each line
carries the count since the previous one)."""

ACCEPT_BATCH = 64
"""Connections accepted per wake-up of a listener (gthread: one). Under a connection flood
the listen queue is what a legitimate client waits in: draining it in batches, without a
`select` round per connection, shortens that wait."""

DEADLINE_SCAN_SECONDS = 0.25
"""How often the main loop looks for connections past their deadline (deadlines are seconds)."""

MAX_HEAD_BYTES = 64 * 1024
"""A head this long without its end goes to the parser anyway (which answers 431/400)."""

_HEAD_END = b"\r\n\r\n"

PLAIN_HTTP_REPLY = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
"""What Go's `net/http` server writes when a TLS connection starts with an HTTP request line."""

_HTTP_PREFIXES = frozenset({b"GET /", b"HEAD ", b"POST ", b"PUT /", b"OPTIO"})
"""The first five bytes Go's `tlsRecordHeaderLooksLikeHTTP` takes for plain HTTP."""

_OPENSSL_HTTP_REASONS = frozenset({"HTTP_REQUEST", "HTTPS_PROXY_REQUEST"})
"""OpenSSL's own plain-HTTP detection, for a request line that arrived in pieces."""

_HEX = frozenset(b"0123456789abcdefABCDEF")


class SourceCounts:
    """Connections held per client address in this worker; a slot is given back once."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()  # slots are given back from pool threads too

    def take(self, source: str) -> SourceSlot | None:
        with self._lock:
            held = self._held.get(source, 0)
            if held >= self.bound:
                return None
            self._held[source] = held + 1
        return SourceSlot(self, source)

    def give_back(self, source: str) -> None:
        with self._lock:
            held = self._held.get(source, 0) - 1
            if held > 0:
                self._held[source] = held
            else:
                self._held.pop(source, None)


class SourceSlot:
    """One connection's place in `SourceCounts`."""

    def __init__(self, counts: SourceCounts, source: str) -> None:
        self._counts: SourceCounts | None = counts
        self._source = source

    def release(self) -> None:
        counts, self._counts = self._counts, None
        if counts is not None:
            counts.give_back(self._source)


def _source(client: Any) -> str:
    return str(client[0]) if isinstance(client, tuple) and client else str(client)


@dataclass(frozen=True, slots=True)
class BodyFraming:
    """How the request whose head ends at `head_end` delimits its body."""

    kind: str
    """`none`, `length`, `chunked`, or `other` (left to the parser: it refuses it)."""
    head_end: int
    length: int = 0


def body_framing(buffer: bytes | bytearray, head_end: int) -> BodyFraming:
    """The body framing a request head declares (RFC 9112 §6): a chunked transfer coding, a
    single `Content-Length`, or none; anything else (both, several lengths, another coding)
    is `other`, which the parser answers 400."""
    lengths: list[bytes] = []
    codings: list[bytes] = []
    for line in bytes(buffer[:head_end]).split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            continue
        lowered = name.strip().lower()
        if lowered == b"content-length":
            lengths.append(value.strip())
        elif lowered == b"transfer-encoding":
            codings.append(value.strip().lower())
    if codings:
        return BodyFraming("chunked" if codings == [b"chunked"] and not lengths else "other", head_end)
    if not lengths:
        return BodyFraming("none", head_end)
    if len(lengths) > 1 or not lengths[0].isdigit() or len(lengths[0]) > 18:
        return BodyFraming("other", head_end)
    return BodyFraming("length", head_end, int(lengths[0]))


@dataclass(slots=True)
class ChunkScan:
    """Where a chunked body has been read up to (so each read scans only what is new)."""

    position: int
    decoded: int = 0


def scan_chunks(buffer: bytes | bytearray, scan: ChunkScan, limit: int) -> str:
    """Advance `scan` over the complete chunks in `buffer`: `done` at the last chunk's end,
    `over` once more than `limit` decoded bytes have arrived, `bad` for a malformed chunk
    header (the parser then answers 400), `more` to wait for bytes."""
    while True:
        eol = buffer.find(b"\r\n", scan.position)
        if eol < 0:
            return "bad" if len(buffer) - scan.position > 4096 else "more"
        size_text = bytes(buffer[scan.position:eol]).split(b";", 1)[0].strip()
        if not size_text or len(size_text) > 15 or not set(size_text) <= _HEX:
            return "bad"
        size = int(size_text, 16)
        if size == 0:
            if buffer[eol + 2:eol + 4] == b"\r\n" or buffer.find(_HEAD_END, eol) >= 0:
                return "done"
            return "bad" if len(buffer) - eol > 8192 else "more"
        data_end = eol + 2 + size
        if scan.decoded + min(size, len(buffer) - eol - 2) > limit:
            return "over"
        if len(buffer) < data_end + 2:
            return "more"
        scan.decoded += size
        scan.position = data_end + 2


class GuardedSocket:
    """The connection's socket as the request parser reads it: bytes the main loop already
    read come first, then `recv` waits at most until the current request's deadline."""

    def __init__(self, sock: socket.socket, slot: SourceSlot | None = None) -> None:
        self._sock = sock
        self.buffer = bytearray()
        self.deadline: float | None = None
        self.slot = slot
        self.close_after = False
        """The request's body was not read whole in the main loop: close after the reply
        rather than let a pool thread read (or wait for) the rest to keep the connection."""

    def close(self) -> None:
        if self.slot is not None:
            self.slot.release()
        self._sock.close()

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
    """A connection the main loop is still reading: handshake, then the request head and body."""

    raw: socket.socket
    client: Any
    server: Any
    deadline: float
    tls: ssl.SSLSocket | None = None
    handshaken: bool = False
    conn: TConn | None = None  # a kept-alive connection coming back for its next request
    started: float = field(default_factory=time.monotonic)
    head: bytearray = field(default_factory=bytearray)
    slot: SourceSlot | None = None
    framing: BodyFraming | None = None
    """Set once the head is complete: the body is being read."""
    chunks: ChunkScan | None = None
    draining: bool = False
    """Answered already (a body refused unread): what the client still sends is read and
    dropped until it stops or the deadline, then the connection is closed. Closing at once
    would reset it while the client is still sending, before it has read the reply."""


class BoundedThreadWorker(ThreadWorker):  # gunicorn ships no type hints
    """gthread with the handshake and the whole request read in the main loop (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reading: dict[_Pending, None] = {}
        """Connections whose handshake or request is being read (a dict: O(1) removal, in order)."""
        self.handshaking = 0
        """Of `reading`, those whose TLS handshake has begun (a first record arrived) and not
        ended. A connection that has sent nothing costs no handshake work and is not counted:
        idle connections must not stop the worker from accepting."""
        self.sources = SourceCounts(MAX_CONNECTIONS_PER_SOURCE)
        self._next_deadline_scan = 0.0
        settings = from_env_or_exit()
        self.max_body_bytes = settings.max_body_bytes
        metrics = settings.metrics_bind
        self.plain_ports: frozenset[int] = frozenset(() if metrics is None else (metrics.port,))
        """Ports of listeners served without TLS: the metrics listener."""
        self.tls: WorkerTls | None = WorkerTls.from_gunicorn(self.cfg) if self.cfg.is_ssl else None
        """The serving context, its settings read here once (gunicorn's `ssl_context` hook reads
        them on every connection)."""
        self.attacks: ThrottledLog | None = None
        """Counts and rate-limited log lines of rejected and timed-out connections (after the fork)."""

    def init_process(self) -> None:
        # After the fork: prometheus_client's multiprocess files are per process.
        from .metrics import ConnectionMetrics

        self.attacks = ThrottledLog(self.log, ConnectionMetrics(), ATTACK_LOG_INTERVAL)
        super().init_process()

    def _count(self, kind: str) -> None:
        if self.attacks is not None:
            self.attacks.record(kind)

    # --- the main loop: established connections first -------------------------------------

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        """gthread's round, in order: the events of established connections (and the method
        queue), then at most `HANDSHAKE_STEPS_PER_ROUND` handshake events, then new
        connections, only while fewer than `MAX_HANDSHAKES` handshakes are in flight."""
        self._pace_accepting()
        try:
            events = self.poller.select(timeout)
        except OSError as e:
            if e.errno != errno.EINTR:
                raise
            return
        handshakes: list[Any] = []
        listeners: list[Any] = []
        for key, _ in events:
            callback = key.data
            if key.fileobj in self.sockets:
                listeners.append(key)
            elif isinstance(callback, partial) and callback.func == self._on_io \
                    and not callback.args[0].handshaken:
                handshakes.append(key)
            else:
                callback(key.fileobj)
        for key in handshakes[:HANDSHAKE_STEPS_PER_ROUND]:
            key.data(key.fileobj)
        for key in listeners:
            if self._accepting and self.handshaking < MAX_HANDSHAKES:
                key.data(key.fileobj)

    def _pace_accepting(self) -> None:
        """Stop accepting while the handshake bound is reached (gthread's loop turns accepting
        back on each round from its own connection count; this turns it off again)."""
        if self._accepting and self.handshaking >= MAX_HANDSHAKES:
            ThreadWorker.set_accept_enabled(self, False)

    # --- new connections -----------------------------------------------------------------

    def accept(self, listener: socket.socket) -> None:
        """Accept what the listen queue holds, up to `ACCEPT_BATCH` connections."""
        for _ in range(ACCEPT_BATCH):
            if self.nr_conns >= self.worker_connections or self.handshaking >= MAX_HANDSHAKES:
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
        slot = self.sources.take(_source(client_addr))
        if slot is None:
            client_sock.close()
            self._count("rejected:per-source-limit")
            return
        self.nr_conns += 1
        address = listener.getsockname()
        pending = _Pending(client_sock, client_addr, address, time.monotonic() + HANDSHAKE_TIMEOUT,
                           slot=slot)
        if self.tls is None or self._is_plain(address):
            pending.handshaken = True  # (a TLS one is wrapped once its first bytes are not plain HTTP)
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

    def _handshake(self, pending: _Pending) -> bool:
        """One step of the TLS handshake; True once it is done (else it waits, or was dropped)."""
        if pending.tls is None:
            try:
                first = pending.raw.recv(5, socket.MSG_PEEK)
            except BlockingIOError:
                return False
            if first in _HTTP_PREFIXES:
                self._answer_plain_http(pending)
                return False
            assert self.tls is not None
            with contextlib.suppress(KeyError, ValueError, OSError):
                self.poller.unregister(pending.raw)
            try:
                pending.tls = self.tls.context().wrap_socket(
                    pending.raw, server_side=True, do_handshake_on_connect=False,
                    suppress_ragged_eofs=self.cfg.suppress_ragged_eofs)
            except (OSError, ssl.SSLError, ValueError, TlsLoadError):  # never loaded: drop, retry next
                self._drop(pending)
                return False
            self.handshaking += 1
        try:
            pending.tls.do_handshake()
        except ssl.SSLWantReadError:
            self._watch(pending, selectors.EVENT_READ)
            return False
        except ssl.SSLWantWriteError:
            self._watch(pending, selectors.EVENT_WRITE)
            return False
        except ssl.SSLError as e:
            if getattr(e, "reason", None) in _OPENSSL_HTTP_REASONS:
                self._answer_plain_http(pending)
                return False
            raise
        pending.handshaken = True
        self.handshaking -= 1
        self._watch(pending, selectors.EVENT_READ)
        return True

    def _answer_plain_http(self, pending: _Pending) -> None:
        """As Go's TLS server: a plain-HTTP request gets a 400 in plain text, then the close."""
        sock = self._socket(pending)
        with contextlib.suppress(OSError):  # past the TLS layer when OpenSSL saw it: the bytes as they are
            socket.socket.send(sock, PLAIN_HTTP_REPLY)
        self._count("rejected:plain-http")
        self._drop(pending)

    def _advance(self, pending: _Pending) -> None:
        """One step without blocking: handshake, then read what has arrived."""
        if pending not in self.reading:
            return
        try:
            if not pending.handshaken and not self._handshake(pending):
                return
            if pending.draining:
                self._drain(pending)
                return
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
                if pending.framing is None and len(buffer) > MAX_HEAD_BYTES:
                    break
                if pending.framing is not None and self._body_state(pending, buffer) != "more":
                    break
        except (OSError, ssl.SSLError):
            self._drop(pending)
            return
        if pending.framing is None:
            head_end = buffer.find(_HEAD_END)
            if head_end < 0:
                if len(buffer) > MAX_HEAD_BYTES:
                    self._dispatch(pending, whole=False)  # the parser answers 431/400
                return
            pending.framing = body_framing(buffer, head_end + len(_HEAD_END))
            if pending.framing.kind == "chunked":
                pending.chunks = ChunkScan(pending.framing.head_end)
            pending.deadline = min(pending.started + REQUEST_TIMEOUT, time.monotonic() + BODY_TIMEOUT)
        state = self._body_state(pending, buffer)
        if state == "done":
            self._dispatch(pending, whole=True)
        elif state != "more":  # over the limit or malformed: refused without reading the rest
            self._dispatch(pending, whole=False)

    def _drain(self, pending: _Pending) -> None:
        sock = self._socket(pending)
        while True:
            try:
                data = sock.recv(65536)
            except (ssl.SSLWantReadError, BlockingIOError):
                return
            except ssl.SSLWantWriteError:
                self._watch(pending, selectors.EVENT_WRITE)
                return
            if not data:
                self._drop(pending)
                return

    def _body_state(self, pending: _Pending, buffer: bytearray) -> str:
        """`done`, `more`, or why the body is handed over unread (`over`, `bad`)."""
        framing = pending.framing
        assert framing is not None
        if framing.kind == "length":
            if framing.length > self.max_body_bytes:
                return "over"
            return "done" if len(buffer) >= framing.head_end + framing.length else "more"
        if framing.kind == "chunked":
            assert pending.chunks is not None
            return scan_chunks(buffer, pending.chunks, self.max_body_bytes)
        return "done" if framing.kind == "none" else "bad"

    def _buffer(self, pending: _Pending) -> bytearray:
        if pending.conn is not None:
            guarded = pending.conn.sock
            assert isinstance(guarded, GuardedSocket)
            return guarded.buffer
        return pending.head

    def _dispatch(self, pending: _Pending, *, whole: bool) -> None:
        """The request is read (or will be refused unread): a pool thread parses and serves it."""
        del self.reading[pending]
        sock = self._socket(pending)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(sock)
        conn = pending.conn
        if conn is None:
            guarded = GuardedSocket(sock, pending.slot)
            guarded.buffer = self._buffer(pending)
            conn = TConn(self.cfg, guarded, pending.client, pending.server)
            conn.parser = http.get_parser(self.cfg, guarded, pending.client)
            conn.initialized = True
        assert isinstance(conn.sock, GuardedSocket)
        conn.sock.deadline = pending.started + REQUEST_TIMEOUT
        conn.sock.close_after = not whole
        conn.data_ready = True
        conn.sock.setblocking(True)
        self.enqueue_req(conn)

    def handle_request(self, req: Any, conn: TConn) -> bool:
        """As gthread, but a connection whose body was not read whole is closed after the reply."""
        keepalive = bool(super().handle_request(req, conn))
        guarded = conn.sock
        return keepalive and not (isinstance(guarded, GuardedSocket) and guarded.close_after)

    def finish_request(self, conn: TConn, fs: Any) -> None:
        """As gthread, except that a connection answered without its body read is drained in
        the main loop before it is closed (see `_Pending.draining`)."""
        guarded = conn.sock
        if not (self.alive and isinstance(guarded, GuardedSocket) and guarded.close_after
                and not fs.cancelled() and fs.exception() is None):
            super().finish_request(conn, fs)
            return
        sock = guarded._sock
        pending = _Pending(sock, conn.client, conn.server, time.monotonic() + BODY_TIMEOUT,
                           tls=sock if isinstance(sock, ssl.SSLSocket) else None,
                           handshaken=True, conn=conn, draining=True)
        with contextlib.suppress(OSError, ValueError):
            sock.setblocking(False)
        self._start_reading(pending)

    def _drop(self, pending: _Pending) -> None:
        self.reading.pop(pending, None)
        if not pending.handshaken:
            pending.handshaken = True  # counted out of `handshaking` once
            if pending.tls is not None:
                self.handshaking -= 1
        if pending.conn is not None:  # a kept-alive connection: its GuardedSocket holds the slot
            self._close(self._socket(pending), pending.conn)
            return
        if pending.slot is not None:
            pending.slot.release()
        sock = self._socket(pending)
        self._close(sock, sock)

    def _time_out(self, pending: _Pending) -> None:
        """A connection past its deadline in the main loop: a body is answered 408 (as the
        application would), a handshake or head is closed."""
        if pending.draining:
            pass  # answered already; the client's leftovers are simply not waited for longer
        elif not pending.handshaken:
            self._count("timeout:handshake")
        elif pending.framing is None:
            self._count("timeout:head")
        else:
            self._count("timeout:body")
            body = (b'{"error":"request body not received within %d s of its head","code":408}'
                    % round(BODY_TIMEOUT))
            reply = (b"HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            with contextlib.suppress(OSError, ssl.SSLError, ValueError):
                self._socket(pending).send(reply)
        self._drop(pending)

    def _close(self, registered: Any, connection: socket.socket | TConn) -> None:
        """Let go of a connection this worker counts, whatever state it is in: off the poller
        (under `registered`), out of `nr_conns`, closed."""
        with contextlib.suppress(KeyError, ValueError, OSError):
            self.poller.unregister(registered)
        self.nr_conns -= 1
        with contextlib.suppress(OSError):
            connection.close()

    # --- kept-alive connections: their next request is read here as well -----------------

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
            self._time_out(pending)
        if self.attacks is not None:
            self.attacks.flush()
