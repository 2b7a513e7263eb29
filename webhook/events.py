"""Each review's log line and metrics, recorded off the request path, in small batches.

Why: once a slice's findings are cached, the JSON log line and the Prometheus samples of a
request cost more than deciding it — a log record, an encoder run and a `write(2)`, then three
locked writes into the multiprocess files, each run with the caches cold from TLS and HTTP
work: a sizeable share of a metadata-slice request's server CPU (`bench/webhook_bench.py`).
Appended to a queue instead, they are written by one
thread per worker every `FLUSH_INTERVAL`: one `write` for all lines, one increment per
counter and label set, in a warm loop.

What it changes for operators: lines and samples appear up to `FLUSH_INTERVAL` after the
reply (each line keeps the time of its request in `ts`); `/metrics` first flushes its own
worker; a worker that exits normally flushes on the way out (`atexit`). A worker killed
outright (SIGKILL, OOM) loses at most its last `FLUSH_INTERVAL` of lines and samples.
Failed requests, and the first rejected request of each status in an interval
(`app.REJECTION_LOG_INTERVAL`), are still logged at once: their line is what
someone debugging needs first. Should the log stream stall, at most `MAX_QUEUED` events wait;
later ones are dropped and their number logged when writing resumes. A failed batch is logged
and the writer goes on.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import logs
from .metrics import Metrics

FLUSH_INTERVAL = 0.05
"""Seconds a batch collects before it is written."""

MAX_QUEUED = 100_000
"""Events kept while the writer cannot write (say, a stalled stderr pipe). Beyond it new events
are dropped and counted, and the count is logged once writing resumes: a webhook that cannot
log must keep admitting, and must not grow without bound meanwhile."""

WRITE_CHUNK = 32
"""Lines encoded and written at a time. Between chunks the writer yields the GIL: a request
thread that wants it would otherwise wait for the whole batch (or CPython's whole switch
interval, `sys.getswitchinterval()`), which shows in the webhook's p99."""

PROCESS_METRICS_INTERVAL = 1.0
"""Seconds between copies of the compile-cache and TLS counters into the metrics: per-worker
totals that need not be exact per request, and cost a lock round per cache to read."""


@dataclass(slots=True)
class ReviewEvent:
    """What one answered review leaves behind: its log line and its metric samples."""

    created: float
    """`time.time()` of the reply: the line's `ts`."""
    fields: dict[str, Any]
    decision: str
    operation: str
    dry_run: bool
    seconds: float
    rule_severities: tuple[tuple[str, str], ...]
    pool_check: str | None


class EventRecorder:
    """Queues `ReviewEvent`s and writes them from a background thread.

    The thread is started by the first event in the process that records it (gunicorn forks
    workers before any request), sleeps while nothing is queued, and is a daemon: `flush`,
    registered with `atexit`, writes what is left when the worker exits.
    """

    def __init__(self, logger: logging.Logger, metrics: Metrics, sync: Callable[[], None],
                 interval: float = FLUSH_INTERVAL) -> None:
        self._logger = logger
        self._metrics = metrics
        self._sync = sync
        self._interval = interval
        self._queue: deque[ReviewEvent] = deque()
        self._wake = threading.Event()
        self._flushing = threading.Lock()
        self._started_in: int | None = None
        self._last_sync = float("-inf")
        self._dropped = 0
        atexit.register(self.flush)

    def record(self, event: ReviewEvent) -> None:
        """Queue one event (thread-safe; a deque append and, once per batch, a wake-up)."""
        if len(self._queue) >= MAX_QUEUED:
            self._dropped += 1  # racy by a few at worst: it only feeds a log line
        else:
            self._queue.append(event)
        if not self._wake.is_set():
            self._wake.set()
        if self._started_in != os.getpid():
            self._start()

    def _start(self) -> None:
        with self._flushing:
            pid = os.getpid()
            if self._started_in == pid:
                return
            self._started_in = pid
            threading.Thread(target=self._run, name="dra-affinity-events", daemon=True).start()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(self._interval)
            self._wake.clear()  # before draining: an event queued from here on wakes us again
            try:
                self.flush()
            except Exception:  # the writer must outlive any one bad batch
                self._logger.exception("writing review events failed")

    def flush(self, block: bool = True) -> None:
        """Write every queued event now. With `block=False` (what `/metrics` does before
        answering), return at once if a flush is already under way: it writes the samples
        first, and a stalled log stream must not stall the scrape too."""
        if not self._flushing.acquire(blocking=block):
            return
        try:
            batch: list[ReviewEvent] = []
            queue = self._queue
            while queue:
                batch.append(queue.popleft())
            if batch:
                self._write(batch)
            dropped, self._dropped = self._dropped, 0
            if dropped:
                self._logger.error("review events dropped: the log writer fell behind",
                                   extra={"fields": {"dropped": dropped, "limit": MAX_QUEUED}})
            now = time.monotonic()
            if now - self._last_sync >= PROCESS_METRICS_INTERVAL:
                self._last_sync = now
                self._sync()
        finally:
            self._flushing.release()

    def _write(self, batch: list[ReviewEvent]) -> None:
        # Samples before lines: whoever sees a request's line can already scrape its samples.
        # Each half on its own: a failure to count must not cost the lines, nor the reverse.
        try:
            self._count(batch)
        except Exception:
            self._logger.exception("counting review events failed",
                                   extra={"fields": {"events": len(batch)}})
        for start in range(0, len(batch), WRITE_CHUNK):
            if start:
                time.sleep(0)  # let request threads have the GIL between chunks
            logs.events(self._logger, logging.INFO, "admission review",
                        [(event.created, event.fields) for event in batch[start:start + WRITE_CHUNK]])

    def _count(self, batch: list[ReviewEvent]) -> None:
        requests: Counter[tuple[str, str, bool]] = Counter()
        rules: Counter[tuple[str, str, str]] = Counter()
        pools: Counter[str] = Counter()
        for event in batch:
            requests[(event.decision, event.operation, event.dry_run)] += 1
            for rule, severity in event.rule_severities:
                rules[(rule, severity, event.decision)] += 1
            if event.pool_check is not None:
                pools[event.pool_check] += 1
            self._metrics.observe_duration(event.decision, event.seconds)
        for (decision, operation, dry_run), count in requests.items():
            self._metrics.count_requests(decision, operation, dry_run, count)
        for (rule, severity, decision), count in rules.items():
            self._metrics.count_rule(rule, severity, decision, count)
        for result, count in pools.items():
            self._metrics.count_pool_checks(result, count)
