"""`IdentityEnum`: an `enum.Enum` whose members hash by identity, in C.

Why: `enum.Enum.__hash__` is a Python function (`hash(self._name_)`), so every dict or set
lookup keyed by a member runs Python code. The CEL cost estimator and the AST walks look up
type and node kinds tens of thousands of times per large expression, so `Enum.__hash__`
shows in the estimator's profile. Members are singletons compared by identity (Enum
defines no `__eq__`), so identity hashing is consistent with equality; hash values are not
stable across processes, which nothing relies on (pickled dicts are rebuilt on load).
"""

from __future__ import annotations

import enum


class IdentityEnum(enum.Enum):
    """Base for enums used as hot dict/set keys."""

    __hash__ = object.__hash__
