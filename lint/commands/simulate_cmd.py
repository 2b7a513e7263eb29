"""`dra-affinity simulate`: the scheduler's affinity locks over a sequence of claims (SPEC §6).

One execution path: the command starts one `simulation.SimulationRun` and renders it as its
steps are decided. Text and JSON, full or `--summary` (counts per reason instead of one entry
per device; the run keeps only counts), `--only-failing`: each is a view over that one run,
never a second way of running it. `--workload` replays a workload instead (`replay`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from json.encoder import encode_basestring_ascii as _string
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ...policies.core.cache import BoundedCache, text_weight
from ...policies.core.features import FRACTIONAL_CAPACITY_RANGE, SHARING_AFFINITY
from ...policies.core.findings import Severity
from ...policies.core.gc_pause import gc_paused
from ...policies.core.limits import KubernetesVersion
from ...policies.scheduler.claim_steps import Evaluated
from ...policies.scheduler.claims import missing_class_problems
from ...policies.scheduler.locks import DeviceRef, DeviceState, Mode, Reason, Rejection, render_map
from ...policies.scheduler.simulation import (
    Action,
    Detail,
    DeviceReport,
    SimulationRun,
    StepResult,
    parse_order,
    start,
)
from ..inputs import cluster_target, load_cluster_state, load_objects, walk_filter
from ..options import (
    GateSettings,
    cluster_options,
    config_option,
    exclude_option,
    feature_gate_option,
    feature_gates,
    format_option,
    kubernetes_version_option,
    load_settings,
)
from ..reporters.json_reporter import finding_to_json
from ..reporters.output import emit, report_stream
from ..terminal import warn

if TYPE_CHECKING:
    from ...policies.core.findings import Finding
    from ...sources.cluster import ClusterTarget
    from ...sources.walk import WalkFilter
    from ..inputs import Objects
    from ..workload_file import WorkloadFile


def device_to_json(ref: DeviceRef) -> dict[str, str]:
    return {"driver": ref.driver, "pool": ref.pool, "device": ref.device}


def _rejection(r: Rejection | None) -> dict[str, Any] | None:
    if r is None:
        return None
    d = r.diagnostic
    return {"reason": r.reason.value, "diagnostic": d.value if d else None, "message": r.message}


def state_to_json(ref: DeviceRef, state: DeviceState, shareable: bool, capacity: Mapping[str, str],
                  consumed: Mapping[str, str]) -> dict[str, Any]:
    """One device's state: the shape `simulate` and `locks` share."""
    return {
        "device": device_to_json(ref), "state": state.status.value,
        "lock": dict(state.lock) if state.lock is not None else None,
        "reason": state.reason or None,
        "holders": [{"claim": h.claim, "request": h.request, "bound": h.bound} for h in state.holders],
        "shareable": shareable, "capacity": dict(capacity), "consumed": dict(consumed),
    }


def _state(d: DeviceReport) -> dict[str, Any]:
    return state_to_json(d.ref, d.state, d.shareable, d.capacity, d.consumed)


def step_to_json(s: StepResult, summary: bool = False) -> dict[str, Any]:
    """One step: the shape `simulate` steps and `explain` share (`summary`: counts, not devices)."""
    out: dict[str, Any] = {"action": s.step.action.value, "claim": s.step.claim}
    if s.step.action is Action.RELEASE:
        out["released"] = [device_to_json(r) for r in s.released]
        return out
    out.update(_decided(s, summary))
    if not summary:
        out["candidates"] = [_candidate(e) for e in s.evaluated]
    return out


def _decided(s: StepResult, summary: bool) -> dict[str, Any]:
    """An allocation step's members after the claim, but the candidates (`step_to_json`)."""
    out: dict[str, Any] = {}
    out["placed"] = s.placed
    out["allocations"] = [
        {"request": p.request, "device": device_to_json(p.device), "before": p.before.value,
         "lock": dict(p.lock) if p.lock is not None else None, "reused": p.reused}
        for p in s.placements
    ]
    out["unschedulable"] = None if s.placed else {
        "request": s.failed_request, "reasons": [r.value for r in s.reasons],
        "diagnostics": [d.value for d in s.diagnostics], **(_rejection(s.failure) or {}),
    }
    if summary:
        out["rejected"] = [{"request": r.request, "reason": r.reason.value, "count": r.count}
                           for r in s.rejected]
    return out


