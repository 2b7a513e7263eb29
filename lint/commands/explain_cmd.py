"""`dra-affinity explain`: why is this pod pending — the KEP's troubleshooting flow, computed."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from ...policies.core.limits import KubernetesVersion
from ...policies.scheduler.locks import Mode, render_map
from ..options import GateSettings, format_option, load_settings
from ..reporters.output import emit
from .locks_cmd import build_book, lock_input_options, read_lock_input

if TYPE_CHECKING:
    from ...policies.scheduler.explain import Explanation, PoolStep
    from ..inputs import Objects


def explanation_json(e: Explanation) -> dict[str, Any]:
    from .simulate_cmd import device_to_json, step_to_json

    out: dict[str, Any] = {"claim": e.claim, "allocated": e.allocated, "schedulable": e.schedulable,
                           "verdict": e.verdict}
    if e.allocated:
        out["allocations"] = [{"request": h.request, "device": device_to_json(h.device),
                               "state": h.status.value if h.present else None,
                               "lock": dict(h.lock) if h.lock is not None else None,
                               "reason": h.reason or None, "sharedWith": list(h.sharing)} for h in e.held]
        out["unschedulable"] = None
        out["candidates"] = []
    elif e.step is not None:
        step = step_to_json(e.step)
        out["allocations"] = step["allocations"]
        out["unschedulable"] = step["unschedulable"]
        out["candidates"] = step["candidates"]
    else:
        out.update(allocations=[], unschedulable=None, candidates=[])
    out["pools"] = [_pool_json(p) for p in e.pools]
    out["events"] = list(e.events)
    out["hints"] = list(e.hints)
    out["releases"] = [{"device": device_to_json(r.device) if r.device else None, "release": list(r.claims),
                        "kept": list(r.kept), "fewest": r.fewest,
                        "allocations": [{"request": p.request, "device": device_to_json(p.device)}
                                        for p in r.placements]} for r in e.releases]
    return out


def _pool_json(p: PoolStep) -> dict[str, Any]:
    x = p.extraction
    return {
        "request": p.request, "pool": {"driver": p.pool.driver, "name": p.pool.name}, "node": p.node,
        "candidate": p.candidate, "whyNot": p.why_not or None, "untracked": p.untracked or None,
        "extractors": [{"key": k, "expression": expr, "slice": s} for k, expr, s in p.extractors],
        "extraction": None if x is None else {
            "outcome": x.outcome.value, "affinity": dict(x.affinity) if x.affinity is not None else None,
            "unsatisfied": list(x.unsatisfied), "configs": list(x.configs),
            "error": None if x.error is None else {"kind": x.error.kind, "extractor": x.error.extractor,
                                                   "config": x.error.config, "message": x.error.message},
            "evaluations": [{"extractor": ev.extractor, "config": ev.config, "type": ev.type,
                             "value": _value(ev.value),
                             "error": ev.error} for ev in x.evaluations],
        },
    }


def _value(value: object) -> object:
    """A result JSON can carry as it is; anything else as CEL-ish text."""
    return value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)


def _pool_lines(p: PoolStep) -> list[str]:
    name = f"{p.pool.driver}/{p.pool.name}"
    if not p.candidate:
        return [f"  - {name} [{p.request}]: not a candidate: {p.why_not}"]
    if p.untracked:
        return [f"  - {name} [{p.request}]: candidate, no lock kept ({p.untracked})"]
    lines = [f"  - {name} [{p.request}] (node {p.node}): candidate; extractors "
             + ", ".join(f"{k} from {s}" for k, _, s in p.extractors)]
    x = p.extraction
    if x is None:
        return lines
    if not x.configs and x.outcome.value != "slice-error":
        lines.append("      no opaque config of this driver is in scope for the request")
    for ev in x.evaluations:
        shown = ev.error or (json.dumps(ev.value) if isinstance(ev.value, str) else repr(ev.value))
        lines.append(f"      {ev.extractor} on config[{ev.config}] -> {shown}")
    if x.outcome.value == "ok":
        lines.append(f"      extraction ok: {render_map(x.affinity)}")
    elif x.outcome.value == "not-satisfied":
        lines.append(f"      not satisfied: no value for {', '.join(x.unsatisfied)}")
    elif x.error is not None:
        lines.append(f"      {x.outcome.value}: {x.error.message}")
    return lines


def render_text(e: Explanation) -> str:
    lines = [f"Claim {e.claim}: {e.verdict}"]
    if e.allocated:
        return "\n".join(lines)
    if e.pools:
        lines += ["", "Candidate pools and extraction (steps 1-3):"]
        for p in e.pools:
            lines += _pool_lines(p)
    if e.step is not None and e.step.evaluated:
        lines += ["", "Devices (steps 4-5):"]
        for ev in e.step.evaluated:
            if ev.viable:
                lines.append(f"  - {ev.device} [{ev.request}] {ev.status.value}: viable")
            else:
                first = ev.rejections[0]
                lines.append(f"  - {ev.device} [{ev.request}] {ev.status.value}: {first.reason.value}: "
                             f"{first.message}")
    if e.events:
        lines += ["", "Scheduler diagnostics (step 6):"] + [f"  {event}" for event in e.events]
    if e.hints:
        heading = "Alternatives:" if e.schedulable else "What would change it:"
        lines += ["", heading] + [f"  * {hint}" for hint in e.hints]
    return "\n".join(lines)


@click.command("explain")
@click.argument("target", metavar="CLAIM|pod/NAMESPACE/NAME")
@click.argument("paths", nargs=-1, metavar="[PATH|-]...")
@lock_input_options
@click.option("--mode", type=click.Choice([m.value for m in Mode]), default=Mode.ALPHA.value,
              show_default=True, help="Device choice: alpha first-fit, or beta's affinity-aware preference.")
@format_option(("text", "json"))
def explain(target: str, paths: tuple[str, ...], excludes: tuple[str, ...], config_path: str | None,
            cluster: bool, kubeconfig: str | None, kube_context: str | None, chunk_size: int | None,
            gate: GateSettings, kubernetes_version: KubernetesVersion, mode: str, fmt: str,
            output: str | None) -> None:
    """Explain why a claim (namespace/name) or a pod's claims are pending, or where they are.

    Automates the KEP's troubleshooting steps from the reconstructed locks: the request's
    candidate pools (DeviceClass and selectors), each pool's extractors evaluated against
    every in-scope opaque config, each candidate device's lock state and whether it is
    viable, the verdict in the scheduler's per-pod wording, and what would change it. An
    allocated claim shows its devices, the lock it holds and who shares it. For
    `pod/NAMESPACE/NAME`, claims from templates are found through the pod's
    status.resourceClaimStatuses (the pod must be in PATHs, or is read with --cluster), and
    the pod's pending claims are allocated together, in order, each seeing the earlier ones'
    tentative locks and capacity (as `simulate` of those claims). Every hint that promises an
    outcome was checked by running the allocation again with the change applied (claims
    released, a config added, a slice republished), naming the fewest releases that work;
    other verdicts (slice CEL error, incomplete pool, gate off) get the next step.

    Exit code 0 when the explanation is written, whether the claims are schedulable or not
    (the JSON's `schedulable` says which); 1 when an input object is invalid; 2 on usage
    errors (unknown claim or pod) or unreadable input.
    """
    from ...policies.core.findings import Severity
    from ...policies.scheduler.explain import explain_pod, pod_claims
    from ..inputs import walk_filter

    pod_ref = _pod_target(target)
    objects, cluster_target = read_lock_input("explain", paths, cluster, kubeconfig, kube_context,
                                              chunk_size, keep_pods=pod_ref is not None,
                                              walk=walk_filter(excludes, load_settings(config_path)))
    claims: list[str] = []
    missing: list[str] = []
    if pod_ref is not None:
        pod = _find_pod(objects, cluster_target, *pod_ref)
        found, missing = pod_claims(pod)
        claims = [name for _, name in found]
    else:
        claims = [target if "/" in target else f"default/{target}"]
    known = {c.qualified_name for c in objects.claims if c.kind == "ResourceClaim"}
    unknown = [c for c in claims if c not in known]
    for name in unknown:
        click.echo(f"dra-affinity explain: claim {name} is not in the input", err=True)
    if unknown:
        sys.exit(2)
    book = build_book(objects, gate, kubernetes_version, focus=claims)
    explanations = list(explain_pod(book, claims, mode=Mode(mode)))
    schedulable = all(e.schedulable for e in explanations) and not missing
    if fmt == "json":
        emit("explain", json.dumps(_document(pod_ref, explanations, missing, schedulable), indent=2), output)
    else:
        head = ([f"Pod {pod_ref[0]}/{pod_ref[1]}: {len(claims)} claim(s)"
                 + (", " + "; ".join(missing) if missing else "")] if pod_ref is not None else [])
        emit("explain", "\n".join([*head, "\n\n".join(render_text(e) for e in explanations)]), output)
    invalid = any(f.severity is Severity.ERROR for f in objects.findings)
    sys.exit(1 if invalid else 0)


def _document(pod: tuple[str, str] | None, explanations: list[Explanation], missing: list[str],
              schedulable: bool) -> dict[str, Any]:
    docs = [explanation_json(e) for e in explanations]
    if pod is None:
        return docs[0]
    if len(docs) == 1 and not missing:
        return {"pod": f"{pod[0]}/{pod[1]}", **docs[0], "claims": docs, "missing": []}
    unschedulable = next((d["unschedulable"] for d in docs if d["unschedulable"] is not None), None)
    return {
        "pod": f"{pod[0]}/{pod[1]}", "claim": None, "schedulable": schedulable,
        "allocations": [{"claim": d["claim"], **a} for d in docs for a in d["allocations"]],
        "unschedulable": unschedulable,
        "candidates": [{"claim": d["claim"], **c} for d in docs for c in d["candidates"]],
        "claims": docs, "missing": missing,
    }


def _pod_target(target: str) -> tuple[str, str] | None:
    if not target.startswith("pod/"):
        return None
    parts = target.split("/")
    if len(parts) != 3 or not parts[1] or not parts[2]:
        raise click.BadParameter(f"{target!r}: a pod is named pod/NAMESPACE/NAME", param_hint="TARGET")
    return parts[1], parts[2]


def _find_pod(objects: Objects, target: Any, namespace: str, name: str) -> dict[str, Any]:
    if target is not None:
        from ...sources.cluster import read_pod

        pod, error = read_pod(namespace, name, target)
        if error is not None or pod is None:
            click.echo(f"dra-affinity explain: {error or f'pod {namespace}/{name} cannot be read'}", err=True)
            sys.exit(2)
        return pod
    for pod in objects.pods:
        meta = pod.get("metadata") or {}
        if meta.get("name") == name and (meta.get("namespace") or "default") == namespace:
            return dict(pod)
    click.echo(f"dra-affinity explain: pod {namespace}/{name} is not in the input "
               "(add `pods` to the kubectl get, or use --cluster)", err=True)
    sys.exit(2)
