"""The `gc-pause` speed layer: the cyclic collector paused over bulk phases.

Parsing a large file, reconstructing a cluster's locks and replaying a workload allocate
objects that reference counting frees on its own; the generational collector would rescan the
growing set of survivors again and again. The rare cycle waits for the next collection after
the phase. With the layer off the block runs with the collector as the process set it (the
plain path: what a program that never thinks about the collector does); docs/speed-layers.md
gives the figures.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from . import layers

GC_PAUSE = layers.declare(
    "gc-pause",
    "bulk phases (parsing, modelling, reconstructing locks, replaying) build millions of acyclic "
    "objects the generational collector would rescan again and again; paused, and what lives as "
    "long as the command frozen out of its reach")


@contextlib.contextmanager
def gc_paused(*, freeze: bool = False) -> Iterator[None]:
    """Pause the cyclic GC for the block; restore whatever state it had before.

    `freeze`: what the block built lives as long as the process (a command's model of a whole
    cluster), so on exit it is moved out of the collector's reach (`gc.freeze`) — otherwise the
    first collections after the block walk all of it. Its cycles, if any, are never collected:
    only for input that is kept anyway.
    """
    if not GC_PAUSE.on:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if enabled:
            gc.enable()
