"""Writes `policies/model/fields.json`, the field names of every kind the tool reads.

Taken from the `kubernetes` Python client's models (generated from the API server's OpenAPI
for the release it is pinned to), plus the KEP's `spec.sharingAffinity`, which no release has
yet. `test_fields.py` fails when the checked-in file differs from what this writes, so a client
upgrade shows up as a diff to commit:

    .venv/bin/python -m tests.policies.model.known_fields
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import kubernetes.client

TARGET = Path(__file__).resolve().parents[3] / "policies" / "model" / "fields.json"

ROOTS = {
    "ResourceSlice": {"v1": "V1ResourceSlice", "v1beta2": "V1beta2ResourceSlice"},
    "DeviceClass": {"v1": "V1DeviceClass", "v1beta2": "V1beta2DeviceClass"},
    "ResourceClaim": {"v1": "ResourceV1ResourceClaim"},
    "ResourceClaimTemplate": {"v1": "V1ResourceClaimTemplate"},
}

SHARING_AFFINITY = "SharingAffinityExtractor"
"""KEP-5981's entry type: `{name, expression}` (not in any client release yet)."""
_EXTRA_FIELDS = {
    "V1ResourceSliceSpec": {"sharingAffinity": f"List[{SHARING_AFFINITY}]"},
    "V1beta2ResourceSliceSpec": {"sharingAffinity": f"List[{SHARING_AFFINITY}]"},
}
_EXTRA_TYPES = {SHARING_AFFINITY: {"expression": "str", "name": "str"}}

_INNER = re.compile(r"^(?:List\[(.*)\]|Dict\[str, (.*)\])$")


def _model_types(ref: str) -> list[str]:
    match = _INNER.match(ref)
    if match:
        return _model_types(match.group(1) or match.group(2))
    return [ref] if hasattr(kubernetes.client, ref) else []


def generate() -> dict[str, Any]:
    types: dict[str, dict[str, str]] = {}
    pending = [name for versions in ROOTS.values() for name in versions.values()]
    while pending:
        name = pending.pop()
        if name in types:
            continue
        model = getattr(kubernetes.client, name)
        fields = {model.attribute_map[attr]: ref for attr, ref in model.openapi_types.items()}
        fields.update(_EXTRA_FIELDS.get(name, {}))
        types[name] = dict(sorted(fields.items()))
        for ref in fields.values():
            pending.extend(t for t in _model_types(ref) if t not in types)
    types.update(_EXTRA_TYPES)
    return {"kinds": ROOTS, "types": dict(sorted(types.items()))}


def render() -> str:
    return json.dumps(generate(), indent=1, sort_keys=False) + "\n"


if __name__ == "__main__":
    TARGET.write_text(render(), encoding="utf-8")
    print(f"wrote {TARGET}")
