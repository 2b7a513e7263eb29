"""Kubernetes-compatible CEL environments, per Kubernetes version and expression mode.

Why: the API server does not compile CEL in "CEL"; it compiles it in the Kubernetes base
environment (`k8s.io/apiserver/pkg/cel/environment`), whose content depends on the release
and on whether the expression is being written (NewExpressions: options introduced at or
before the *compatibility* version n-1) or is already stored (StoredExpressions: every option
the release knows and has not removed). An expression valid in one and not the other is
exactly what SA106 and ratcheting are about, so the environment is a value keyed by
(`kubernetes_version`, `mode`, `kind`), built from the versioned option table below
(reference §2.1) and cached.

cel-expr-python's YAML `EnvConfig` (cel-cpp `env_yaml`) understands `extensions` (name and
version, or `latest`), `variables`, `functions`, `container` and `stdlib`
(`include_functions`/`exclude_functions` down to overload ids, `include_macros`/
`exclude_macros`, `disable`); it has no `features`, `limits` or `validators` (a `features` key
is silently ignored) and no parser options. We only ever enable what Kubernetes has (no math,
encoders, protos, regex ext, strings ≥ 3) and need no stdlib subsetting. Extension versions
in cel-expr-python 0.1.3: strings 0-4, lists 0-2, optional 0-2, math 0-2, others 0. Options it
has no switch for are emulated:

* cross-type numeric comparisons (1.28): cel-cpp's runtime already compares int/uint/double
  across types, only the checker lacks the overloads. We declare them, with cel-go's ids
  (`less_int64_double`, ...), in a *checker* environment; the declaration would collide with
  the runtime's built-ins, so programs are planned in a twin *runtime* environment from the
  checked AST (`Expression.serialize()` -> `Env.deserialize()`).
* homogeneous aggregate literals (1.0) and the duration/timestamp/regex literal validators
  (1.29): AST validators in `policies.cel.check.validators`, run by `policies.cel.compile`.

The Kubernetes libraries (lists, regex, urls, quantity, ip, cidr, format, semver) come from
`dra_affinity.policies.cel.k8s_library`: `libraries_for(version)` gives the runtime extensions and
`checker_config_for(version)` the upstream-typed declarations for the checker, so the checker
and the runtime are always two environments. The runtime one is a `k8s_library.RuntimeEnv`,
which gives Quantity and Semver comparisons upstream's value equality when it plans a checked
AST. Regex literals are checked with Go's rules by `k8s_library.regex.literal_pattern_error`
(RE2, as cel-go's validator uses Go's RE2 port). The authz libraries are not included: they
need an `authorizer` variable neither the sharing-affinity nor the DRA environment has.

Thread safety: environments are immutable once built, and built (including cel-expr-python's
lazy parts) before they are shared; the cache is a registered `BoundedCache` (`cel.environments`).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cel_expr_python import cel

from ...core.cache import cached
from ...core.features import CONSUMABLE_CAPACITY, LIST_TYPE_ATTRIBUTES, FeatureGates
from ...core.identity_enum import IdentityEnum
from .. import k8s_library
from ..k8s_library import dra as dra_library
from ..k8s_library._types import LibrarySpec
from ..k8s_library.dra import DRA_INCLUDES_ID, LIST_INCLUDES_ID
from ..k8s_library.regex import literal_pattern_error
from .validators import RegexCheck

__all__ = [
    "BASE_OPTIONS",
    "DEFAULT_VERSION",
    "DRA_DEVICE_DECLARATIONS",
    "ENV_KINDS",
    "MAX_VERSION",
    "MIN_VERSION",
    "CelEnvironment",
    "DeviceDeclaration",
    "DeviceFeatures",
    "EnvKey",
    "EnvKind",
    "EnvMode",
    "Feature",
    "InvalidVersionError",
    "VersionedOption",
    "build_environment",
    "clear_env_cache",
    "compatibility_version",
    "dra_device_declaration",
    "dra_device_includes",
    "dra_list_attributes",
    "env_cache_info",
    "format_version",
    "get_env",
    "parse_version",
]

Version = tuple[int, int]

DEFAULT_VERSION: Version = (1, 37)
"""Target Kubernetes version: KEP-5981's alpha release."""

MIN_VERSION: Version = (1, 24)
"""Oldest target we model: its compatibility version 1.23 is the base env's epoch ("1.0")."""

