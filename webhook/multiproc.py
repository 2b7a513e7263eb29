"""The prometheus_client multiprocess directory, managed from the gunicorn master.

Kept apart from `dra_affinity.webhook.metrics` on purpose: prometheus_client picks its value storage when
it is first *imported*, reading `PROMETHEUS_MULTIPROC_DIR` then. The master must set that
variable before any worker imports it, so nothing here imports prometheus_client at module
level.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> str | None:
    path = os.environ.get(MULTIPROC_ENV)
    return path if path and os.path.isdir(path) else None


def prepare() -> tuple[str, bool]:
    """Use `$PROMETHEUS_MULTIPROC_DIR` (or a new private directory), emptied of stale samples.

    Returns the directory and whether it was created here (then `cleanup` removes it on exit);
    the environment variable is set so forked workers inherit it.
    """
    given = os.environ.get(MULTIPROC_ENV)
    path = given or tempfile.mkdtemp(prefix="dra-affinity-metrics-")
    os.makedirs(path, exist_ok=True)
    for entry in os.scandir(path):
        if entry.is_file() and entry.name.endswith(".db"):
            os.unlink(entry.path)
    os.environ[MULTIPROC_ENV] = path
    return path, not given


def cleanup(path: str) -> None:
    """Remove a directory `prepare` created (only its sample files, then the directory)."""
    for entry in os.scandir(path):
        if entry.is_file() and entry.name.endswith(".db"):
            os.unlink(entry.path)
    with contextlib.suppress(OSError):  # someone put something else there: leave it
        os.rmdir(path)


def mark_worker_dead(pid: int) -> None:
    """gunicorn's `child_exit` hook: retire a dead worker's live-gauge samples."""
    if multiprocess_dir() is None:
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid)
