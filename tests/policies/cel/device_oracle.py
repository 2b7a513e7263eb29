"""Device selectors against the real DRA compiler: generator, oracle client and comparison.

The reference is `shared/oracle/celoracle-1.36` in `"mode": "device"` (`shared/oracle/README.md`):
`k8s.io/dynamic-resource-allocation/cel` of Kubernetes 1.36.2 with DRAConsumableCapacity and
DRAListTypeAttributes on, compiling and evaluating as the scheduler (stored) and the API server
(new) do. The project's side is `dra_affinity.policies.analysis.device` with the same release
and gates. Compared: compile verdict, output type, estimated maximum cost, then (when both
compiled) match / runtime error; those decide agreement. Where both sides fail at run time, their
texts are compared apart (`sameErrorText`), after removing the hint the project appends to `no
such key` (Kubernetes' `EnhanceRuntimeError` wording), which 1.36's `DeviceMatches` does not
return.

The long campaign (minutes; ≥ 10,000 selectors):

    nice -n 10 .venv/bin/python -m tests.policies.cel.device_oracle --cases 10000 --seed 1

prints one JSON line of figures and the first disagreements; the suite runs a bounded version
(`test_device_oracle.py`) and checks the corpus of fixed disagreements
(`device_corpus.jsonl`, the oracle's answers recorded with `--record-corpus REQUESTS`) on every
machine.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dra_affinity.policies.analysis.device import (
    DeviceValue,
    compile_selector,
    device_value,
    evaluate_selector,
    selector_cost,
)
from dra_affinity.policies.cel.check.env import DeviceFeatures, EnvKey, EnvMode, dra_list_attributes
from dra_affinity.policies.cel.eval.runtime import MISSING_FIELD_HINT
from dra_affinity.policies.model.resources import Capacity, Device

ORACLE = Path(__file__).resolve().parents[3].parent / "shared" / "oracle" / "celoracle-1.36"
VERSION = (1, 36)
FEATURES = DeviceFeatures(consumable_capacity=True, list_type_attributes=True)
MEMORY_LIMIT = 3 << 30
"""Address-space limit of the oracle process (the README's advice for generated input)."""

DRIVER = "dra.example.com"
OTHER = "other.example.com"


def oracle_problem() -> str | None:
    """Why the oracle cannot be used here, or None."""
    if not ORACLE.is_file():
        return f"the DRA oracle {ORACLE} is absent (it ships beside the repository in CI)"
    try:
        out = subprocess.run([str(ORACLE)], input='{"mode":"device","expr":"true"}\n',
                             capture_output=True, text=True, timeout=60, check=False)
    except OSError as err:
        return f"the DRA oracle {ORACLE} cannot run here: {err}"
    except subprocess.TimeoutExpired:
        return f"the DRA oracle {ORACLE} did not answer within 60 s"
    if out.returncode != 0 or '"bool"' not in out.stdout:
        return f"the DRA oracle {ORACLE} failed: {out.stderr.strip()[:200]}"
    return None


# ------------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One selector, the environment it is compiled in, and one device."""

    expression: str
    mode: str  # "stored" | "new"
    device: dict[str, Any]  # the oracle's `device` JSON

    def request(self) -> dict[str, Any]:
        return {"mode": "device", "expr": self.expression, "deviceEnv": self.mode,
                "device": self.device}


_NAMES = ("model", "index", "ok", "fw", "vlans", "tags", "flags", "versions", "cores", "memory")
_STRINGS = ('"a"', '"b"', '"model-a"', '""', '"dra.example.com"')
_INTS = ("0", "1", "2", "3", "7", "-1", "100")
_VERSIONS = ('semver("1.0.0")', 'semver("2.1.0")', 'semver("0.0.1")')


def random_device(rng: random.Random) -> dict[str, Any]:
    """A device with scalar and list attributes under the driver's and another domain."""
    attributes: dict[str, Any] = {}
    for name in rng.sample(_NAMES, rng.randint(0, 6)):
        qualified = name if rng.random() < 0.8 else f"{OTHER}/{name}"
        kind = rng.choice(("int", "string", "bool", "version", "ints", "strings", "bools",
                           "versions"))
        if kind == "int":
            value: Any = rng.choice((0, 1, 2, 3, 7, -1, 100))
        elif kind == "string":
            value = rng.choice(("a", "b", "model-a", ""))
        elif kind == "bool":
            value = rng.random() < 0.5
        elif kind == "version":
            value = rng.choice(("1.0.0", "2.1.0", "0.0.1"))
        elif kind == "ints":
            value = [rng.choice((0, 1, 2, 3, 7)) for _ in range(rng.randint(0, 4))]
        elif kind == "strings":
            value = [rng.choice(("a", "b", "c")) for _ in range(rng.randint(0, 4))]
        elif kind == "bools":
            value = [rng.random() < 0.5 for _ in range(rng.randint(0, 3))]
        else:
            value = [rng.choice(("1.0.0", "2.1.0")) for _ in range(rng.randint(0, 3))]
        attributes[qualified] = {kind: value}
    capacity = {name: {"value": rng.choice(("1", "8Gi", "100m", "2"))}
                for name in rng.sample(("memory", "cores", "slots"), rng.randint(0, 2))}
    device: dict[str, Any] = {"driver": DRIVER, "attributes": attributes, "capacity": capacity}
    if rng.random() < 0.5:
        device["allowMultipleAllocations"] = rng.random() < 0.5
    return device


class _Gen:
    """A small grammar over `device`: typed pieces, and wrong types on purpose."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def attribute(self) -> str:
        r = self.rng
        domain = r.choice((f'"{DRIVER}"', f'"{DRIVER}"', f'"{OTHER}"', "device.driver"))
        name = r.choice(_NAMES)
        form = r.random()
        if form < 0.6:
            return f"device.attributes[{domain}].{name}"
        if form < 0.8:
            return f'device.attributes[{domain}]["{name}"]'
        return f"device.attributes[{domain}].?{name}.orValue({self.scalar()})"

    def capacity(self) -> str:
        return f'device.capacity["{DRIVER}"].{self.rng.choice(("memory", "cores", "slots"))}'

    def scalar(self) -> str:
        r = self.rng
        return r.choice((r.choice(_INTS), r.choice(_STRINGS), r.choice(("true", "false")),
                         r.choice(_VERSIONS)))

    def value(self, depth: int) -> str:
        r = self.rng
        choice = r.random()
        if choice < 0.3:
            return self.attribute()
        if choice < 0.38:
            return r.choice(("device.driver", "device.allowMultipleAllocations"))
        if choice < 0.46:
            return self.capacity()
        if choice < 0.54:
            items = ", ".join(self.scalar() for _ in range(r.randint(0, 3)))
            return f"[{items}]"
        if choice < 0.58 and depth > 0:
            return f"{self.value(depth - 1)}.size()"
        if choice < 0.72 and depth > 0:
            return self.call(depth - 1)
        if choice < 0.76:
            # a library value behind `dyn`: an attribute's fallback
            return (f"{self.attribute().split('.?')[0].rsplit('.', 1)[0]}.?{r.choice(_NAMES)}"
                    f".orValue({r.choice((self.capacity(), r.choice(_VERSIONS)))})")
        if choice < 0.8:
            return f'{{"k": {self.value(0)}}}'
        return self.scalar()

    def call(self, depth: int) -> str:
        """A function applied to a value of any type: the type is often wrong on purpose."""
        r = self.rng
        v = self.value(depth)
        return r.choice((
            f"string({v})", f"int({v})", f"type({v})", f"dyn({v})", f"-{v}", f"{v} + {v}",
            f"{v} * 2", f'{v}.startsWith("a")', f'{v}.contains("a")', f"{v}.lowerAscii()",
            f'{v}.split(".")', f"{v}.charAt(0)", f"{v}.sort()", f"{v}.reverse()",
            f"{v}.indexOf({self.scalar()})", f"{v}.flatten()", f"{v}.join()", f"{v}.min()",
            f"{v}.distinct()", f"{v}.slice(0, 1)", f"{v}[0]", f'{v}["model"]',
            f'{v}.?model.orValue("z")', f"{v}.major()", f'{v}.compareTo(semver("1.0.0"))',
            f'{v}.isGreaterThan(quantity("1"))', f"{v}.asInteger()", f"{v}.sign()",
            f"{v}.map(x, x)", f'{v}.filter(x, x != "a")', f"cel.bind(b, {v}, [b, b])",
            f"({self.predicate(0)} ? {v} : {self.value(0)})", f"optional.of({v})",
            f"sets.contains({v}, [1])", f"{v}.isSorted()",
        ))

    def predicate(self, depth: int) -> str:
        r = self.rng
        choice = r.random()
        if depth > 0 and choice < 0.15:
            op = r.choice(("&&", "||"))
            return f"({self.predicate(depth - 1)} {op} {self.predicate(depth - 1)})"
        if depth > 0 and choice < 0.2:
            return f"!{self.predicate(depth - 1)}"
        if choice < 0.4:
            return f"{self.value(depth)}.includes({self.scalar()})"
        if choice < 0.6:
            op = r.choice(("==", "!=", "<", "<=", ">", ">="))
            return f"{self.value(depth)} {op} {self.value(depth)}"
        if choice < 0.68:
            return f"{self.scalar()} in {self.value(depth)}"
        if choice < 0.76:
            macro = r.choice(("exists", "all", "exists_one"))
            body = r.choice(("x == 1", 'x == "a"', "x", "x > 0", 'x.isGreaterThan(semver("1.0.0"))'))
            return f"{self.attribute()}.{macro}(x, {body})"
        if choice < 0.82:
            return f"has({self.attribute().split('.?')[0]})"
        if choice < 0.88:
            return f'{self.capacity()}.isGreaterThan(quantity("{r.choice(("1", "4Gi", "1m"))}"))'
        if choice < 0.9:
            return (f'cel.bind(a, device.attributes["{DRIVER}"], '
                    f'a.{r.choice(_NAMES)}.includes({self.scalar()}))')
        if choice < 0.93:
            op = r.choice(("==", "!=", "in"))
            return f"{self.value(depth)} {op} {self.value(depth)}"
        if choice < 0.96:
            return r.choice(("device.allowMultipleAllocations", "!device.driver",
                             "device.driver <= 8", "device.driver.startsWith(\"dra\")",
                             f'"{DRIVER}" in device.attributes'))
        return self.value(depth)


def cases(count: int, seed: int = 0) -> Iterator[Case]:
    """`count` generated cases; case `i` of `seed` is the same on every run."""
    for i in range(count):
        rng = random.Random(f"{seed}:{i}")
        expression = _Gen(rng).predicate(rng.randint(0, 3))
        yield Case(expression, "stored" if rng.random() < 0.8 else "new", random_device(rng))


# ------------------------------------------------------------------------------------------------
# Both sides
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one side says about a case (texts kept for reports, not compared)."""

    compiled: bool
    output_type: str | None
    max_cost: int | None
    matched: bool | None
    error: str | None


def project_outcome(case: Case) -> Outcome:
    mode = EnvMode.STORED_EXPRESSIONS if case.mode == "stored" else EnvMode.NEW_EXPRESSIONS
    selector = compile_selector(case.expression, EnvKey(VERSION, mode, "dra-device", FEATURES))
    if not selector.ok:
        return Outcome(False, None, None, None, selector.detail)
    report = selector_cost(selector)
    raw = case.device
    device = Device(0, "d", raw.get("allowMultipleAllocations") or False,
                    dict(raw.get("attributes") or {}),
                    {k: Capacity(v["value"]) for k, v in (raw.get("capacity") or {}).items()})
    value = device_value(device, raw["driver"], list_attributes=dra_list_attributes(VERSION, FEATURES))
    if not isinstance(value, DeviceValue):
        return Outcome(True, selector.output_type, report.max if report else None, None,
                       value.message)
    result = evaluate_selector(selector, value)
    return Outcome(True, selector.output_type, report.max if report else None,
                   None if result.error else result.matched, result.error)


def oracle_outcomes(batch: Sequence[Case]) -> list[Outcome]:
    """The oracle's outcomes, one process per batch, under the README's memory limit."""
    prlimit = shutil.which("prlimit")
    command = [prlimit, f"--as={MEMORY_LIMIT}", str(ORACLE)] if prlimit else [str(ORACLE)]
    text = "".join(json.dumps(c.request()) + "\n" for c in batch)
    out = subprocess.run(command, input=text, capture_output=True, text=True, timeout=600,
                         check=True)
    outcomes = []
    for line in out.stdout.splitlines():
        answer = json.loads(line)
        if "compileError" in answer:
            outcomes.append(Outcome(False, None, None, None, answer["compileError"]))
            continue
        value = answer.get("value")
        matched = value["v"] if isinstance(value, dict) else None
        estimate = answer.get("costEstimate") or {}
        outcomes.append(Outcome(True, answer.get("outputType"), estimate.get("max"), matched,
                                answer.get("evalError")))
    if len(outcomes) != len(batch):
        raise RuntimeError(f"the oracle answered {len(outcomes)} of {len(batch)} cases")
    return outcomes


def differences(ours: Outcome, theirs: Outcome) -> list[str]:
    """The compared aspects that disagree (empty: the case agrees)."""
    if ours.compiled != theirs.compiled:
        return ["compile verdict"]
    if not ours.compiled:
        return []
    out = []
    if ours.output_type != theirs.output_type:
        out.append("output type")
    if ours.max_cost != theirs.max_cost:
        out.append("estimate")
    if (ours.error is None) != (theirs.error is None):
        out.append("error class")
    elif ours.error is None and ours.matched != theirs.matched:
        out.append("value")
    return out


@dataclass
class Figures:
    cases: int = 0
    agreed: int = 0
    compiled: int = 0
    """Cases the oracle compiled (the others agree only on the verdict)."""
    evaluated: int = 0
    """Cases the oracle evaluated to a bool."""
    by_aspect: Counter[str] | None = None
    examples: list[dict[str, Any]] | None = None
    both_failed: int = 0
    """Cases where both sides report a runtime error (their texts are compared apart)."""
    same_text: int = 0
    text_examples: list[dict[str, Any]] | None = None

    def as_json(self) -> dict[str, Any]:
        rate = self.agreed / self.cases if self.cases else 1.0
        return {"cases": self.cases, "agreed": self.agreed, "agreement": round(rate, 6),
                "oracleCompiled": self.compiled, "oracleMatchedOrNot": self.evaluated,
                "disagreements": dict(self.by_aspect or {}), "examples": self.examples or [],
                "runtimeErrorsOnBothSides": self.both_failed,
                "sameErrorText": self.same_text, "errorTextExamples": self.text_examples or []}


def error_text(text: str) -> str:
    """A runtime error's text as 1.36's `DeviceMatches` returns it: without the hint the project
    appends to `no such key` (see the module docstring)."""
    return text.removesuffix(MISSING_FIELD_HINT)


def compare(all_cases: Sequence[Case], batch_size: int = 500, keep: int = 20) -> Figures:
    figures = Figures(by_aspect=Counter(), examples=[], text_examples=[])
    assert figures.by_aspect is not None and figures.examples is not None
    assert figures.text_examples is not None
    for start in range(0, len(all_cases), batch_size):
        batch = all_cases[start:start + batch_size]
        for case, theirs in zip(batch, oracle_outcomes(batch), strict=True):
            ours = project_outcome(case)
            figures.cases += 1
            figures.compiled += theirs.compiled
            figures.evaluated += theirs.matched is not None
            aspects = differences(ours, theirs)
            if ours.compiled and theirs.compiled and ours.error and theirs.error:
                figures.both_failed += 1
                if error_text(ours.error) == theirs.error:
                    figures.same_text += 1
                elif len(figures.text_examples) < keep:
                    figures.text_examples.append({"expr": case.expression, "ours": ours.error,
                                                  "oracle": theirs.error})
            if not aspects:
                figures.agreed += 1
                continue
            figures.by_aspect.update(aspects)
            if len(figures.examples) < keep:
                figures.examples.append({"case": case.request(), "aspects": aspects,
                                         "ours": ours.__dict__, "oracle": theirs.__dict__})
    return figures


# ------------------------------------------------------------------------------------------------
# The corpus: fixed disagreements with the oracle's recorded answers (runs without the oracle)
# ------------------------------------------------------------------------------------------------

CORPUS = Path(__file__).with_name("device_corpus.jsonl")


@dataclass(frozen=True)
class CorpusEntry:
    case: Case
    oracle: Outcome


def corpus(path: Path = CORPUS) -> list[CorpusEntry]:
    """The recorded cases: one JSON line each, `{"case": <request>, "oracle": <outcome>}`."""
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        request = record["case"]
        entries.append(CorpusEntry(Case(request["expr"], request["deviceEnv"], request["device"]),
                                   Outcome(**record["oracle"])))
    return entries


def record_corpus(requests: Path, out: Path) -> int:
    """Ask the oracle about each request of `requests` (JSON lines of `Case.request()`, or a
    corpus, whose cases are asked again) and write the corpus to `out`."""
    lines = [json.loads(line) for line in requests.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    cases = [Case(r["expr"], r.get("deviceEnv", "stored"), r["device"])
             for r in (line.get("case", line) for line in lines)]
    with out.open("w", encoding="utf-8") as f:
        for case, outcome in zip(cases, oracle_outcomes(cases), strict=True):
            f.write(json.dumps({"case": case.request(), "oracle": outcome.__dict__},
                               sort_keys=True) + "\n")
    return len(cases)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--record-corpus", type=Path, metavar="REQUESTS",
                        help="record the oracle's answers to these requests (JSON lines) into "
                             "the corpus file instead of running a campaign")
    args = parser.parse_args(argv)
    problem = oracle_problem()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    if args.record_corpus is not None:
        print(json.dumps({"recorded": record_corpus(args.record_corpus, CORPUS)}))
        return 0
    figures = compare(list(cases(args.cases, args.seed)), keep=args.examples)
    print(json.dumps(figures.as_json()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
