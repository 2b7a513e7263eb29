"""Structural schemas of the objects we read, checked with `jsonschema`, and their field names.

Only what our rules rely on is constrained by type (required fields and their types); a
schema that tried to mirror the whole Kubernetes OpenAPI would reject objects the
API server accepts. Semantic limits (8 entries, 10 Ki bytes, …) are rules with their
own ids, not schema errors, so that each keeps its rule id and message.

Field *names* are checked everywhere, as the API server's strict field validation (kubectl's
default, `--validate=strict`) checks them: a field the kind does not have is an error worded as
the API server words it (`unknown field "spec.sharingAffnity"`), with the nearest known name
when one is close. The names come from `fields.json` (the `kubernetes` client's models for each
kind and version, plus KEP-5981's `sharingAffinity`); `metadata` is decoded by kubectl itself
into an ObjectMeta, so its values' types are checked too (`annotations` must be a map of
strings). The walk is compiled once per kind and version into closures that look only at keys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import layers
from ..core.clip import clip_value
from ..core.source import FieldPath, render_path

if TYPE_CHECKING:  # jsonschema is heavy to import; `--help` must not pay it
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
_STRING = {"type": "string"}
_INT = {"type": "integer", "minimum": INT64_MIN, "maximum": INT64_MAX}
"""An int64 field: a larger integer (a YAML uint64, kept exact by the loader) is refused by the
API server's decoder."""
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
    """One structural problem, rendered the way the API server words field errors.

    `prefixed`: the message follows the path (`spec.x: Required value`); else it is whole
    (`unknown field "spec.x"`), as the API server writes strict decoding errors."""

    path: FieldPath
    message: str
    prefixed: bool = True


def _is_integer(checker: object, instance: object) -> bool:
    """JSON Schema counts `2.0` as an integer; the API server's decoder does not: the loader
    already made an int of every float kubectl sends as integer digits, so a float left in an
    int64 field is one sent with a fraction, an exponent or past int64, which it refuses."""
    return type(instance) is int


@cache
def _validator(kind: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer)
    strict = validators.extend(Draft202012Validator, type_checker=checker)
    return strict(SCHEMAS[kind])


_TYPE_WORDS = {"string": "string", "integer": "integer", "boolean": "boolean",
               "object": "object", "array": "list", "number": "number", "null": "null"}


def _describe(error: ValidationError) -> str:
    if error.validator == "required":
        return "Required value"
    if error.validator in ("minimum", "maximum"):
        return (f"Invalid value: {_short(error.instance)}: must fit in a 64-bit integer "
                "(the API server cannot decode it into an int64)")
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


def structural(kind: str, document: Mapping[str, Any]) -> Iterator[SchemaViolation]:
    """Yield every structural violation of `document`, deepest-first order irrelevant."""
    if SCHEMA_PRECHECK.on and _CHECKS[kind](document):
        return
    errors = _validator(kind).iter_errors(document)
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        if error.validator in ("minimum", "maximum") and type(error.instance) is not int:
            continue  # a float there is already "must be of type integer"
        yield SchemaViolation(_error_path(error), _describe(error))


def validate(kind: str, document: Mapping[str, Any]) -> Iterator[SchemaViolation]:
    """`structural`, then every field name the kind does not have and every metadata value of
    the wrong type (`unknown_fields`)."""
    yield from structural(kind, document)
    yield from unknown_fields(kind, document)


# -- speed layer: schema-precheck --------------------------------------------------------------

SCHEMA_PRECHECK = layers.declare(
    "schema-precheck",
    "nearly every object conforms, and jsonschema both costs a large part of a one-file lint's "
    "start-up to import and interprets the schema for every object of a large dump; a check "
    "compiled from the same schema answers 'certainly conforms' and leaves every other object "
    "to jsonschema, which words the violations")

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

_KEYWORDS = frozenset({"type", "properties", "required", "items", "additionalProperties",
                       "minimum", "maximum"})