def _candidate(e: Evaluated) -> dict[str, Any]:
    return {"request": e.request, "device": device_to_json(e.device), "state": e.status.value,
            "viable": e.viable, "rejections": [_rejection(r) for r in e.rejections]}


RENDERED_BYTES = 32 * 1024 * 1024
"""Budget of each cache of rendered text below: a device's rejection messages, and so a step's
text, grow with the input (a full cluster's failed step lists every device)."""


def _rendered_weight(key: object, entry: tuple[str, object]) -> int:
    """The rendered text's bytes, and an allowance for the object the entry holds."""
    return text_weight((entry[0],)) + 256


_CANDIDATES: BoundedCache[int, tuple[str, Evaluated]] = BoundedCache(
    "lint.simulate.candidates", 1 << 16, lru=False, max_bytes=RENDERED_BYTES, weigh=_rendered_weight)
"""`json.dumps(_candidate(e))` by id(e), the entry holding `e` (so a live key's id is its own).
The simulation hands out one `Evaluated` per (device state, verdict, request), so first-fit's
walk over the same full devices, claim after claim, is rendered once per device state."""

_FAILED: BoundedCache[tuple[object, ...], tuple[str, StepResult]] = BoundedCache(
    "lint.simulate.failed-steps", 64, lru=False, max_bytes=RENDERED_BYTES, weigh=_rendered_weight)
"""The text after the claim of a failed allocation step, by what it is made of (the candidates
by identity, held by the entry's step): the claims of a full cluster fail alike, sharing their
outcome's objects (`first_fit._FailedPlacement`), and are rendered once."""


def _failed_key(s: StepResult, summary: bool) -> tuple[object, ...]:
    return (summary, s.failed_request, s.failure, s.rejected, None if summary else id(s.evaluated))


def step_text(s: StepResult, summary: bool = False) -> str:
    """`json.dumps(step_to_json(s, summary))`: what is the same for many steps rendered once."""
    if s.step.action is Action.RELEASE:
        return json.dumps(step_to_json(s, summary))
    head = '{"action": "allocate", "claim": ' + _string(s.step.claim) + ", "
    if not s.placed:
        key = _failed_key(s, summary)
        found = _FAILED.get(key)
        if found is None:
            found = (_decided_text(s, summary), s)
            _FAILED.put(key, found)
        return head + found[0]
    return head + _decided_text(s, summary)


def _decided_text(s: StepResult, summary: bool) -> str:
    text = json.dumps(_decided(s, summary))[1:-1]
    if summary:
        return text + "}"
    return text + ', "candidates": [' + ", ".join([_candidate_text(e) for e in s.evaluated]) + "]}"


def _candidate_text(e: Evaluated) -> str:
    found = _CANDIDATES.get(id(e))
    if found is None or found[1] is not e:
        found = (json.dumps(_candidate(e)), e)
        _CANDIDATES.put(id(e), found)
    return found[0]


def _lock_text(d: DeviceReport) -> str:
    if d.state.lock is not None:
        return render_map(d.state.lock)
    return d.state.reason or "-"


def _devices_table(devices: tuple[DeviceReport, ...]) -> list[str]:
    rows = [("DEVICE", "STATE", "HOLDERS", "CONSUMED", "LOCK")]
    for d in devices:
        consumed = ", ".join(f"{k} {v}/{d.capacity.get(k, '?')}" for k, v in d.consumed.items()) or "-"
        holders = ", ".join(sorted({h.claim for h in d.state.holders})) or "-"
        rows.append((str(d.ref), d.state.status.value, holders, consumed, _lock_text(d)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r[:4])) + "  " + r[4] for r in rows]


_POOL_WIDE = frozenset({Reason.FEATURE_GATE_OFF, Reason.POOL_INCOMPLETE, Reason.NO_KEYS_EXTRACTED,
                        Reason.CLAIM_INCONSISTENT, Reason.CEL_EVALUATION_FAILURE})
