"""DRA's `device` CEL environment: selector compilation, the `device` value and declared sizes.

Why: the allocator only offers a request the devices that satisfy its DeviceClass's selectors
and its own (reference §3, §6.1). A dry run that wants to know which pools can serve a request
must compile those selectors as DRA's compiler does (`dynamic-resource-allocation/cel`), build
the `device` value as `DeviceMatches` does, and evaluate with the allocator's runtime limit. The
compiler is the shared CEL module (`dra_affinity.policies.cel.compile`) in another environment: env kind
`dra-device` (`dra_affinity.policies.cel.check.env.ENV_KINDS`).

What cel-expr-python cannot declare, and how it is restored. Upstream `device` is an object type
(`kubernetes.DRADevice`) with typed fields; cel-expr-python cannot declare an object type without
the protobuf runtime, so the checker sees `device: map(string, dyn)`. After the engine's type
check, `compile_selector`

* reports `undefined field '<f>'` for a selection of an undeclared field of `device` (e.g.
  `allowMultipleAllocations` before ConsumableCapacity), and cel-go's errors for indexing
  `device`, testing membership in it or iterating over it;
* re-types every node reachable from `device` by field selection, indexing and `cel.bind` with
  the declared types (`driver: string`, `attributes: map(string, map(string, A))`,
  `capacity: map(string, map(string, kubernetes.Quantity))`, `allowMultipleAllocations: bool`,
  where the attribute type A is `dyn` with ListTypeAttributes and `google.protobuf.Any` before);
  the re-typed AST is what the output-type rule and the cost estimator read, so `device.driver`
  alone is rejected (`not string`) and selections on the declared maps cost 1 as in cel-go;
* gives the runtime program back the Quantity type of capacity values (a type-map entry appended
  to the checked AST), so `==` on a capacity value compares quantities, not their spelling.

Type errors *downstream* of a field (`!device.driver`, `device.driver <= 8`) come from a second
check of the text with every `device.<field>` rewritten into a variable of the field's type
(`device_driver`: the same length, so positions and messages are cel-go's); see `_typed_check`.
Not restored: downstream types of a field reached through an alias (`cel.bind(d, device,
d.driver)`, checked as `dyn`), and cel-go's errors for other whole-`device` misuse
(`device.size()`).

List-type attributes (KEP-5491): `ints`/`bools`/`strings`/`versions` become CEL lists (from 1.37
whatever the gate; in 1.36 with DRAListTypeAttributes), and `includes` is declared per release,
mode and gate (`dra_device_includes`) and priced as DRA's cost estimator prices it.

Runtime semantics (`DeviceMatches`): `device` is `{driver, allowMultipleAllocations (default
false), attributes, capacity}`; attribute names without a domain take the driver's; looking up an
*unknown domain* in `attributes` or `capacity` yields an empty map instead of an error, so
`has(device.attributes["gpu.example.com"].model)` is false on a NIC. A CEL map cannot carry a
default, so the value handed to CEL gets an empty map for every domain the selector looks up by a
constant key (and for the device's own driver when it looks one up by a computed key), unless the
selector also uses the map as a whole (`in`, `size()`, iteration, binding it to a variable),
where an added key would be visible. The cost walk reads both maps as upstream's map with a
default (`DefaultingMap`: every domain is found, `in` sees only those present); when it served a
default the program could not see, its value is the answer.

Values the engine carries differently (a version attribute is a tagged list, a quantity its
string) answer as cel-go's objects behind `dyn`: `eval.runtime_library_values`. Where the walk
and the program disagree on whether the evaluation fails, the walk decides, as for extractors.

Costs: `selector_cost` estimates as DRA's compiler does (`library.CostEstimator` pricing with a
size estimator that knows the declared maxima of §3.1); `evaluate_selector` tracks cel-go's
runtime cost with the allocator's per-evaluation limit.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from cel_expr_python import cel

from ..cel.check.env import (
    ENV_KINDS,
    CelEnvironment,
    DeviceDeclaration,
    EnvKey,
    build_environment,
    dra_device_declaration,
    get_env,
)
from ..cel.check.validators import format_go_type
from ..cel.common.ast import CheckedAst, ConstKind, Node, NodeKind, Reference
from ..cel.common.errors import CompileProblem, ErrorStage, render_errors
from ..cel.common.jsonvalue import ErrorValue, Opaque, OptionalValue
from ..cel.common.types import (
    ANY,
    BOOL,
    DYN,
    STRING,
    CelType,
    Primitive,
    TypeKind,
    map_of,
)
from ..cel.common.wire import field_spans, int_field, len_field
from ..cel.compile import CompileResult, compile_in
from ..cel.cost.estimate import (
    CallEstimate,
    CostEstimate,
    CostReport,
    EstimateNode,
    SizeEstimate,
    SizePath,
    estimate_cost,
    estimate_size,
)
from ..cel.cost.k8s import KubernetesCallEstimator
from ..cel.eval.runtime import (
    bridge_for,
    cel_type_name,
    interp_type_name,
    to_plain,
    translate_error,
)
from ..cel.eval.runtime_cost import COST_LIMIT_EXCEEDED, track_cost
from ..cel.eval.runtime_library_values import DefaultingMap
from ..cel.k8s_library import quantity
from ..cel.k8s_library._resource import QuantityError, parse_quantity
from ..cel.k8s_library._types import TAG_SEMVER
from ..cel.k8s_library.dra import DRA_INCLUDES_ID, LIST_INCLUDES_ID
from ..cel.k8s_library.semver import SemverError
from ..cel.k8s_library.semver import parse as parse_semver
from ..core.cache import cached
from ..model.resources import Device

__all__ = [
    "DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH",
    "DEVICE_MAX_DOMAIN_LENGTH",
    "DEVICE_MAX_ID_LENGTH",
    "DEVICE_TYPE_NAME",
    "DRIVER_NAME_MAX_LENGTH",
    "MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE",
    "MAX_ATTRIBUTE_VALUES_PER_DEVICE",
    "QUANTITY_TYPE_NAME",
    "SELECTOR_CACHE_SIZE",
    "SELECTOR_MAX_COST",
    "CompiledSelector",
    "DeviceSchema",
    "DeviceSizeEstimator",
    "DeviceValue",
    "DeviceValueProblem",
    "DomainPlan",
    "SelectorResult",
    "compile_selector",
    "device_schema",
    "device_value",
    "evaluate_selector",
    "selector_cache_info",
    "selector_cost",
]

# ------------------------------------------------------------------------------------------------
# Upstream constants (k8s.io/api/resource/v1; reference §3.1, §3.4)
# ------------------------------------------------------------------------------------------------

DRIVER_NAME_MAX_LENGTH = 63
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH = 64
MAX_ATTRIBUTE_VALUES_PER_DEVICE = 48
SELECTOR_MAX_COST = 1_000_000
"""`CELSelectorExpressionMaxCost`: the allocator's runtime limit per evaluation."""

