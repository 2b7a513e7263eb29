"""Type values of the Kubernetes library types: `type(ip("1.2.3.4")) == net.IP`.

Why: library values travel as carriers (an IP is its string, a Semver a tagged list), so
cel-cpp's `type()` of an IP is `string`, and the identifiers `net.IP` and `net.CIDR` (declared
in the checking environment as `type(net.IP)`, `type(net.CIDR)`) have no value at run time.
Upstream's `type(ip(...))` is the type `net.IP`, equal to the identifier and to nothing else.

So a library type's value is carried too, as the tagged list `[TAG_TYPE, "<type name>"]`:
`equality.RuntimeEnv` renames each `type(x)` whose argument the checker typed as a library type
to the function of that type here (a name as long as `type`), which returns the carrier, and
`activation()` binds the declared type identifiers to the same carriers. Two type values are
then equal exactly when they name the same type, and never equal to a standard type.

Not covered: `type(x)` where `x` is typed `dyn` but holds a library value (the carrier's own
type, e.g. `string`, is returned, as cel-cpp alone answers).
"""

from __future__ import annotations

from typing import Any

from cel_expr_python import cel

from ._types import TAG_TYPE, LibrarySpec, Runtime

__all__ = [
    "LIBRARY_TYPES",
    "NAME",
    "RENAMES",
    "SPEC",
    "activation",
    "type_name_of",
    "type_value",
]

NAME = "kubernetes.type_values"

LIBRARY_TYPES: tuple[str, ...] = (
    "net.IP", "net.CIDR", "kubernetes.URL", "kubernetes.Quantity", "kubernetes.Semver",
    "kubernetes.NamedFormat",
)
"""The opaque types the Kubernetes libraries declare (and carry)."""

RENAMES: dict[str, str] = {name: f"@ty{i}" for i, name in enumerate(LIBRARY_TYPES)}
"""Library type -> the function standing in for `type` on it (as long as `type`)."""
assert all(len(new) == len("type") for new in RENAMES.values())

DECLARED_IDENTIFIERS: tuple[str, ...] = ("net.IP", "net.CIDR")
"""Library types with a type identifier in the environment (`Library.type_names`)."""


def type_value(type_name: str) -> list[str]:
    """The carrier of the type value `type_name`."""
    return [TAG_TYPE, type_name]


def type_name_of(value: object) -> str | None:
    """The type a carrier of `type_value` names, else None."""
    if type(value) is list and len(value) == 2 and type(value[0]) is str \
            and value[0] == TAG_TYPE and isinstance(value[1], str):
        return value[1]
    return None


def activation() -> dict[str, list[str]]:
    """Run-time values of the declared type identifiers (harmless where undeclared)."""
    return {name: type_value(name) for name in DECLARED_IDENTIFIERS}


def _type_of(type_name: str) -> Any:
    def impl(_value: Any) -> list[str]:
        return type_value(type_name)
    return impl


SPEC = LibrarySpec(
    NAME,
    (),
    tuple(Runtime(fn, f"k8s_type_of_{i}", (cel.Type.DYN,), cel.Type.LIST, _type_of(name))
          for i, (name, fn) in enumerate(RENAMES.items())),
)