MAX_VERSION: Version = (1, 38)
"""Newest target accepted: the KEP's alpha release. Its own options are not published yet
(`policies.core.limits.NEWEST_PUBLISHED_KUBERNETES_VERSION`): it gets every option known."""


class InvalidVersionError(ValueError):
    """A Kubernetes version string that is malformed or outside what we model."""


_VERSION_RE = re.compile(r"v?(\d+)\.(\d+)(?:\.\d+)?")


def parse_version(text: str) -> Version:
    """`"1.37"` -> `(1, 37)`; also accepts `v1.37` and `1.37.2` (the patch is irrelevant).

    Raises InvalidVersionError with a message meant for users (the CLI turns it into a usage
    error); this is an input boundary, not a rule.
    """
    m = _VERSION_RE.fullmatch(text.strip())
    if m is None:
        raise InvalidVersionError(
            f"invalid Kubernetes version {text!r}: expected MAJOR.MINOR, e.g. "
            f"{format_version(DEFAULT_VERSION)}")
    version = (int(m.group(1)), int(m.group(2)))
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise InvalidVersionError(
            f"unsupported Kubernetes version {format_version(version)}: this build models the "
            f"CEL environments of {format_version(MIN_VERSION)} to {format_version(MAX_VERSION)}")
    return version


def format_version(version: Version) -> str:
    """`(1, 37)` -> `"1.37"`."""
    return f"{version[0]}.{version[1]}"


def compatibility_version(target: Version) -> Version:
    """The n-1 version whose options new expressions may use (`DefaultCompatibilityVersion`)."""
    return (target[0], target[1] - 1)


class EnvMode(IdentityEnum):
    """Which of the two environments of a Kubernetes EnvSet."""

    NEW_EXPRESSIONS = "new"
    """Validating an expression being created or changed: compatibility-version options only."""

    STORED_EXPRESSIONS = "stored"
    """Evaluating an already persisted expression: every option the release has not removed."""


class Feature(enum.Enum):
    """Environment options cel-expr-python has no switch for; emulated by our code."""

    HOMOGENEOUS_LITERALS = "cel.HomogeneousAggregateLiterals"
    CROSS_TYPE_NUMERIC_COMPARISONS = "cel.CrossTypeNumericComparisons"
    LITERAL_VALIDATORS = "cel.ASTValidators(duration, timestamp, regex)"


@dataclass(frozen=True, slots=True)
class VersionedOption:
    """One row of Kubernetes' versioned option table.

    Exactly one of `extension` (a cel-expr-python extension: YAML name and version, None for
    the library's latest) or `feature` is set.
    """

    name: str
    introduced: Version
    removed: Version | None = None
    extension: tuple[str, int | None] | None = None
    feature: Feature | None = None

    def enabled(self, target: Version, mode: EnvMode) -> bool:
        """Whether Kubernetes `target` includes this option in `mode` (environment.go rules)."""
        compat = compatibility_version(target)
        if self.removed is not None and compat >= self.removed:
            return False
        limit = compat if mode is EnvMode.NEW_EXPRESSIONS else target
        return self.introduced <= limit


_EPOCH: Version = (1, 0)

BASE_OPTIONS: tuple[VersionedOption, ...] = (
    # 1.0 (the real epoch is 1.23): HomogeneousAggregateLiterals is, in the cel-go Kubernetes
    # vendors, the homogeneous-literal AST validator. URLs, Regex, Lists come from k8s_library.
    VersionedOption("cel.HomogeneousAggregateLiterals", _EPOCH,
                    feature=Feature.HOMOGENEOUS_LITERALS),
    VersionedOption("ext.Strings(StringsVersion(0))", _EPOCH, removed=(1, 29),
                    extension=("strings", 0)),
    VersionedOption("cel.CrossTypeNumericComparisons(true)", (1, 28),
                    feature=Feature.CROSS_TYPE_NUMERIC_COMPARISONS),
    VersionedOption("cel.OptionalTypes()", (1, 28), extension=("optional", None)),
    VersionedOption("cel.ASTValidators(ValidateDurationLiterals, ValidateTimestampLiterals, "
                    "ValidateRegexLiterals, ValidateHomogeneousAggregateLiterals)", (1, 29),
                    feature=Feature.LITERAL_VALIDATORS),
    VersionedOption("ext.Strings(StringsVersion(2))", (1, 29), extension=("strings", 2)),
    VersionedOption("ext.Sets()", (1, 29), extension=("sets", None)),
    VersionedOption("ext.TwoVarComprehensions()", (1, 32),
                    extension=("cel.lib.ext.comprev2", None)),
    # cel-go's lists v3 only adds cost estimators to v2's functions; cel-cpp's newest is v2.
    VersionedOption("ext.Lists(ListsVersion(3))", (1, 34), extension=("lists", 2)),
)
"""Reference §2.1 (base.go), minus the Kubernetes libraries, in upstream order."""


