"""Findings are values: a rule id, a severity, a message and the places it points at.

Every door (CLI, webhook) renders the same `Finding`; nothing here knows how.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .source import FieldPath, Position, Source, render_path


class Severity(enum.IntEnum):
    """Ordered so that `>=` answers "does this reach --fail-on?"."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        return cls[text.upper()]


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The object a finding is about, as `kubectl` would name it."""

    kind: str
    name: str | None = None
    namespace: str | None = None


@dataclass(frozen=True, slots=True, order=True)
class PoolRef:
    """A pool's identity: `(spec.driver, spec.pool.name)`."""

    driver: str
    name: str


@dataclass(frozen=True, slots=True)
class Location:
    """One place a finding points at: a field of one object in one file."""

    field: FieldPath = ()
    file: str | None = None
    position: Position | None = None
    object: ObjectRef | None = None
    inner: Position | None = None
    """A line:column inside the field's string value (a CEL expression), when the problem
    is at a precise place in it; front ends that know the file text map it to the file."""
    value: Position | None = None
    """Where the field's value starts (with `inner`, what a front end maps from)."""

    @property
    def field_path(self) -> str:
        return render_path(self.field)

    @classmethod
    def at(cls, source: Source | None, path: FieldPath, obj: ObjectRef | None = None) -> Location:
        """Resolve `path` against the object's source (None for objects with no file)."""
        if source is None:
            return cls(field=path, object=obj)
        return cls(field=path, file=source.file, position=source.locate(path), object=obj)


@dataclass(frozen=True, slots=True)
class Finding:
    """A rule's verdict on one place (or several, for pool rules)."""

    rule: str
    severity: Severity
    message: str
    locations: tuple[Location, ...] = ()
    pool: PoolRef | None = None
    extra: tuple[tuple[str, object], ...] = field(default=())

    @property
    def primary(self) -> Location:
        return self.locations[0] if self.locations else Location()