DEVICE_TYPE_NAME = "kubernetes.DRADevice"
QUANTITY_TYPE_NAME = "kubernetes.Quantity"
SEMVER_TYPE_NAME = "kubernetes.Semver"

_DEVICE_VAR = "device"
_DRIVER, _MULTI, _ATTRIBUTES, _CAPACITY = "driver", "allowMultipleAllocations", "attributes", "capacity"

# ------------------------------------------------------------------------------------------------
# Declared types (apiservercel.DeclType, reduced to what sizes and types need)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Decl:
    """A declared type: its CEL type, `MaxElements`, and fields or key/element declarations."""

    cel_type: CelType
    max_elements: int
    fields: Mapping[str, _Decl] = field(default_factory=lambda: MappingProxyType({}))
    key: _Decl | None = None
    elem: _Decl | None = None


def _map_decl(key: _Decl, elem: _Decl, max_entries: int) -> _Decl:
    return _Decl(map_of(key.cel_type, elem.cel_type), max_entries, key=key, elem=elem)


@dataclass(frozen=True, eq=False)
class DeviceSchema:
    """The declared `device` of one environment (one `DeviceDeclaration`)."""

    declaration: DeviceDeclaration
    root: _Decl
    attribute: _Decl
    """The attribute value declaration (`dyn` or `google.protobuf.Any`, 64 elements)."""
    outer_attributes: _Decl
    outer_capacity: _Decl


_QUANTITY = CelType(TypeKind.ABSTRACT, name=QUANTITY_TYPE_NAME)
_DEVICE = CelType(TypeKind.MESSAGE, name=DEVICE_TYPE_NAME)


@cached("analysis.device_schemas", 8)
def device_schema(declaration: DeviceDeclaration) -> DeviceSchema:
    """The declared types of `declaration` (compile.go's `newCompiler`)."""
    domain = _Decl(STRING, DEVICE_MAX_DOMAIN_LENGTH)
    ident = _Decl(STRING, DEVICE_MAX_ID_LENGTH)
    attribute = _Decl(DYN if declaration.list_type_attributes else ANY,
                      max(DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH, MAX_ATTRIBUTE_VALUES_PER_DEVICE)
                      if declaration.list_type_attributes else DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH)
    per_device = MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE
    outer_attributes = _map_decl(domain, _map_decl(ident, attribute, per_device), per_device)
    # apiservercel.QuantityDeclType declares no MaxElements: its size is {0, 0}.
    outer_capacity = _map_decl(domain, _map_decl(ident, _Decl(_QUANTITY, 0), per_device),
                               per_device)
    fields: dict[str, _Decl] = {}
    if declaration.allow_multiple_allocations:
        # upstream gives this bool MaxElements 1, or its comparisons estimate at 0
        fields[_MULTI] = _Decl(BOOL, 1)
    fields[_DRIVER] = _Decl(STRING, DRIVER_NAME_MAX_LENGTH)
    fields[_ATTRIBUTES] = outer_attributes
    fields[_CAPACITY] = outer_capacity
    root = _Decl(_DEVICE, 0, fields=MappingProxyType(fields))
    return DeviceSchema(declaration, root, attribute, outer_attributes, outer_capacity)


