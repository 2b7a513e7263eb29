"""The `dra-affinity` command group.

Subcommands are imported only when invoked, so `--help`, `--version` and a
pre-commit run of `lint` never pay for Flask, gunicorn or the CEL engine.
"""

from __future__ import annotations

import importlib
import os

import click

from ..policies.core import layers
from ..policies.core.gc_pause import gc_paused
from .terminal import COLOR_CHOICES, Terminal, color_setting

# name -> (module in dra_affinity.lint.commands, attribute, one-line help shown without importing it)
_COMMANDS: dict[str, tuple[str, str, str]] = {
    "cel": ("cel_cmd", "cel", "Check one CEL extractor: compile, type, cost, evaluate."),
    "certs": ("certs_cmd", "certs", "Create or rotate the webhook's CA and serving cert."),
    "completion": ("completion_cmd", "completion", "Print the shell completion script (bash, zsh, fish)."),
    "dry-run": ("dryrun_cmd", "dry_run",
                "Run the extractors against sample claims, as the scheduler would."),
    "explain": ("explain_cmd", "explain", "Explain why a claim or pod is pending (or where it is)."),
    "exporter": ("exporter_cmd", "exporter", "Serve a cluster's lock metrics, kept current from watches."),
    "lint": ("lint_cmd", "lint", "Lint ResourceSlices (slice and pool rules)."),
    "locks": ("locks_cmd", "locks", "Show every device's affinity lock, reconstructed from bound claims."),
    "pools": ("pools_cmd", "pools", "Report each pool: slices, keys, cost, devices."),
    "policy": ("policy_cmd", "policy", "Export the native ValidatingAdmissionPolicy fallback."),
    "test": ("test_cmd", "test",
             "Run test suites: expected extraction outcomes per claim, request and pool."),
    "rules": ("rules_cmd", "rules", "List the rules, or explain one (e.g. `rules SA105`)."),  # docs
    "simulate": ("simulate_cmd", "simulate",
                 "Replay the scheduler's affinity locks over a sequence of claims."),
    "serve": ("serve_cmd", "serve", "Run the validating admission webhook (gunicorn, TLS)."),
}


LAYER_MODULES = (
    "dra_affinity.policies.core.gc_pause",
    "dra_affinity.policies.model.schema",
    "dra_affinity.policies.scheduler.extraction",
    "dra_affinity.policies.scheduler.dryrun",
    "dra_affinity.policies.scheduler.claim_memos",
    "dra_affinity.policies.scheduler.first_fit",
    "dra_affinity.lint.commands.dryrun_cmd",
    "dra_affinity.sources.loader",
)
"""Every module that declares a speed layer (`tests/test_speed_layers.py` checks the list is
whole): imported before `DRA_AFFINITY_SPEED_LAYERS` is checked when it names a layer not
declared yet, so a name is unknown only when no module declares it."""


class LazyGroup(click.Group):
    """A group whose commands live in modules imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = _COMMANDS.get(cmd_name)
        if spec is None:
            return None
        try:  # before any layer is asked: a misspelt layer is a usage error, not a traceback
            named = {word.strip().lstrip("-") for word in os.environ.get(layers.ENV, "").split(",")}
            if not named - {"", "all", "none"} <= layers.LAYERS.keys():
                for declaring in LAYER_MODULES:
                    importlib.import_module(declaring)
            layers.active_layers()
        except layers.LayerSpecError as error:
            raise click.UsageError(str(error)) from None
        with gc_paused(freeze=True):  # modules live as long as the process: nothing to collect
            module = importlib.import_module(f"dra_affinity.lint.commands.{spec[0]}")
        command = getattr(module, spec[1])
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, spec[2]) for name, spec in sorted(_COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # heavy: only for --version

    try:
        return version("dra-affinity")
    except PackageNotFoundError:  # running from a source tree without installing
        return "0+unknown"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """click's `version_option` output, with the version looked up only when asked for."""
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"dra-affinity, version {_version()}")
    ctx.exit()


EXIT_CODES = (
    "Exit codes, every command: 0 the command did what was asked (a report exits 0 whatever it "
    "shows: pending claims, locks, unschedulable claims); 1 a check failed: a finding at or above "
    "--fail-on (default error, so an invalid input object), a failing dry-run outcome, test case "
    "or cel check; 2 a usage error, unreadable input or config, or a report that cannot be "
    "written. The servers (serve, exporter) exit 0 when stopped and 2 when they cannot start "
    "(serve: gunicorn's 3 or 4 when its workers cannot boot). Each command's --help states its own."
)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EXIT_CODES)
@click.option("--version", "-V", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
@click.option("--color", "color", type=click.Choice(COLOR_CHOICES), default="auto", show_default=True,
              help="Colour the output: auto colours a terminal unless NO_COLOR is set; always; never.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print only findings, reports and errors: no summary line, warnings or progress.")
@click.option("-v", "--verbose", is_flag=True,
              help="Also say on stderr which config file, reports and inputs a run uses.")
@click.pass_context
def main(ctx: click.Context, color: str, quiet: bool, verbose: bool) -> None:
    """Lint and validate Kubernetes DRA ResourceSlice `sharingAffinity` (KEP-5981).

    Progress bars appear on stderr, on a terminal only, once a run has lasted
    DRA_AFFINITY_PROGRESS_DELAY seconds (default 2).
    """
    if quiet and verbose:
        raise click.UsageError("-q/--quiet and -v/--verbose exclude each other")
    ctx.color = color_setting(color)
    ctx.obj = Terminal(color=ctx.color, quiet=quiet, verbose=verbose)
