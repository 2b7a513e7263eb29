"""One extractor case answered by the project's CEL in the oracle's shape, and the comparison.

The project's side is what the scheduler runs (`compile_expression` in the stored-expressions
environment of the newest known release, `estimate_cost` without size knowledge,
`evaluate` with the 1,000,000 cost limit, `object` decoded by `decode_k8s_json`); the oracle's
is cel-go with the Kubernetes libraries (`oracle.py`). Both answers are dictionaries of the
oracle's protocol (shared/oracle/README.md), and `compare` names every dimension on which they
differ:

* `verdict`: compile error, program error (cel-go's `env.Program` failed: the scheduler
  reports that it cannot instantiate the program) or ok;
* `type`, `estimate`: the checked output type (as `cel.FormatCELType` spells it:
  `timestamp`, `null`, where the project's messages say `google.protobuf.Timestamp`,
  `null_type` as cel-go's checker errors do) and the static cost [min, max];
* `outcome`: what the scheduler makes of the evaluation (the error class, a string value, or
  a non-string result);
* `value`: the value and its type name, when both evaluated without an error;
* `error`: the error class (`missing field`, `cel evaluation failed`, cost exceeded), when
  either failed;
* `cost`: the runtime cost, when both evaluated.

Values are compared as plain data: an int and a uint inside a list, an optional and its value,
a type and its name are not told apart (the top-level type name is compared separately), and a
`kubernetes.NamedFormat` value (printed by cel-go as a Go pointer) is not compared.
"""

from __future__ import annotations

import base64
import datetime
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dra_affinity.policies.cel.check.env import EnvKey, EnvMode
from dra_affinity.policies.cel.common.errors import ErrorStage
from dra_affinity.policies.cel.common.jsonvalue import LiteralKey, decode_k8s_json
from dra_affinity.policies.cel.compile import compile_expression
from dra_affinity.policies.cel.cost.estimate import estimate_cost
from dra_affinity.policies.cel.eval.runtime import evaluate, to_plain, translate_error
from dra_affinity.policies.cel.k8s_library.quantity import STATE_MARK, native_string
from dra_affinity.policies.core.limits import NEWEST_KUBERNETES_VERSION

COST_LIMIT = 1_000_000
"""The extractor's runtime cost limit (PR #139507; the oracle's `cel.CostLimit`)."""

DIMENSIONS = ("verdict", "type", "estimate", "outcome", "value", "error", "cost")

_PROGRAM_PREFIX = "instantiate CEL program: "
_UNCOMPARED_TYPES = frozenset({"kubernetes.NamedFormat"})
_TAG = "\ue000"


def project_answer(expression: str, object_json: str,
                   version: tuple[int, int] = NEWEST_KUBERNETES_VERSION) -> dict[str, Any]:
    """The project's answer to one case, in the oracle's protocol (plus `engineLimited`)."""
    compiled = compile_expression(expression, EnvKey(version, EnvMode.STORED_EXPRESSIONS))
    if compiled.engine_limited:
        return {"engineLimited": compiled.engine_limit_reason, "evaluated": False}
    if not compiled.ok:
        if compiled.stage is ErrorStage.PROGRAM and compiled.output_type is not None:
            out: dict[str, Any] = {"outputType": compiled.output_type,
                                   "programError": compiled.errors[0].message,
                                   "evaluated": False}
            if compiled.checked is not None:
                cost = estimate_cost(compiled.checked, presence_test_cost=0)
                out["costEstimate"] = {"min": cost.min, "max": cost.max}
            return out
        return {"compileError": compiled.error_text, "evaluated": False}
    assert compiled.checked is not None
    cost = estimate_cost(compiled.checked, presence_test_cost=0)
    out = {"outputType": compiled.output_type,
           "costEstimate": {"min": cost.min, "max": cost.max}}
    result = evaluate(compiled, {"object": decode_k8s_json(object_json)}, cost_limit=COST_LIMIT)
    if result.error is not None and result.error.message.startswith(_PROGRAM_PREFIX):
        out["programError"] = result.error.message[len(_PROGRAM_PREFIX):]
        out["evaluated"] = False
        return out
    out["runtimeCost"] = result.runtime_cost
    out["evaluated"] = True
    if result.error is not None:
        out["evalError"] = result.error.message
        out["errorKind"] = result.error.kind
    else:
        out["valueType"] = result.cel_type
        out["plain"] = project_plain(result.value)
    return out