class DeviceSizeEstimator:
    """Declared maximum sizes of everything reachable from `device` (compile.go `sizeEstimator`).

    Walks a cel-go path (`device`, field names, `@items`/`@values`/`@keys`) through the declared
    types and answers `{0, MaxElements}`; any name under an attribute map is an attribute. Paths
    not rooted at `device` get no answer.
    """

    def __init__(self, schema: DeviceSchema) -> None:
        self.schema = schema

    def estimate_size(self, path: SizePath) -> SizeEstimate | None:
        """The declared size of the node at `path`, or None when unknown."""
        if not path or path[0] != _DEVICE_VAR:
            return None
        node = self.schema.root
        for name in path[1:]:
            if name in ("@items", "@values"):
                if node.elem is None:
                    return None
                node = node.elem
            elif name == "@keys":
                if node.key is None:
                    return None
                node = node.key
            else:
                found = node.fields.get(name)
                if found is None:
                    if node.elem is self.schema.attribute:
                        node = self.schema.attribute
                        continue
                    return None
                node = found
        return SizeEstimate(0, node.max_elements)


# ------------------------------------------------------------------------------------------------
# Analysis of a checked selector: upstream field errors, upstream types, domain lookups
# ------------------------------------------------------------------------------------------------

_DYNAMIC = object()
"""A lookup by a computed key."""


@dataclass(frozen=True, slots=True)
class DomainPlan:
    """How a selector looks up domains in one of `device.attributes` / `device.capacity`.

    `keys`: domains looked up by a constant key; `dynamic`: some lookup uses a computed key;
    `whole`: the map is also used as a whole (then no default domains may be added).
    """

    keys: frozenset[str] = frozenset()
    dynamic: bool = False
    whole: bool = False

    def defaults(self, present: Mapping[str, object], driver: str) -> tuple[str, ...]:
        """The domains to add as empty maps to a device's map whose domains are `present`."""
        if self.whole:
            return ()
        wanted = set(self.keys)
        if self.dynamic:
            wanted.add(driver)
        return tuple(sorted(k for k in wanted if k not in present))


class _MapUse:
    """What the walk learns about one outer map; frozen into a `DomainPlan` at the end."""

    __slots__ = ("dynamic", "keys", "whole")

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.dynamic = False
        self.whole = False


class _Analysis:
    """One scoped walk of a checked selector (see the module docstring)."""

    def __init__(self, checked: CheckedAst, schema: DeviceSchema) -> None:
        self.checked = checked
        self.schema = schema
        self.decls: dict[int, _Decl] = {}
        self.errors: list[CompileProblem] = []
        self.uses = {_ATTRIBUTES: _MapUse(), _CAPACITY: _MapUse()}
        self.field_uses: list[tuple[int, str]] = []
        """(code-point offset of `device`, field) of every `device.<declared field>` written
        as such; `_typed_check` rewrites them into typed variables."""
        self.untypable = False
        """`device` also reaches a field through an alias (`cel.bind(d, device, d.driver)`)."""

    # --- bookkeeping ---

    def _outer(self, decl: _Decl | None) -> str | None:
        if decl is self.schema.outer_attributes:
            return _ATTRIBUTES
        if decl is self.schema.outer_capacity:
            return _CAPACITY
        return None

    def _use(self, decl: _Decl | None, key: object) -> None:
        """Record how an outer map (`decl`) is used: a key, `_DYNAMIC`, or None (whole)."""
        which = self._outer(decl)
        if which is None:
            return
        use = self.uses[which]
        if isinstance(key, str):
            use.keys.add(key)
        elif key is _DYNAMIC:
            use.dynamic = True
        else:
            use.whole = True

    def _error(self, node: Node, message: str) -> None:
        line, column = self.checked.location(node.id)
        self.errors.append(CompileProblem(line, column, message, ErrorStage.CHECK))

    def plan(self, which: str) -> DomainPlan:
        use = self.uses[which]
        return DomainPlan(frozenset(use.keys), use.dynamic, use.whole)

    # --- walk ---

    def walk(self, n: Node, scope: Mapping[str, _Decl | None]) -> _Decl | None:
        """The declared type of `n` (None: not reachable from `device`); records uses/errors."""
        decl = self._walk(n, scope)
        if decl is not None:
            self.decls[n.id] = decl
        return decl

    def _whole(self, n: Node | None, scope: Mapping[str, _Decl | None]) -> _Decl | None:
        """Walk a child whose outer-map value, if any, is used as a whole."""
        if n is None:
            return None
        decl = self.walk(n, scope)
        self._use(decl, None)
        return decl

    def _walk(self, n: Node, scope: Mapping[str, _Decl | None]) -> _Decl | None:
        kind = n.kind
        if kind is NodeKind.IDENT:
            if n.name in scope:
                return scope[n.name]
            return self.schema.root if n.name == _DEVICE_VAR else None
        if kind is NodeKind.SELECT:
            return self._select(n, scope)
        if kind is NodeKind.CALL:
            return self._call(n, scope)
        if kind is NodeKind.COMPREHENSION:
            return self._comprehension(n, scope)
        for child in n.children():
            self._whole(child, scope)
        return None

    def _select(self, n: Node, scope: Mapping[str, _Decl | None]) -> _Decl | None:
        assert n.operand is not None
        base = self.walk(n.operand, scope)
        if base is self.schema.root:
            found = base.fields.get(n.field)
            if found is None:
                self._error(n, f"undefined field '{n.field}'")
            elif not n.test_only:
                operand = n.operand
                offset = self.checked.offset(operand.id)
                if operand.kind is NodeKind.IDENT and operand.name == _DEVICE_VAR \
                        and offset is not None:
                    self.field_uses.append((offset, n.field))
                else:
                    self.untypable = True
            return None if n.test_only else found
        if n.test_only:
            self._use(base, None)  # has(device.attributes.d): a presence test of the map
            return None
        self._use(base, n.field)
        return base.elem if base is not None else None

    def _call(self, n: Node, scope: Mapping[str, _Decl | None]) -> _Decl | None:
        fn, args = n.function, n.args
        if n.target is None and len(args) == 2 and fn in ("_[_]", "_[?_]", "_?._"):
            container = self.walk(args[0], scope)
            key = args[1]
            self._whole(key, scope)
            key_value = _string_const(key)
            if container is self.schema.root and fn == "_[_]":
                self._error(n, "found no matching overload for '_[_]' applied to "
                               f"'({DEVICE_TYPE_NAME}, {format_go_type(self.checked.type_of(key.id))})'")
                return None
            self._use(container, key_value if key_value is not None else _DYNAMIC)
            if fn == "_[_]" and container is not None and container.elem is not None:
                return container.elem
            return None
        if n.target is None and len(args) == 2 and fn == "@in":
            self._whole(args[0], scope)
            container = self._whole(args[1], scope)
            if container is self.schema.root:
                element = format_go_type(self.checked.type_of(args[0].id))
                self._error(n, "found no matching overload for '@in' applied to "
                               f"'({element}, {DEVICE_TYPE_NAME})'")
            return None
        self._whole(n.target, scope)
        for arg in args:
            self._whole(arg, scope)
        return None

    def _comprehension(self, n: Node, scope: Mapping[str, _Decl | None]) -> _Decl | None:
        assert n.iter_range is not None
        source = self._whole(n.iter_range, scope)
        if source is self.schema.root or (source is not None and source.cel_type == ANY):
            # an object, or a scalar attribute before ListTypeAttributes made them `dyn`
            self._error(n.iter_range,
                        f"expression of type '{format_go_type(source.cel_type)}' cannot be the "
                        "range of a comprehension (must be list, map, or dynamic)")
        init = self._whole(n.accu_init, scope)
        inner = dict(scope)
        if n.iter_var2:
            inner[n.iter_var] = source.key if source is not None and source.key else None
            inner[n.iter_var2] = source.elem if source is not None else None
        else:
            # one variable: a map's keys, a list's elements (no declared list reaches here)
            inner[n.iter_var] = source.key if source is not None else None
        inner[n.accu_var] = init  # cel.bind's variable; `@result` of macros starts as a literal
        self._whole(n.loop_condition, inner)
        self._whole(n.loop_step, inner)
        return self._whole(n.result, {**scope, n.accu_var: init})


