"""Typed, immutable views of the Kubernetes objects the rules reason about.

Views are built from plain dicts (what YAML, JSON or an AdmissionReview decode
to) after a structural check (`dra_affinity.policies.model.schema`), so rule code can rely on types
and never guards against a mistyped field itself. Each view keeps its `Source`,
which turns field paths into file:line:column, and its raw dict, for rules that
need to know whether a field was present at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.api import RESOURCE_GROUP
from ..core.cache import cached, text_weight
from ..core.clip import clip_value
from ..core.findings import Finding, Location, ObjectRef, PoolRef
from ..core.k8s_names import go_string, utf8_len
from ..core.limits import limits_for
from ..core.problems import INPUT_ERROR
from ..core.source import FieldPath, Source, render_path
from . import schema

SLICE_VERSIONS = frozenset({"v1", "v1beta2"})
CLAIM_VERSIONS = frozenset({"v1"})
CLASS_VERSIONS = frozenset({"v1", "v1beta2"})
_VERSIONS_BY_KIND = {"ResourceSlice": SLICE_VERSIONS, "DeviceClass": CLASS_VERSIONS}


@dataclass(frozen=True, slots=True)
class Extractor:
    """One `spec.sharingAffinity[i]` entry; name/expression may be missing (SA103/SA104)."""

    index: int
    name: str | None
    expression: str | None


@dataclass(frozen=True, slots=True)
class Capacity:
    value: str
    request_policy: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Device:
    index: int
    name: str
    allow_multiple_allocations: bool = False
    attributes: Mapping[str, Any] = field(default_factory=dict)
    capacity: Mapping[str, Capacity] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    api_version: str
    name: str
    driver: str
    pool_name: str
    generation: int
    resource_slice_count: int
    devices: tuple[Device, ...]
    sharing_affinity: tuple[Extractor, ...]
    devices_set: bool
    """`spec.devices` present and not null (upstream's mutual exclusion tests non-nil)."""
    sharing_affinity_set: bool
    source: Source
    raw: Mapping[str, Any]

    @property
    def pool(self) -> PoolRef:
        return PoolRef(self.driver, self.pool_name)

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef("ResourceSlice", self.name)

    @property
    def is_metadata_slice(self) -> bool:
        return self.sharing_affinity_set and not self.devices_set


@dataclass(frozen=True, slots=True)
class DeviceSelector:
    index: int
    expression: str


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """A request (`exactly`) or one `firstAvailable` sub-request, named `parent/sub`."""

    name: str
    parent: str | None
    device_class_name: str
    selectors: tuple[DeviceSelector, ...] = ()
    count: int | None = None
    allocation_mode: str | None = None
    capacity_requests: Mapping[str, Any] = field(default_factory=dict)
    admin_access: bool = False


@dataclass(frozen=True, slots=True)
class Request:
    index: int
    name: str
    exactly: DeviceRequest | None
    first_available: tuple[DeviceRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class OpaqueConfig:
    driver: str
    parameters: Any


@dataclass(frozen=True, slots=True)
class ClaimConfig:
    index: int
    requests: tuple[str, ...]
    opaque: OpaqueConfig | None


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    """One `spec.devices.constraints[index]`: devices of the named requests (all when empty)
    share (`match_attribute`) or differ in (`distinct_attribute`) one attribute."""

    index: int
    requests: tuple[str, ...]
    match_attribute: str | None
    distinct_attribute: str | None


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    """One `status.allocation.devices.results` entry, as the scheduler reads it back.

    `share_id`: set when the device was allocated as one of several shares (then the result
    consumes exactly `consumed_capacity`, nothing when absent); unset, the device is held
    exclusively, whatever its slice says now. Admin-access results hold nothing."""

    request: str
    driver: str
    pool: str
    device: str
    share_id: str | None = None
    consumed_capacity: Mapping[str, Any] | None = None
    admin_access: bool = False


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    """A ResourceClaim, or a ResourceClaimTemplate (whose claim spec sits under `spec.spec`)."""

    kind: str
    api_version: str
    namespace: str
    name: str
    requests: tuple[Request, ...]
    configs: tuple[ClaimConfig, ...]
    allocation: tuple[AllocatedDevice, ...]
    source: Source
    raw: Mapping[str, Any]
    spec_path: tuple[str, ...] = ("spec",)
    constraints: tuple[DeviceConstraint, ...] = ()

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(self.kind, self.name, self.namespace)

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class DeviceClass:
    """A DeviceClass: the selectors every request naming it adds (cluster-scoped)."""

    name: str
    selectors: tuple[DeviceSelector, ...]
    source: Source
    raw: Mapping[str, Any]

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef("DeviceClass", self.name)


Model = ResourceSlice | ResourceClaim | DeviceClass


@dataclass(frozen=True, slots=True)
class ParseResult:
    """The view (None when the object is unusable or of another kind) and input findings."""

    obj: Model | None
    findings: tuple[Finding, ...] = ()
    recognised: bool = False
    """True for kinds we model, even when they failed the structural check."""


def _name(doc: Mapping[str, Any]) -> str | None:
    meta = doc.get("metadata")
    if isinstance(meta, Mapping):
        name = meta.get("name") or meta.get("generateName")
        return name if isinstance(name, str) else None
    return None


def _input_errors(kind: str, doc: Mapping[str, Any], source: Source,
                  violations: Any = None) -> tuple[Finding, ...]:
    ref = ObjectRef(kind, _name(doc))
    return tuple(
        INPUT_ERROR.finding(f"{_render(v.path)}: {v.message}" if v.prefixed else v.message,
                            Location.at(source, v.path, ref))
        for v in (schema.validate(kind, doc) if violations is None else violations)
    )


_CONFIG_PATHS: Mapping[str, tuple[str, ...]] = {
    "ResourceClaim": ("spec", "devices", "config"),
    "ResourceClaimTemplate": ("spec", "spec", "devices", "config"),
    "DeviceClass": ("spec", "config"),
}
"""Where each kind keeps its device configurations (upstream validates each one's opaque
parameters the same way)."""


def _opaque_too_long(kind: str, doc: Mapping[str, Any], source: Source) -> tuple[Finding, ...]:
    """The API server refuses opaque parameters longer than `OpaqueParametersMaxLength` (10 Ki)
    bytes of JSON, so such an object can never be in a cluster; counted as kubectl sends them
    (compact JSON from the YAML, `&`, `<`, `>`, U+2028 and U+2029 escaped as Go does), after the
    structural check has passed."""
    path = _CONFIG_PATHS.get(kind)
    if path is None:
        return ()
    configs: Any = doc
    for key in path:
        configs = configs.get(key) if isinstance(configs, Mapping) else None
    if not isinstance(configs, list):
        return ()
    limit = limits_for().max_opaque_parameters_bytes
    found = []
    for index, config in enumerate(configs):
        opaque = config.get("opaque") if isinstance(config, Mapping) else None
        if not isinstance(opaque, Mapping) or "parameters" not in opaque:
            continue
        size = go_json_size(opaque["parameters"])
        if size > limit:
            where: FieldPath = (*path, index, "opaque", "parameters")
            found.append(INPUT_ERROR.finding(
                f"{_render(where)}: Too long: must have at most {limit} bytes (these are {size})",
                Location.at(source, where, ObjectRef(kind, _name(doc)))))
    return tuple(found)


def go_json_size(value: object) -> int:
    """Bytes of `value` as Go's `encoding/json` writes it compactly (what `kubectl` turns YAML
    into): Python's compact UTF-8 text plus five bytes for each `&`, `<`, `>` (`\\u0026`) and
    three for each U+2028/U+2029 that Go escapes. A float is counted as Python writes it,
    which can differ from Go by a few bytes (`1.0` is `1` to Go, `1e-06` is `0.000001`)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    escaped = sum(text.count(c) for c in "&<>")
    return utf8_len(text) + 5 * escaped + 3 * (text.count("\u2028") + text.count("\u2029"))


def _render(path: tuple[str | int, ...]) -> str:

    return render_path(path) or "<object>"


def _api_version_problem(doc: Mapping[str, Any], kind: str, source: Source) -> Finding | None:
    api_version = doc.get("apiVersion")
    allowed = _VERSIONS_BY_KIND.get(kind, CLAIM_VERSIONS)
    group, _, version = str(api_version).partition("/")
    if group == RESOURCE_GROUP and version in allowed:
        return None
    wanted = ", ".join(f"{RESOURCE_GROUP}/{v}" for v in sorted(allowed))
    return INPUT_ERROR.finding(
        f"apiVersion: Unsupported value: {api_version!r}: supported values for {kind}: {wanted}",
        Location.at(source, ("apiVersion",), ObjectRef(kind, _name(doc))),
    )


def _kind_problem(doc: Mapping[str, Any], kind: object, source: Source) -> Finding:
    """SA000 for a `kind` that is not a string: the object's kind cannot be told, so it is
    reported (Go's decoder fails the same way) instead of being taken for another kind."""
    return INPUT_ERROR.finding(
        f"kind: Invalid value: {clip_value(kind)}: must be a string",
        Location.at(source, ("kind",), ObjectRef("", _name(doc))),
    )


_NO_SOURCE = Source()
"""The source of objects that come from no file (the webhook's): immutable, so shared."""


def parse(
    doc: Mapping[str, Any], source: Source | None = None, *, trusted: bool = False,
    with_devices: bool = True,
) -> ParseResult:
    """Build the view of one decoded object; other kinds give `ParseResult(None)`.

    `trusted`: the object already passed the API server's own validation (a validating
    admission webhook runs after it), so the structural check — the costliest step for a
    128-device slice — is skipped unless building the view trips over the input, in which
    case the full check runs and reports it. `with_devices=False` leaves `devices` empty
    (`devices_set` still tells whether the field is there): slice rules never read device
    contents, and building 128 device views is most of the webhook's work on a device slice.
    """
    source = source or _NO_SOURCE
    kind = doc.get("kind")
    if not isinstance(kind, str):
        if kind is None:
            return ParseResult(None)
        return ParseResult(None, (_kind_problem(doc, kind, source),), recognised=True)
    if kind not in schema.SCHEMAS:
        return ParseResult(None)
    problem = _api_version_problem(doc, str(kind), source)
    if problem is not None:
        return ParseResult(None, (problem,), recognised=True)
    if trusted:
        try:
            return ParseResult(_build(doc, source, str(kind), with_devices), recognised=True)
        except (KeyError, TypeError, AttributeError, ValueError):
            pass  # not what the API server would have let through: say precisely why below
        # Field names are the API server's to judge here: it stored the object (a field newer
        # than this tool's list would otherwise be called unknown).
        errors = _input_errors(str(kind), doc, source, schema.structural(str(kind), doc))
    else:
        errors = _input_errors(str(kind), doc, source)
    if errors and all(f.message.startswith(schema.UNKNOWN_FIELD) for f in errors):
        # Only unknown names: the object is still modelled, so its rules are checked as well
        # (the API server refuses it; the rest of what is wrong with it is worth saying too).
        return ParseResult(_build(doc, source, str(kind), with_devices), errors, recognised=True)
    errors = errors or _opaque_too_long(str(kind), doc, source)
    if errors:
        return ParseResult(None, errors, recognised=True)
    return ParseResult(_build(doc, source, str(kind), with_devices), recognised=True)


def _build(doc: Mapping[str, Any], source: Source, kind: str, with_devices: bool = True) -> Model:
    if kind == "ResourceSlice":
        return _slice(doc, source, with_devices)
    if kind == "DeviceClass":
        return _device_class(doc, source)
    return _claim(doc, source, kind)


def _typed(value: Any, kind: type) -> Any:
    """`value` when it has the JSON type the API server's Go struct gives the field, else
    TypeError (which sends `parse` to the structural check, naming the field): a list or map
    where a string belongs must not reach the model (the webhook hashes these fields)."""
    if type(value) is kind:
        return value
    if kind is int and type(value) is float and value.is_integer():
        return int(value)  # what the structural check accepts as an integer (`2.0`, `3e16`)
    raise TypeError(f"expected {kind.__name__}")


def _typed_or_none(value: Any, kind: type) -> Any:
    """`_typed`, where the field may be absent (null): `false` is not an empty list."""
    return None if value is None else _typed(value, kind)


def _slice(doc: Mapping[str, Any], source: Source, with_devices: bool = True) -> ResourceSlice:
    spec = doc["spec"]
    pool = spec["pool"]
    raw_devices = _typed_or_none(spec.get("devices"), list)
    raw_affinity = _typed_or_none(spec.get("sharingAffinity"), list)
    metadata = doc.get("metadata")
    if isinstance(metadata, Mapping):
        _typed_or_none(metadata.get("name"), str)
        _typed_or_none(metadata.get("generateName"), str)
    return ResourceSlice(
        api_version=doc["apiVersion"],
        name=_name(doc) or "",
        driver=_typed(spec["driver"], str),
        pool_name=_typed(pool["name"], str),
        generation=_typed(pool["generation"], int),
        resource_slice_count=_typed(pool["resourceSliceCount"], int),
        devices=tuple(_device(i, d) for i, d in enumerate(raw_devices or ())) if with_devices else (),
        sharing_affinity=_extractors(tuple([(e.get("name"), e.get("expression"))
                                            for e in raw_affinity or ()])),
        devices_set=raw_devices is not None,
        sharing_affinity_set=raw_affinity is not None,
        source=source,
        raw=doc,
    )


def _selectors(raw: Any) -> tuple[DeviceSelector, ...]:
    if not raw:
        return ()  # most requests have none: no generator for them (100,000 claims per `locks`)
    return tuple([
        DeviceSelector(index=i, expression=s["cel"]["expression"])
        for i, s in enumerate(raw)
        if isinstance(s.get("cel"), Mapping)
    ])


def _device_class(doc: Mapping[str, Any], source: Source) -> DeviceClass:
    return DeviceClass(name=_name(doc) or "", selectors=_selectors(doc["spec"].get("selectors")),
                       source=source, raw=doc)


EXTRACTORS_CACHE_BYTES = 16 * 1024 * 1024
"""Budget of the extractor lists kept: their texts come straight from requests (up to the
webhook's 7 MiB body, 28 MiB as Python strings), so the count alone bounded nothing."""


@cached("model.extractors", 4096, lru=False, max_bytes=EXTRACTORS_CACHE_BYTES,
        weigh=lambda args, extractors: 256 * (1 + len(extractors)) + text_weight(
            text for pair in args[0] for text in pair))
def _extractors(entries: tuple[tuple[str | None, str | None], ...]) -> tuple[Extractor, ...]:
    """The `Extractor`s of a `sharingAffinity` list of (name, expression) pairs.

    An explicit bounded cache: drivers publish the same extractors in slice after slice, and
    the webhook models each slice it admits; building the views is most of modelling a
    metadata slice. The views are immutable, so slices share them. (A pair that is not
    hashable — not a string — raises TypeError, which `parse` treats as any malformed input.)
    """
    return tuple([Extractor(index=i, name=_text(name), expression=_text(expression))
                  for i, (name, expression) in enumerate(entries)])


def _text(value: str | None) -> str | None:
    return go_string(value) if value is not None else None


def _device(index: int, raw: Mapping[str, Any]) -> Device:
    capacity = {
        name: Capacity(value=str(c["value"]), request_policy=c.get("requestPolicy"))
        for name, c in (raw.get("capacity") or {}).items()
    }
    return Device(
        index=index,
        name=raw["name"],
        allow_multiple_allocations=bool(raw.get("allowMultipleAllocations", False)),
        attributes=raw.get("attributes") or {},
        capacity=capacity,
    )


_SPEC_PATHS = {True: ("spec", "spec"), False: ("spec",)}


def _claim(doc: Mapping[str, Any], source: Source, kind: str) -> ResourceClaim:
    # Built for every claim of a cluster dump (`locks`, `explain`): list comprehensions, not
    # generator expressions, and no work for the empty parts.
    is_template = kind == "ResourceClaimTemplate"
    spec = doc["spec"]["spec"] if is_template else doc["spec"]
    devices = spec.get("devices") or {}
    meta = doc.get("metadata") or {}
    results = (((doc.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
    requests = devices.get("requests")
    configs = devices.get("config")
    constraints = devices.get("constraints")
    return ResourceClaim(
        kind=kind,
        api_version=doc["apiVersion"],
        namespace=meta.get("namespace") or "default",
        name=_name(doc) or "",
        requests=tuple([_request(i, r) for i, r in enumerate(requests)]) if requests else (),
        configs=tuple([_config(i, c) for i, c in enumerate(configs)]) if configs else (),
        allocation=tuple([_allocated(r) for r in results]) if results else (),
        source=source,
        raw=doc,
        spec_path=_SPEC_PATHS[is_template],
        constraints=tuple([_constraint(i, c) for i, c in enumerate(constraints)]) if constraints else (),
    )


def _allocated(raw: Mapping[str, Any]) -> AllocatedDevice:
    consumed = raw.get("consumedCapacity")
    return AllocatedDevice(request=raw["request"], driver=raw["driver"], pool=raw["pool"],
                           device=raw["device"], share_id=raw.get("shareID") or None,
                           consumed_capacity=consumed if isinstance(consumed, Mapping) else None,
                           admin_access=raw.get("adminAccess") is True)


def _constraint(index: int, raw: Mapping[str, Any]) -> DeviceConstraint:
    requests = raw.get("requests")
    match, distinct = raw.get("matchAttribute"), raw.get("distinctAttribute")
    return DeviceConstraint(index=index, requests=tuple(requests) if requests else (),
                            match_attribute=match if isinstance(match, str) else None,
                            distinct_attribute=distinct if isinstance(distinct, str) else None)


def _device_request(name: str, parent: str | None, raw: Mapping[str, Any]) -> DeviceRequest:
    capacity = raw.get("capacity")
    return DeviceRequest(
        name=name,
        parent=parent,
        device_class_name=raw["deviceClassName"],
        selectors=_selectors(raw.get("selectors")),
        count=raw.get("count"),
        allocation_mode=raw.get("allocationMode"),
        capacity_requests=(capacity.get("requests") or {}) if capacity else {},
        admin_access=parent is None and raw.get("adminAccess") is True,  # no such field on a sub-request
    )


def _request(index: int, raw: Mapping[str, Any]) -> Request:
    name = raw["name"]
    exactly = raw.get("exactly")
    alternatives = raw.get("firstAvailable")
    return Request(
        index=index,
        name=name,
        exactly=_device_request(name, None, exactly) if isinstance(exactly, Mapping) else None,
        first_available=tuple([_device_request(f"{name}/{sub['name']}", name, sub) for sub in alternatives])
        if alternatives else (),
    )


def _config(index: int, raw: Mapping[str, Any]) -> ClaimConfig:
    opaque = raw.get("opaque")
    requests = raw.get("requests")
    return ClaimConfig(
        index=index,
        requests=tuple(requests) if requests else (),
        opaque=OpaqueConfig(driver=opaque["driver"], parameters=opaque["parameters"])
        if isinstance(opaque, Mapping) else None,
    )
