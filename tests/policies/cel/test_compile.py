"""compile_expression: results, cel-go error rendering, engine limits, the cache."""

from __future__ import annotations

import threading

import pytest
from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.common.errors import (
    MAX_SNIPPET_BYTES,
    CompileProblem,
    ErrorStage,
    parse_engine_errors,
    render_error,
    render_errors,
)
from dra_affinity.policies.cel.compile import (
    CEL_GO_MAX_CODE_POINTS,
    CompileResult,
    cache_info,
    compile_expression,
    compile_uncached,
    escaped_identifiers,
    estimate_depth,
)
from dra_affinity.policies.core.cache import BoundedCache, CacheInfo

KEY = EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS)
STORED = EnvKey((1, 37), EnvMode.STORED_EXPRESSIONS)


# ------------------------------------------------------------------------------------------------
# Results
# ------------------------------------------------------------------------------------------------


def test_ok_result_carries_checked_ast_and_program() -> None:
    guard = ('object.apiVersion == "networking.example.com/v1" && object.kind == "NICConfig" '
             '? object.subnetID : ""')
    result = compile_expression(guard, KEY)
    assert result.ok and not result.errors and not result.engine_limited
    assert result.output_type == "dyn"
    assert result.checked is not None and result.checked.expression == guard
    assert result.program is not None
    config = {"apiVersion": "networking.example.com/v1", "kind": "NICConfig", "subnetID": "s-1"}
    assert result.program.eval(data={"object": config}).value() == "s-1"
    assert result.program.eval(data={"object": {"kind": "Other"}}).value() == ""


def test_program_is_planned_on_first_use_and_once() -> None:
    from dra_affinity.policies.cel.compile import compile_uncached

    result = compile_uncached("object.a + 'x'", KEY)
    assert result.ok and result.plan is not None
    assert result.plan._program is None  # nothing planned by compiling
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(result.program)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(p) for p in seen}) == 1 and seen[0] is not None and result.program_error is None
    assert result.program.eval(data={"object": {"a": "b"}}).value() == "bx"


def test_a_program_our_engine_cannot_plan_is_an_evaluation_error_not_a_compile_error() -> None:
    """Rule 7: what cel-cpp cannot plan is our engine's limit; cel-go's own planning errors are
    found before a result is declared ok (see `plan_error`)."""
    import dataclasses

    from dra_affinity.policies.cel.check.env import get_env
    from dra_affinity.policies.cel.common.errors import KIND_FAILED
    from dra_affinity.policies.cel.compile import LazyProgram, compile_uncached
    from dra_affinity.policies.cel.eval.runtime import evaluate

    good = compile_uncached("object.a", KEY)
    broken = dataclasses.replace(good, plan=LazyProgram(get_env(KEY).runtime, b"\xff\xff not a proto"))
    assert broken.ok and broken.program is None
    assert broken.program_error
    result = evaluate(broken, {"object": {"a": "b"}})
    assert result.error is not None and result.error.kind == KIND_FAILED
    assert result.error.message.startswith("instantiate CEL program: ")


@pytest.mark.parametrize(("expression", "output_type"), [
    ("object.kind", "dyn"), ('"a"', "string"), ("42", "int"), ('object.?a.orValue("")', "dyn"),
    ("[object.a]", "list(dyn)"), ("{'a': 1}", "map(string, int)"), ("string(object.n)", "string"),
    ("cel.bind(v, object.spec, v.subnet)", "dyn"), ("object.x in ['a', 'b']", "bool"),
])
def test_output_type_is_printed_as_cel_go_does(expression: str, output_type: str) -> None:
    assert compile_expression(expression, KEY).output_type == output_type


def test_programs_of_cross_type_comparisons_run_in_the_runtime_env() -> None:
    result = compile_expression("object.n < 2.5 ? 'small' : 'big'", KEY)
    assert result.ok and result.program is not None
    assert result.program.eval(data={"object": {"n": 2}}).value() == "small"
    assert result.program.eval(data={"object": {"n": 3.0}}).value() == "big"