def _string_const(n: Node) -> str | None:
    if n.kind is NodeKind.CONST and n.const is not None and n.const.kind is ConstKind.STRING:
        value = n.const.value
        return value if isinstance(value, str) else None
    return None


_MAP_OVERLOADS = {"_[_]": (0, "index_map"), "@in": (1, "in_map")}
"""Calls whose candidate overloads cel-go narrows to one when the container is a declared map:
function -> (position of the container argument, the map overload)."""


def _retyped(checked: CheckedAst, decls: Mapping[int, _Decl]) -> CheckedAst:
    """`checked` with the declared types of `decls`.

    The engine saw `dyn` containers and recorded every candidate overload (`index_list` and
    `index_map`, `in_list` and `in_map`); cel-go, seeing a map, records the map overload only,
    and the cost estimate is the union over candidates, so the candidates are narrowed too.
    """
    if not decls:
        return checked
    types = dict(checked.types)
    references = dict(checked.references)
    for node_id, decl in decls.items():
        types[node_id] = decl.cel_type
    for node in checked.walk():
        narrowed = _MAP_OVERLOADS.get(node.function) if node.kind is NodeKind.CALL else None
        if narrowed is None or node.target is not None or len(node.args) != 2:
            continue
        container = decls.get(node.args[narrowed[0]].id)
        if container is not None and container.elem is not None:
            references[node.id] = Reference(node.function, (narrowed[1],))
    return dataclasses.replace(checked, types=MappingProxyType(types),
                               references=MappingProxyType(references))


def _narrowed(checked: CheckedAst, typed: CheckedAst) -> CheckedAst:
    """`checked` with each call's candidate overloads narrowed to those the typed check chose.

    The engine saw `device`'s fields as `dyn` and kept every overload a `dyn` argument could
    take (`string(device.driver)`: `bytes_to_string` too, priced by the length of the bytes);
    cel-go, knowing the field's type, keeps the one that applies, and the estimate is the union
    over the candidates. The typed text has the same positions, so calls are matched by
    function and source offset.
    """
    chosen: dict[tuple[str, int], tuple[str, ...]] = {}
    for node in typed.walk():
        offset = typed.offset(node.id) if node.kind is NodeKind.CALL else None
        if offset is not None:
            chosen[(node.function, offset)] = typed.overload_ids(node.id)
    references = dict(checked.references)
    changed = False
    for node in checked.walk():
        if node.kind is not NodeKind.CALL:
            continue
        offset = checked.offset(node.id)
        candidates = checked.overload_ids(node.id)
        narrower = chosen.get((node.function, offset)) if offset is not None else None
        if narrower and len(narrower) < len(candidates) and set(narrower) <= set(candidates):
            references[node.id] = Reference(node.function, narrower)
            changed = True
    if not changed:
        return checked
    return dataclasses.replace(checked, references=MappingProxyType(references))


