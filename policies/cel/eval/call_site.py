"""The seam between the cost walk and the engine: a call site and what runs it.

The cost walk (`runtime_cost`, `runtime_steps`) decides what to call; a bridge (`runtime`, over
cel-expr-python) runs it. Both sides import this module and nothing of each other's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

ResultKind = Literal["plain", "optional", "opaque", "any"]


@dataclass(frozen=True, slots=True)
class CallSite:
    """What a bridge needs to run one call: names, candidates, shape and result kind.

    `result_kind` comes from the call's checked type: `plain` results (JSON-like, no `dyn`)
    decode fast, `optional` ones need unwrapping, `opaque` ones (extension types such as
    `kubernetes.Quantity`, named by `type_name`) are kept as `Opaque` values.
    """

    function: str
    overload_ids: tuple[str, ...]
    member: bool
    arity: int
    result_kind: ResultKind
    type_name: str = ""


class PreparedCall(Protocol):
    """One call site made ready to run (compiled once, called per evaluation)."""

    def call(self, args: Sequence[object]) -> object:
        """Result of the call, or a `CelError` value; never raises for CEL errors."""
        ...


class CallBridge(Protocol):
    """Runs CEL functions on interpreter values (cel-expr-python in production)."""

    def prepare(self, site: CallSite) -> PreparedCall:
        """A runner for this call site; cheap to call repeatedly."""
        ...