# ------------------------------------------------------------------------------------------------
# Errors, as upstream prints them
# ------------------------------------------------------------------------------------------------

RENDERED = [
    ('1 + "a"',
     "ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, string)'\n"
     ' | 1 + "a"\n'
     " | ..^"),
    ("x + 1",
     "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n | x + 1\n | ^"),
    ('device.attributes["dra.example.com"].model',
     "ERROR: <input>:1:1: undeclared reference to 'device' (in container '')\n"
     ' | device.attributes["dra.example.com"].model\n'
     " | ^"),
    ("'a'.startsWith(1)",
     "ERROR: <input>:1:15: found no matching overload for 'startsWith' applied to "
     "'string.(int)'\n | 'a'.startsWith(1)\n | ..............^"),
    ("1.all(x, x)",
     "ERROR: <input>:1:1: expression of type 'int' cannot be range of a comprehension "
     "(must be list, map, or dynamic)\n | 1.all(x, x)\n | ^"),
    ("has(1.a)",
     "ERROR: <input>:1:4: type 'int' does not support field selection\n | has(1.a)\n"
     " | ...^"),
    ("object.true",
     "ERROR: <input>:1:8: Syntax error: mismatched input 'true' expecting IDENTIFIER\n"
     " | object.true\n | .......^"),
    ("object.a +\n  'x' + 1",
     "ERROR: <input>:2:7: found no matching overload for '_+_' applied to '(string, int)'\n"
     " |   'x' + 1\n | ......^"),
    ('"é" + 1',
     "ERROR: <input>:1:5: found no matching overload for '_+_' applied to '(string, int)'\n"
     ' | "é" + 1\n'
     " | .\uff0e..^"),
    ('\t1 + "a"',
     "ERROR: <input>:1:4: found no matching overload for '_+_' applied to '(int, string)'\n"
     ' |  1 + "a"\n'
     " | ...^"),
]


@pytest.mark.parametrize(("expression", "expected"), RENDERED)
def test_errors_render_like_cel_go(expression: str, expected: str) -> None:
    result = compile_expression(expression, KEY)
    assert not result.ok and not result.engine_limited
    assert result.error_text == expected


@pytest.mark.parametrize(("expression", "expected"), [  # cel-go parser tests
    ("has(object)", "1:5: invalid argument to has() macro"),
    ("[1].all(1, true)", "1:9: argument must be a simple name"),
    ("[1].exists_one(2, 3)", "1:16: argument must be a simple name"),
    ("object.map(1, t)", "1:12: argument is not an identifier"),
    ("object.filter(1, true)", "1:15: argument is not an identifier"),
    ("cel.bind(a.b, 1, a.b)", "1:11: cel.bind() variable names must be simple identifiers"),
])
def test_macro_errors_use_cel_go_wording(expression: str, expected: str) -> None:
    (error,) = compile_expression(expression, KEY).errors
    assert f"{error.line}:{error.column}: {error.message}" == expected
    assert error.stage is ErrorStage.PARSE


def test_several_errors_are_sorted_by_position() -> None:
    result = compile_expression("1 +\n 'a' + x", KEY)
    assert [(e.line, e.column) for e in result.errors] == [(1, 3), (2, 8)]
    assert result.error_text.count("ERROR: <input>:") == 2


def test_error_stages() -> None:
    assert compile_expression("1 +", KEY).stage is ErrorStage.PARSE
    assert compile_expression("x", KEY).stage is ErrorStage.CHECK
    assert compile_expression("[1, 'a']", KEY).stage is ErrorStage.VALIDATE
    assert compile_expression("matches('a', '[')", KEY).stage is ErrorStage.PROGRAM