# ------------------------------------------------------------------------------------------------
# Values as plain data
# ------------------------------------------------------------------------------------------------

_SPECIAL_DOUBLES = {"+Inf": math.inf, "-Inf": -math.inf, "NaN": math.nan, "-0": -0.0}


def _double(value: float) -> tuple[str, str]:
    return ("d", repr(float(value)))


def oracle_plain(value: Mapping[str, Any]) -> Any:
    """A canonical, hashable form of one oracle value (`{"t": type, "v": value}`)."""
    t: str = value["t"]
    v: Any = value.get("v")
    if t in ("int", "uint"):
        return ("n", int(v))
    if t == "double":
        return _double(_SPECIAL_DOUBLES[v] if isinstance(v, str) else v)
    if t == "bool":
        return ("b", bool(v))
    if t == "null_type":
        return ("null",)
    if t == "bytes":
        return ("y", base64.b64decode(v).hex())
    if t == "list":
        return ("l", tuple(oracle_plain(x) for x in v))
    if t == "map":
        return ("m", tuple(sorted(((_harness_key(oracle_plain(k)), oracle_plain(x)) for k, x in v),
                                  key=repr)))
    if t == "optional_type":
        return oracle_plain(v) if v is not None else ("null",)
    if t in _UNCOMPARED_TYPES:
        return ("?",)
    return ("s", str(v))  # strings, timestamps, durations, types, library values


