"""Benchmark: CEL compilation (cold, per stage), compile-cache hits, extractor evaluation.

Prints figures next to the targets of the issue and asserts nothing:

* cold compile of 8 different ~10 KiB extractor-like expressions < 100 ms in total;
* a compile-cache hit < 5 µs;
* evaluation of a typical guarded extractor < 20 µs.

"Cold" means the compile cache is empty; the CEL environment itself is built once beforehand
(it is per Kubernetes version and outlives any expression). Each figure is the best of
`--repeat` runs, so it is comparable across runs on one machine, not across machines.

    python bench/cel_bench.py [--repeat 5] [--size 10240] [--count 8]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dra_affinity.policies.cel.check.env import CelEnvironment, EnvKey, EnvMode, Feature, get_env
from dra_affinity.policies.cel.check.validators import (
    program_regex_errors,
    validate_duration_literals,
    validate_homogeneous_literals,
    validate_regex_literals,
    validate_timestamp_literals,
)
from dra_affinity.policies.cel.common.ast import CheckedAst
from dra_affinity.policies.cel.common.ast_decode import decode_checked_expr
from dra_affinity.policies.cel.compile import (
    clear_cache,
    compile_expression,
    compile_in,
    compile_uncached,
    escaped_identifiers,
)
from dra_affinity.policies.cel.cost.estimate import estimate_cost
from dra_affinity.policies.cel.eval.runtime import evaluate

KEY = EnvKey((1, 37), EnvMode.NEW_EXPRESSIONS)

TARGET_COLD_TOTAL_MS = 100.0
TARGET_CACHE_HIT_US = 5.0
TARGET_EVAL_US = 20.0

TYPICAL = ('object.apiVersion == "networking.example.com/v1" && object.kind == "NICConfig" '
           '? object.subnetID : ""')
TYPICAL_OBJECT = {"apiVersion": "networking.example.com/v1", "kind": "NICConfig",
                  "subnetID": "subnet-0a1b2c"}

# ------------------------------------------------------------------------------------------------
# Extractor-like expressions
# ------------------------------------------------------------------------------------------------

_GROUPS = ("networking.example.com", "gpu.example.com", "fabric.example.org",
           "storage.example.net", "rdma.example.com", "fpga.example.com")
_KINDS = ("NICConfig", "GPUConfig", "FabricPort", "VolumeClaim", "AcceleratorSlot", "PKeyConfig",
          "BitstreamConfig", "SwitchPort")
_FIELDS = ("subnetID", "rack", "zone", "pciRoot", "fabricID", "numaNode", "switchName", "vlan",
           "podCIDR", "ibPKey", "bitstreamID", "partition")


def _value(r: random.Random, i: int) -> str:
    f, g = r.sample(_FIELDS, 2)
    label = f"{r.choice(_GROUPS)}/{f.lower()}"
    return r.choice((
        f'object.?spec.?{f}.orValue("")',
        f'string(object.spec.{f}) + "/" + string(object.spec.{g})',
        f'has(object.spec.{f}) ? string(object.spec.{f}) : "default-{i}"',
        f'object.spec.?items.orValue([]).filter(x, has(x.{f})).map(x, string(x.{f})).join(",")',
        f'cel.bind(s, object.spec, string(s.{f}).lowerAscii() + "-" + string(s.{g}))',
        f'string(object.metadata.labels["{label}"])',
        f'object.spec.ports.exists(p, p.name == "port-{i}") ? "port-{i}" : string(object.spec.{g})',
        f'string(object.spec.{f}).split("/")[0].trim()',
        f'[string(object.spec.{f}), string(object.spec.{g})].join(":")',
        f'string(int(object.spec.{f}) % {r.randint(2, 4096)})',
        f'object.spec.devices.all(d, d.healthy == true) ? "healthy-" + string(object.spec.{f}) '
        f': ""',
        f'string(object.spec.{f}).matches("^[a-z0-9-]+$") ? string(object.spec.{f}).upperAscii() '
        f': ""',
    ))


def extractor(seed: int, size: int) -> str:
    """A valid extractor of about `size` characters: one guarded branch per (apiVersion, kind).

    Branches sit in a list literal joined at the end, the flat shape a long hand-written
    extractor takes (a ternary chain that long nests deeper than cel-cpp's parser allows).
    """
    r = random.Random(seed)
    branches: list[str] = []
    total = 0
    while total < size - 300:
        i = len(branches)
        value = ' + "|" + '.join(f"({_value(r, i)})" for _ in range(r.randint(2, 3)))
        branch = (f'object.?apiVersion.orValue("") == "{r.choice(_GROUPS)}/v{r.randint(1, 3)}"\n'
                  f'  && object.?kind.orValue("") == "{r.choice(_KINDS)}{i}"\n'
                  f'  ? {value}\n  : ""')
        branches.append(branch)
        total += len(branch) + 2
    return "[\n" + ",\n".join(branches) + '\n].filter(s, s != "").join(",")'


# ------------------------------------------------------------------------------------------------
# Measurement helpers
# ------------------------------------------------------------------------------------------------


def _best(run: Callable[[], object], repeat: int) -> float:
    """Best wall time of `repeat` runs, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _per_call(run: Callable[[], object], calls: int, repeat: int) -> float:
    """Best mean time of one call over `repeat` batches of `calls`, in seconds."""
    def batch() -> None:
        for _ in range(calls):
            run()
    return _best(batch, repeat) / calls


def _verdict(value: float, target: float) -> str:
    return f"{'meets' if value < target else 'MISSES'} target < {target:g}"


# ------------------------------------------------------------------------------------------------
# Cold compilation, by stage
# ------------------------------------------------------------------------------------------------


@dataclass
class _Stages:
    scan: float = 0.0
    engine: float = 0.0
    decode: float = 0.0
    validators: float = 0.0
    replan: float = 0.0
    cost: float = 0.0


def _validate(env: CelEnvironment, checked: CheckedAst) -> int:
    """The AST validators `compile_in` runs (public functions, same order, on the AST's node
    index, which the first of them builds); count of errors."""
    errors = 0
    if env.has(Feature.HOMOGENEOUS_LITERALS):
        errors += len(validate_homogeneous_literals(checked))
    if env.has(Feature.LITERAL_VALIDATORS):
        errors += len(validate_duration_literals(checked))
        errors += len(validate_timestamp_literals(checked))
        errors += len(validate_regex_literals(checked, env.regex_error))
    errors += len(program_regex_errors(checked, env.regex_error))
    return errors


def _stages_once(env: CelEnvironment, expressions: Sequence[str]) -> _Stages:
    stages = _Stages()
    clock = time.perf_counter
    for text in expressions:
        start = clock()
        escaped_identifiers(text)
        t0 = clock()
        serialized = env.checker.compile(text).serialize()
        t1 = clock()
        checked = decode_checked_expr(serialized, text)
        t2 = clock()
        _validate(env, checked)
        t3 = clock()
        if env.separate_runtime:
            env.runtime.deserialize(serialized)
        t4 = clock()
        estimate_cost(checked, presence_test_cost=0)
        t5 = clock()
        stages.scan += t0 - start
        stages.engine += t1 - t0
        stages.decode += t2 - t1
        stages.validators += t3 - t2
        stages.replan += t4 - t3
        stages.cost += t5 - t4
    return stages


def _node_count(text: str) -> int:
    checked = compile_uncached(text, KEY).checked
    return sum(1 for _ in checked.walk()) if checked is not None else 0


def bench_cold(expressions: Sequence[str], repeat: int) -> None:
    env = get_env(KEY)
    compile_in(env, "object.a == 1")  # build the environment outside the timings
    for text in expressions:
        result = compile_uncached(text, KEY)
        if not result.ok:
            raise SystemExit(f"benchmark expression does not compile: {result.error_text}")
    total = _best(lambda: [compile_uncached(e, KEY) for e in expressions], repeat)
    best = _stages_once(env, expressions)
    for _ in range(repeat - 1):
        run = _stages_once(env, expressions)
        for name in vars(best):
            setattr(best, name, min(getattr(best, name), getattr(run, name)))
    n = len(expressions)
    size = sum(len(e) for e in expressions) / n
    nodes = sum(_node_count(e) for e in expressions) / n
    print(f"\ncold compile: {n} expressions of ~{size / 1024:.1f} KiB "
          f"(~{nodes:.0f} AST nodes each), best of {repeat}; stages timed separately")
    print(f"  compile_uncached, total                {total * 1e3:6.1f} ms   "
          f"{_verdict(total * 1e3, TARGET_COLD_TOTAL_MS)} ms")
    rows = [
        ("backtick scan (escaped_identifiers)", best.scan),
        ("cel-cpp parse+check+serialize", best.engine),
        ("decode_checked_expr", best.decode),
        ("node index + validators", best.validators),
    ]
    for label, seconds in rows:
        print(f"    {label:<36} {seconds * 1e3:6.1f} ms   ({seconds / n * 1e3:.2f} ms each)")
    print("  not part of compile:")
    for label, seconds in (("planning in the runtime env (first use)", best.replan),
                           ("estimate_cost", best.cost)):
        print(f"    {label:<40} {seconds * 1e3:6.1f} ms   ({seconds / n * 1e3:.2f} ms each)")


# ------------------------------------------------------------------------------------------------
# Cache hits and evaluation
# ------------------------------------------------------------------------------------------------


def bench_cache(text: str, repeat: int) -> None:
    clear_cache()
    compile_expression(text, KEY)
    same = _per_call(lambda: compile_expression(text, KEY), 20_000, repeat)
    calls = 2_000
    equal = float("inf")
    for _ in range(repeat):
        copies = [text[:1] + text[1:] for _ in range(calls)]  # equal text, hash not yet cached
        start = time.perf_counter()
        for copy in copies:
            compile_expression(copy, KEY)
        equal = min(equal, (time.perf_counter() - start) / calls)
    print(f"\ncompile cache hit ({len(text)} characters)")
    print(f"  same string object           {same * 1e6:8.2f} µs   "
          f"{_verdict(same * 1e6, TARGET_CACHE_HIT_US)} µs")
    print(f"  equal, freshly built string  {equal * 1e6:8.2f} µs   "
          f"{_verdict(equal * 1e6, TARGET_CACHE_HIT_US)} µs (includes hashing the text)")


def bench_eval(repeat: int) -> None:
    compiled = compile_uncached(TYPICAL, KEY)
    if not compiled.ok or compiled.program is None:
        raise SystemExit(f"typical extractor does not compile: {compiled.error_text}")
    program = compiled.program
    data = {"object": TYPICAL_OBJECT}
    value = program.eval(data=data).value()
    direct = _per_call(lambda: program.eval(data=data), 5_000, repeat)
    print(f"\nevaluation of the typical extractor (value {value!r})")
    print(f"  {TYPICAL}")
    print(f"  program.eval                 {direct * 1e6:8.2f} µs   "
          f"{_verdict(direct * 1e6, TARGET_EVAL_US)} µs")
    result = evaluate(compiled, data)
    tracked = _per_call(lambda: evaluate(compiled, data), 2_000, repeat)
    print(f"  runtime.evaluate (+ cost)    {tracked * 1e6:8.2f} µs   "
          f"{_verdict(tracked * 1e6, TARGET_EVAL_US)} µs "
          f"(value {result.value!r}, cost {result.runtime_cost}, error {result.error})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size", type=int, default=10 * 1024, help="characters per expression")
    parser.add_argument("--count", type=int, default=8, help="expressions compiled cold")
    args = parser.parse_args()

    print(f"python {platform.python_version()} ({platform.python_implementation()}) on "
          f"{platform.machine()}, cel-expr-python "
          f"{importlib.metadata.version('cel-expr-python')}, environment {KEY}")
    expressions = [extractor(seed, args.size) for seed in range(args.count)]
    bench_cold(expressions, args.repeat)
    bench_cache(expressions[0], args.repeat)
    bench_eval(args.repeat)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