# --- downstream types: `device.<field>` checked as a typed variable -----------------------------

_TYPED_PREFIX = "device_"
"""`device.driver` is rewritten `device_driver`: same length, so every position is unchanged."""


def _typed_variables(schema: DeviceSchema) -> dict[str, cel.Type]:
    """The checker's variables for the rewritten text: `device` plus one per declared field.

    Attribute values are `dyn` even where upstream's are `google.protobuf.Any` (cel-go's
    checker treats both alike except as a comprehension range, which `_Analysis` reports).
    """
    string, dyn = cel.Type.STRING, cel.Type.DYN
    quantity_type = cel.Type.AbstractType(QUANTITY_TYPE_NAME, [])
    out = {
        _DEVICE_VAR: cel.Type.Map(string, dyn),
        _TYPED_PREFIX + _DRIVER: string,
        _TYPED_PREFIX + _ATTRIBUTES: cel.Type.Map(string, cel.Type.Map(string, dyn)),
        _TYPED_PREFIX + _CAPACITY: cel.Type.Map(string, cel.Type.Map(string, quantity_type)),
    }
    if schema.declaration.allow_multiple_allocations:
        out[_TYPED_PREFIX + _MULTI] = cel.Type.BOOL
    return out


@cached("analysis.device_typed_envs", 16)
def _typed_env(key: EnvKey, declaration: DeviceDeclaration) -> CelEnvironment:
    kind = ENV_KINDS[key.kind]
    return build_environment(key.kubernetes_version, key.mode,
                             _typed_variables(device_schema(declaration)), kind.options, key=key,
                             kind_libraries=kind.libraries_for(key))


def _typed_check(expression: str, key: EnvKey, schema: DeviceSchema,
                 analysis: _Analysis) -> CompileResult | None:
    """The expression checked with `device`'s fields typed as upstream declares them.

    cel-expr-python cannot declare the object type `kubernetes.DRADevice`, so each
    `device.<field>` is rewritten into a variable of the field's declared type and the text is
    checked again: `!device.driver` or `device.driver <= 8` then fail as in cel-go, with the
    same positions. None when the rewrite does not apply (a field reached through an alias, a
    spelling other than `device.<field>`, or the text already naming a rewritten variable).
    """
    if analysis.untypable or not analysis.field_uses:
        return None
    names = _typed_variables(schema)
    if any(name in expression for name in names if name != _DEVICE_VAR):
        return None
    text = list(expression)
    for offset, field_name in analysis.field_uses:
        spelled = f"{_DEVICE_VAR}.{field_name}"
        if expression[offset:offset + len(spelled)] != spelled:
            return None
        text[offset + len(_DEVICE_VAR)] = "_"
    return compile_in(_typed_env(key, schema.declaration), "".join(text))


# ------------------------------------------------------------------------------------------------
# Compilation
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CompiledSelector:
    """A DRA selector compiled as `CompileCELExpression` does (errors as values).

    * `ok`: it compiled, passed the device-field checks and the output-type rule;
    * `detail`: upstream's `apiservercel.Error.Detail` when not ok (`compilation failed: ...` or
      `must evaluate to bool or the unknown type, not <type>`), or, when `engine_limited`, why
      our engine cannot compile what upstream accepts;
    * `checked`: the AST with the declared types restored (what rules and costs read);
    * `engine`: the engine's compilation (`device: map(string, dyn)`), whose AST the runtime
      cost walk uses.
    """

    expression: str
    key: EnvKey
    ok: bool
    detail: str | None
    errors: tuple[CompileProblem, ...]
    output_type: str | None
    checked: CheckedAst | None
    program: Any
    engine: CompileResult
    schema: DeviceSchema | None
    attributes_plan: DomainPlan = DomainPlan()
    capacity_plan: DomainPlan = DomainPlan()
    engine_limited: bool = False


SELECTOR_CACHE_SIZE = 1024
"""Compiled selectors kept (keyed by expression and environment); a cluster has few classes."""


def compile_selector(expression: str, key: EnvKey) -> CompiledSelector:
    """Compile a DRA device selector in the environment `key` (kind `dra-device`), cached.

    The allocator compiles in StoredExpressions without cost estimation; the API server compiles
    new selectors in NewExpressions and then compares `selector_cost(...)` with the limit.
    """
    if key.kind != "dra-device":
        raise ValueError(f"a device selector compiles in the dra-device environment, not {key}")
    return _compile_cached(expression, key)