"""Reasons that come from the (request, pool) verdict: one line per pool in the text report."""


def _groups(evaluated: tuple[Evaluated, ...]) -> list[list[Evaluated]]:
    """Non-viable devices, consecutive ones of a pool with the same pool-wide reason merged."""
    groups: list[list[Evaluated]] = []
    for e in evaluated:
        if not e.rejections:
            continue
        last = groups[-1][-1] if groups else None
        if (last is not None and last.request == e.request and last.device.pool_ref == e.device.pool_ref
                and e.rejections[0].reason in _POOL_WIDE and last.rejections == e.rejections):
            groups[-1].append(e)
        else:
            groups.append([e])
    return groups


def _step_lines(n: int, s: StepResult) -> list[str]:
    head = f"{n}. {s.step.action.value} {s.step.claim}"
    if s.step.action is Action.RELEASE:
        freed = ", ".join(str(r) for r in s.released) or "nothing"
        return [f"{head}: releases {freed}"]
    return [_head(n, s), *_body_lines(s)]


def _head(n: int, s: StepResult) -> str:
    """An allocation step's first line."""
    head = f"{n}. {s.step.action.value} {s.step.claim}"
    return head + ("" if s.placed else f": UNSCHEDULABLE ({', '.join(r.value for r in s.reasons)})")


def _group_line(group: list[Evaluated]) -> str:
    """One line for a non-viable device, or for a pool's devices with one pool-wide reason."""
    if len(group) == 1:
        found = _LINES.get(id(group[0]))
        if found is not None and found[1] is group[0]:
            return found[0]
    first, rest = group[0].rejections[0], group[0].rejections[1:]
    also = f" (also: {', '.join(r.reason.value for r in rest)})" if rest else ""
    ref = group[0].device
    what = (str(ref) if len(group) == 1
            else f"{ref.driver}/{ref.pool} ({len(group)} devices)")
    line = f"   - {what} [{group[0].request}] not viable: {first.reason.value}: {first.message}{also}"
    if len(group) == 1:
        _LINES.put(id(group[0]), (line, group[0]))
    return line


_LINES: BoundedCache[int, tuple[str, Evaluated]] = BoundedCache(
    "lint.simulate.candidate-lines", 1 << 16, lru=False, max_bytes=RENDERED_BYTES, weigh=_rendered_weight)
"""`_group_line` of one device, by id of its `Evaluated` (held): `_CANDIDATES` for the text report."""


def _body_lines(s: StepResult) -> list[str]:
    """An allocation step's lines after its first."""
    lines = [_group_line(group) for group in _groups(s.evaluated)]
    for p in s.placements:
        if p.reused:
            what = f"joins its lock {render_map(p.lock)}"
        elif p.lock is not None:
            what = f"was clean, now locked to {render_map(p.lock)}"
        else:
            what = "no lock kept (pool without sharingAffinity)"
        lines.append(f"   → request {p.request!r} on {p.device}: {what}")
    if not s.placed and s.failure is not None:
        lines.append(f"   ✗ {s.failure.message}")
    return lines


def _rejected_lines(s: StepResult) -> list[str]:
    """The `--summary` lines after a step's first: devices not viable, counted by reason."""
    return [f"   - {r.count} device(s) [{r.request}] not viable: {r.reason.value}" for r in s.rejected]


def _step_block(n: int, s: StepResult, summary: bool) -> str:
    """A step's lines of the text report, indented, each ending in a newline; the lines after
    a failed step's first are rendered once for the steps that failed alike (`_FAILED`)."""
    if s.step.action is Action.RELEASE:
        return "".join(f"  {line}\n" for line in _step_lines(n, s))
    head = f"  {_head(n, s)}\n"
    if s.placed:
        body = (_rejected_lines(s) if summary else []) + _body_lines(s)
        return head + "".join(f"  {line}\n" for line in body)
    key = ("text", *_failed_key(s, summary))
    found = _FAILED.get(key)
    if found is None:
        body = (_rejected_lines(s) if summary else []) + _body_lines(s)
        found = ("".join(f"  {line}\n" for line in body), s)
        _FAILED.put(key, found)
    return head + found[0]


