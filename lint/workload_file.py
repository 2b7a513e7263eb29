"""Workload files for `simulate --workload` and `workload:` test cases (docs/simulate.md).

    kind: Workload                      # optional
    name: nic-20-subnets                # optional (default: the file name)
    seed: 7                             # optional (default 1): same seed, same arrivals
    arrivals: 2000                      # how many claims arrive
    rate: 1                             # arrivals per time unit (default 1; not with template rates)
    resources: [claims.yaml]            # optional: files or directories with the claims (relative)
    templates:
      - claim: ml/nic-pod               # a ResourceClaim or ResourceClaimTemplate (namespace/name)
        weight: 3                       # share of the arrivals (default 1) -- or `rate:` per template
        lifetime: {exponential: 40}     # {fixed: T} | {exponential: MEAN} | never
        vary:
          - field: subnetID             # path in opaque.parameters (dots for nesting)
            config: 0                   # optional: index in spec.devices.config (default: first opaque)
            zipf: {count: 20, prefix: subnet-, exponent: 1.1}
          - field: pkey
            values: {pkey-a: 3, pkey-b: 1}   # value: weight (or a list: equal weights)

The file is checked against a JSON schema first, so a typo in a key is a located error
(`file:line:column: field: message`), never a silently ignored setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..policies.core.source import FieldPath, Source
from ..policies.scheduler.workload import (
    Lifetime,
    LifetimeKind,
    TemplateSpec,
    Vary,
    Workload,
    zipf_weights,
)

MAX_ARRIVALS = 10_000_000
"""Bounds the run a file can ask for (100,000 arrivals take seconds; this takes minutes)."""
MAX_VARIANTS = 100_000
"""Bounds the value combinations of one template (each is one claim kept in memory)."""

_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
_VALUE = {"type": "string", "minLength": 1}

_LIFETIME: dict[str, Any] = {
    "oneOf": [
        {"const": "never"},
        {"type": "object", "additionalProperties": False, "required": ["fixed"],
         "properties": {"fixed": {"type": "number", "minimum": 0}}},
        {"type": "object", "additionalProperties": False, "required": ["exponential"],
         "properties": {"exponential": _POSITIVE}},
    ],
}

_ZIPF: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "count": {"type": "integer", "minimum": 1, "maximum": MAX_VARIANTS},
        "prefix": {"type": "string"},
        "values": {"type": "array", "minItems": 1, "items": _VALUE, "uniqueItems": True},
        "exponent": {"type": "number", "minimum": 0},
    },
    "oneOf": [{"required": ["count"], "not": {"required": ["values"]}},
              {"required": ["values"], "not": {"required": ["count"]}}],
}

_VARY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["field"],
    "properties": {
        "field": {"type": "string", "minLength": 1, "pattern": r"^[^.]+(\.[^.]+)*$"},
        "config": {"type": "integer", "minimum": 0},
        "values": {
            "oneOf": [
                {"type": "array", "minItems": 1, "items": _VALUE, "uniqueItems": True},
                {"type": "object", "minProperties": 1, "additionalProperties": _POSITIVE},
            ],
        },
        "zipf": _ZIPF,
    },
    "oneOf": [{"required": ["values"], "not": {"required": ["zipf"]}},
              {"required": ["zipf"], "not": {"required": ["values"]}}],
}

_TEMPLATE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["claim", "lifetime"],
    "properties": {
        "claim": {"type": "string", "minLength": 1},
        "weight": _POSITIVE,
        "rate": _POSITIVE,
        "lifetime": _LIFETIME,
        "vary": {"type": "array", "items": _VARY},
    },
    "not": {"required": ["weight", "rate"]},
}

WORKLOAD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["arrivals", "templates"],
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"const": "Workload"},
        "name": {"type": "string"},
        "seed": {"type": "integer"},
        "arrivals": {"type": "integer", "minimum": 1, "maximum": MAX_ARRIVALS},
        "rate": _POSITIVE,
        "resources": {"type": "array", "items": {"type": "string"}},
        "templates": {"type": "array", "minItems": 1, "items": _TEMPLATE},
    },
}


class WorkloadFileError(ValueError):
    """The workload file is unusable (the message names file, line and field)."""


@dataclass(frozen=True)
class WorkloadFile:
    path: Path
    workload: Workload
    resources: tuple[Path, ...]
    source: Source

    def where(self, path: FieldPath) -> str:
        """`file:line:column: field` for a field of this file (problems found at run time)."""
        pos = self.source.locate(path)
        at = f"{self.path}:{pos.line}:{pos.column}" if pos else str(self.path)
        rendered = ".".join(str(p) for p in path)
        return f"{at}: {rendered}" if rendered else at


def _error(path: Path, source: Source, field_path: FieldPath, message: str) -> WorkloadFileError:
    pos = source.locate(field_path)
    where = f"{path}:{pos.line}:{pos.column}" if pos else str(path)
    rendered = ".".join(str(p) for p in field_path) or "<workload>"
    return WorkloadFileError(f"{where}: {rendered}: {message}")


def load_workload(path: Path) -> WorkloadFile:
    """Read and validate one workload file; raises `WorkloadFileError` with a located message."""
    from jsonschema import Draft202012Validator

    from ..policies.model.schema import unknown_property
    from ..sources.loader import load_paths

    loaded = load_paths([str(path)])
    if loaded.usage_errors:
        raise WorkloadFileError(loaded.usage_errors[0])
    if loaded.findings:
        f = loaded.findings[0]
        pos = f.primary.position
        where = f"{path}:{pos.line}:{pos.column}" if pos else str(path)
        raise WorkloadFileError(f"{where}: {f.message}")
    if len(loaded.documents) != 1:
        raise WorkloadFileError(f"{path}: a workload file holds exactly one YAML document")
    doc = loaded.documents[0]
    errors = sorted(Draft202012Validator(WORKLOAD_SCHEMA).iter_errors(doc.data),
                    key=lambda e: (len(e.absolute_path), [str(p) for p in e.absolute_path]))
    if errors:
        error = max(errors, key=lambda e: len(e.absolute_path))  # the deepest: the most precise
        error = next((e for e in errors if unknown_property(e) is not None), error)  # a typo first
        unknown = unknown_property(error)
        if unknown is not None:
            pos = doc.source.locate(unknown[0])
            raise WorkloadFileError(f"{path}:{pos.line}:{pos.column}: {unknown[1]}" if pos
                                    else f"{path}: {unknown[1]}")
        raise _error(path, doc.source, tuple(error.absolute_path), _schema_message(error))
    data = doc.data
    templates = [_template(path, doc.source, i, t) for i, t in enumerate(data["templates"])]
    rates = [t.get("rate") for t in data["templates"]]
    if any(r is not None for r in rates):
        missing = [i for i, r in enumerate(rates) if r is None]
        if missing:
            raise _error(path, doc.source, ("templates", missing[0]),
                         "give every template a `rate` or none (then `weight` and the workload's "
                         "`rate` apply)")
        if "rate" in data:
            raise _error(path, doc.source, ("rate",), "the templates give their own `rate`: the total "
                                                      "rate is their sum, do not give it here")
        total = float(sum(r for r in rates if r is not None))
    else:
        total = float(data.get("rate", 1))
    return WorkloadFile(
        path=path,
        workload=Workload(name=str(data.get("name") or path.stem), seed=int(data.get("seed", 1)),
                          arrivals=int(data["arrivals"]), rate=total, templates=tuple(templates)),
        resources=tuple(path.parent / r for r in data.get("resources", [])),
        source=doc.source,
    )


def _schema_message(error: Any) -> str:
    if error.validator == "oneOf" and error.path and error.path[-1] == "lifetime":
        return "must be `never`, `{fixed: DURATION}` or `{exponential: MEAN}`"
    if error.validator in ("oneOf", "not") and isinstance(error.instance, dict):
        if "zipf" in error.instance or "values" in error.instance or "field" in error.instance:
            return "give exactly one of `values:` and `zipf:` (zipf: exactly one of `count:` and `values:`)"
        if "weight" in error.instance and "rate" in error.instance:
            return "give `weight:` or `rate:`, not both"
    return str(error.message)


def _qualified(name: str) -> str:
    return name if "/" in name else f"default/{name}"


def _template(path: Path, source: Source, i: int, raw: dict[str, Any]) -> TemplateSpec:
    at: FieldPath = ("templates", i)
    lifetime_raw = raw["lifetime"]
    if lifetime_raw == "never":
        lifetime = Lifetime(LifetimeKind.NEVER)
    elif "fixed" in lifetime_raw:
        lifetime = Lifetime(LifetimeKind.FIXED, float(lifetime_raw["fixed"]))
    else:
        lifetime = Lifetime(LifetimeKind.EXPONENTIAL, float(lifetime_raw["exponential"]))
    varies = tuple(_vary((*at, "vary", j), v) for j, v in enumerate(raw.get("vary", [])))
    combos = 1
    for v in varies:
        combos *= len(v.values)
    if combos > MAX_VARIANTS:
        raise _error(path, source, (*at, "vary"), f"{combos} combinations of values: at most "
                                                  f"{MAX_VARIANTS} per template")
    weight = raw.get("rate", raw.get("weight", 1))
    return TemplateSpec(claim=_qualified(raw["claim"]), weight=float(weight), lifetime=lifetime,
                        vary=varies, path=at)


def _vary(at: FieldPath, raw: dict[str, Any]) -> Vary:
    if "zipf" in raw:
        z = raw["zipf"]
        if "values" in z:
            names = [str(v) for v in z["values"]]
        else:
            width = len(str(z["count"]))
            names = [f"{z.get('prefix', '')}{k:0{width}d}" for k in range(1, z["count"] + 1)]
        values = tuple(zip(names, zipf_weights(len(names), float(z.get("exponent", 1.0))), strict=True))
    elif isinstance(raw["values"], list):
        values = tuple((str(v), 1.0) for v in raw["values"])
    else:
        values = tuple((str(k), float(w)) for k, w in raw["values"].items())
    return Vary(field=tuple(raw["field"].split(".")), values=values, config=raw.get("config"), path=at)
