"""The Kubernetes CEL libraries cel-expr-python lacks, by upstream library.

Two ways in, because cel-expr-python cannot carry values of opaque types:

* `libraries_for(version)`: the runtime extensions (Python implementations
  on carrier values, see `_types`). On their own they also type-check, but
  loosely: `net.IP` & co. look like strings or lists to the checker.
* `checker_config_for(version)`: the same functions declared with upstream's
  types and overload ids, for a *checking* environment. Compile there, then
  `runtime_env.deserialize(checked.serialize())` and evaluate: dispatch at
  run time is by function name and argument kind, so the runtime extensions
  serve the checked AST. Wrap the runtime `cel.Env` in `RuntimeEnv`, whose
  `deserialize` first gives Quantity and Semver comparisons upstream's
  value equality (see `equality`).

`native_string(value)` turns an evaluation result into what upstream's
conversion of that result to a string would give (carriers back to text).

`libraries_for` also carries the run-time half of cel-go's two-variable
comprehensions (`comprehensions`: `cel.@mapInsert`, which cel-expr-python
declares but does not implement) and the type values of library types
(`type_values`); `RuntimeEnv` renames their calls.
`python_parameter_kinds(function)` tells a caller which checked function
names run Python code on which kinds of arguments: cel-expr-python crashes
when it hands an optional value to Python, so the cost walk must never let
an optional reach one of those parameters.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel

from ..common.jsonvalue import duration_text, timestamp_text
from . import (
    cidr,
    comprehensions,
    ip,
    lists,
    quantity,
    regex,
    semver,
    type_values,
    urls,
)
from . import format as format_lib
from ._types import (
    BOOL,
    BYTES,
    DOUBLE,
    DURATION,
    INT,
    STRING,
    TAG_FORMAT,
    TAG_OPTIONAL,
    TAG_SEMVER,
    TAG_TYPE,
    TIMESTAMP,
    UINT,
    Decl,
    LibrarySpec,
    Runtime,
    TypeInfo,
    extension,
    function_configs,
    t,
)
from .equality import (
    QUANTITY_RUNTIMES,
    SEMVER_RUNTIMES,
    RuntimeEnv,
    equal_by_type,
    rewrite_equality,
)

__all__ = [
    "LIBRARIES",
    "CheckerConfig",
    "Library",
    "RuntimeEnv",
    "checker_config_for",
    "equal_by_type",
    "libraries_for",
    "native_string",
    "python_parameter_kinds",
    "rewrite_equality",
]

Version = tuple[int, int]


@dataclass(frozen=True)
class Library:
    """One upstream library and the Kubernetes version it joined the base env."""

    name: str  # upstream library name, e.g. "kubernetes.lists"
    introduced: Version  # reference §2.1; (1, 0) is upstream's epoch
    build: Callable[[], cel.CelExtensionBase]  # a fresh runtime extension
    declarations: tuple[Decl, ...] = field(default=(), repr=False)
    type_names: tuple[str, ...] = ()  # type identifiers the library declares (`net.CIDR`)


def _with(spec: LibrarySpec, extra: tuple[Runtime, ...]) -> Callable[[], cel.CelExtensionBase]:
    """A library's runtime extension plus `extra` overloads (its equality functions)."""
    return lambda: extension(spec.name, (*spec.runtimes, *extra))


LIBRARIES: tuple[Library, ...] = (
    Library(urls.NAME, (1, 0), urls.SPEC.build, urls.DECLARATIONS),
    Library(regex.NAME, (1, 0), regex.SPEC.build, regex.DECLARATIONS),
    Library(lists.NAME, (1, 0), lists.SPEC.build, lists.SPEC.declarations),
    Library(quantity.NAME, (1, 28), _with(quantity.SPEC, QUANTITY_RUNTIMES), quantity.DECLARATIONS),
    Library(ip.NAME, (1, 30), ip.SPEC.build, ip.DECLARATIONS, ("net.IP",)),
    Library(cidr.NAME, (1, 30), cidr.SPEC.build, cidr.DECLARATIONS, ("net.CIDR",)),
    Library(format_lib.NAME, (1, 31), format_lib.SPEC.build, format_lib.DECLARATIONS),
    Library(semver.NAME, (1, 33), _with(semver.SPEC, SEMVER_RUNTIMES), semver.DECLARATIONS),
    Library(lists.INCLUDES_NAME, (1, 37), lists.INCLUDES_SPEC.build, lists.INCLUDES_SPEC.declarations),
)


def _selected(version: Version) -> list[Library]:
    return [lib for lib in LIBRARIES if lib.introduced <= version]


def libraries_for(version: Version) -> list[cel.CelExtensionBase]:
    """Fresh runtime extensions of every library in the base env at `version`, then the
    implementation of `cel.@mapInsert` and the `type()` of library values (under their
    runtime names, harmless where unused)."""
    return [*(lib.build() for lib in _selected(version)), comprehensions.SPEC.build(),
            type_values.SPEC.build()]


ParameterKinds = tuple[str, ...]


def _parameter_kind(param: cel.Type) -> str:
    name = param.name()
    if name == "DYN":
        return "dyn"
    if name.startswith("LIST"):
        return "list"
    if name.startswith("MAP"):
        return "map"
    return "other"


def _python_parameters() -> dict[str, tuple[ParameterKinds, ...]]:
    specs = (urls.SPEC, regex.SPEC, lists.SPEC, lists.INCLUDES_SPEC, quantity.SPEC, ip.SPEC,
             cidr.SPEC, format_lib.SPEC, semver.SPEC)
    out: dict[str, list[ParameterKinds]] = {}
    for spec in specs:
        for r in spec.runtimes:
            out.setdefault(r.function, []).append(tuple(_parameter_kind(p) for p in r.params))
    # Checked ASTs name the comprehension helper by its upstream name.
    out[comprehensions.MAP_INSERT] = [tuple(_parameter_kind(p) for p in r.params)
                                      for r in comprehensions.SPEC.runtimes]
    return {name: tuple(kinds) for name, kinds in out.items()}