_BATCH = 1 << 16
"""Characters of steps collected before one write: few writes, and little text held (a step of
a full cluster without --summary is ~0.5 MB by itself)."""


def _stream_text(write: Callable[[str], object], run: SimulationRun, steps: Iterable[tuple[int, StepResult]],
                 summary: bool) -> None:
    gate = "on" if run.feature_gate else "off"
    write(f"Simulation: mode {run.mode.value}, feature gate DRASharingAffinity {gate}\n")
    held = tuple(d for d in run.reconstructed if d.state.holders)
    if held:
        write("\nReconstructed from bound claims:\n")
        write("".join(f"  {line}\n" for line in _devices_table(held)))
    write("\nSteps:\n")
    printed = False
    batch: list[str] = []  # written in pieces of about `_BATCH` characters (as `_stream_json`)
    size = 0
    for n, s in steps:
        printed = True
        block = _step_block(n, s, summary)
        batch.append(block)
        size += len(block)
        if size >= _BATCH:
            write("".join(batch))
            batch, size = [], 0
    write("".join(batch))
    if not printed:
        write("  (no unallocated claims)\n")
    write("\nDevices:\n" + "".join(f"  {line}\n" for line in _devices_table(run.devices())))
    write("\nMetrics:\n" + "".join(f"  {k} {v}\n" for k, v in run.metrics().as_dict().items()))
    for note in run.notes:
        write(f"note: {note}\n")


def _stream_json(write: Callable[[str], object], run: SimulationRun, steps: Iterable[tuple[int, StepResult]],
                 summary: bool, findings: list[dict[str, Any]]) -> None:
    """One JSON document (README `### simulate`), each step written as soon as it is decided."""
    def texts(rendered: Iterable[str]) -> None:
        batch: list[str] = []  # written in pieces of about `_BATCH` characters: one write per
        written = False        # step would be a large share of a long --summary
        size = 0
        for text in rendered:
            batch.append(text)
            size += len(text)
            if size >= _BATCH:
                write(("," if written else "") + "\n    " + ",\n    ".join(batch))
                written, batch, size = True, [], 0
        if batch:
            write(("," if written else "") + "\n    " + ",\n    ".join(batch))
        write("\n  ]" if written or batch else "]")

    def items(values: Iterable[Any]) -> None:
        texts(json.dumps(value) for value in values)

    write(f'{{\n  "mode": {json.dumps(run.mode.value)},\n  "featureGate": {json.dumps(run.feature_gate)},\n')
    write('  "reconstructed": [')
    items(_state(d) for d in run.reconstructed)
    write(',\n  "steps": [')
    texts(step_text(s, summary) for _, s in steps)
    write(',\n  "devices": [')
    items(_state(d) for d in run.devices())
    write(f',\n  "metrics": {json.dumps(run.metrics().as_dict())},')
    write(f'\n  "notes": {json.dumps(list(run.notes))},')
    write(f'\n  "findings": {json.dumps(findings)}\n}}\n')


@click.command("simulate")
@click.argument("paths", nargs=-1, metavar="[PATH|-]...")
@exclude_option
@config_option
@cluster_options
@click.option("--order", metavar="CLAIM,CLAIM,...",
              help="Claims to allocate, in order (namespace/name; a bare name means namespace default). "
                   "Prefix a claim with '-' to release it at that point; join claims with '+' to "
                   "allocate them together, as one pod's. Default: every claim without "
                   "status.allocation, in file order.")