@dataclass(frozen=True, slots=True)
class EnvKind:
    """What an expression kind adds to the base environment: its options and variables.

    `variables` are the kind's declarations when they do not depend on the version;
    `versioned_variables`, when set, replaces them with a per-key choice (DRA's `device`
    changed shape across releases and gates); `libraries` are functions the kind declares
    itself (DRA's `includes`).
    """

    name: str
    options: tuple[VersionedOption, ...]
    variables: Callable[[], Mapping[str, cel.Type]]
    versioned_variables: Callable[[EnvKey], Mapping[str, cel.Type]] | None = None
    libraries: Callable[[EnvKey], tuple[LibrarySpec, ...]] | None = None

    def variables_for(self, key: EnvKey) -> Mapping[str, cel.Type]:
        """The variables declared in the environment `key`."""
        if self.versioned_variables is not None:
            return self.versioned_variables(key)
        return self.variables()

    def libraries_for(self, key: EnvKey) -> tuple[LibrarySpec, ...]:
        """The kind's own function libraries in the environment `key`."""
        return self.libraries(key) if self.libraries is not None else ()


_BINDINGS = VersionedOption("ext.Bindings(BindingsVersion(0))", (1, 31),
                            extension=("bindings", 0))


@dataclass(frozen=True, slots=True)
class DeviceDeclaration:
    """One upstream declaration of DRA's `device` variable (object type `kubernetes.DRADevice`).

    Why a table: DRA's compiler (`dynamic-resource-allocation/cel/compile.go`, reference §3.1)
    declares `device` four times, each behind a feature-gate combination, oldest first, because
    the type provider keeps the *last* declaration of a type name. Which one an environment sees
    decides whether `device.allowMultipleAllocations` compiles (ConsumableCapacity) and whether
    attribute values are the unknown type `google.protobuf.Any` or `dyn` (ListTypeAttributes,
    which makes them iterable).

    cel-expr-python cannot declare an object type without the protobuf runtime, so the checker
    sees `device` as `map(string, dyn)`; `dra_affinity.policies.analysis.device` restores the upstream field
    types, `undefined field` errors and the output-type rule from this declaration.
    """

    name: str
    introduced: Version
    allow_multiple_allocations: bool
    """The field `allowMultipleAllocations` (bool) exists (ConsumableCapacity)."""
    list_type_attributes: bool
    """Attribute values are `dyn` (ListTypeAttributes); else `google.protobuf.Any`."""


DRA_DEVICE_DECLARATIONS: tuple[DeviceDeclaration, ...] = (
    DeviceDeclaration("1.31", (1, 31), allow_multiple_allocations=False,
                      list_type_attributes=False),
    DeviceDeclaration("1.34 ConsumableCapacity", (1, 34), allow_multiple_allocations=True,
                      list_type_attributes=False),
    DeviceDeclaration("1.36 ListTypeAttributes", (1, 36), allow_multiple_allocations=False,
                      list_type_attributes=True),
    DeviceDeclaration("1.36 ConsumableCapacity+ListTypeAttributes", (1, 36),
                      allow_multiple_allocations=True, list_type_attributes=True),
)
"""Upstream's `device` declarations, oldest to newest (reference §3.1)."""


@dataclass(frozen=True, slots=True)
class DeviceFeatures:
    """DRA's compiler `Features`: the two gates that shape the `device` environment."""

    consumable_capacity: bool
    list_type_attributes: bool

    @classmethod
    def for_gates(cls, gates: FeatureGates) -> DeviceFeatures:
        return cls(gates.enabled(CONSUMABLE_CAPACITY), gates.enabled(LIST_TYPE_ATTRIBUTES))

    @classmethod
    def release_default(cls, target: Version) -> DeviceFeatures:
        return cls.for_gates(FeatureGates(target))


_DEVICE_BY_FLAGS = {(d.allow_multiple_allocations, d.list_type_attributes): d
                    for d in DRA_DEVICE_DECLARATIONS}
