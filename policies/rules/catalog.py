"""The rule registry: every rule id of every scope, once, with its docs and its check.

Rules are discovered from the modules under `dra_affinity.policies.rules.{input,slice,pool}`
(a module exports `RULE`, or `RULES` for a documented family), so adding a rule is adding a
module. `slice_rules()`, `pool_rules()` and `input_rules()` are the engine's and the reporters'
only notion of which rules exist and in which order.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import cache

from .base import InputRule, Rule
from .context import PoolRule, SliceRule

_SCOPES = ("input", "slice", "pool")


class UnknownRuleError(KeyError):
    """A rule id that no module declares."""


@cache
def catalog() -> Mapping[str, Rule]:
    """All rules, ordered by id. Cached: the registry is immutable once imported."""
    rules: dict[str, Rule] = {}
    for scope in _SCOPES:
        package_name = f"dra_affinity.policies.rules.{scope}"
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package_name}.{info.name}")
            found = list(getattr(module, "RULES", ()))
            if hasattr(module, "RULE"):
                found.append(module.RULE)
            for rule in found:
                if not isinstance(rule, (InputRule, SliceRule, PoolRule)) or rule.scope.value != scope:
                    raise RuntimeError(f"{module.__name__}: {rule!r} is not a {scope} rule")
                if rule.id in rules:
                    raise RuntimeError(f"rule {rule.id} is declared twice")
                rules[rule.id] = rule
    return dict(sorted(rules.items()))


def get_rule(rule_id: str) -> Rule:
    try:
        return catalog()[rule_id.upper()]
    except KeyError:
        raise UnknownRuleError(rule_id) from None


def slice_rules() -> tuple[SliceRule, ...]:
    """Slice rules in id order: the engine's only notion of slice-rule order."""
    return tuple(r for r in catalog().values() if isinstance(r, SliceRule))


def pool_rules() -> tuple[PoolRule, ...]:
    """Pool rules in id order."""
    return tuple(r for r in catalog().values() if isinstance(r, PoolRule))


def input_rules() -> tuple[InputRule, ...]:
    """Input rules in id order (reported by loaders, the model, suppressions and dry-run)."""
    return tuple(r for r in catalog().values() if isinstance(r, InputRule))
