"""`dra-affinity locks`: every device's affinity lock as the scheduler reconstructs it (SPEC §6)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ...policies.core.features import FRACTIONAL_CAPACITY_RANGE, SHARING_AFFINITY
from ...policies.core.gc_pause import gc_paused
from ...policies.core.limits import KubernetesVersion
from ...policies.scheduler.locks import render_map
from ..json_text import write_indented
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
from ..reporters.output import emit, report_stream
from ..terminal import warn

if TYPE_CHECKING:
    from ...policies.core.findings import Finding
    from ...policies.scheduler.lock_book import LockBook
    from ...policies.scheduler.lock_report import DeviceLocks, LockReport, PoolLocks
    from ...sources.walk import WalkFilter
    from ..inputs import Objects

F = TypeVar("F", bound=Callable[..., Any])
STATE_CHOICES = ("clean", "locked", "unreconstructable", "untracked")


def lock_input_options(func: F) -> F:
    """PATHs or a live cluster (ResourceSlices, DeviceClasses, ResourceClaims), with `--exclude`
    and `--config` for the walk; shared by `locks` and `explain`."""
    decorators = (
        exclude_option,
        config_option,
        cluster_options,
        feature_gate_option,
        kubernetes_version_option,
    )
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


@dataclass
class LockInput:
    """The modelled objects and the reconstruction built from them."""

    objects: Objects
    book: LockBook
    target: Any = None


def load_lock_input(command: str, paths: tuple[str, ...], cluster: bool, kubeconfig: str | None,
                    kube_context: str | None, chunk_size: int | None, gate: GateSettings,
                    kubernetes_version: KubernetesVersion, walk: WalkFilter | None = None) -> LockInput:
    """Read and reconstruct every pool; usage errors (exit 2) and input findings go to stderr."""
    objects, target = read_lock_input(command, paths, cluster, kubeconfig, kube_context, chunk_size,
                                      walk=walk)
    return LockInput(objects, build_book(objects, gate, kubernetes_version), target)


def build_book(objects: Objects, gate: GateSettings, kubernetes_version: KubernetesVersion,
               focus: Collection[str] = ()) -> LockBook:
    """The reconstruction (`LockBook.build`; `focus`: only what explaining those claims reads)."""
    from ...policies.scheduler.lock_book import LockBook

    gates = feature_gates(kubernetes_version, gate)
    with gc_paused(freeze=True):  # the book lives until the command exits
        return LockBook.build(objects.slices, objects.claims, objects.classes,
                              feature_gate=gates.enabled(SHARING_AFFINITY),
                              kubernetes_version=kubernetes_version, focus=focus,
                              fractional_range=gates.enabled(FRACTIONAL_CAPACITY_RANGE))


def read_lock_input(command: str, paths: tuple[str, ...], cluster: bool, kubeconfig: str | None,
                    kube_context: str | None, chunk_size: int | None, *,
                    keep_pods: bool = False, walk: WalkFilter | None = None) -> tuple[Objects, Any]:
    """The modelled objects and the cluster target (None for PATHs); usage errors (exit 2) and
    input findings go to stderr here."""
    from ..inputs import cluster_target, load_cluster_state

    target = cluster_target(paths, cluster, kubeconfig, kube_context, chunk_size)
    with gc_paused(freeze=True):  # the model lives until the command exits
        objects = load_cluster_state(target) if target is not None else _load_files(paths, keep_pods,
                                                                                              walk)
    for note in objects.notes:
        warn(command, note)
    for message in objects.usage_errors:
        click.echo(f"dra-affinity {command}: {message}", err=True)
    if objects.usage_errors:
        sys.exit(2)
    for finding in objects.findings:
        echo_finding(finding)
    return objects, target


def _load_files(paths: tuple[str, ...], keep_pods: bool, walk: WalkFilter | None) -> Objects:
    """Files as a `kubectl get -o json|yaml` dump: trusted, JSON decoded without node positions.

    Positions cost minutes at 100,000 objects and matter only for findings: when there is
    one, the input is loaded again with positions so it names its line.
    """
    from ...sources.loader import load_paths
    from ..inputs import Input, model_objects, warn_empty

    def load(json_positions: bool) -> Objects:
        loaded = load_paths(list(paths) or ["-"], stdin=sys.stdin, json_positions=json_positions,
                            lazy_positions=True, walk=walk)
        if paths and (not json_positions or "-" in paths):  # the first read warns, not the second
            warn_empty(loaded.yielded)
        inputs = Input(documents=loaded.documents, findings=loaded.findings,
                       usage_errors=loaded.usage_errors, files=loaded.files)
        return model_objects(inputs, trusted=True, keep_pods=keep_pods)

    if "-" in paths or not paths:
        return load(True)  # stdin is read once
    fast = load(False)
    return load(True) if fast.findings else fast


def echo_finding(finding: Finding) -> None:
    """An input finding on stderr, as `lint` prints it."""
    from ..reporters.text_reporter import finding_line

    click.echo(finding_line(finding), err=True)


# -- JSON -----------------------------------------------------------------------------------------


def device_json(d: DeviceLocks) -> dict[str, Any]:
    """A device state in the shape `simulate --format json` uses, plus node, left and consumption."""
    from ...policies.scheduler.capacity import render
    from .simulate_cmd import state_to_json

    out = state_to_json(d.ref, d.state, d.shareable, d.capacity, d.consumed)
    out["node"] = d.node
    out["left"] = dict(d.left)
    for holder, raw in zip(d.state.holders, out["holders"], strict=True):
        raw["consumed"] = {k: render(v, d.capacity.get(k)) for k, v in holder.consumed.items()}
    return out


def pool_json(p: PoolLocks) -> dict[str, Any]:
    return {
        "pool": {"driver": p.ref.driver, "name": p.ref.name}, "node": p.node,
        "tracked": not p.untracked, "untrackedReason": p.untracked or None,
        "devices": p.devices, "states": dict(p.states),
        "locks": [{"lock": dict(v.lock), "devices": v.devices} for v in p.locks],
        "lockedFree": {"capacity": dict(p.locked_free), "devices": p.locked_free_devices},
    }


def report_json(report: LockReport, findings: list[Finding]) -> dict[str, Any]:
    from ..reporters.json_reporter import finding_to_json

    t = report.totals
    return {
        "devices": [device_json(d) for d in report.devices],
        "pools": [pool_json(p) for p in report.pools],
        "metrics": {"sharing_affinity_locked_devices": t.locked_devices,
                    "sharing_affinity_unreconstructable_devices": t.unreconstructable_devices,
                    "devices": dict(t.states)},
        "notes": list(report.notes),
        "findings": [finding_to_json(f) for f in findings],
    }


def echo_json(doc: Any, command: str = "locks", output: str | None = None) -> None:
    """`click.echo(json.dumps(doc, indent=2))` to stdout or `output`, written in pieces by
    `json_text`, so a large cluster's whole text is never held at once."""
    with report_stream(command, output) as stream:
        write_indented(doc, stream.write)
        stream.write("\n")


