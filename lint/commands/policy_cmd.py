"""`dra-affinity policy export`: the native ValidatingAdmissionPolicy fallback, as YAML.

The policy is generated from the rule catalog (`policies.rules.vap`), never written by hand, so it
cannot drift from what `lint` and the webhook enforce; deploy/policy/ ships its output and a
test regenerates it. Before anything is written every expression is compiled in the
Kubernetes admission environment of the target release: a policy the API server would reject
is a bug here, reported with exit code 2.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from ...policies.core.limits import KubernetesVersion
from ..options import kubernetes_version_option, output_option


def _write_atomically(path: Path, text: str) -> None:
    """Replace `path` in one step, so a reader never sees half a policy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cost_lines(version: KubernetesVersion) -> list[str]:
    from ...policies.cel.cost.estimate import UNBOUNDED_THRESHOLD
    from ...policies.rules.vap import (
        VAP_PER_CALL_LIMIT,
        VAP_RUNTIME_BUDGET,
        estimate_policy_cost,
        structural_policy,
    )

    def show(n: int) -> str:
        return "unbounded" if n >= UNBOUNDED_THRESHOLD else f"{n:,}"

    costs = estimate_policy_cost(structural_policy(version))
    lines = [f"{'expression':<40} {'no size knowledge':>18} {'within API bounds':>18}"]
    lines += [f"{c.where:<40} {show(c.unbounded.max):>18} {show(c.bounded.max):>18}" for c in costs]
    checked = [c for c in costs if not c.where.endswith("messageExpression")]
    total = sum(c.bounded.max for c in checked)
    lines.append(
        f"validations, variables and match condition within API bounds: {show(total)} "
        f"(API server: {VAP_PER_CALL_LIMIT:,} per expression, {VAP_RUNTIME_BUDGET:,} per request, "
        "enforced at run time; message expressions only run on a denial)"
    )
    return lines


@click.group("policy")
def policy() -> None:
    """The native ValidatingAdmissionPolicy that enforces the structural rules without the webhook."""


@policy.command("export", short_help="Print the native ValidatingAdmissionPolicy and its binding.")
@output_option
@click.option("--action", "actions", multiple=True, type=click.Choice(["Deny", "Warn", "Audit"]),
              help="The binding's validationActions; repeat for several (default: Deny). "
                   "Use --action Warn --action Audit to observe before enforcing.")
@click.option("--name", default=None, help="Name of the policy and its binding.")
@click.option("--show-cost", is_flag=True,
              help="Also print each expression's estimated CEL cost to stderr.")
@kubernetes_version_option
def export(output: str | None, actions: tuple[str, ...], name: str | None, show_cost: bool,
           kubernetes_version: KubernetesVersion) -> None:
    """Print a ValidatingAdmissionPolicy and its binding enforcing SA101-SA105 and SA109.

    The API server evaluates them itself, so they hold while the webhook is down or removed.
    Compiling extractors, their cost and the pool rules still need the webhook. A file
    given with -o is replaced atomically.

    Exit code 0; 2 on usage errors or a file that cannot be written.
    """
    from ...policies.rules.vap import (
        POLICY_NAME,
        check_policy,
        render_policy,
        structural_policy,
        validation_actions_problem,
    )

    chosen = actions or ("Deny",)
    problem = validation_actions_problem(chosen)
    if problem is not None:
        raise click.UsageError(f"--action: {problem}")
    generated = structural_policy(kubernetes_version)
    problems = check_policy(generated)
    if problems:
        for p in problems:
            click.echo(f"dra-affinity policy export: {p.where}: {p.message}", err=True)
        sys.exit(2)
    text = render_policy(generated, chosen, name or POLICY_NAME)
    if output is None or output == "-":
        click.echo(text, nl=False)
    else:
        try:
            _write_atomically(Path(output), text)
        except OSError as error:
            click.echo(f"dra-affinity policy export: {output}: cannot write the policy: "
                       f"{error.strerror or error}", err=True)
            sys.exit(2)
        click.echo(f"wrote {output}", err=True)
    if show_cost:
        for line in _cost_lines(kubernetes_version):
            click.echo(line, err=True)
