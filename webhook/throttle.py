"""Counted, rate-limited reports of hostile traffic: one log line per kind per interval.

Why: a slow-body or handshake flood produces thousands of rejected or timed-out connections a
second, and a flood of malformed reviews as many 4xx replies; a line (let alone a traceback)
for each drowned the log and cost CPU the legitimate requests needed. Each occurrence is
counted in `/metrics` at once; the log says the same at most once per `interval` per kind,
with the count since its previous line, so an operator still sees that and how much, and the
first occurrence of a kind is logged immediately.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

MESSAGES = {
    "rejected:per-source-limit": "connections rejected: their client address holds the most a worker allows",
    "rejected:plain-http": "plain HTTP sent to the TLS port: answered 400",
    "timeout:handshake": "connections closed: TLS handshake not finished in time",
    "timeout:head": "connections closed: request head not received in time",
    "timeout:body": "requests answered 408: body not received in time",
}
"""Every kind, as `category:detail` (the category picks the counter, the detail its label)."""


class ConnectionCounter(Protocol):
    def count(self, kind: str) -> None: ...


class ThrottledLog:
    """Counts each kind at once (when given a counter), logs each kind at most once per
    `interval` seconds: the line of the occurrence that opens an interval, with its own fields
    and the number of occurrences since the previous line. Thread-safe."""

    def __init__(self, log: Any, counter: ConnectionCounter | None, interval: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._log = log
        self._counter = counter
        self._interval = interval
        self._clock = clock
        self._unlogged: dict[str, int] = {}
        self._next_line: dict[str, float] = {}
        self._last: dict[str, tuple[str, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def record(self, kind: str, message: str | None = None, fields: dict[str, Any] | None = None) -> None:
        if self._counter is not None:
            self._counter.count(kind)
        with self._lock:
            self._unlogged[kind] = self._unlogged.get(kind, 0) + 1
            self._last[kind] = (message or MESSAGES.get(kind, kind), fields or {})
            line = self._take(kind) if self._clock() >= self._next_line.get(kind, 0.0) else None
        if line is not None:
            self._log.warning(line[0], extra={"fields": line[1]})

    def flush(self) -> None:
        """Write the lines whose interval has passed (called from the worker's main loop)."""
        now = self._clock()
        with self._lock:
            lines = [self._take(k) for k, n in list(self._unlogged.items())
                     if n and now >= self._next_line.get(k, 0.0)]
        for message, fields in lines:
            self._log.warning(message, extra={"fields": fields})

    def _take(self, kind: str) -> tuple[str, dict[str, Any]]:
        count = self._unlogged.pop(kind, 0)
        self._next_line[kind] = self._clock() + self._interval
        message, fields = self._last.get(kind, (MESSAGES.get(kind, kind), {}))
        return message, {**fields, "kind": kind, "count": count, "interval_s": self._interval}