_SKEW_SAFE_LISTS: Version = (1, 37)
"""From this release the compiler declares every `device` shape for stored expressions and
converts list attributes whatever the gate (upstream's version-skew fix of KEP-5491)."""


def dra_device_declaration(target: Version, mode: EnvMode,
                           features: DeviceFeatures | None = None) -> DeviceDeclaration | None:
    """The `device` declaration Kubernetes `target` uses in `mode` with `features`.

    None before DRA's 1.31 (and for new expressions until the compatibility version reaches
    1.31). `features` defaults to the release's gate defaults.

    * StoredExpressions ignores feature gates and keeps the *last* declaration the release's
      compiler has: ConsumableCapacity's from 1.34; from 1.37 the one with list-type
      attributes too. In 1.36 both declarations share one attribute type, `dyn` only with
      DRAListTypeAttributes on.
    * NewExpressions takes the declaration whose gate combination is on (a gate outranks the
      version).
    """
    if target < DRA_DEVICE_DECLARATIONS[0].introduced:
        return None
    if mode is EnvMode.NEW_EXPRESSIONS and compatibility_version(target) < (1, 31):
        return None
    if features is None:
        features = DeviceFeatures.release_default(target)
    lists = features.list_type_attributes and target >= (1, 36)
    if target < (1, 34):
        return _DEVICE_BY_FLAGS[(False, False)]
    if mode is EnvMode.STORED_EXPRESSIONS:
        if target >= _SKEW_SAFE_LISTS:
            return _DEVICE_BY_FLAGS[(True, True)]
        return _DEVICE_BY_FLAGS[(True, lists)]
    return _DEVICE_BY_FLAGS[(features.consumable_capacity, lists)]


def dra_device_includes(target: Version, mode: EnvMode,
                        features: DeviceFeatures | None = None) -> str | None:
    """The overload id of DRA's `includes` in this environment, or None when undeclared.

    Declared from 1.36 for stored expressions (gates ignored) and, for new ones, with
    DRAListTypeAttributes on. 1.36's compiler has its own bounded overload; later ones reuse
    the lists library's (`dra.spec`).
    """
    if target < (1, 36):
        return None
    if features is None:
        features = DeviceFeatures.release_default(target)
    if mode is EnvMode.NEW_EXPRESSIONS and not features.list_type_attributes:
        return None
    return DRA_INCLUDES_ID if target < _SKEW_SAFE_LISTS else LIST_INCLUDES_ID


def dra_list_attributes(target: Version, features: DeviceFeatures | None = None) -> bool:
    """Whether the allocator turns list-valued attributes into CEL lists (else: unsupported)."""
    if target >= _SKEW_SAFE_LISTS:
        return True
    if features is None:
        features = DeviceFeatures.release_default(target)
    return target >= (1, 36) and features.list_type_attributes


