"""One context manager for the bulk phases that build millions of acyclic objects.

Parsing a large file, reconstructing a cluster's locks and replaying a workload allocate
objects that reference counting frees on its own; the generational collector would rescan the
growing set of survivors again and again (measured at 2–3× a parse). The rare cycle waits for
the next collection after the phase.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC for the block; restore whatever state it had before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