def test_syntax_error_keeps_antlr_text() -> None:
    result = compile_expression("?!", KEY)
    assert result.errors[0].message.startswith("Syntax error: extraneous input '?' expecting")
    assert result.errors[0].stage is ErrorStage.PARSE


def test_parse_engine_errors_strips_status_and_snippets() -> None:
    text = ("INVALID_ARGUMENT: ERROR: <input>:1:3: found no matching overload for '_+_' applied "
            "to '(int, string)'\n | 1 + \"a\"\n | ..^ [INVALID_ARGUMENT]")
    (error,) = parse_engine_errors(text, '1 + "a"')
    assert error == CompileProblem(1, 3, "found no matching overload for '_+_' applied to "
                                 "'(int, string)'", ErrorStage.CHECK)
    (no_location,) = parse_engine_errors(
        "INVALID_ARGUMENT: ERROR: <input>:-1:-1: Exceeded max recursion depth of 32 when "
        "parsing. [INVALID_ARGUMENT]", "x")
    assert (no_location.line, no_location.column) == (-1, 0)
    (bare,) = parse_engine_errors("CANCELLED: Expression recursion limit exceeded. limit: 32 "
                                  "[CANCELLED]", "x")
    assert bare.message == "Expression recursion limit exceeded. limit: 32"


def test_render_without_location_and_program_errors() -> None:
    assert render_error(CompileProblem(-1, 0, "max recursion depth exceeded"), "x") == (
        "ERROR: <input>:-1:0: max recursion depth exceeded")
    program = CompileProblem(1, 1, "error parsing regexp: missing closing ): `(`",
                           ErrorStage.PROGRAM)
    assert render_error(program, "x") == "error parsing regexp: missing closing ): `(`"