@cached("analysis.selectors", SELECTOR_CACHE_SIZE)
def _compile_cached(expression: str, key: EnvKey) -> CompiledSelector:
    env = get_env(key)
    engine = compile_in(env, expression)
    declaration = dra_device_declaration(key.kubernetes_version, key.mode, key.device_features)
    schema = device_schema(declaration) if declaration is not None else None

    def failed(errors: tuple[CompileProblem, ...], output_type: str | None = None,
               checked: CheckedAst | None = None, detail: str | None = None) -> CompiledSelector:
        text = detail or f"compilation failed: {render_errors(errors, expression)}"
        return CompiledSelector(expression, key, False, text, errors, output_type, checked, None,
                                engine, schema)

    if engine.engine_limited:
        return dataclasses.replace(failed((), detail=engine.engine_limit_reason),
                                   engine_limited=True)
    if not engine.ok or engine.checked is None:
        return failed(engine.errors, engine.output_type, engine.checked)
    if schema is None:  # unreachable: without a declaration `device` is undeclared
        return failed(engine.errors, engine.output_type, engine.checked)
    analysis = _Analysis(engine.checked, schema)
    try:
        analysis.walk(engine.checked.root, {})
    except RecursionError:
        # deeper than Python's stack (cel-go's estimator recurses as deep): keep the engine's
        # types, and add no default domains, as for a map used as a whole
        analysis.decls.clear()
        for use in analysis.uses.values():
            use.whole = True
    typed = _typed_check(expression, key, schema, analysis)
    problems = list(analysis.errors)
    if typed is not None and not typed.ok:
        problems += [e for e in typed.errors if e not in problems]
    if problems:
        errors = tuple(sorted(problems, key=lambda e: (e.line, e.column)))
        return failed(errors, engine.output_type, engine.checked)
    checked = _retyped(engine.checked, analysis.decls)
    if typed is not None and typed.checked is not None:
        checked = _narrowed(checked, typed.checked)
    output = checked.output_type()
    if typed is not None and typed.checked is not None and not (
            schema.attribute.cel_type == ANY and typed.checked.output_type() == DYN):
        # (the rewrite types attribute values `dyn`; where upstream's are `Any`, the re-typed
        # AST knows better)
        output = typed.checked.output_type()
    output_text = format_go_type(output)
    if not (_is_bool(output) or output == schema.attribute.cel_type):
        return failed((), output_text, checked,
                      f"must evaluate to bool or the unknown type, not {output_text}")
    quantities = tuple(i for i, d in analysis.decls.items() if d.cel_type == _QUANTITY)
    program = engine.program
    if quantities:
        serialized = env.checker.compile(expression).serialize()
        # should planning fail, the engine's program stays: `==` then compares spellings
        with contextlib.suppress(RuntimeError):
            program = env.runtime.deserialize(_with_abstract_types(serialized, quantities,
                                                                   QUANTITY_TYPE_NAME))
    return CompiledSelector(expression, key, True, None, (), output_text, checked, program, engine,
                            schema, analysis.plan(_ATTRIBUTES), analysis.plan(_CAPACITY))


def _is_bool(t: CelType) -> bool:
    return t.kind is TypeKind.PRIMITIVE and t.primitive is Primitive.BOOL


def selector_cache_info() -> tuple[int, int, int]:
    """(hits, misses, current size) of the selector cache."""
    info = _compile_cached.cache_info()
    return info.hits, info.misses, info.size


def selector_cost(selector: CompiledSelector) -> CostReport | None:
    """The estimated cost, as DRA's compiler estimates it (None when it did not compile).

    Kubernetes' `library.CostEstimator` prices the calls; its size estimator is the declared
    maxima of `device` (`DeviceSizeEstimator`); presence tests are free.
    """
    if not selector.ok or selector.checked is None or selector.schema is None:
        return None
    sizes = DeviceSizeEstimator(selector.schema)
    return estimate_cost(selector.checked, presence_test_cost=0, sizes=sizes,
                         calls=_DeviceCallEstimator(sizes))


class _DeviceCallEstimator:
    """DRA's `draCostEstimator`: `includes` priced as upstream, the rest by Kubernetes' pricing.

    1.36's own `includes` costs one per value of the longest list an attribute may hold (48),
    whatever the target; the lists library's (1.37 on) one per element of the target's size.
    """

    def __init__(self, sizes: DeviceSizeEstimator) -> None:
        self.base = KubernetesCallEstimator(sizes)
        self.sizes = sizes

    def estimate_call(self, function: str, overload_id: str, target: EstimateNode | None,
                      args: Sequence[EstimateNode]) -> CallEstimate | None:
        if function == "includes" and target is not None:
            if overload_id == DRA_INCLUDES_ID:
                return CallEstimate(CostEstimate(0, MAX_ATTRIBUTE_VALUES_PER_DEVICE))
            if overload_id == LIST_INCLUDES_ID:
                found = self.base.estimate_call(function, overload_id, target, args)
                if found is not None:
                    return found
                return CallEstimate(estimate_size(self.sizes, target).multiply_by_cost(
                    CostEstimate(1, 1)))
        return self.base.estimate_call(function, overload_id, target, args)


# --- the checked AST's wire format: append type-map entries ------------------------------------


def _with_abstract_types(serialized: bytes, node_ids: tuple[int, ...], type_name: str) -> bytes:
    """`serialized` (an Any holding a `cel.expr.CheckedExpr`) with `node_ids` typed `type_name`.

    The entries are appended to `type_map` (field 3); protobuf map semantics keep the last
    entry of a key. `k8s_library.RuntimeEnv.deserialize` reads these types to give Quantity
    comparisons value equality.
    """
    abstract = len_field(14, len_field(1, type_name.encode()))  # Type.abstract_type{name}
    entries = b"".join(len_field(3, int_field(1, i) + len_field(2, abstract)) for i in node_ids)
    out = bytearray()
    for number, start, end, _ in field_spans(serialized, 0, len(serialized)):
        payload = serialized[start:end]
        if number == 2:  # Any.value: the CheckedExpr
            payload += entries
        out += len_field(number, payload)
    return bytes(out)


# ------------------------------------------------------------------------------------------------
# The device value (`DeviceMatches`)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceValueProblem:
    """A device whose attributes or capacity the allocator could not turn into CEL values."""

    message: str


