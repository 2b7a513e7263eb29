"""Structural schemas of the objects we read, checked with `jsonschema`.

Only what our rules rely on is constrained (required fields and their types); a
schema that tried to mirror the whole Kubernetes OpenAPI would reject objects the
API server accepts. Semantic limits (8 entries, 10 Ki bytes, …) are rules with their
own ids, not schema errors, so that each keeps its rule id and message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from dra_affinity.policies.core.source import FieldPath

if TYPE_CHECKING:  # jsonschema costs ~100 ms to import; `--help` must not pay it
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

_STRING = {"type": "string"}
_INT = {"type": "integer"}
_BOOL = {"type": "boolean"}
_OBJECT = {"type": "object"}
_NULLABLE_OBJECT = {"type": ["object", "null"]}

_METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": _STRING, "namespace": _STRING, "generateName": _STRING},
}

_DEVICE = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": _STRING,
        "allowMultipleAllocations": _BOOL,
        "attributes": _NULLABLE_OBJECT,
        "capacity": {
            "type": ["object", "null"],
            "additionalProperties": {
                "type": "object",
                "required": ["value"],
                "properties": {"value": {"type": ["string", "integer", "number"]},
                               "requestPolicy": _NULLABLE_OBJECT},
            },
        },
    },
}

_EXTRACTOR = {
    # name/expression are deliberately not `required` here: a missing one is SA103/SA104
    # ("Required value"), which says more than a generic input error.
    "type": "object",
    "properties": {"name": _STRING, "expression": _STRING},
}

RESOURCE_SLICE = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "metadata": _METADATA,
        "spec": {
            "type": "object",
            "required": ["driver", "pool"],
            "properties": {
                "driver": _STRING,
                "pool": {
                    "type": "object",
                    "required": ["name", "generation", "resourceSliceCount"],
                    "properties": {
                        "name": _STRING,
                        "generation": _INT,
                        "resourceSliceCount": _INT,
                    },
                },
                "nodeName": _STRING,
                "nodeSelector": _NULLABLE_OBJECT,
                "allNodes": _BOOL,
                "perDeviceNodeSelection": _BOOL,
                "devices": {"type": ["array", "null"], "items": _DEVICE},
                "sharedCounters": {"type": ["array", "null"], "items": _OBJECT},
                "sharingAffinity": {"type": ["array", "null"], "items": _EXTRACTOR},
            },
        },
    },
}

_SELECTORS = {
    "type": ["array", "null"],
    "items": {
        "type": "object",
        "properties": {
            "cel": {"type": "object", "required": ["expression"],
                    "properties": {"expression": _STRING}},
        },
    },
}

_EXACT = {
    "type": "object",
    "required": ["deviceClassName"],
    "properties": {
        "deviceClassName": _STRING,
        "selectors": _SELECTORS,
        "allocationMode": _STRING,
        "count": _INT,
        "capacity": _NULLABLE_OBJECT,
        "adminAccess": {"type": ["boolean", "null"]},
    },
}

_SUB_REQUEST = {
    "type": "object",
    "required": ["name", "deviceClassName"],
    "properties": dict(_EXACT["properties"], name=_STRING),  # type: ignore[arg-type]
}

_CLAIM_SPEC = {
    "type": "object",
    "properties": {
        "devices": {
            "type": ["object", "null"],
            "properties": {
                "requests": {
                    "type": ["array", "null"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": _STRING,
                            "exactly": _EXACT,
                            "firstAvailable": {"type": "array", "items": _SUB_REQUEST},
                        },
                    },
                },
                "constraints": {
                    "type": ["array", "null"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "requests": {"type": ["array", "null"], "items": _STRING},
                            "matchAttribute": {"type": ["string", "null"]},
                            "distinctAttribute": {"type": ["string", "null"]},
                        },
                    },
                },
                "config": {
                    "type": ["array", "null"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "requests": {"type": ["array", "null"], "items": _STRING},
                            "opaque": {
                                "type": ["object", "null"],
                                "required": ["driver", "parameters"],
                                "properties": {"driver": _STRING},
                            },
                        },
                    },
                },
            },
        },
    },
}

RESOURCE_CLAIM = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "metadata": _METADATA,
        "spec": _CLAIM_SPEC,
        "status": {
            "type": ["object", "null"],
            "properties": {
                "allocation": {
                    "type": ["object", "null"],
                    "properties": {
                        "devices": {
                            "type": ["object", "null"],
                            "properties": {
                                "results": {
                                    "type": ["array", "null"],
                                    "items": {
                                        "type": "object",
                                        "required": ["request", "driver", "pool", "device"],
                                        "properties": {"request": _STRING, "driver": _STRING,
                                                       "pool": _STRING, "device": _STRING,
                                                       "shareID": {"type": ["string", "null"]},
                                                       "consumedCapacity": _NULLABLE_OBJECT,
                                                       "adminAccess": {"type": ["boolean", "null"]}},
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}

RESOURCE_CLAIM_TEMPLATE = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "metadata": _METADATA,
        "spec": {"type": "object", "required": ["spec"], "properties": {"spec": _CLAIM_SPEC}},
    },
}

DEVICE_CLASS = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "metadata": _METADATA,
        "spec": {
            "type": "object",
            "properties": {
                "selectors": _SELECTORS,
                "config": {"type": ["array", "null"], "items": _OBJECT},
            },
        },
    },
}

SCHEMAS: Mapping[str, Mapping[str, Any]] = {
    "ResourceSlice": RESOURCE_SLICE,
    "ResourceClaim": RESOURCE_CLAIM,
    "ResourceClaimTemplate": RESOURCE_CLAIM_TEMPLATE,
    "DeviceClass": DEVICE_CLASS,
}


@dataclass(frozen=True, slots=True)
class SchemaViolation:
    """One structural problem, rendered the way the API server words field errors."""

    path: FieldPath
    message: str


@cache
def _validator(kind: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(SCHEMAS[kind])


_TYPE_WORDS = {"string": "string", "integer": "integer", "boolean": "boolean",
               "object": "object", "array": "list", "number": "number", "null": "null"}


def _describe(error: ValidationError) -> str:
    if error.validator == "required":
        return "Required value"
    if error.validator == "type":
        expected: Any = error.validator_value
        names: list[str] = [expected] if isinstance(expected, str) else list(expected)
        wanted = " or ".join(_TYPE_WORDS.get(n, n) for n in names if n != "null")
        return f"Invalid value: {_short(error.instance)}: must be of type {wanted}"
    return f"Invalid value: {_short(error.instance)}: {error.message}"


def _short(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _error_path(error: ValidationError) -> FieldPath:
    path: FieldPath = tuple(error.absolute_path)
    if error.validator == "required":
        # jsonschema reports a missing field at its parent; Kubernetes names the field itself.
        missing = str(error.message).split("'")[1] if "'" in error.message else ""
        return (*path, missing) if missing else path
    return path


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}
"""The exact Python types a conforming value can have: anything else (a subclass, a YAML
timestamp) is left to jsonschema, which knows the exact rules. Exact types also keep `True`
out of `integer`."""

_KEYWORDS = frozenset({"type", "properties", "required", "items", "additionalProperties"})

Check = Callable[[object], bool]


def _never(value: object) -> bool:
    return False


def _compile(schema: Mapping[str, Any]) -> Check:
    """A function that is True only when a value certainly satisfies `schema`.

    Why: importing jsonschema costs ~100 ms of a one-file lint's start-up, and nearly every
    object conforms; and a walk interpreting the schema for every object cost ~150 us per
    claim (issue 15). The schema is turned once into nested closures that test exact types,
    look up only the properties the schema names and recurse only into those. False means
    "ask jsonschema", which then words the violations; a keyword outside `_KEYWORDS` always
    does, so this can only ever skip work, never a violation.
    """
    if not _KEYWORDS.issuperset(schema):
        return _never
    wanted = schema.get("type")
    types: frozenset[type] | None = None
    if wanted is not None:
        names = [wanted] if isinstance(wanted, str) else list(wanted)
        types = frozenset(t for name in names for t in _JSON_TYPES.get(name, ()))
    required = tuple(schema.get("required", ()))
    properties = {key: _compile(sub) for key, sub in schema.get("properties", {}).items()}
    named = tuple(properties.items())
    extra = schema.get("additionalProperties", True)
    extra_check: Check | None = (
        None if extra is True else _never if extra is False else _compile(extra))
    items_check = _compile(schema["items"]) if "items" in schema else None

    def check(value: object) -> bool:
        kind = type(value)
        if types is not None and kind not in types:
            return False
        if kind is dict:
            mapping: dict[str, object] = value  # type: ignore[assignment]
            for key in required:
                if key not in mapping:
                    return False
            if extra_check is None:
                for key, sub in named:
                    if key in mapping and not sub(mapping[key]):
                        return False
            else:
                for key, item in mapping.items():
                    sub = properties.get(key, extra_check)
                    if not sub(item):
                        return False
        elif kind is list and items_check is not None:
            for item in value:  # type: ignore[attr-defined]
                if not items_check(item):
                    return False
        elif types is None and (required or named or extra_check or items_check):
            return False  # a dict or list subclass: let jsonschema judge it
        return True

    return check


_CHECKS: Mapping[str, Check] = {kind: _compile(schema) for kind, schema in SCHEMAS.items()}
"""One compiled check per kind, built at import (a few hundred closures, well under 1 ms)."""


def validate(kind: str, document: Mapping[str, Any]) -> Iterator[SchemaViolation]:
    """Yield every structural violation of `document`, deepest-first order irrelevant."""
    if _CHECKS[kind](document):
        return
    errors = _validator(kind).iter_errors(document)
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        yield SchemaViolation(_error_path(error), _describe(error))
