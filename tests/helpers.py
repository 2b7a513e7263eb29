"""Builders for test objects, so each test states only what it is about."""

from __future__ import annotations

import copy
from typing import Any

from dra_affinity.policies.model.resources import ResourceSlice, parse


def slice_doc(
    entries: list[dict[str, Any]] | None = None,
    *,
    devices: list[dict[str, Any]] | None = None,
    name: str = "meta",
    driver: str = "networking.example.com",
    pool: str = "node-a",
    generation: int = 1,
    count: int = 1,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": driver,
        "nodeName": "node-a",
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
    }
    if entries is not None:
        spec["sharingAffinity"] = copy.deepcopy(entries)
    if devices is not None:
        spec["devices"] = copy.deepcopy(devices)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name}, "spec": spec}


CLEAN_EXPRESSION = 'object.?kind.orValue("") == "NICConfig" ? "%s".format([object.x]) : ""'
"""An extractor no rule or advisory objects to: schema-guarded, static string, can decline."""


def entry(name: str, expression: str = CLEAN_EXPRESSION) -> dict[str, Any]:
    return {"name": name, "expression": expression}


def model(doc: dict[str, Any]) -> ResourceSlice:
    result = parse(doc)
    assert isinstance(result.obj, ResourceSlice), result.findings
    return result.obj


def requires_layers(*names: str) -> Any:
    """Mark a test that checks what a speed layer itself does (a memo shared, a library left
    unimported): it has nothing to check when `DRA_AFFINITY_SPEED_LAYERS` turns that layer off,
    as the suite does when it runs the plain path."""
    import os

    import pytest
    from dra_affinity.policies.core import layers

    spec = os.environ.get(layers.ENV, "")
    off = sorted(n for n in names
                 if n not in layers.parse_spec(spec, frozenset(names) | frozenset(layers.LAYERS),
                                               strict=False))
    return pytest.mark.skipif(bool(off), reason=f"speed layer(s) {', '.join(off)} off "
                                                f"({layers.ENV}={spec})")
