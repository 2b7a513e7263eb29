"""The rule registry: every rule id, once, with its docs and (when implemented) its check.

Rules are discovered from the modules under `dra_affinity.policies.rules` (a module exports
`RULE`, or `RULES` for a documented family), so adding a rule is adding a module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache

from dra_affinity.policies.rules.base import Rule, Scope

_PACKAGES = tuple(f"dra_affinity.policies.rules.{scope}" for scope in ("input", "slice", "pool"))


class UnknownRuleError(KeyError):
    """A rule id that no module declares."""


@cache
def catalog() -> Mapping[str, Rule]:
    """All rules, ordered by id. Cached: the registry is immutable once imported."""
    rules: dict[str, Rule] = {}
    for package_name in _PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package_name}.{info.name}")
            found = list(getattr(module, "RULES", ()))
            if hasattr(module, "RULE"):
                found.append(module.RULE)
            for rule in found:
                if rule.id in rules:
                    raise RuntimeError(f"rule {rule.id} is declared twice")
                rules[rule.id] = rule
    return dict(sorted(rules.items()))


def get_rule(rule_id: str) -> Rule:
    try:
        return catalog()[rule_id.upper()]
    except KeyError:
        raise UnknownRuleError(rule_id) from None


def slice_rules() -> tuple[Rule, ...]:
    """Implemented slice rules in id order: the engine's only notion of rule order."""
    return tuple(r for r in catalog().values() if r.scope is Scope.SLICE and r.check is not None)