def _dra_device_variables(key: EnvKey) -> Mapping[str, cel.Type]:
    """`device: map(string, dyn)` when the release declares it (see `DeviceDeclaration`)."""
    if dra_device_declaration(key.kubernetes_version, key.mode, key.device_features) is None:
        return {}
    return {"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)}


def _dra_device_libraries(key: EnvKey) -> tuple[LibrarySpec, ...]:
    """DRA's `includes`, unless the base environment's lists library already declares it."""
    overload = dra_device_includes(key.kubernetes_version, key.mode, key.device_features)
    if overload is None:
        return ()
    version = (compatibility_version(key.kubernetes_version)
               if key.mode is EnvMode.NEW_EXPRESSIONS else key.kubernetes_version)
    if any(f.get("name") == "includes" for f in k8s_library.checker_config_for(version).functions):
        return ()
    return (dra_library.spec(overload),)


ENV_KINDS: Mapping[str, EnvKind] = MappingProxyType({
    "sharing-affinity": EnvKind(
        name="sharing-affinity",
        options=(_BINDINGS,),
        variables=lambda: {"object": cel.Type.DYN},
    ),
    "dra-device": EnvKind(
        name="dra-device",
        options=(_BINDINGS,),
        variables=lambda: {"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
        versioned_variables=_dra_device_variables,
        libraries=_dra_device_libraries,
    ),
})
"""Expression kinds: sharing-affinity extractors (`object`), DRA device selectors (`device`)."""


@dataclass(frozen=True)
class EnvKey:
    """Identity of an environment: target Kubernetes version, mode, expression kind and, for
    device selectors, the DRA gates that shape `device` (None: the release's defaults)."""

    kubernetes_version: Version
    mode: EnvMode
    kind: str = "sharing-affinity"
    device_features: DeviceFeatures | None = None

    def __post_init__(self) -> None:
        if not MIN_VERSION <= self.kubernetes_version <= MAX_VERSION:
            raise ValueError(f"unsupported Kubernetes version {self.kubernetes_version}")
        if self.kind not in ENV_KINDS:
            raise ValueError(f"unknown CEL environment kind {self.kind!r}")

    @property
    def compatibility_version(self) -> Version:
        """The n-1 version bounding NEW_EXPRESSIONS."""
        return compatibility_version(self.kubernetes_version)

    def __str__(self) -> str:
        text = f"{self.kind}@{format_version(self.kubernetes_version)}/{self.mode.value}"
        if self.device_features is not None:
            text += (f"[cc={int(self.device_features.consumable_capacity)},"
                     f"lists={int(self.device_features.list_type_attributes)}]")
        return text


@dataclass(frozen=True, eq=False)
class CelEnvironment:
    """A built environment and what compilation needs besides the cel-cpp `Env`.

    `checker` parses and type-checks, with declarations the runtime must not see
    (cross-type numeric comparisons; the Kubernetes libraries' upstream-typed declarations);
    `runtime` plans programs from the checked AST (`dra_affinity.policies.cel.compile` re-plans there).
    """

    key: EnvKey
    checker: cel.Env
    runtime: k8s_library.RuntimeEnv
    options: tuple[str, ...]
    features: frozenset[Feature]
    variables: Mapping[str, cel.Type]
    regex_error: RegexCheck

    @property
    def separate_runtime(self) -> bool:
        """Whether programs must be re-planned in the runtime env (always: see `runtime`)."""
        return True

    @property
    def kubernetes_libraries(self) -> bool:
        """Whether the Kubernetes libraries are loaded (always; kept for callers)."""
        return True

    def has(self, feature: Feature) -> bool:
        """Whether an emulated option is on in this environment."""
        return feature in self.features


# ------------------------------------------------------------------------------------------------
# Building
# ------------------------------------------------------------------------------------------------

_CROSS_NUMERIC_OPERATORS = (
    ("_<_", "less"), ("_<=_", "less_equals"), ("_>_", "greater"), ("_>=_", "greater_equals"),
)


def _cross_numeric_extension() -> cel.CelExtensionBase:
    """Checker declarations of `<, <=, >, >=` across int, uint and double (cel-go ids)."""
    numeric = (("int64", cel.Type.INT), ("uint64", cel.Type.UINT), ("double", cel.Type.DOUBLE))
    decls = [
        cel.FunctionDecl(op, [
            cel.Overload(f"{prefix}_{a}_{b}", cel.Type.BOOL, [ta, tb])
            for a, ta in numeric for b, tb in numeric if a != b
        ])
        for op, prefix in _CROSS_NUMERIC_OPERATORS
    ]
    return cel.CelExtension("cel.lib.std.cross_type_numeric_comparisons", decls)


@dataclass(frozen=True)
class _KubernetesLibraries:
    """What k8s_library gives one environment: runtime extensions and checker declarations."""

    runtime: list[cel.CelExtensionBase]
    checker_config: dict[str, Any]
    checker_extensions: list[cel.CelExtensionBase]


def _kubernetes_libraries(version: Version) -> _KubernetesLibraries:
    """The Kubernetes CEL libraries of `version`.

    k8s_library declares its functions twice: loosely typed runtime extensions (what
    evaluates), and, for a checking environment, upstream's types and overload ids as
    env-config entries plus extensions for overloads that must merge into existing functions.
    """
    checker = k8s_library.checker_config_for(version)
    config: dict[str, Any] = {}
    if checker.functions:
        config["functions"] = list(checker.functions)
    if checker.variables:
        config["variables"] = list(checker.variables)
    if checker.stdlib_exclusions:
        config["stdlib"] = {"exclude_functions": list(checker.stdlib_exclusions)}
    return _KubernetesLibraries(list(k8s_library.libraries_for(version)), config,
                                list(checker.extensions))


def _config_yaml(extensions: Sequence[tuple[str, int | None]],
                 extra: Mapping[str, Any] | None = None) -> str:
    """An `EnvConfig` YAML document: the extensions, plus extra top-level entries.

    Written as JSON (a YAML document too, read as the same mapping): PyYAML's pure-Python
    emitter would be a visible share of a one-file `lint`'s start for the ~15 KB checker
    config, `json` writes it in C, and cel-cpp parses compact JSON faster than block-style YAML.
    The entries are the code's own declarations (names, ids, ints).
    """
    document: dict[str, Any] = {
        "extensions": [{"name": name} if version is None else {"name": name, "version": version}
                       for name, version in extensions],
    }
    document.update(extra or {})
    return json.dumps(document, separators=(",", ":"))


def build_environment(
    target: Version,
    mode: EnvMode,
    variables: Mapping[str, cel.Type],
    kind_options: Sequence[VersionedOption] = (),
    key: EnvKey | None = None,
    kind_libraries: Sequence[LibrarySpec] = (),
) -> CelEnvironment:
    """Build (uncached) the environment of Kubernetes `target` in `mode`.

    `variables` are the declared variables (`object: dyn` for sharing affinity);
    `kind_options` are the expression kind's own versioned options (e.g. `cel.bind`);
    `kind_libraries` its own functions (declared for the checker, implemented for the runtime).
    """
    options: list[str] = []
    extensions: list[tuple[str, int | None]] = []
    seen_extensions: set[str] = set()
    features: set[Feature] = set()
    for option in (*BASE_OPTIONS, *kind_options):
        if not option.enabled(target, mode):
            continue
        if option.extension is not None:
            name = option.extension[0]
            if name in seen_extensions:
                continue  # cel-go libraries are singletons: the first one configured wins
            seen_extensions.add(name)
            extensions.append(option.extension)
        if option.feature is not None:
            features.add(option.feature)
        options.append(option.name)

    library_version = compatibility_version(target) if mode is EnvMode.NEW_EXPRESSIONS else target
    libraries = _kubernetes_libraries(library_version)
    options.append(f"kubernetes libraries @ {format_version(library_version)}")

    runtime_config = cel.NewEnvConfigFromYaml(_config_yaml(extensions))
    runtime = cel.NewEnv(config=runtime_config, variables=dict(variables),
                         extensions=[*libraries.runtime, *(lib.build() for lib in kind_libraries)])
    checker_extensions = list(libraries.checker_extensions)
    # the kind's functions take and return `dyn` or plain types: their runtime declarations
    # are upstream's declarations
    checker_extensions.extend(lib.build() for lib in kind_libraries)
    if Feature.CROSS_TYPE_NUMERIC_COMPARISONS in features:
        checker_extensions.append(_cross_numeric_extension())
    checker_config = cel.NewEnvConfigFromYaml(_config_yaml(extensions, libraries.checker_config))
    checker = cel.NewEnv(config=checker_config, variables=dict(variables),
                         extensions=checker_extensions)
    # cel-expr-python builds parts of an Env lazily on first use; do that here, in one thread,
    # so concurrent request threads only ever see a fully built environment.
    checker.compile("true")
    runtime.compile("true").eval()
    if key is None:
        key = EnvKey(target, mode)
    return CelEnvironment(
        key=key,
        checker=checker,
        runtime=k8s_library.RuntimeEnv(runtime),
        options=tuple(options),
        features=frozenset(features),
        variables=MappingProxyType(dict(variables)),
        regex_error=literal_pattern_error,
    )


# ------------------------------------------------------------------------------------------------
# Cache
# ------------------------------------------------------------------------------------------------

ENV_CACHE_SIZE = 64
"""Enough for every (version, mode) pair of two kinds; building one costs a few ms."""


@cached("cel.environments", ENV_CACHE_SIZE)
def _cached_environment(key: EnvKey) -> CelEnvironment:
    kind = ENV_KINDS[key.kind]
    return build_environment(key.kubernetes_version, key.mode, kind.variables_for(key),
                             kind.options, key=key, kind_libraries=kind.libraries_for(key))


def get_env(key: EnvKey) -> CelEnvironment:
    """The (cached) environment for `key`."""
    return _cached_environment(key)


def env_cache_info() -> tuple[int, int, int]:
    """(hits, misses, current size) of the environment cache."""
    info = _cached_environment.cache_info()
    return info.hits, info.misses, info.size


def clear_env_cache() -> None:
    """Drop every cached environment (tests; a k8s_library reload)."""
    _cached_environment.cache_clear()