def test_long_lines_are_not_echoed() -> None:
    short = "a" * MAX_SNIPPET_BYTES
    long = "a" * (MAX_SNIPPET_BYTES + 1)
    assert render_error(CompileProblem(1, 1, "m"), short).count("\n") == 2
    assert render_error(CompileProblem(1, 1, "m"), long) == "ERROR: <input>:1:1: m"
    # the limit is in UTF-8 bytes
    wide = "é" * (MAX_SNIPPET_BYTES // 2 + 1)
    assert render_error(CompileProblem(1, 1, "m"), wide) == "ERROR: <input>:1:1: m"


def test_at_most_100_errors_then_a_count() -> None:
    errors = [CompileProblem(1, i + 1, f"e{i}") for i in range(105)]
    text = render_errors(reversed(errors), "x" * 200)
    assert text.count("ERROR: <input>:") == 100
    assert text.endswith("\n5 more errors were truncated")
    assert text.startswith("ERROR: <input>:1:1: e0\n")


def test_wide_character_under_the_caret() -> None:
    assert render_error(CompileProblem(1, 2, "m"), "aé").endswith(" | .\uff3e")


# ------------------------------------------------------------------------------------------------
# Engine limits
# ------------------------------------------------------------------------------------------------


def _parens(depth: int) -> str:
    return "(" * depth + "object.a" + ")" * depth


def test_nesting_40_is_an_engine_limit_not_an_error() -> None:
    result = compile_expression(_parens(40), KEY)
    assert not result.ok
    assert result.engine_limited
    assert result.errors == ()
    assert result.engine_limit_reason is not None
    assert "32 levels; Kubernetes allows 250" in result.engine_limit_reason


def test_nesting_300_is_an_error_upstream_too() -> None:
    result = compile_expression(_parens(300), KEY)
    assert not result.ok and not result.engine_limited
    assert result.error_text == "ERROR: <input>:-1:0: expression recursion limit exceeded: 250"


@pytest.mark.parametrize(("expression", "limited"), [
    (" + ".join(["object.n"] * 40), True),
    (" + ".join(["object.n"] * 300), False),
    ("object" + ".a" * 40, True),
    ("object" + ".a" * 260, False),
    ("object.k == 'v0' ? 'r0' : " + " : ".join(
        f"object.k == 'v{i}' ? 'r{i}'" for i in range(1, 40)) + " : ''", True),
    (" : ".join(f"object.k == 'v{i}' ? 'r{i}'" for i in range(300)) + " : ''", False),
    ("size(" * 40 + "'a'" + ")" * 40, True),
])
def test_engine_limit_classification(expression: str, limited: bool) -> None:
    result = compile_expression(expression, KEY)
    assert not result.ok
    assert result.engine_limited is limited
    assert bool(result.errors) is not limited


def test_shallow_long_chains_compile() -> None:
    assert compile_expression(" || ".join(f"object.a{i} == 'x'" for i in range(500)), KEY).ok
    assert compile_expression("object.k in [" + ", ".join(f"'v{i}'" for i in range(1000)) + "]",
                              KEY).ok


def test_code_point_limit() -> None:
    expression = '"' + "a" * CEL_GO_MAX_CODE_POINTS + '"'
    result = compile_expression(expression, KEY)
    assert result.error_text == (
        "ERROR: <input>:-1:0: expression code point size exceeds limit: size: 100002, "
        "limit 100000")


@pytest.mark.parametrize(("expression", "listener", "visitor"), [
    ("object", 1, 0),
    ("(((object)))", 4, 0),
    ("a + b + c", 4, 2),
    ("a.b.c.d", 4, 3),
    ("a ? b : c ? d : e", 3, 2),
    ("a && b && c || d", 1, 0),
    ("[[1, 2], [3]]", 3, 0),
    ("f(a.b.c(x + y))", 5, 3),
    ("'(((' + \"[[\" + r'\\' + '''(''' + b'('", 6, 4),
    ("a in [1] && -b < 2", 4, 1),
])
def test_estimate_depth(expression: str, listener: int, visitor: int) -> None:
    assert estimate_depth(expression) == (listener, visitor)


# ------------------------------------------------------------------------------------------------
# Cache
# ------------------------------------------------------------------------------------------------


class _Compiles:
    """A compile cache of its own, through the project's one cache type."""

    def __init__(self, maxsize: int) -> None:
        self.cache: BoundedCache[tuple[str, EnvKey], CompileResult] = BoundedCache(
            "test.compile", maxsize, register=False)

    def get_or_compile(self, expression: str, key: EnvKey) -> CompileResult:
        return self.cache.get_or_compute((expression, key), lambda: compile_uncached(expression, key))

    def info(self) -> CacheInfo:
        return self.cache.info()

    def clear(self) -> None:
        self.cache.clear()


def test_cache_counts_hits_misses_and_evictions() -> None:
    cache = _Compiles(maxsize=2)
    first = cache.get_or_compile("object.a", KEY)
    assert cache.get_or_compile("object.a", KEY) is first
    cache.get_or_compile("object.a", STORED)  # another environment: another entry
    cache.get_or_compile("object.b", KEY)  # evicts the least recently used
    info = cache.info()
    assert (info.hits, info.misses, info.evictions, info.size, info.maxsize) == (1, 3, 1, 2, 2)
    assert cache.get_or_compile("object.a", KEY) is not first  # it was evicted
    cache.clear()
    assert cache.info()[:4] == (0, 0, 0, 0)


def test_failures_are_cached_too() -> None:
    cache = _Compiles(maxsize=4)
    bad = cache.get_or_compile("1 +", KEY)
    assert cache.get_or_compile("1 +", KEY) is bad
    assert cache.info().hits == 1


def test_process_cache_info_moves() -> None:
    before = cache_info()
    compile_expression("object.cache_probe", KEY)
    compile_expression("object.cache_probe", KEY)
    after = cache_info()
    assert after.hits >= before.hits + 1
    assert after.misses >= before.misses


def test_cache_is_thread_safe() -> None:
    cache = _Compiles(maxsize=16)
    expressions = [f"object.f{i % 20} == 'v' ? 'a' : ''" for i in range(200)]
    outcomes: list[bool] = []
    lock = threading.Lock()

    def work(chunk: list[str]) -> None:
        for expression in chunk:
            result = cache.get_or_compile(expression, KEY)
            with lock:
                outcomes.append(result.ok and result.expression == expression)

    threads = [threading.Thread(target=work, args=(expressions[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    info = cache.info()
    assert len(outcomes) == 200 and all(outcomes)
    assert info.hits + info.misses == 200
    assert info.size <= 16


def test_ten_kib_expressions_compile() -> None:
    for variant in range(2):
        terms = [f"(object.spec.k{variant}_{i} == 'value-{variant}-{i:04d}' && "
                 f"object.spec.m{i}.startsWith('p'))" for i in range(130)]
        expression = " || ".join(terms)
        assert 9_000 < len(expression.encode()) <= 10_240
        result = compile_uncached(expression, KEY)
        assert result.ok, result.error_text


# ------------------------------------------------------------------------------------------------
# Syntax cel-cpp accepts and Kubernetes' parser does not
# ------------------------------------------------------------------------------------------------


def test_backtick_identifiers_are_rejected() -> None:
    result = compile_expression("object.`a-b`", KEY)
    assert result.error_text == (
        "ERROR: <input>:1:8: unsupported syntax: '`'\n | object.`a-b`\n | .......^")
    assert result.stage is ErrorStage.PARSE


def test_backticks_in_strings_and_comments_are_fine() -> None:
    assert escaped_identifiers("'`' + \"`\" + r'''`''' // `x`\n+ object.y") == []
    assert compile_expression("'`' + string(object.x) // a `comment`", KEY).ok


def test_backtick_errors_merge_with_other_syntax_errors() -> None:
    result = compile_expression("object.\n  `a` + 1 +", KEY)
    assert [(e.line, e.column) for e in result.errors] == [(2, 3), (2, 12)]
    assert result.errors[1].message.startswith("Syntax error: mismatched input '<EOF>'")


def test_kubernetes_regex_literal_fails_when_the_program_is_built() -> None:
    result = compile_expression("'abc'.find('(')", KEY)
    if not result.ok and result.stage is ErrorStage.CHECK:
        pytest.skip("dra_affinity.policies.cel.k8s_library is not available")
    assert result.stage is ErrorStage.PROGRAM
    assert result.error_text == "error parsing regexp: missing closing ): `(`"
    good = compile_expression("object.x.findAll('[0-9]')", KEY)
    assert good.ok and good.program is not None
    assert list(good.program.eval(data={"object": {"x": "a1b2"}}).plain_value()) == ["1", "2"]


def test_compile_results_are_weighed_near_what_they_hold() -> None:
    """The cel.compile and analysis.expression byte budgets rest on `result_weight`: for a
    10 KiB expression (~3,700 nodes) it must not fall short of the Python memory the result
    and its analysis hold, measured here, nor overstate it past twice."""
    import gc
    import tracemalloc
    import uuid

    from dra_affinity.policies.analysis.expression import analyse
    from dra_affinity.policies.cel import compile as compile_module
    from dra_affinity.policies.core.limits import DEFAULT_KUBERNETES_VERSION

    tag = uuid.uuid4().hex
    text = " || ".join(f'object.exists(x, x == "{tag}-{j}")' for j in range(300))[:10_000]
    text = text.rsplit(" || ", 1)[0]
    analyse("1 == 1", DEFAULT_KUBERNETES_VERSION)  # the environment, built outside the measure
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        analysis = analyse(text, DEFAULT_KUBERNETES_VERSION)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    weight = compile_module.result_weight(analysis.compiled)
    assert analysis.compiled.ok and weight > 1_000_000
    assert held <= weight <= 2 * held, (held, weight)
