"""Expectations on a workload replay's report, as `workload:` test cases state them.

    expect:
      - pending <= 0                  # in every mode the case runs
      - beta.stranded <= 5%           # one mode (the % is optional: percent metrics are in %)
      - beta.peakPending <= alpha.peakPending   # beta no worse than alpha

`[MODE.]METRIC OP (NUMBER[%] | MODE.METRIC)` with OP one of `<= < >= > == !=`. The metrics are
`METRICS` (the report's figures, named as in `simulate --workload --format json`) and the KEP's
counters and gauges (`sharing_affinity_lock_conflict_total`, ...).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..policies.scheduler.locks import METRIC_NAMES, Mode
from ..policies.scheduler.replay import ReplayReport

METRICS: dict[str, Callable[[ReplayReport], float]] = {
    "placed": lambda r: r.placed,
    "placedOnArrival": lambda r: r.waits.immediate,
    "pending": lambda r: r.pending,
    "peakPending": lambda r: r.peak_pending,
    "pendingFit": lambda r: r.final.pending_fit,
    "peakPendingFit": lambda r: r.peak_pending_fit,
    "waitMean": lambda r: r.waits.mean,
    "waitP95": lambda r: r.waits.p95,
    "waitMax": lambda r: r.waits.max,
    "locked": lambda r: r.final.locked,
    "peakLocked": lambda r: r.peak_locked,
    "inUse": lambda r: r.final.in_use_percent,
    "stranded": lambda r: r.final.stranded_percent,
    "peakStranded": lambda r: r.peak_stranded_percent,
    **{name: (lambda n: lambda r: r.metrics.as_dict()[n])(name) for name in METRIC_NAMES},
}
PERCENT = frozenset({"inUse", "stranded", "peakStranded"})

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt, "==": operator.eq,
    "!=": operator.ne,
}
_MODES = "|".join(m.value for m in Mode)
_PATTERN = re.compile(
    rf"^\s*(?:(?P<mode>{_MODES})\.)?(?P<metric>\w+)\s*(?P<op><=|>=|==|!=|<|>)\s*"
    rf"(?:(?P<other_mode>{_MODES})\.(?P<other>\w+)|(?P<number>-?\d+(?:\.\d+)?)(?P<percent>%)?)\s*$")


class ExpectationError(ValueError):
    """The expectation cannot be read (the message says why)."""


@dataclass(frozen=True, slots=True)
class Expectation:
    text: str
    metric: str
    op: str
    mode: Mode | None = None
    """None: checked in every mode the case runs."""
    number: float | None = None
    other_mode: Mode | None = None
    other: str | None = None

    @property
    def modes(self) -> set[Mode]:
        return {m for m in (self.mode, self.other_mode) if m is not None}

    def failures(self, reports: Mapping[Mode, ReplayReport]) -> list[str]:
        """Empty when it holds; else one sentence per mode in which it does not."""
        out = []
        for mode in [self.mode] if self.mode else list(reports):
            got = METRICS[self.metric](reports[mode])
            if self.other is not None:
                assert self.other_mode is not None
                bound = METRICS[self.other](reports[self.other_mode])
                against = f"{self.other_mode.value}.{self.other} {_show(self.other, bound)}"
            else:
                assert self.number is not None
                bound, against = self.number, _show(self.metric, self.number)
            if not _OPS[self.op](got, bound):
                out.append(f"{self.text}: {mode.value}.{self.metric} is {_show(self.metric, got)}, "
                           f"not {self.op} {against}")
        return out


def _show(metric: str, value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
    return f"{text}%" if metric in PERCENT else text


def parse_expectation(text: str) -> Expectation:
    match = _PATTERN.match(text)
    if match is None:
        raise ExpectationError(f"{text!r}: write `[MODE.]METRIC OP NUMBER` or `[MODE.]METRIC OP "
                               "MODE.METRIC`, e.g. `pending <= 0`, `beta.stranded <= 5%`, "
                               "`beta.pending <= alpha.pending`")
    metric, other = match["metric"], match["other"]
    for name in (metric, other):
        if name is not None and name not in METRICS:
            raise ExpectationError(f"{text!r}: unknown metric {name!r}; known: {', '.join(sorted(METRICS))}")
    if match["percent"] and metric not in PERCENT:
        raise ExpectationError(f"{text!r}: {metric} is not a percentage "
                               f"(those are {', '.join(sorted(PERCENT))})")
    if other is not None and match["mode"] is None:
        raise ExpectationError(f"{text!r}: name the mode on the left too (e.g. beta.{metric})")
    return Expectation(
        text=text.strip(), metric=metric, op=match["op"],
        mode=Mode(match["mode"]) if match["mode"] else None,
        number=float(match["number"]) if match["number"] is not None else None,
        other_mode=Mode(match["other_mode"]) if match["other_mode"] else None, other=other)
