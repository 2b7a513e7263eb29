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
wrong thing. The variable is read at each question: a test or a child process sets it and the
next call follows it (a spec's parse is kept in a registered cache, by its text). A layer asked
per item of a large run (per extraction, per result written) is asked once per run instead, so
a non-default spec costs what the default does and figures measured with it are fair.

Modules are imported on use (a command imports only what it runs), so a layer a spec names may
not be declared yet when a layer is asked: asking ignores names it does not know, and the front
end checks the whole spec once at start (`active_layers`), after importing every module that
declares a layer — the front end knows those modules; this one, at the bottom, names none.
`docs/speed-layers.md` lists every layer with its reason and figures; a test checks it against
`LAYERS` and runs the commands end to end with every layer on, with none, and with each one off.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from .cache import BoundedCache

ENV = "DRA_AFFINITY_SPEED_LAYERS"

@dataclass(frozen=True, slots=True)
class SpeedLayer:
    """One named optimisation: what it speeds up and why it is safe to switch off."""

    name: str
    why: str
    module: str = ""
    """The module that declared it."""

    @property
    def on(self) -> bool:
        """Whether this layer is in effect for the current process environment."""
        spec = os.environ.get(ENV)
        if not spec or spec == "all":  # the default, asked on hot paths: no parsing
            return True
        if spec == "none":
            return False
        return self.name in _selected(spec)


LAYERS: dict[str, SpeedLayer] = {}
"""Every declared layer by name. Filled at import time by `declare` only, never changed after:
the list of layers is part of the program, not of its state."""


def declare(name: str, why: str) -> SpeedLayer:
    """Declare a layer (once per name, at module import) and return its handle."""
    if name in LAYERS:
        raise ValueError(f"speed layer {name!r} is declared twice")
    layer = SpeedLayer(name, why, sys._getframe(1).f_globals.get("__name__", ""))
    LAYERS[name] = layer
    return layer


class LayerSpecError(ValueError):
    """`DRA_AFFINITY_SPEED_LAYERS` names a layer that does not exist."""


def parse_spec(spec: str, known: frozenset[str], *, strict: bool = True) -> frozenset[str]:
    """The layers `spec` leaves on, out of `known` (see the module doc for the syntax).

    `strict`: a name outside `known` is an error; otherwise it is left for a layer declared
    later (asked again then: the cache key counts the declared layers)."""
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
    if unknown and strict:
        raise LayerSpecError(f"{ENV}: unknown speed layer(s) {', '.join(unknown)}; "
                             f"known: {', '.join(sorted(known)) or '(none)'}")
    if negative:
        return known - frozenset(negative)
    return frozenset(positive) & known


_SPECS: BoundedCache[tuple[str, int], frozenset[str]] = BoundedCache("core.layers.specs", 64, lru=False)
"""A spec's layers by (its text, how many layers were declared then): `LAYERS` only grows."""


def _selected(spec: str) -> frozenset[str]:
    key = (spec, len(LAYERS))
    found = _SPECS.get(key)
    if found is None:
        found = parse_spec(spec, frozenset(LAYERS), strict=False)
        _SPECS.put((spec, len(LAYERS)), found)
    return found


def active_layers() -> frozenset[str]:
    """Names of the layers in effect now, out of those declared so far; a name no declared
    layer has is a `LayerSpecError` (import the declaring modules first)."""
    return parse_spec(os.environ.get(ENV, ""), frozenset(LAYERS))