# -- table ----------------------------------------------------------------------------------------


def _columns(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(c.ljust(widths[i]) for i, c in enumerate(r[:-1])) + "  " + r[-1] for r in rows]


def _amounts(d: DeviceLocks) -> str:
    return ", ".join(f"{k} {d.left.get(k, '?')}/{v}" for k, v in d.capacity.items()) or "-"


def _holders(d: DeviceLocks) -> str:
    return ", ".join(f"{h.claim}[{h.request}]" for h in d.state.holders) or "-"


def render_table(report: LockReport) -> str:
    lines: list[str] = []
    if report.devices:
        rows: list[tuple[str, ...]] = [("DEVICE", "NODE", "STATE", "LEFT", "HOLDERS", "LOCK")]
        for d in report.devices:
            lock = render_map(d.state.lock) if d.state.lock is not None else "-"
            rows.append((str(d.ref), d.node, d.state.status.value, _amounts(d), _holders(d), lock))
        lines += _columns(rows)
        for d in report.devices:
            if d.state.reason:
                lines.append(f"  {d.ref}: unreconstructable: {d.state.reason}")
    else:
        lines.append("(no device matches)")
    if report.pools:
        lines += ["", "Pools:"]
        rows = [("POOL", "NODE", "CLEAN", "LOCKED", "UNRECONSTRUCTABLE", "LOCKED-FREE", "LOCKS")]
        for p in report.pools:
            if p.untracked:
                rows.append((f"{p.ref.driver}/{p.ref.name}", p.node, "-", "-", "-", "-",
                             f"untracked: {p.untracked} ({p.devices} devices)"))
                continue
            locked_free = ", ".join(f"{k} {v}" for k, v in p.locked_free.items()) or "-"
            values = "; ".join(f"{v.text} ({v.devices})" for v in p.locks) or "-"
            rows.append((f"{p.ref.driver}/{p.ref.name}", p.node, str(p.states["clean"]),
                         str(p.states["locked"]), str(p.states["unreconstructable"]), locked_free, values))
        lines += ["  " + line for line in _columns(rows)]
    t = report.totals
    lines += ["", "Metrics:", f"  sharing_affinity_locked_devices {t.locked_devices}",
              f"  sharing_affinity_unreconstructable_devices {t.unreconstructable_devices}"]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


# -- html -----------------------------------------------------------------------------------------


