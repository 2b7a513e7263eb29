"""Where an object came from, so every finding can point at a file, line and column.

The loader (or the webhook) builds one `Source` per document. Rules never look at
positions themselves: they name a field path and the `Source` resolves it, falling
back to the nearest ancestor that has a position (a missing field is reported at
its parent mapping).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

FieldPath = tuple[str | int, ...]
"""A path into a decoded document: mapping keys are `str`, list indexes are `int`."""


@dataclass(frozen=True, slots=True)
class Position:
    """A 1-based line and column, as editors and SARIF count them."""

    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Source:
    """A document's origin: file name, document index and a position per field path.

    `positions` maps a field path to the position of the node holding its value;
    `key_positions` (optional) to the position of the mapping key, which is where a
    human looks for "this field".
    """

    file: str | None = None
    document: int = 0
    positions: Mapping[FieldPath, Position] = field(default_factory=dict)
    key_positions: Mapping[FieldPath, Position] = field(default_factory=dict)

    def locate(self, path: FieldPath) -> Position | None:
        """The position of `path`, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            prefix = path[:end]
            pos = self.key_positions.get(prefix) or self.positions.get(prefix)
            if pos is not None:
                return pos
        return None

    def child(self, prefix: FieldPath) -> Source:
        """A view re-rooted at `prefix`, for embedded objects (a List's items)."""
        n = len(prefix)
        return Source(
            file=self.file,
            document=self.document,
            positions={p[n:]: v for p, v in self.positions.items() if p[:n] == prefix},
            key_positions={p[n:]: v for p, v in self.key_positions.items() if p[:n] == prefix},
        )


def render_path(path: FieldPath) -> str:
    """Kubernetes field-path notation: `spec.sharingAffinity[2].expression`."""
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif out:
            out.append(f".{part}")
        else:
            out.append(part)
    return "".join(out)