Check = Callable[[object], bool]


def _never(value: object) -> bool:
    return False


def _compile(schema: Mapping[str, Any]) -> Check:
    """A function that is True only when a value certainly satisfies `schema`.

    The schema is turned once into nested closures that test exact types,
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
    low, high = schema.get("minimum"), schema.get("maximum")

    def check(value: object) -> bool:
        kind = type(value)
        if types is not None and kind not in types:
            return False
        if kind is int and ((low is not None and value < low)
                            or (high is not None and value > high)):
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
"""One compiled check per kind, built at import: a few hundred closures, cheap next to the
first document checked, and no lazy state to guard."""



# -- field names ----------------------------------------------------------------------------

_FIELDS: Mapping[str, Any] = json.loads(Path(__file__).with_name("fields.json").read_text("utf-8"))
"""`kinds`: kind → apiVersion's version → root type; `types`: type → JSON field → type ref
(`List[T]`, `Dict[str, T]`, a type, or a scalar: `str`, `int`, `bool`, `datetime`, `object`)."""
_CONTAINER = re.compile(r"^(?:List\[(.*)\]|Dict\[str, (.*)\])$")
_METADATA_TYPE = "V1ObjectMeta"
_METADATA_SCHEMA_FIELDS = frozenset(_METADATA["properties"])
"""Metadata fields the jsonschema already types (not reported twice)."""
_SUGGEST_CUTOFF = 0.75
"""How close (difflib's ratio) a known name must be to an unknown one to be suggested:
`sharingAffnity` → `sharingAffinity` is 0.97, `expresion` → `expression` 0.95."""

Walk = Callable[[object, FieldPath, list[SchemaViolation]], None]

_SCALAR_TYPES: Mapping[str, tuple[type, ...]] = {"str": (str,), "datetime": (str,), "int": (int,),
                                                 "bool": (bool,)}


UNKNOWN_FIELD = "unknown field "
"""How the API server's strict decoding starts the message for a field a kind does not have."""


def unknown_field_message(path: FieldPath, key: str, known: Iterable[str]) -> str:
    """`unknown field "spec.x"`, as the API server words it, with the nearest known name at
    that place when one is close (for every file the tool reads: objects, suites, config,
    workloads)."""
    import difflib  # lazy: only a file with a wrong field name needs it, and every start would pay

    message = f'{UNKNOWN_FIELD}"{render_path((*path, key))}"'
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=_SUGGEST_CUTOFF)
    if close:
        message += f' (did you mean "{render_path((*path, close[0]))}"?)'
    return message


def unknown_property(error: ValidationError) -> tuple[FieldPath, str] | None:
    """A jsonschema `additionalProperties: false` error as the unknown field it names (path,
    message), or None for any other error."""
    if error.validator != "additionalProperties" or error.validator_value is not False \
            or not isinstance(error.instance, dict):
        return None
    known = error.schema.get("properties", {}) if isinstance(error.schema, Mapping) else {}
    extra = [key for key in error.instance if key not in known]
    if not extra:
        return None
    path: FieldPath = tuple(error.absolute_path)
    return (*path, extra[0]), unknown_field_message(path, str(extra[0]), known)


def _unknown(path: FieldPath, key: str, known: frozenset[str]) -> SchemaViolation:
    return SchemaViolation((*path, key), unknown_field_message(path, key, known), prefixed=False)


