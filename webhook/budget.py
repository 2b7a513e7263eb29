"""The time budget of one admission review, and the gate that keeps heavy reviews apart.

Why: the API server waits `timeoutSeconds` (5 s in `deploy/`) and then applies the
registration's failurePolicy (`Fail`: the write is rejected with a timeout error nobody can
act on). Each step of analysing one expression is linear in its length, but a slice can hold
8 expressions of 10 KiB and the machine may be loaded, so a review gets a deadline below the
API server's: `DRA_AFFINITY_ANALYSIS_DEADLINE` (default 3 s), lowered to one second under
the `timeout` the API server puts on every webhook call's URL (`?timeout=5s`).

What the webhook answers when the budget runs out: a denial (HTTP 200, `allowed: false`,
status 503 `ServiceUnavailable`) that says the slice could not be checked in time and may be
retried. Why a denial and not an admission: under `failurePolicy: Fail` the API server would
reject the write at its timeout anyway, so denying first gives the same outcome with a
message, and frees the thread at once; admitting would let an unchecked (possibly hostile)
extractor into the scheduler's hot path. The expressions analysed before the deadline stay
in the analysis cache, so a retry continues where the last attempt stopped and a slice that
is merely large converges. With the `fail-open` component (`failurePolicy: Ignore`), set
`DRA_AFFINITY_ON_BUDGET=allow` to admit with a warning instead, as the API server would.

Heavy reviews (extractor text over `HEAVY_BYTES` in all, not yet analysed) take one of
`HEAVY_SLOTS` slots per worker process before any CEL work; when none is free the review is
answered at once as over budget ("busy"), without waiting: a waiting review would hold one
of the worker's few threads, and a flood of uncached worst-case slices would then leave no
thread for ordinary reviews (`bench/abuse_bench.py` shows it in the legitimate clients' p99).
So a flood costs one analysing thread per
worker, ordinary reviews (short extractors, or cached) never meet the gate, and a large
legitimate slice that meets a busy gate is retried by its driver like any other denial.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass

DEFAULT_DEADLINE = float(os.environ.get("DRA_AFFINITY_ANALYSIS_DEADLINE", "3"))
ON_BUDGET_ALLOW = os.environ.get("DRA_AFFINITY_ON_BUDGET", "deny").strip().lower() == "allow"
MARGIN = 1.0
"""Seconds kept between our answer and the API server's own timeout (network, rendering)."""
MIN_BUDGET = 0.25
HEAVY_BYTES = 8 * 1024
HEAVY_SLOTS = 1

_GO_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0}


def timeout_seconds(query_value: str | None) -> float | None:
    """The API server's `timeout` query parameter (a Go duration such as `5s`), or None."""
    if not query_value:
        return None
    match = _GO_DURATION.match(query_value.strip())
    if match is None:
        return None
    return float(match.group(1)) * _UNIT[match.group(2)]


@dataclass(frozen=True, slots=True)
class Deadline:
    at: float  # time.monotonic()
    seconds: float

    @classmethod
    def for_request(cls, started: float, api_server_timeout: float | None,
                    budget: float = DEFAULT_DEADLINE) -> Deadline:
        seconds = budget
        if api_server_timeout is not None:
            seconds = min(seconds, api_server_timeout - MARGIN)
        seconds = max(seconds, MIN_BUDGET)
        return cls(started + seconds, seconds)

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def passed(self) -> bool:
        return time.monotonic() >= self.at


class HeavyGate:
    """At most `slots` heavy analyses at once in this process (see the module docstring)."""

    def __init__(self, slots: int = HEAVY_SLOTS) -> None:
        self._slots = threading.BoundedSemaphore(slots)

    def acquire(self, deadline: Deadline) -> bool:
        """A slot if one is free now and the deadline has not passed (never waits)."""
        return not deadline.passed() and self._slots.acquire(blocking=False)

    def release(self) -> None:
        self._slots.release()
