"""What a rule is: a stable id and its docs (for `rules`, SARIF, the webhook), in one shape per scope.

Rules are yamllint-style: one module per rule, exporting `RULE`. There are three scopes, and
each has one shape with exactly one way to build a finding:

* `InputRule` (here): input the tool could not use — unreadable files, structural errors,
  suppressions, selectors. The model and the scheduler model, below this package, report these
  as findings of a `policies.core.problems` kind; each input rule (`policies/rules/input/`)
  documents one kind under its id and severity. Front ends use `InputRule.finding(message,
  locations)`, which builds the same finding.
* `SliceRule` and `PoolRule` (`policies.rules.context`, beside the context they read): a
  `check` generator over a `SliceContext` (one slice, and the old one on UPDATE) or a
  `PoolContext` (one pool), yielding findings built with `RULE.finding(ctx, ...)`. A check never
  raises for bad input (the structural check ran before) and never formats locations itself.

Every other module takes a rule id from its rule object (`from ...input.sa000_input_error import
RULE as INPUT_ERROR`, then `INPUT_ERROR.id`) or, below `policies.rules`, from its problem kind
(`policies.core.problems.INPUT_ERROR.id`), never as a retyped string; tests/policies/rules/
test_rule_ids.py enforces it.

Examples (`bad_example`, `good_example`) run as tests (tests/policies/rules/test_examples.py,
through the installed `dra-affinity`): the bad one must raise its rule, the good one must not
raise it — ruff's per-code fixtures. Each is YAML a user could write, and `dra-affinity rules ID`
shows it as is. `example_document` turns it into what the test runs:

* a full YAML stream when it starts with `apiVersion:` (one or more documents);
* otherwise a fragment of a ResourceSlice's `spec`, wrapped in a fixed slice: `driver:
  nic.example.com`, `pool: {name: pool-a, generation: 1, resourceSliceCount: <slices>}` and
  `allNodes: true` are filled in for whichever of those keys the fragment does not set. Several
  fragments separated by `---` become that many slices of the one pool (`example-0`, …): how
  pool rules and SA109's fix show two slices;
* `<N × c>` stands for N copies of the character c (SA105's 10 KiB expression), so the
  example stays readable;
* an `InputRule` whose finding needs other objects names them in `example_setting`:
  `"device-class"` (SA003) means the fragment is a DeviceClass `spec`, dry-run with one claim
  requesting that class and a pool of two slices: one declaring sharing affinity, one with the
  device `eth0`, whose only attribute is `vendor`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..core.api import RESOURCE_GROUP
from ..core.findings import Finding, Location, PoolRef, Severity
from ..core.problems import ProblemKind


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
        return ProblemKind(self.id, self.severity).finding(message, locations, pool=pool)


EXAMPLE_DRIVER = "nic.example.com"
EXAMPLE_POOL = "pool-a"
DEVICE_CLASS_SETTING = "device-class"
_NODE_KEYS = frozenset({"allNodes", "nodeName", "nodeSelector", "perDeviceNodeSelection"})
_TOP_KEY = re.compile(r"^([A-Za-z]+):", re.MULTILINE)
_PADDING = re.compile(r"<(\d+) × (.)>")


def _indented(text: str, by: str = "  ") -> str:
    return "".join(f"{by}{line}\n" if line else "\n" for line in text.splitlines())


def _slice(name: str, spec: str) -> str:
    return (
        f"apiVersion: {RESOURCE_GROUP}/v1\nkind: ResourceSlice\nmetadata:\n  name: {name}\nspec:\n"
        + _indented(spec)
    )


def example_document(example: str, setting: str = "", driver: str = EXAMPLE_DRIVER) -> str:
    """The YAML stream an example stands for (see the module docstring for the template).

    `driver` replaces the template's driver, so that a test can lint many examples at once
    without their pools merging.
    """
    example = _PADDING.sub(lambda m: m.group(2) * int(m.group(1)), example)
    if example.startswith("apiVersion:"):
        return example
    if setting == DEVICE_CLASS_SETTING:
        pool = f"{{name: {EXAMPLE_POOL}, generation: 1, resourceSliceCount: 2}}"
        return "---\n".join([
            f"apiVersion: {RESOURCE_GROUP}/v1\nkind: DeviceClass\nmetadata:\n  name: example\nspec:\n"
            + _indented(example),
            f"apiVersion: {RESOURCE_GROUP}/v1\nkind: ResourceClaim\n"
            "metadata:\n  name: example\n  namespace: default\nspec:\n  devices:\n    requests:\n"
            "    - name: nic\n      exactly:\n        deviceClassName: example\n",
            _slice("example-0", f"driver: {driver}\npool: {pool}\nallNodes: true\nsharingAffinity:\n"
                   "- name: subnet\n  expression: 'object.?subnetID.orValue(\"\")'"),
            _slice("example-1", f"driver: {driver}\npool: {pool}\nallNodes: true\ndevices:\n- name: eth0\n"
                   "  allowMultipleAllocations: true\n  attributes:\n    vendor: {string: acme}"),
        ])
    fragments = example.split("\n---\n")
    defaults = (
        ("driver", f"driver: {driver}"),
        ("pool", f"pool:\n  name: {EXAMPLE_POOL}\n  generation: 1\n  resourceSliceCount: {len(fragments)}"),
        ("allNodes", "allNodes: true"),
    )
    documents = []
    for index, fragment in enumerate(fragments):
        keys = set(_TOP_KEY.findall(fragment))
        filled = [
            text for key, text in defaults
            if key not in keys and not (key == "allNodes" and keys & _NODE_KEYS)
        ]
        documents.append(_slice(f"example-{index}", "\n".join([*filled, fragment])))
    return "---\n".join(documents)
