"""DRA's own `includes` (`k8s.io/dynamic-resource-allocation/cel`, KEP-5491).

Why separate from `lists`: Kubernetes 1.36's device-selector compiler declares `includes` itself
(overload `dra_includes_dyn_dyn`), before the base environment's lists library had one, and its
implementation refuses lists longer than `ResourceSliceMaxAttributeValuesPerDevice` (48) so that
an evaluation stays bounded. From 1.37 the base environment's lists library (version 1) provides
`includes` (`list_includes_dyn_dyn`, no length check) and DRA registers that one instead.

`<target>.includes(<arg>)`: for a list, whether an element equals `arg`; for anything else,
whether the target itself equals `arg` (a scalar attribute "includes" its own value).
"""

from __future__ import annotations

from typing import Any

from cel_expr_python import cel

from . import lists
from ._types import (
    BOOL,
    DYN,
    TAG_SEMVER,
    CelError,
    Decl,
    LibrarySpec,
    Runtime,
    cel_equal,
)

NAME = "dra.includes"
DRA_INCLUDES_ID = "dra_includes_dyn_dyn"
LIST_INCLUDES_ID = "list_includes_dyn_dyn"
MAX_INCLUDES_VALUES = 48
"""`resourceapi.ResourceSliceMaxAttributeValuesPerDevice`."""


_LISTS_V1_INCLUDES = next(r for r in lists.spec(1).runtimes if r.function == "includes")
_CARRIER_MARK = TAG_SEMVER[0]
"""Library values (a Semver, an optional) reach Python as lists tagged by a private-use mark."""


def _list_includes(target: Any, item: Any) -> bool:
    """The lists library's `includes`, with a library value taken as the scalar it is."""
    if type(target) is list and target and type(target[0]) is str \
            and target[0].startswith(_CARRIER_MARK):
        return cel_equal(target, item)
    return bool(_LISTS_V1_INCLUDES.impl(target, item))


def _dra_includes(target: Any, item: Any) -> bool:
    if type(target) is list and len(target) > MAX_INCLUDES_VALUES:
        # upstream iterates and stops at the 49th element unless an earlier one matched
        if _list_includes(target[:MAX_INCLUDES_VALUES], item):
            return True
        raise CelError("'includes' function cannot be applied to lists longer than "
                       f"{MAX_INCLUDES_VALUES} values")
    return _list_includes(target, item)


def spec(overload_id: str) -> LibrarySpec:
    """`includes` under `overload_id` (`dra_includes_dyn_dyn` or `list_includes_dyn_dyn`)."""
    if overload_id == LIST_INCLUDES_ID:
        return LibrarySpec(NAME, (Decl("includes", overload_id, (DYN,), BOOL, DYN),),
                           (Runtime("includes", overload_id, (cel.Type.DYN, cel.Type.DYN),
                                    cel.Type.BOOL, _list_includes, True),))
    return LibrarySpec(
        NAME,
        (Decl("includes", overload_id, (DYN,), BOOL, DYN),),
        (Runtime("includes", overload_id, (cel.Type.DYN, cel.Type.DYN), cel.Type.BOOL,
                 _dra_includes, True),),
    )
