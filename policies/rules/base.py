"""What a rule is: a stable id and its docs (for `rules`, SARIF, the webhook), in one shape per scope.

Rules are yamllint-style: one module per rule, exporting `RULE`. There are three scopes, and
each has one shape with exactly one way to build a finding:

* `InputRule` (here): input the tool could not use — unreadable files, structural errors,
  suppressions, selectors. Loaders, the model and dry-run report these, so the shape and the
  input rules (`policies/rules/input/`) sit just above `policies.core`, below every stage that
  reports them; `InputRule.finding(message, locations)`.
* `SliceRule` and `PoolRule` (`policies.rules.context`, beside the context they read): a
  `check` generator over a `SliceContext` (one slice, and the old one on UPDATE) or a
  `PoolContext` (one pool), yielding findings built with `RULE.finding(ctx, ...)`. A check never
  raises for bad input (the structural check ran before) and never formats locations itself.

Every other module takes a rule id from its rule object (`from ...input.sa000_input_error import
RULE as INPUT_ERROR`, then `INPUT_ERROR.id`), never as a retyped string; tests/policies/rules/
test_rule_ids.py enforces it.

Examples (`bad_example`, `good_example`) run as tests (tests/policies/rules/test_examples.py):
the bad one must raise exactly its rule, the good one must not raise it. Each is YAML a user
could write, shown by `dra-affinity rules ID` as is:

* a full YAML stream when it starts with `apiVersion:` (one or more documents, `---` between);
* otherwise a fragment of a ResourceSlice's `spec`, which the test wraps in a fixed slice
  (`example_document`): `driver: nic.example.com`, `pool: {name: pool-a, generation: 1,
  resourceSliceCount: 1}` and `allNodes: true` are filled in for whichever of those keys the
  fragment does not set itself. Several fragments separated by `---` become several slices of
  the same pool (named `example-0`, `example-1`, …), which is how pool rules show two slices.
  An input rule whose finding needs other objects says which in its `example_setting`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from dra_affinity.policies.core.api import RESOURCE_GROUP
from dra_affinity.policies.core.findings import Finding, Location, PoolRef, Severity


class Scope(enum.Enum):
    INPUT = "input"
    SLICE = "slice"
    POOL = "pool"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """Everything a user or a reporter needs to know about one rule id (every scope)."""

    scope: ClassVar[Scope]
    id: str
    slug: str
    severity: Severity
    summary: str
    description: str
    bad_example: str = ""
    good_example: str = ""
    upstream: str = ""
    """Where the API server or scheduler enforces the same thing, if anywhere."""

    @property
    def implemented(self) -> bool:
        """Always true: every shape carries its check (kept for `rules --format json`)."""
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class InputRule(Rule):
    """A rule about input the tool could not use; reported where the input is read."""

    scope: ClassVar[Scope] = Scope.INPUT
    example_setting: str = ""
    """What `tests/policies/rules/test_examples.py` runs the examples through, when a lint of
    the example alone cannot raise the rule (SA003 needs a claim to select devices)."""

    def finding(
        self, message: str, locations: Location | Sequence[Location], *, pool: PoolRef | None = None
    ) -> Finding:
        """The finding, at the rule's severity; the first location is the primary one."""
        where = (locations,) if isinstance(locations, Location) else tuple(locations)
        return Finding(rule=self.id, severity=self.severity, message=message, locations=where, pool=pool)


EXAMPLE_DRIVER = "nic.example.com"
EXAMPLE_POOL = "pool-a"
_EXAMPLE_DEFAULTS = (
    ("driver", f"driver: {EXAMPLE_DRIVER}"),
    ("pool", f"pool:\n  name: {EXAMPLE_POOL}\n  generation: 1\n  resourceSliceCount: 1"),
    ("allNodes", "allNodes: true"),
)
_NODE_KEYS = frozenset({"allNodes", "nodeName", "nodeSelector", "perDeviceNodeSelection"})
_TOP_KEY = re.compile(r"^([A-Za-z]+):", re.MULTILINE)


def example_document(example: str) -> str:
    """The YAML stream an example stands for (see the module docstring for the template)."""
    if example.startswith("apiVersion:"):
        return example
    documents = []
    for index, fragment in enumerate(example.split("\n---\n")):
        keys = set(_TOP_KEY.findall(fragment))
        filled = [
            text for key, text in _EXAMPLE_DEFAULTS
            if key not in keys and not (key == "allNodes" and keys & _NODE_KEYS)
        ]
        spec = "\n".join([*filled, fragment])
        documents.append(
            f"apiVersion: {RESOURCE_GROUP}/v1\nkind: ResourceSlice\n"
            f"metadata:\n  name: example-{index}\nspec:\n"
            + "".join(f"  {line}\n" if line else "\n" for line in spec.splitlines())
        )
    return "---\n".join(documents)