def render_html(report: LockReport) -> str:
    """One self-contained page (the renderer `simulate --workload --format html` uses): totals
    once, pools with their lock values and locked-free capacity, and every device as a card
    with its state, lock, holders and consumption written out, coloured by its lock.

    Devices of pools that keep no lock are neither shown nor counted unless `--all` lists them:
    a total that counts devices the page never shows cannot be checked against it.
    """
    from ..reporters.html_page import Grid, Page, Table, device_cells

    t = report.totals
    shows_untracked = any(p.untracked for p in report.pools)
    page = Page("Sharing-affinity locks")
    page.paragraph("Every device's lock as a restarted scheduler reconstructs it from the claims' "
                   "status.allocation (KEP-5981).")
    page.heading("Totals")
    gauges = {"locked": "sharing_affinity_locked_devices",
              "unreconstructable": "sharing_affinity_unreconstructable_devices"}
    rows = tuple((state, str(n), gauges.get(state, "")) for state, n in t.states.items()
                 if state != "untracked" or shows_untracked)
    page.table(Table(("devices", "in the cluster", "metric"), rows, (False, True, False)))
    if t.states.get("untracked") and not shows_untracked:
        page.paragraph("Devices of pools that keep no lock (untracked) are not shown or counted here: "
                       "--all adds them.")
    if report.pools:
        page.heading("Pools")
        page.table(Table(
            ("pool", "node", "clean", "locked", "unreconstructable", "locked-free", "locks"),
            tuple((f"{p.ref.driver}/{p.ref.name}", p.node, *(
                ("-", "-", "-", "-", f"untracked: {p.untracked}") if p.untracked else (
                    str(p.states["clean"]), str(p.states["locked"]), str(p.states["unreconstructable"]),
                    ", ".join(f"{k} {v}" for k, v in p.locked_free.items()) or "-",
                    "; ".join(f"{v.text} ({v.devices})" for v in p.locks) or "-")))
                  for p in report.pools),
            (False, False, True, True, True, False, False)))
    page.heading("Devices")
    if report.devices:
        page.paragraph("One card per device, by pool: its state and lock, the claims holding it and "
                       "the capacity they consume; the bar on the left is the lock value's colour.")
        nodes = {f"{p.ref.driver}/{p.ref.name}": p.node for p in report.pools}
        page.grids([Grid("devices", device_cells(((d.ref, d.state, d.capacity, d.consumed)
                                                  for d in report.devices), nodes))], cards=True)
    else:
        page.paragraph("No device matches.")
    for note in report.notes:
        page.paragraph(f"note: {note}")
    return page.render()


@click.command("locks")
@click.argument("paths", nargs=-1, metavar="[PATH|-]...")
@lock_input_options
@click.option("--pool", "pools", multiple=True, metavar="POOL",
              help="Only these pools (driver/name, or name); repeatable.")
@click.option("--node", "nodes", multiple=True, metavar="NODE", help="Only pools of these nodes; repeatable.")
@click.option("--state", "states", multiple=True, type=click.Choice(STATE_CHOICES),
              help="Only devices in these states; repeatable.")
@click.option("--claim", "claims", multiple=True, metavar="NS/NAME",
              help="Only devices this claim holds (a bare name means namespace default); repeatable.")
@click.option("--all", "show_all", is_flag=True,
              help="Also list the devices of pools that keep no lock (untracked).")
@format_option(("text", "json", "prometheus", "html"),
               extra=" (html: one self-contained page, a card per device: state, lock, holders, consumption)")
def locks(paths: tuple[str, ...], excludes: tuple[str, ...], config_path: str | None, cluster: bool,
          kubeconfig: str | None, kube_context: str | None, chunk_size: int | None, gate: GateSettings,
          kubernetes_version: KubernetesVersion, pools: tuple[str, ...], nodes: tuple[str, ...],
          states: tuple[str, ...], claims: tuple[str, ...], show_all: bool, fmt: str,
          output: str | None) -> None:
    """Show every device's sharing-affinity lock, reconstructed from bound claims.

    Reads ResourceSlices, DeviceClasses and ResourceClaims (`kubectl get
    resourceslices,deviceclasses,resourceclaims -A -o yaml`, or --cluster) and derives each
    device's lock from the claims' status.allocation as a restarted scheduler does: clean,
    locked to a key map, or unreconstructable (with the claim and what failed). Per pool:
    devices by state, each lock value and how many devices hold it, and locked-free capacity
    (all free capacity on locked devices; the part of it pending claims cannot use because
    of the lock is what `simulate --workload` calls stranded). `--format prometheus` writes
    the KEP's gauges and per-pool series for a node-exporter textfile collector.

    Exit code 0 when the report is written (unreconstructable devices are a state, shown, not
    a failure); 1 when an input object is invalid; 2 on usage errors or unreadable input.
    """
    from ...policies.core.findings import Severity
    from ...policies.scheduler.lock_report import LockFilters, lock_report
    from ..inputs import walk_filter

    loaded = load_lock_input("locks", paths, cluster, kubeconfig, kube_context, chunk_size, gate,
                             kubernetes_version, walk_filter(excludes, load_settings(config_path)))
    notes = [f"claim {c} is allocated device {r}, which no slice of the input publishes"
             for c in loaded.book.claims for r in loaded.book.missing_devices(c)]
    report = lock_report(loaded.book, LockFilters(pools, nodes, states, claims, show_all), notes)
    findings = list(loaded.objects.findings)
    if fmt == "json":
        echo_json(report_json(report, findings), "locks", output)
    elif fmt == "prometheus":
        from ...exporter.lock_metrics import exposition

        emit("locks", exposition(report), output)
    elif fmt == "html":
        emit("locks", render_html(report), output)
    else:
        emit("locks", render_table(report), output)
    failed = any(f.severity is Severity.ERROR for f in findings)
    sys.exit(1 if failed else 0)
