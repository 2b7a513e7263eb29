"""The Kubernetes CEL environment per version and mode (reference §2.1, §2.2)."""

from __future__ import annotations

import pytest
from cel_expr_python import cel
from dra_affinity.policies.cel.check.env import (
    BASE_OPTIONS,
    DEFAULT_VERSION,
    MAX_VERSION,
    MIN_VERSION,
    EnvKey,
    EnvMode,
    Feature,
    InvalidVersionError,
    build_environment,
    compatibility_version,
    env_cache_info,
    get_env,
    parse_version,
)
from dra_affinity.policies.core.limits import cel_environment_note

NEW = EnvMode.NEW_EXPRESSIONS
STORED = EnvMode.STORED_EXPRESSIONS
ALL_VERSIONS = [(1, m) for m in range(MIN_VERSION[1], MAX_VERSION[1] + 1)]


def compiles(expression: str, version: tuple[int, int], mode: EnvMode) -> bool:
    env = get_env(EnvKey(version, mode))
    try:
        env.checker.compile(expression)
    except RuntimeError:
        return False
    return True


def compile_error(expression: str, version: tuple[int, int], mode: EnvMode) -> str:
    env = get_env(EnvKey(version, mode))
    with pytest.raises(RuntimeError) as info:
        env.checker.compile(expression)
    return str(info.value)


# ------------------------------------------------------------------------------------------------
# Versions
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("1.37", (1, 37)), ("v1.30", (1, 30)), (" 1.29.3 ", (1, 29)), ("1.24", (1, 24)),
])
def test_parse_version_accepts_major_minor(text: str, expected: tuple[int, int]) -> None:
    assert parse_version(text) == expected


@pytest.mark.parametrize("text", ["", "1", "abc", "1.x", "1.37-alpha", "one.two"])
def test_parse_version_rejects_malformed_input(text: str) -> None:
    with pytest.raises(InvalidVersionError, match=r"expected MAJOR\.MINOR, e\.g\. 1\.37"):
        parse_version(text)


@pytest.mark.parametrize("text", ["1.23", "1.39", "2.0", "0.37"])
def test_parse_version_rejects_versions_we_do_not_model(text: str) -> None:
    with pytest.raises(InvalidVersionError, match=r"models the CEL environments of 1\.24 to 1\.38"):
        parse_version(text)


def test_1_38_uses_the_newest_published_environment_and_says_so() -> None:
    assert parse_version("1.38") == (1, 38)
    assert cel_environment_note((1, 37)) is None
    note = cel_environment_note((1, 38))
    assert note == ("Kubernetes 1.38's CEL environment is not published yet; the newest known "
                    "one (1.37) is used")
    stored_137 = get_env(EnvKey((1, 37), STORED)).options
    assert get_env(EnvKey((1, 38), STORED)).options[:-1] == stored_137[:-1]
    assert get_env(EnvKey((1, 38), NEW)).options[-1] == "kubernetes libraries @ 1.37"


def test_default_target_and_compatibility_version() -> None:
    assert DEFAULT_VERSION == (1, 37)
    assert compatibility_version((1, 37)) == (1, 36)
    assert EnvKey((1, 37), NEW).compatibility_version == (1, 36)


def test_env_key_rejects_unknown_kind_and_version() -> None:
    with pytest.raises(ValueError, match="unknown CEL environment kind"):
        EnvKey((1, 37), NEW, kind="nope")
    with pytest.raises(ValueError, match="unsupported Kubernetes version"):
        EnvKey((1, 12), NEW)


# ------------------------------------------------------------------------------------------------
# Option table
# ------------------------------------------------------------------------------------------------


def test_new_expressions_use_the_compatibility_version() -> None:
    optional = next(o for o in BASE_OPTIONS if o.name == "cel.OptionalTypes()")
    assert not optional.enabled((1, 28), NEW)  # compat 1.27
    assert optional.enabled((1, 29), NEW)
    assert optional.enabled((1, 28), STORED)  # the 1.28 binary knows it


def test_removed_option_is_dropped_in_both_modes() -> None:
    strings_v0 = next(o for o in BASE_OPTIONS if o.name == "ext.Strings(StringsVersion(0))")
    assert strings_v0.enabled((1, 29), NEW) and strings_v0.enabled((1, 29), STORED)
    assert not strings_v0.enabled((1, 30), NEW) and not strings_v0.enabled((1, 30), STORED)


def test_1_37_new_expressions_has_every_documented_option() -> None:
    env = get_env(EnvKey((1, 37), NEW))
    assert env.features == frozenset(Feature)
    assert "ext.Strings(StringsVersion(2))" in env.options
    assert "ext.Strings(StringsVersion(0))" not in env.options
    assert "ext.Lists(ListsVersion(3))" in env.options
    assert "ext.Bindings(BindingsVersion(0))" in env.options
    assert env.separate_runtime  # cross-type numeric comparisons are checker-only decls


def test_old_new_expressions_env_has_only_epoch_options() -> None:
    env = get_env(EnvKey((1, 25), NEW))
    assert env.features == frozenset({Feature.HOMOGENEOUS_LITERALS})
    assert env.separate_runtime is env.kubernetes_libraries  # upstream-typed checker decls