_PYTHON_PARAMETERS = _python_parameters()


def python_parameter_kinds(function: str) -> tuple[ParameterKinds, ...]:
    """Parameter kinds (`dyn`, `list`, `map`, `other`; receiver first) of each Python overload
    of the checked function `function`; empty when no Python code serves that name."""
    return _PYTHON_PARAMETERS.get(function, ())


# --------------------------------------------------------------------------
# Checking environment

# cel-cpp's standard `string` overloads. An env config cannot add overloads
# to a standard function, so declaring `string(net.IP)` means excluding the
# standard `string` and declaring it again, whole.
_STD_STRING: tuple[tuple[str, TypeInfo], ...] = (
    ("string_to_string", STRING),
    ("int64_to_string", INT),
    ("uint64_to_string", UINT),
    ("double_to_string", DOUBLE),
    ("bytes_to_string", BYTES),
    ("bool_to_string", BOOL),
    ("timestamp_to_string", TIMESTAMP),
    ("duration_to_string", DURATION),
)


@dataclass(frozen=True)
class CheckerConfig:
    """What a checking environment needs on top of its base config.

    `functions`, `variables` and `stdlib_exclusions` are env-config entries
    (the `functions:`, `variables:` and `stdlib: exclude_functions:` lists of
    the YAML given to `cel.NewEnvConfigFromYaml`); `extensions` must be
    passed to `cel.NewEnv` as well: they declare overloads of functions that
    other extensions also define (`indexOf`), which a config cannot merge.
    """

    functions: list[dict[str, Any]]
    variables: list[dict[str, Any]]
    stdlib_exclusions: list[dict[str, Any]]
    extensions: list[cel.CelExtensionBase]


def checker_config_for(version: Version) -> CheckerConfig:
    """Upstream-typed declarations of every library in the base env at `version`."""
    decls: list[Decl] = []
    merged: list[Decl] = []
    type_names: list[str] = []
    for lib in _selected(version):
        type_names.extend(lib.type_names)
        for d in lib.declarations:
            (merged if d.function in lists.MERGED_FUNCTIONS else decls).append(d)
    exclusions: list[dict[str, Any]] = []
    if any(d.function == "string" for d in decls):
        exclusions.append({"name": "string"})
        decls = [Decl("string", oid, (arg,), STRING) for oid, arg in _STD_STRING] + decls
    variables = [{"name": name, "type_name": "type", "params": [t(name).to_config()]} for name in type_names]
    extensions: list[cel.CelExtensionBase] = []
    if merged:
        extensions.append(_merged_extension(merged))
    return CheckerConfig(function_configs(decls), variables, exclusions, extensions)


def _merged_extension(decls: list[Decl]) -> cel.CelExtension:
    """Declarations that must merge into existing functions.

    Python-declared overloads cannot name type parameters, so `list(A), A`
    is declared as `list(dyn), dyn`: `[1].indexOf("a")` compiles here while
    upstream rejects it.
    """
    runtimes = {r.overload_id: r for r in lists.SPEC.runtimes}
    out = []
    for d in decls:
        r = runtimes[d.overload_id]
        out.append(Runtime(d.function, d.overload_id, r.params, r.result, r.impl, member=True))
    return extension("kubernetes.lists.merged", out)


# --------------------------------------------------------------------------
# Results


def native_string(value: Any) -> str | None:
    """What upstream's conversion of a result to `string` gives, or None.

    Strings (including the IP, CIDR, URL and Quantity carriers) convert; a
    Quantity carrier loses its state suffix; a Semver carrier becomes its
    version text. Anything else (numbers, lists, formats, ...) does not
    convert, as upstream's `ConvertToNative` refuses it.
    """
    if isinstance(value, str):
        return quantity.native_string(value)
    if isinstance(value, list) and len(value) == 2 and value[0] == TAG_SEMVER:
        text = value[1]
        return text if isinstance(text, str) else None
    return None


_SHOWN_AS_PAYLOAD = frozenset({TAG_SEMVER, TAG_FORMAT, TAG_TYPE})


def _trim_fraction(text: str, suffix: str) -> str:
    """`1.500000s` -> `1.5s`, `...:00.000100Z` -> `...:00.0001Z` (no fraction: unchanged)."""
    head = text[: -len(suffix)]
    if "." in head:
        head = head.rstrip("0").rstrip(".")
    return head + suffix


def display_value(value: Any) -> Any:
    """A result as users should see it, not as this package carries it: a Semver as its
    version, a format or a type as its name, a Quantity without its state mark, an optional
    as its value (null when empty), a timestamp or duration as cel-go's `string()` of it;
    recursively inside lists and maps."""
    if isinstance(value, str):
        return quantity.native_string(value)
    if isinstance(value, datetime.datetime):  # RFC3339Nano: no trailing zeros in the fraction
        return _trim_fraction(timestamp_text(value), "Z")
    if isinstance(value, datetime.timedelta):  # Go's FormatFloat(seconds, 'f', -1) + "s"
        return _trim_fraction(duration_text(value), "s")
    if isinstance(value, list):
        tag = value[0] if value and isinstance(value[0], str) else None
        if tag in _SHOWN_AS_PAYLOAD and len(value) == 2:
            return value[1]
        if tag == TAG_OPTIONAL and len(value) <= 2:
            return display_value(value[1]) if len(value) == 2 else None
        return [display_value(v) for v in value]
    if isinstance(value, dict):
        return {k: display_value(v) for k, v in value.items()}
    return value