@dataclass(frozen=True, slots=True)
class DeviceValue:
    """`device` for one device: attributes and capacity by domain, then by name.

    Values are interpreter values (`dra_affinity.policies.cel.common.jsonvalue`): versions and quantities are
    `Opaque` carriers; `to_plain` gives what cel-expr-python receives.
    """

    driver: str
    allow_multiple_allocations: bool
    attributes: Mapping[str, Mapping[str, object]]
    capacity: Mapping[str, Mapping[str, object]]

    def variables(self, attributes_plan: DomainPlan = DomainPlan(),
                  capacity_plan: DomainPlan = DomainPlan()) -> tuple[dict[str, object],
                                                                     dict[str, object]]:
        """(`device` for the cost walk, `device` for cel-expr-python), with the plans' defaults."""
        attributes = _with_defaults(self.attributes, attributes_plan, self.driver)
        capacity = _with_defaults(self.capacity, capacity_plan, self.driver)
        interp: dict[str, object] = {
            _DRIVER: self.driver, _MULTI: self.allow_multiple_allocations,
            _ATTRIBUTES: DefaultingMap(attributes), _CAPACITY: DefaultingMap(capacity),
        }
        return {_DEVICE_VAR: interp}, {_DEVICE_VAR: to_plain(interp)}


def _with_defaults(maps: Mapping[str, Mapping[str, object]], plan: DomainPlan,
                   driver: str) -> dict[str, object]:
    out: dict[str, object] = {domain: dict(values) for domain, values in maps.items()}
    for domain in plan.defaults(maps, driver):
        out[domain] = {}
    return out