def _go_duration(delta: datetime.timedelta) -> str:
    """Go's `time.Duration.String()`."""
    nanos = (delta.days * 86400 + delta.seconds) * 10**9 + delta.microseconds * 1000
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 10**9:
        for unit, size in (("ms", 10**6), ("µs", 10**3), ("ns", 1)):
            if nanos >= size:
                text = f"{nanos / size:.9f}".rstrip("0").rstrip(".")
                return f"{sign}{text}{unit}"
    hours, rest = divmod(nanos, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    seconds = f"{rest / 10**9:.9f}".rstrip("0").rstrip(".")
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"


def _go_timestamp(moment: datetime.datetime) -> str:
    """Go's RFC 3339 text of a UTC time, fractional seconds without trailing zeros."""
    moment = moment.astimezone(datetime.UTC)
    text = f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text + "Z"


def project_plain(value: Any) -> Any:
    """The same canonical form for a project value (`EvalResult.value`)."""
    if value is None:
        return ("null",)
    if isinstance(value, LiteralKey):
        return project_plain(to_plain(value.value))
    if value is True or value is False:
        return ("b", value)
    if isinstance(value, int):
        return ("n", value)
    if isinstance(value, float):
        return _double(value)
    if isinstance(value, bytes | bytearray):
        return ("y", bytes(value).hex())
    if isinstance(value, str):
        return ("s", native_string(value) if STATE_MARK in value else value)
    if isinstance(value, datetime.datetime):
        return ("s", _go_timestamp(value))
    if isinstance(value, datetime.timedelta):
        return ("s", _go_duration(value))
    if isinstance(value, list | tuple):
        if len(value) == 2 and isinstance(value[0], str) and value[0].startswith(_TAG):
            if value[0][1:] in _UNCOMPARED_TYPES:
                return ("?",)
            return ("s", str(value[1]))  # a tagged library value: its text
        return ("l", tuple(project_plain(x) for x in value))
    if isinstance(value, dict):
        return ("m", tuple(sorted(((_harness_key(project_plain(k)), project_plain(x))
                                   for k, x in value.items()), key=repr)))
    return ("s", str(value))


def _harness_key(plain: Any) -> Any:
    """A map key as the oracle's harness prints it: it re-reads each key's JSON into a Go
    `any`, so an integer key (or one inside a list key) keeps only float64 precision."""
    if plain[0] == "n":
        return ("n", int(float(plain[1])))
    if plain[0] in ("l", "m"):
        return (plain[0], tuple(_harness_key(x) if plain[0] == "l"
                                else (_harness_key(x[0]), _harness_key(x[1])) for x in plain[1]))
    return plain


# ------------------------------------------------------------------------------------------------
# Comparison
# ------------------------------------------------------------------------------------------------


_WELL_KNOWN = (("google.protobuf.Timestamp", "timestamp"), ("google.protobuf.Duration", "duration"),
               ("null_type", "null"))


def _cel_type_text(text: str | None) -> str | None:
    """The project's output type as `cel.FormatCELType` prints it (the oracle's spelling):
    the project names the well-known types and null as cel-go's error messages do."""
    if text is None:
        return None
    for long, short in _WELL_KNOWN:
        text = text.replace(long, short)
    return text


def _json(value: Any) -> Any:
    """The canonical form as it reads after a JSON round trip (tuples become lists)."""
    return json.loads(json.dumps(value))


def _verdict(answer: Mapping[str, Any]) -> str:
    if "compileError" in answer:
        return "compile-error"
    if "programError" in answer:
        return "program-error"
    return "ok"


def oracle_error_kind(answer: Mapping[str, Any]) -> str | None:
    """The scheduler's class of the oracle's evaluation error (Kubernetes classifies by text)."""
    message = answer.get("evalError")
    return translate_error(message).kind if message is not None else None


def _outcome(answer: Mapping[str, Any], kind: str | None, value_type: str | None,
             value: Any) -> Any:
    verdict = _verdict(answer)
    if verdict != "ok":
        return verdict
    if kind is not None:
        return ("error", kind)
    if value_type == "string":
        return ("string", value)
    return ("non-string", value_type)


@dataclass(frozen=True)
class Disagreement:
    """One dimension on which the project and cel-go differ, with both sides."""

    dimension: str
    upstream: Any
    ours: Any


def compare(oracle: Mapping[str, Any], ours: Mapping[str, Any]) -> list[Disagreement]:
    """The dimensions (`DIMENSIONS`) on which the two answers differ."""
    found: list[Disagreement] = []

    def check(dimension: str, upstream: Any, mine: Any) -> None:
        if upstream != mine:
            found.append(Disagreement(dimension, upstream, mine))

    check("verdict", _verdict(oracle), _verdict(ours))
    if "compileError" in oracle or "compileError" in ours:
        return found
    check("type", oracle.get("outputType"), _cel_type_text(ours.get("outputType")))
    estimate = oracle.get("costEstimate") or {}
    check("estimate", (estimate.get("min"), estimate.get("max")),
          tuple((ours.get("costEstimate") or {}).get(k) for k in ("min", "max")))
    if "programError" in oracle or "programError" in ours:
        return found
    upstream_kind = oracle_error_kind(oracle)
    our_kind = ours.get("errorKind")
    upstream_value = _json(oracle_plain(oracle["value"])) if "value" in oracle else None
    our_value = _json(ours.get("plain")) if "valueType" in ours else None
    if oracle.get("valueType") in _UNCOMPARED_TYPES:
        upstream_value = our_value
    check("outcome", _outcome(oracle, upstream_kind, oracle.get("valueType"), upstream_value),
          _outcome(ours, our_kind, ours.get("valueType"), our_value))
    if upstream_kind is None and our_kind is None:
        check("value", (oracle.get("valueType"), upstream_value),
              (ours.get("valueType"), our_value))
    else:
        check("error", upstream_kind, our_kind)
    if oracle.get("evaluated") and ours.get("evaluated"):
        check("cost", oracle.get("runtimeCost"), ours.get("runtimeCost"))
    return found