# ------------------------------------------------------------------------------------------------
# What Kubernetes lacks is absent at every version
# ------------------------------------------------------------------------------------------------

ABSENT = [
    "math.greatest(1, 2)",
    "math.abs(-1)",
    "base64.encode(b'abc')",
    "base64.decode('YWJj')",
    '"abc".reverse()',  # strings v3
    'strings.escape("a")',
    'regex.replace("a", "a", "b")',
]


@pytest.mark.parametrize("mode", [NEW, STORED])
@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_functions_kubernetes_lacks_are_absent(version: tuple[int, int], mode: EnvMode) -> None:
    for expression in ABSENT:
        assert not compiles(expression, version, mode), expression


@pytest.mark.parametrize("mode", [NEW, STORED])
@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_object_is_the_only_variable(version: tuple[int, int], mode: EnvMode) -> None:
    assert compiles("object.kind", version, mode)
    # cel-cpp names the whole qualified name ('device.attributes'); compile.py rewrites it.
    assert "undeclared reference to 'device" in compile_error(
        'device.attributes["dra.example.com"].model', version, mode)


# ------------------------------------------------------------------------------------------------
# What each version adds, both ways
# ------------------------------------------------------------------------------------------------

# (expression, first target whose NEW_EXPRESSIONS env accepts it, whether the STORED env of
# the release that introduced the option accepts it)
INTRODUCED = [
    ('"abc".lowerAscii() + "x".charAt(0)', (1, 24), True),  # strings v0
    ("object.?spec.orValue('')", (1, 29), True),  # optional types, 1.28
    ("1 < 2.0", (1, 29), True),  # cross-type numeric comparisons, 1.28
    ("sets.contains([1], [1])", (1, 30), True),  # ext.Sets, 1.29
    # strings v2 arrives in 1.29 while v0 is still configured first (removed from 1.29 on):
    ('strings.quote("a")', (1, 30), False),
    ('["a", "b"].join(",")', (1, 30), False),
    ('"%s".format(["a"])', (1, 30), False),
    ("cel.bind(x, 1, x + 1)", (1, 32), True),  # ext.Bindings in the affinity env, 1.31
    ("[1, 2].all(i, v, v > i)", (1, 33), True),  # two-variable comprehensions, 1.32
    ("{'a': 1}.transformMap(k, v, v + 1)", (1, 33), True),
    ("[2, 1].sort()", (1, 35), True),  # ext.Lists v3, 1.34
    ("lists.range(3)", (1, 35), True),
    ("[1, [2]].flatten()", (1, 35), True),
]


@pytest.mark.parametrize(("expression", "first", "stored_at_introduction"), INTRODUCED)
def test_option_appears_at_its_version(expression: str, first: tuple[int, int],
                                       stored_at_introduction: bool) -> None:
    introduced = (first[0], first[1] - 1)
    if introduced >= MIN_VERSION:
        assert not compiles(expression, introduced, NEW)
        assert compiles(expression, introduced, STORED) is stored_at_introduction
    assert compiles(expression, first, NEW)
    assert compiles(expression, MAX_VERSION, NEW)
    assert compiles(expression, MAX_VERSION, STORED)


def test_stored_env_accepts_what_new_env_of_same_release_rejects() -> None:
    # 1.35 NEW_EXPRESSIONS is the 1.34 option set: lists v3 is there; 1.34 NEW is not.
    assert not compiles("[2, 1].sort()", (1, 34), NEW)
    assert compiles("[2, 1].sort()", (1, 34), STORED)


def test_cross_type_comparison_needs_1_28() -> None:
    message = compile_error("1 < 2.0", (1, 28), NEW)
    assert "found no matching overload for '_<_' applied to '(int, double)'" in message
    assert compiles("1 < 2.0", (1, 28), STORED)


def test_equality_stays_homogeneous_even_with_cross_type_comparisons() -> None:
    # cel-go: CrossTypeNumericComparisons covers <, <=, >, >= only.
    assert "found no matching overload for '_==_'" in compile_error("1 == 1.0", (1, 37), NEW)


def test_stored_env_keeps_the_first_strings_library_while_v0_is_not_removed() -> None:
    # Target 1.29: compat 1.28 has not removed strings v0; v2 is also known. cel-go libraries
    # are singletons, so the first configured (v0) wins: no strings.quote.
    env = get_env(EnvKey((1, 29), STORED))
    assert "ext.Strings(StringsVersion(0))" in env.options
    assert "ext.Strings(StringsVersion(2))" not in env.options
    assert not compiles('strings.quote("a")', (1, 29), STORED)


# ------------------------------------------------------------------------------------------------
# Cross-type numeric comparisons evaluate like cel-go
# ------------------------------------------------------------------------------------------------

COMPARISONS = [
    ("1 < 2.0", True), ("2 < 1.0", False), ("1u <= 2", True), ("2.0 > 1u", True),
    ("-1 < 1u", True), ("1u > -1", True), ("1.5 >= 1", True), ("1 >= 1.5", False),
    ("1 <= 1.0", True), ("1u >= 1.0", True), ("1 < double('NaN')", False),
    ("9223372036854775807 < 9223372036854775808u", True),
    ("-9223372036854775808 < -9.3e18", False),
    ("object.n < 2.5", True), ("object.n > 2u", False), ("object.n >= 2.0", True),
]