def _type_problem(value: object, ref: str) -> str | None:
    """Why `value` cannot be decoded into a field of type `ref` (metadata's types only)."""
    if value is None:
        return None  # JSON null decodes to the zero value
    container = _CONTAINER.match(ref)
    if container:
        wanted: tuple[type, ...] = (list,) if container.group(1) else (dict,)
        name = "list" if container.group(1) else "object"
        if ref == "Dict[str, str]":
            name = "object (a map of strings)"
    elif ref in _SCALAR_TYPES:
        wanted, name = _SCALAR_TYPES[ref], {"str": "string", "datetime": "string"}.get(ref, ref)
        name = {"int": "integer", "bool": "boolean"}.get(name, name)
    else:
        wanted, name = (dict,), "object"
    if type(value) in wanted and not (name == "integer" and not INT64_MIN <= value <= INT64_MAX):  # type: ignore[operator]
        return None
    return f"Invalid value: {clip_value(value)}: must be of type {name}"


def _walker(ref: str, memo: dict[str, Walk | None]) -> Walk | None:
    """The check of a value of type `ref`, or None when nothing below it has a known name."""
    container = _CONTAINER.match(ref)
    if container:
        inner = _walker(container.group(1) or container.group(2), memo)
        if inner is None:
            return None
        is_list = container.group(1) is not None

        def walk_container(value: object, path: FieldPath, out: list[SchemaViolation]) -> None:
            if is_list and type(value) is list:
                for index, item in enumerate(value):
                    inner(item, (*path, index), out)
            elif not is_list and type(value) is dict:
                for key, item in value.items():
                    inner(item, (*path, key), out)

        return walk_container
    fields: Mapping[str, str] | None = _FIELDS["types"].get(ref)
    if fields is None:
        return None  # a scalar, or `object` (RawExtension: free-form)
    if ref in memo:
        return memo[ref]
    known = frozenset(fields)
    children: dict[str, Walk] = {}
    typed = ref == _METADATA_TYPE
    memo[ref] = None  # a type met again while it is being compiled: bound on first call below

    def walk_struct(value: object, path: FieldPath, out: list[SchemaViolation]) -> None:
        if type(value) is not dict:
            return  # a mistyped object is the structural check's (or the decoder's) to report
        if not value.keys() <= known:
            out.extend(_unknown(path, key, known) for key in value if key not in known)
        if typed:
            for name, field_ref in fields.items():
                if name in _METADATA_SCHEMA_FIELDS:
                    continue
                problem = _type_problem(value.get(name), field_ref)
                if problem is None and field_ref == "Dict[str, str]" and value.get(name):
                    for key, item in value[name].items():
                        if type(item) is not str:
                            out.append(SchemaViolation((*path, name, key),
                                                       f"Invalid value: {clip_value(item)}: "
                                                       "must be of type string"))
                elif problem is not None:
                    out.append(SchemaViolation((*path, name), problem))
        if children:
            for name, child in value.items():  # the keys present: fewer than the type's fields
                walk = children.get(name)
                if walk is not None and child is not None:
                    walk(child, (*path, name), out)

    memo[ref] = walk_struct
    for name, field_ref in fields.items():
        walk = _walker(field_ref, memo)
        if walk is not None:
            children[name] = walk
    return walk_struct


def _roots() -> Mapping[tuple[str, str], Walk]:
    memo: dict[str, Walk | None] = {}
    out: dict[tuple[str, str], Walk] = {}
    for kind, versions in _FIELDS["kinds"].items():
        for version, root in versions.items():
            walk = _walker(root, memo)
            assert walk is not None
            out[(kind, version)] = walk
    return out


_WALKS = _roots()
"""One compiled walk per (kind, version), built at import: cheap, and no lazy state to guard."""


def unknown_fields(kind: str, document: Mapping[str, Any]) -> list[SchemaViolation]:
    """The fields of `document` its kind (at its apiVersion's version; the newest when that is
    not one the tool reads, which is reported on its own) does not have, and metadata values of
    the wrong type."""
    api_version = document.get("apiVersion")
    version = api_version.rpartition("/")[2] if isinstance(api_version, str) else ""
    walk = _WALKS.get((kind, version)) or _WALKS.get((kind, "v1"))
    out: list[SchemaViolation] = []
    if walk is not None:
        walk(document, (), out)
    return out
