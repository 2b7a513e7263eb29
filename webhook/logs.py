"""JSON lines on stderr: one object per event, the shape log pipelines expect from Kubernetes.

Keys follow the Kubernetes JSON logging convention (`ts` as Unix seconds, `msg`, `err`) plus
`level`, `logger` and `pid` (which gunicorn worker spoke). Per-request fields (uid, decision,
rule ids, dry_run, duration_s) are passed as `extra={"fields": {...}}`.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

LOGGER_NAME = "dra_affinity.webhook"


_ENCODER = json.JSONEncoder(default=str, separators=(",", ":"))
"""Built once: `json.dumps` with options builds an encoder per call, a large share of a line's cost."""


def _line(created: float, level: int, logger: str, pid: int | None, message: str,
          fields: object, err: str | None = None) -> str:
    out: dict[str, Any] = {
        "ts": round(created, 6),
        "level": logging.getLevelName(level).lower(),
        "logger": logger,
        "pid": pid,
        "msg": message,
    }
    if isinstance(fields, dict):
        out.update(fields)
    if err:
        out["err"] = err
    return _ENCODER.encode(out)


_RESERVED = frozenset({"ts", "level", "logger", "pid", "msg", "err"})
"""Keys of every line; an event field of the same name replaces it (see `_line`)."""


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        err = self.formatException(record.exc_info) if record.exc_info else None
        return _line(record.created, record.levelno, record.name, record.process, record.getMessage(),
                     getattr(record, "fields", None), err)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is *now* (test runners swap it; gunicorn does not)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)

    def write_events(self, level: int, logger: str, message: str,
                     events: Sequence[tuple[float, dict[str, Any]]]) -> None:
        """What `emit` writes for such records, one per (created, fields), in one write."""
        pid = os.getpid()
        # The keys every line shares are encoded once; each line adds its time and fields.
        shared = _ENCODER.encode({"level": logging.getLevelName(level).lower(), "logger": logger,
                                  "pid": pid, "msg": message})[1:-1]
        lines = []
        for created, fields in events:
            if _RESERVED.isdisjoint(fields):
                own = _ENCODER.encode(fields)
                lines.append(f'{{"ts":{round(created, 6)!r},{shared}{"," if len(own) > 2 else ""}'
                             f"{own[1:]}{self.terminator}")
            else:
                lines.append(_line(created, level, logger, pid, message, fields) + self.terminator)
        text = "".join(lines)
        with self.lock:  # type: ignore[union-attr]  # created by Handler.__init__
            stream = self.stream = sys.stderr
            try:
                stream.write(text)
                stream.flush()
            except Exception:  # as logging does: a broken stream never fails the caller
                self.handleError(logging.makeLogRecord({"msg": message, "levelno": level}))


def events(logger: logging.Logger, level: int, message: str,
           events: Sequence[tuple[float, dict[str, Any]]]) -> None:
    """Log several events of one kind, each `(created, fields)`: the lines
    `logger.log(level, message, extra={"fields": fields})` would have written at `created`.

    Why not just that call: these are the per-request lines, written in batches by
    `dra_affinity.webhook.events`. When the logger is set up as `configure` leaves it (our one JSON
    handler, no filters) the batch is encoded and written at once, without a caller lookup
    (a stack walk per line) or a LogRecord per line; any other set-up (a test's or an
    operator's handlers) gets one standard record per event, dated `created`."""
    if not events or not logger.isEnabledFor(level):
        return
    handlers = logger.handlers
    if (len(handlers) == 1 and isinstance(handlers[0], _StderrHandler) and not logger.filters
            and not handlers[0].filters and level >= handlers[0].level):
        handlers[0].write_events(level, logger.name, message, events)
        return
    for created, fields in events:
        record = logger.makeRecord(logger.name, level, "", 0, message, (), None, extra={"fields": fields})
        record.created = created
        logger.handle(record)


def configure(level: str = "INFO") -> logging.Logger:
    """The webhook's logger, writing JSON to stderr. Idempotent (create_app may run twice)."""
    logger = logging.getLogger(LOGGER_NAME)
    if not any(getattr(h, "_dra_affinity", False) for h in logger.handlers):
        handler = _StderrHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        handler._dra_affinity = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(level if level in logging.getLevelNamesMapping() else "INFO")
    logger.propagate = False
    return logger


def use_json_for_gunicorn(server_log: Any) -> None:
    """Give gunicorn's own error log (worker boot, exit, timeout) the JSON format too: one log
    format per pod. Done by swapping formatters, not with `logconfig_dict`, which would also
    switch on gunicorn's access log and its per-request formatting cost."""
    error_log = getattr(server_log, "error_log", None)
    for handler in getattr(error_log, "handlers", ()):
        handler.setFormatter(JsonFormatter())
