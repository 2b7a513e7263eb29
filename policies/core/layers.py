"""Speed layers: every optimisation that is not the domain logic, named and switchable.

The code a reader meets first is the plain path, the KEP's and the scheduler's logic as they
word it. Whatever exists only to go faster or use less memory (a memo, a shared plan, a fast
reader, a hand-written renderer, pausing the garbage collector) is one *layer*: declared here
once with a name and the reason it exists, consulted where it applies, and switched off by one
environment variable. With every layer off, each command must produce the same bytes; the test
suite runs the end-to-end tests both ways and compares them (cel-go keeps its optimisations
named and opt-in in the same spirit).

`DRA_AFFINITY_SPEED_LAYERS` selects the layers in effect:

* unset, empty or `all`: every layer on (the default);
* `none`: every layer off — the plain path;
* `-name,-other`: every layer except those;
* `name,other`: only those.

An unknown name is an error naming the known ones, so a typo never silently measures the
wrong thing. The variable is read at each question, never cached: a test or a child process
sets it and the next call follows it, and there is no module state to reset.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ENV = "DRA_AFFINITY_SPEED_LAYERS"


@dataclass(frozen=True, slots=True)
class SpeedLayer:
    """One named optimisation: what it speeds up and why it is safe to switch off."""

    name: str
    why: str

    @property
    def on(self) -> bool:
        """Whether this layer is in effect for the current process environment."""
        spec = os.environ.get(ENV)
        if not spec or spec == "all":  # the default, asked on hot paths: no parsing
            return True
        return self.name in parse_spec(spec, frozenset(LAYERS))


LAYERS: dict[str, SpeedLayer] = {}
"""Every declared layer by name. Filled at import time by `declare` only, never changed after:
the list of layers is part of the program, not of its state."""


def declare(name: str, why: str) -> SpeedLayer:
    """Declare a layer (once per name, at module import) and return its handle."""
    if name in LAYERS:
        raise ValueError(f"speed layer {name!r} is declared twice")
    layer = SpeedLayer(name, why)
    LAYERS[name] = layer
    return layer


class LayerSpecError(ValueError):
    """`DRA_AFFINITY_SPEED_LAYERS` names a layer that does not exist."""


def parse_spec(spec: str, known: frozenset[str]) -> frozenset[str]:
    """The layers `spec` leaves on, out of `known` (see the module doc for the syntax)."""
    spec = spec.strip()
    if spec in ("", "all"):
        return known
    if spec == "none":
        return frozenset()
    words = [w.strip() for w in spec.split(",") if w.strip()]
    negative = [w[1:] for w in words if w.startswith("-")]
    positive = [w for w in words if not w.startswith("-")]
    if negative and positive:
        raise LayerSpecError(f"{ENV}: mix of 'name' and '-name' in {spec!r}; use one form")
    unknown = sorted(set(negative or positive) - known)
    if unknown:
        raise LayerSpecError(f"{ENV}: unknown speed layer(s) {', '.join(unknown)}; "
                             f"known: {', '.join(sorted(known)) or '(none)'}")
    if negative:
        return known - frozenset(negative)
    return frozenset(positive)


def active_layers() -> frozenset[str]:
    """Names of the layers in effect now."""
    return parse_spec(os.environ.get(ENV, ""), frozenset(LAYERS))