@pytest.mark.parametrize(("expression", "expected"), COMPARISONS)
def test_cross_type_numeric_comparisons_evaluate(expression: str, expected: bool) -> None:
    env = get_env(EnvKey((1, 37), NEW))
    checked = env.checker.compile(expression)
    program = env.runtime.deserialize(checked.serialize())
    value = program.eval(data={"object": {"n": 2}})
    assert value.type().name() == "BOOL"
    assert value.value() is expected


def test_cross_type_overload_ids_are_cel_go_ids() -> None:
    from dra_affinity.policies.cel.common.ast_decode import decode_checked_expr

    env = get_env(EnvKey((1, 37), NEW))
    for expression, overload in [("1 < 2.0", "less_int64_double"),
                                 ("1u >= 2", "greater_equals_uint64_int64"),
                                 ("2.0 > 1u", "greater_double_uint64"),
                                 ("1.0 <= 2", "less_equals_double_int64")]:
        ast = decode_checked_expr(env.checker.compile(expression).serialize(), expression)
        assert ast.overload_ids(ast.root.id) == (overload,)


# ------------------------------------------------------------------------------------------------
# Variables are a parameter; caching
# ------------------------------------------------------------------------------------------------


def test_variables_are_a_parameter() -> None:
    env = build_environment((1, 37), NEW, {"device": cel.Type.DYN, "n": cel.Type.INT})
    assert env.checker.compile("n + 1").return_type().name() == "INT"
    with pytest.raises(RuntimeError, match="undeclared reference to 'object'"):
        env.checker.compile("object")


def test_get_env_is_cached() -> None:
    key = EnvKey((1, 33), STORED)
    first = get_env(key)
    hits_before = env_cache_info()[0]
    assert get_env(EnvKey((1, 33), STORED)) is first
    assert env_cache_info()[0] == hits_before + 1


# ------------------------------------------------------------------------------------------------
# Kubernetes libraries (k8s_library) join at their versions
# ------------------------------------------------------------------------------------------------

KUBERNETES_LIBRARY_FUNCTIONS = [
    ("object.x.find('[0-9]+')", (1, 24)),  # kubernetes.regex, 1.0
    ("url('https://k8s.io/').getHost()", (1, 24)),  # kubernetes.urls, 1.0
    ("[1, 2].isSorted()", (1, 24)),  # kubernetes.lists, 1.0
    ("quantity('1Gi').asInteger()", (1, 29)),  # kubernetes.quantity, 1.28
    ("ip('10.0.0.1').family()", (1, 31)),  # kubernetes.net.ip, 1.30
    ("cidr('10.0.0.0/8').prefixLength()", (1, 31)),  # net.cidr, 1.30
    ("format.dns1123Label().validate('x').hasValue()", (1, 32)),  # format, 1.31
    ("semver('1.2.3').major()", (1, 34)),  # kubernetes.Semver, 1.33
]


@pytest.mark.parametrize(("expression", "first"), KUBERNETES_LIBRARY_FUNCTIONS)
def test_kubernetes_library_appears_at_its_version(expression: str,
                                                   first: tuple[int, int]) -> None:
    if not get_env(EnvKey(MAX_VERSION, NEW)).kubernetes_libraries:
        pytest.skip("dra_affinity.policies.cel.k8s_library is not available")
    before = (first[0], first[1] - 1)
    if before >= MIN_VERSION:
        assert not compiles(expression, before, NEW)
        assert compiles(expression, before, STORED)
    assert compiles(expression, first, NEW)


def test_strings_and_lists_index_of_coexist() -> None:
    env = get_env(EnvKey(MAX_VERSION, NEW))
    if not env.kubernetes_libraries:
        pytest.skip("dra_affinity.policies.cel.k8s_library is not available")
    assert compiles("'abc'.indexOf('b') + [1, 2].indexOf(2)", MAX_VERSION, NEW)


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_the_env_config_written_as_json_is_what_cel_cpp_reads_from_the_yaml(version: tuple[int, int]) -> None:
    """`_config_yaml` writes JSON (a YAML document) for speed: cel-cpp reads the same config
    from it as from PyYAML's block style, and YAML reads the same mapping."""
    import yaml
    from dra_affinity.policies.cel.check.env import _config_yaml, _kubernetes_libraries

    extensions = [("optional", None), ("strings", 2), ("bindings", 0)]
    extra = _kubernetes_libraries(version).checker_config
    text = _config_yaml(extensions, extra)
    document = {"extensions": [{"name": "optional"}, {"name": "strings", "version": 2},
                               {"name": "bindings", "version": 0}], **extra}
    assert yaml.safe_load(text) == document
    block = yaml.safe_dump(document, sort_keys=False)
    assert cel.NewEnvConfigFromYaml(text).to_yaml() == cel.NewEnvConfigFromYaml(block).to_yaml()