def _qualified(name: str, driver: str) -> tuple[str, str]:
    """compile.go `parseQualifiedName`: `domain/id`, or the driver's domain for a bare id."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _scalar_value(kind: str, value: object) -> tuple[object, str | None]:
    """(CEL value, None) of one scalar of `kind`, or (None, error)."""
    if kind == "int":
        if isinstance(value, int) and not isinstance(value, bool) and _INT64[0] <= value <= _INT64[1]:
            return value, None
        return None, f"invalid int value {value!r}"
    if kind == "bool":
        return (value, None) if isinstance(value, bool) else (None, f"invalid bool value {value!r}")
    if kind == "string":
        return (value, None) if isinstance(value, str) else (None, f"invalid string value {value!r}")
    if not isinstance(value, str):
        return None, f"parse semantic version: invalid value {value!r}"
    try:
        version = parse_semver(value)
    except SemverError as err:
        return None, f"parse semantic version: {err}"
    return Opaque(SEMVER_TYPE_NAME, [TAG_SEMVER, str(version)]), None


_SCALAR_KINDS = ("int", "bool", "string", "version")
_LIST_KINDS = (("ints", "int"), ("bools", "bool"), ("strings", "string"), ("versions", "version"))


def _attribute_value(raw: object, list_attributes: bool = True) -> tuple[object, str | None]:
    """(CEL value, None) of one `DeviceAttribute`, or (None, error) (`getAttributeValue`).

    With `list_attributes` (KEP-5491: from 1.37 always, in 1.36 with DRAListTypeAttributes),
    `ints`/`bools`/`strings`/`versions` become CEL lists and are looked at first, as upstream
    does; otherwise such an attribute is upstream's `unsupported attribute value`, which
    aborts scheduling.
    """
    if not isinstance(raw, Mapping):
        return None, "unsupported attribute value"
    if list_attributes:
        for field_name, kind in _LIST_KINDS:
            values = raw.get(field_name)
            if values is None:
                continue
            if not isinstance(values, list):
                return None, f"invalid {field_name} value {values!r}"
            out: list[object] = []
            for item in values:
                value, error = _scalar_value(kind, item)
                if error is not None:
                    return None, error
                out.append(value)
            return out, None
    for kind in _SCALAR_KINDS:
        value = raw.get(kind)
        if value is not None:
            return _scalar_value(kind, value)
    return None, "unsupported attribute value"


def device_value(device: Device, driver: str, *,
                 list_attributes: bool = True) -> DeviceValue | DeviceValueProblem:
    """The `device` value the allocator builds for `device` of a slice of `driver`.

    `list_attributes`: whether list-valued attributes are values (`dra_list_attributes`).
    """
    attributes: dict[str, dict[str, object]] = {}
    for name, raw in device.attributes.items():
        value, error = _attribute_value(raw, list_attributes)
        if error is not None:
            return DeviceValueProblem(f"attribute {name}: {error}")
        domain, ident = _qualified(str(name), driver)
        attributes.setdefault(domain, {})[ident] = value
    capacity: dict[str, dict[str, object]] = {}
    for name, cap in device.capacity.items():
        try:
            parsed = parse_quantity(cap.value)
        except QuantityError as err:
            return DeviceValueProblem(f"capacity {name}: {err}")
        domain, ident = _qualified(str(name), driver)
        capacity.setdefault(domain, {})[ident] = Opaque(QUANTITY_TYPE_NAME, quantity.encode(parsed))
    return DeviceValue(driver, device.allow_multiple_allocations,
                       MappingProxyType(attributes), MappingProxyType(capacity))


# ------------------------------------------------------------------------------------------------
# Evaluation (`DeviceMatches`)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SelectorResult:
    """One selector on one device: matched, or the runtime error (upstream text), and the cost."""

    matched: bool
    error: str | None
    cost: int


def evaluate_selector(selector: CompiledSelector, device: DeviceValue, *,
                      cost_limit: int = SELECTOR_MAX_COST) -> SelectorResult:
    """Evaluate a compiled selector on `device` as the allocator does.

    cel-go's runtime cost is tracked first (stopping at `cost_limit` with `operation cancelled:
    actual cost limit exceeded`), then the program runs; a result that is not a bool is an error
    (`CEL result of type <T> could not be converted to bool`), as in `DeviceMatches`.
    """
    if not selector.ok or selector.program is None or selector.engine.checked is None:
        return SelectorResult(False, selector.detail or "the selector did not compile", 0)
    interp, plain = device.variables(selector.attributes_plan, selector.capacity_plan)
    bridge = bridge_for(get_env(selector.key).runtime)
    outcome = track_cost(selector.engine.checked, interp, bridge, limit=cost_limit)
    if outcome.status == "cost_exceeded":
        return SelectorResult(False, COST_LIMIT_EXCEEDED, outcome.cost)
    if outcome.status != "ok":
        return SelectorResult(False, f"the dry run could not evaluate the selector: "
                                     f"{outcome.message}", outcome.cost)
    device_maps = interp[_DEVICE_VAR]
    assert isinstance(device_maps, dict)
    if not outcome.run_program or any(
            isinstance(m, DefaultingMap) and m.defaulted
            for m in (device_maps[_ATTRIBUTES], device_maps[_CAPACITY])):
        # The walk's value: the program cannot carry it faithfully, would pass the
        # evaluation's ceilings redoing it, or lacks the domains the walk read as empty maps.
        value, type_name, error = _walk_answer(outcome.value)
    else:
        value, type_name, error = _run(selector.program, plain, outcome.value)
    if error is not None:
        return SelectorResult(False, error, outcome.cost)
    if value is True or value is False:
        return SelectorResult(value, None, outcome.cost)
    walked = outcome.value
    if isinstance(walked, OptionalValue):
        # an optional converts as the value it holds
        if not walked.has_value:
            return SelectorResult(False, f"CEL result of type {type_name} could not be converted "
                                         "to bool: optional.none() dereference", outcome.cost)
        return SelectorResult(False, _not_bool(type_name, interp_type_name(walked.value)),
                              outcome.cost)
    return SelectorResult(False, _not_bool(type_name), outcome.cost)


def _run(program: Any, data: Mapping[str, object], interp_value: object
         ) -> tuple[object, str, str | None]:
    """(value, cel-go type name, error text) of the planned program."""
    try:
        result = program.eval(data=dict(data))
    except RuntimeError as exc:
        if not isinstance(interp_value, ErrorValue):
            return _walk_answer(interp_value)
        return None, "", translate_error(str(exc), interp_value).message
    name = result.type().name()
    if isinstance(interp_value, ErrorValue) != (name == "ERROR"):
        # Where the program and the walk disagree on whether the evaluation fails, the walk
        # decides, as for extractors (`eval.runtime`): it follows cel-go's interpreter where
        # cel-cpp's attribute resolution and iteration limit depart from it.
        return _walk_answer(interp_value)
    if name == "ERROR":
        try:
            message = str(result.value())
        except TypeError:
            message = ""
        return None, "", translate_error(message, interp_value).message
    if name == "BOOL":
        return bool(result.value()), "bool", None
    if isinstance(interp_value, Opaque):
        return None, interp_value.type_name, None
    return None, cel_type_name(name), None


def _walk_answer(interp_value: object) -> tuple[object, str, str | None]:
    """(value, cel-go type name, error text) of the cost walk's own result."""
    if isinstance(interp_value, ErrorValue):
        return None, "", translate_error(interp_value.message, interp_value).message
    return to_plain(interp_value), interp_type_name(interp_value), None


_CONVERSION_TO_BOOL = {
    "string": "unsupported native conversion from string to 'bool'",
    "int": "unsupported type conversion from 'int' to bool",
    "uint": "unsupported type conversion from 'uint' to bool",
    "double": "type conversion error from Double to 'bool'",
    "bytes": "type conversion error from Bytes to 'bool'",
    "list": "type conversion error from list to 'bool'",
    "map": "type conversion error from map to 'bool'",
    "null_type": "type conversion error from 'null_type' to 'bool'",
    "type": "type conversion not supported for 'type'",
    "google.protobuf.Timestamp": "type conversion error from 'Timestamp' to 'bool'",
    "google.protobuf.Duration": "type conversion error from 'Duration' to 'bool'",
    QUANTITY_TYPE_NAME: "type conversion error from 'Quantity' to 'bool'",
    SEMVER_TYPE_NAME: "type conversion error from 'Semver' to 'bool'",
}
"""cel-go's `ConvertToNative(bool)` error of each value type (the words differ by type)."""


def _not_bool(type_name: str, converted: str | None = None) -> str:
    """`DeviceMatches`' error for a non-bool result of `type_name` (`converted`: the type of
    the value actually converted, when it is not the result itself)."""
    converted = converted or type_name
    reason = _CONVERSION_TO_BOOL.get(converted,
                                     f"type conversion error from '{converted}' to 'bool'")
    return f"CEL result of type {type_name} could not be converted to bool: {reason}"