@click.option("--workload", "workload_path", metavar="FILE",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Replay a workload file (arrivals, lifetimes, varied affinity values; see "
                   "docs/simulate.md) and print the fragmentation report instead of single steps.")
@click.option("--mode", "modes", type=click.Choice([m.value for m in Mode]), multiple=True,
              help="Device choice: alpha first-fit in slice/device order, or beta's preference for "
                   "compatibly locked devices (default alpha). Give both (with --workload) to compare "
                   "them on the same arrivals.")
@click.option("--compare", is_flag=True, help="Same as --mode alpha --mode beta (needs --workload).")
@feature_gate_option
@click.option("--pool", "pools", multiple=True, metavar="POOL",
              help="Only these candidate pools (driver/name, or name); repeatable.")
@format_option(("text", "json", "html"),
               extra=" (html, with --workload: one self-contained page with device grids and charts)")
@click.option("--summary", is_flag=True,
              help="Per step, how many devices were not viable for which reason instead of one entry per "
                   "device (JSON: `rejected` instead of `candidates`); for large inputs.")
@click.option("--only-failing", is_flag=True,
              help="Print only the steps whose claim could not be placed (devices and metrics stay "
                   "complete).")
@kubernetes_version_option
def simulate(paths: tuple[str, ...], excludes: tuple[str, ...], config_path: str | None, cluster: bool,
             kubeconfig: str | None, kube_context: str | None, chunk_size: int | None, order: str | None,
             workload_path: Path | None, modes: tuple[str, ...], compare: bool, gate: GateSettings,
             pools: tuple[str, ...], fmt: str, output: str | None, summary: bool, only_failing: bool,
             kubernetes_version: KubernetesVersion) -> None:
    """Replay the scheduler's sharing-affinity locks over a sequence of claims.

    Reconstructs every device's lock from the claims that already have
    status.allocation, then allocates the other claims one by one (Filter, device
    choice, Reserve), printing per claim the chosen device or why each candidate is
    not viable (lock mismatch, no keys extracted, CEL evaluation failure, unknown
    lock state, capacity), the final lock state per device and the KEP's metrics.

    Output is written step by step as the claims are placed, so a run over 100,000 claims
    needs no memory for its report; --summary and --only-failing shorten it.

    With --workload FILE, claims arrive and leave as the workload file says
    (pending claims retry when a departure frees a device) and the report is the
    fragmentation over the run and at its end: devices locked per value, capacity
    in use, stranded capacity, pending claims that raw capacity could have held,
    time to place and the KEP's metrics, per mode and side by side (docs/simulate.md).

    With --cluster, the cluster's ResourceSlices, DeviceClasses and ResourceClaims are the
    input (a workload's `resources:` files are added to them).

    Exit code 0 when the report is written, whether every claim was placed or some stay
    pending (the report says which); 1 when an input object is invalid; 2 on usage errors
    or unreadable input. To fail a CI job when a workload no longer fits, ask the question
    in a `dra-affinity test` suite (a `workload:` case with expectations such as
    `pending <= 0`).
    """
    target = cluster_target(paths, cluster, kubeconfig, kube_context, chunk_size)

    gates = feature_gates(kubernetes_version, gate)
    sharing_affinity = gates.enabled(SHARING_AFFINITY)
    chosen = [Mode.ALPHA, Mode.BETA] if compare else list(dict.fromkeys(Mode(m) for m in modes))
    if workload_path is None:
        if len(chosen) > 1:
            _usage("comparing modes (--compare, --mode twice) needs --workload")
        if fmt == "html":
            _usage("--format html needs --workload")
    elif order is not None:
        _usage("--order and --workload exclude each other (a workload generates its own order)")
    elif summary or only_failing:
        _usage("--summary and --only-failing shorten step output; a workload report has no steps")
    workload_file = None
    if workload_path is not None:
        from ..workload_file import WorkloadFileError, load_workload

        try:
            workload_file = load_workload(workload_path)
        except WorkloadFileError as exc:
            _usage(str(exc))
        paths = (*paths, *(str(p) for p in workload_file.resources))
    with gc_paused(freeze=True):  # the model lives until the command exits
        inputs = _load(paths, target, walk_filter(excludes, load_settings(config_path)),
                       workload_file is not None)
    for note in inputs.notes:
        warn("simulate", note)
    for message in inputs.usage_errors:
        click.echo(f"dra-affinity simulate: {message}", err=True)
    if inputs.usage_errors:
        sys.exit(2)
    if workload_file is not None:
        _replay(workload_file, inputs, chosen or [Mode.ALPHA], sharing_affinity, pools, fmt, output,
                kubernetes_version)
        return
    steps = parse_order(order) if order is not None else None
    with gc_paused(freeze=True):  # the pools' index and reconstructed locks live as long
        result = start(inputs.slices, inputs.claims, steps, mode=chosen[0] if chosen else Mode.ALPHA,
                       feature_gate=sharing_affinity, kubernetes_version=kubernetes_version, pools=pools,
                       classes=inputs.classes, detail=Detail.COUNTS if summary else Detail.DEVICES,
                       fractional_range=gates.enabled(FRACTIONAL_CAPACITY_RANGE))
    if isinstance(result, list):
        for problem in result:
            click.echo(f"dra-affinity simulate: --order: {problem.message}", err=True)
        sys.exit(2)
    findings = [*inputs.findings, *result.findings]
    _print_findings(findings)

    def decided() -> Iterable[tuple[int, StepResult]]:
        for n, s in enumerate(result.steps(), start=1):
            failed_step = s.step.action is Action.ALLOCATE and not s.placed
            if failed_step or not only_failing:
                yield n, s

    with report_stream("simulate", output) as out:
        if fmt == "json":
            _stream_json(out.write, result, decided(), summary, [finding_to_json(f) for f in findings])
        else:
            _stream_text(out.write, result, decided(), summary)
    sys.exit(1 if any(f.severity is Severity.ERROR for f in findings) else 0)


def _usage(message: str) -> NoReturn:
    click.echo(f"dra-affinity simulate: {message}", err=True)
    sys.exit(2)


def _load(paths: tuple[str, ...], target: ClusterTarget | None, walk: WalkFilter,
          workload: bool) -> Objects:
    """PATHs, or the cluster plus a workload's own `resources:` files (already in `paths`)."""
    if target is None:
        return load_objects(paths, walk=walk)
    objects = load_cluster_state(target)
    if workload and paths and not objects.usage_errors:
        files = load_objects(paths, walk=walk)
        objects.slices += files.slices
        objects.claims += files.claims
        objects.classes += files.classes
        objects.findings += files.findings
        objects.usage_errors += files.usage_errors
    return objects


def _print_findings(findings: Sequence[Finding]) -> None:
    """Input findings as `lint` prints them (with the object), in file/line/column order."""
    from ..report import position_order
    from ..reporters.text_reporter import finding_line

    for finding in sorted(findings, key=position_order):
        click.echo(finding_line(finding), err=True)


def _replay(workload_file: WorkloadFile, inputs: Objects, modes: Sequence[Mode], feature_gate: bool,
            pools: tuple[str, ...], fmt: str, output: str | None,
            kubernetes_version: KubernetesVersion) -> None:
    from ...policies.scheduler.replay import ReplayReport, replay
    from ..reporters import workload_reporter

    templates = {t.claim for t in workload_file.workload.templates}
    # a template naming an absent DeviceClass never places: an input error, as dry-run reports it
    findings = [*inputs.findings, *(f for c in inputs.claims if c.qualified_name in templates
                                    for f in missing_class_problems(c, {k.name for k in inputs.classes}))]
    _print_findings(findings)
    reports: list[ReplayReport] = []
    for mode in modes:
        result = replay(inputs.slices, inputs.claims, workload_file.workload, mode=mode,
                        feature_gate=feature_gate, kubernetes_version=kubernetes_version, pools=pools,
                        classes=inputs.classes)
        if isinstance(result, list):
            for problem in result:
                click.echo(f"dra-affinity simulate: {workload_file.where(problem.path)}: {problem.message}",
                           err=True)
            sys.exit(2)
        reports.append(result)
    seed = workload_file.workload.seed
    if fmt == "json":

        doc = workload_reporter.render_json(reports, seed)
        doc["findings"] = [finding_to_json(f) for f in findings]
        emit("simulate", json.dumps(doc, indent=2), output)
    elif fmt == "html":
        emit("simulate", workload_reporter.render_html(reports, seed), output)
    else:
        emit("simulate", workload_reporter.render_text(reports, seed), output)
    # a pending claim is what the report shows, not a failure: `test` asks that question
    sys.exit(1 if any(f.severity is Severity.ERROR for f in findings) else 0)
