"""JSON lines on stderr: one object per event, the shape log pipelines expect from Kubernetes.

Keys follow the Kubernetes JSON logging convention (`ts` as Unix seconds, `msg`, `err`) plus
`level`, `logger` and `pid` (which gunicorn worker spoke). Per-request fields (uid, decision,
rule ids, dry_run, duration_s) are passed as `extra={"fields": {...}}`.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

LOGGER_NAME = "dra_affinity.webhook"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": round(record.created, 6),
            "level": record.levelname.lower(),
            "logger": record.name,
            "pid": record.process,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        if record.exc_info:
            out["err"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, separators=(",", ":"))


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is *now* (test runners swap it; gunicorn does not)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


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
