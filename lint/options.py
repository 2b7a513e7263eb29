"""Options shared by several commands, declared once."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from ..policies.core.features import (
    KNOWN_GATES,
    FeatureGateError,
    FeatureGates,
    parse_feature_gate,
)
from ..policies.core.limits import (
    DEFAULT_KUBERNETES_VERSION,
    NEWEST_KUBERNETES_VERSION,
    NEWEST_PUBLISHED_KUBERNETES_VERSION,
    OLDEST_KUBERNETES_VERSION,
    KubernetesVersion,
    VersionError,
    format_kubernetes_version,
    parse_kubernetes_version,
)
from .config import Config, ConfigProblem, OutputSpec, load_config

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


class KubernetesVersionType(click.ParamType):
    name = "VERSION"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> KubernetesVersion:
        try:
            return parse_kubernetes_version(str(value))
        except VersionError as exc:
            self.fail(str(exc), param, ctx)


def kubernetes_version_option(func: F) -> F:
    oldest, newest = OLDEST_KUBERNETES_VERSION, NEWEST_KUBERNETES_VERSION
    published = format_kubernetes_version(NEWEST_PUBLISHED_KUBERNETES_VERSION)
    return click.option(
        "--kubernetes-version",
        type=KubernetesVersionType(),
        default=format_kubernetes_version(DEFAULT_KUBERNETES_VERSION),
        show_default=True,
        help=f"Target Kubernetes release ({format_kubernetes_version(oldest)} to "
             f"{format_kubernetes_version(newest)}): selects limits, the CEL environment and the "
             f"default feature gates. A release newer than {published} uses {published}'s CEL "
             "environment (its own is not published yet).",
    )(func)


GateSettings = tuple[tuple[str, bool], ...]
"""What `--feature-gate` gives a command: (gate, enabled) in command-line order."""


class FeatureGateType(click.ParamType):
    """`NAME=on|off` (or `true|false`); a bare `on|off` is DRASharingAffinity's."""

    name = "NAME=on|off"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> tuple[str, bool]:
        if isinstance(value, tuple):
            return value  # already converted (a default)
        try:
            return parse_feature_gate(str(value))
        except FeatureGateError as exc:
            self.fail(str(exc), param, ctx)


def feature_gate_option(func: F) -> F:
    """`--feature-gate NAME=on|off`, repeatable, as kube-scheduler's `--feature-gates`.

    The command turns the settings into a `FeatureGates` value with `feature_gates(...)` once it
    knows `--kubernetes-version` (a gate's default and lock depend on the release).
    """
    return click.option(
        "--feature-gate", "gate", type=FeatureGateType(), multiple=True, metavar="NAME=on|off",
        help="Set a feature gate of the scheduler model (repeatable; later wins; true/false "
             "too). Defaults are the chosen release's; a bare on/off sets DRASharingAffinity. "
             f"Known: {', '.join(sorted(KNOWN_GATES))}.",
    )(func)


def feature_gates(version: KubernetesVersion, settings: Sequence[tuple[str, bool]]) -> FeatureGates:
    """The run's gates; a gate the release lacks or a locked gate set otherwise: usage error."""
    try:
        return FeatureGates.for_release(version, settings)
    except FeatureGateError as exc:
        raise click.BadParameter(str(exc), param_hint="'--feature-gate'") from exc


# -- report formats, config and CI options (lint, dry-run, test) ---------------------------

ORDER_KEY = "dra_affinity.option_order"
"""`ctx.meta` key: parameter names in command-line order, one per occurrence."""
GITHUB_ENV = "GITHUB_ACTIONS"


class ConfigUsageError(click.ClickException):
    """A settings file that cannot be used, or a contradictory format/output pairing: exit 2."""

    exit_code = 2


class FormatCommand(click.Command):
    """A command that remembers the order of its options on the command line.

    click hands each multiple option its values as one list, which loses how the
    `--format` and `--output` occurrences interleave; pairing each `--output` with the
    `--format` just before it needs that order, so the arguments are tokenised once
    more (no callbacks run) to record it.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))
            ctx.meta[ORDER_KEY] = [param.name for param in order]
        except click.UsageError:
            ctx.meta[ORDER_KEY] = []  # the real parse below reports it
        return super().parse_args(ctx, args)


HUMAN_FORMAT = "text"
"""The human-readable report of every command: findings, tables, explanations."""
FORMAT_ALIASES = {"table": HUMAN_FORMAT}
"""Other names accepted for a format: `table` was the human format's name on `pools`, `locks`,
`simulate` and `dry-run`; `text` names it on every command, as it did on the other five and in
the config file's `format:` list."""


def canonical_format(name: str) -> str:
    """A format name as the commands know it (`table` → `text`)."""
    return FORMAT_ALIASES.get(name, name)


class FormatChoice(click.Choice):
    """`--format`'s names, the `table` alias accepted and turned into `text`."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and canonical_format(value) in self.choices:
            value = canonical_format(value)
        return super().convert(value, param, ctx)


def _format_help(choices: Sequence[str], default: str, extra: str) -> str:
    alias = " (`table` is accepted for text)" if HUMAN_FORMAT in choices else ""
    return f"Report format: {', '.join(choices)}{alias}; default {default}{extra}."


def _stack(func: F, decorators: Sequence[Callable[[F], F]]) -> F:
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def output_option(func: F) -> F:
    """`-o/--output FILE`: one report, written to FILE instead of standard output."""
    return click.option(
        "-o", "--output", "output", type=click.Path(dir_okay=False), default=None, metavar="FILE",
        help="Write the report to FILE instead of standard output (`-` is standard output).",
    )(func)


def config_option(func: F) -> F:
    """`--config FILE`: the settings file in force."""
    return click.option(
        "--config", "config_path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
        help="Settings file (default: .dra-affinity.yaml or [tool.dra-affinity] in pyproject.toml, "
             "found upward from the working directory).",
    )(func)


def exclude_option(func: F) -> F:
    """`--exclude PATTERN`, shared by every command that walks directories."""
    return click.option(
        "--exclude", "excludes", multiple=True, metavar="PATTERN",
        help="Leave out paths matching this gitignore-style pattern (relative to the working "
             "directory; repeatable; adds to the config's `exclude:`). Walks always skip hidden "
             "entries and, in a git work tree, what .gitignore ignores.")(func)


def cluster_options(func: F) -> F:
    """`--cluster` and how to reach it: every command that reads objects can read them live."""
    return _stack(func, (
        click.option("--cluster", is_flag=True,
                     help="Read the input from the cluster of the kubeconfig context (read-only, "
                          "paginated) instead of PATHs."),
        click.option("--kubeconfig", type=click.Path(dir_okay=False), default=None,
                     help="Kubeconfig file for --cluster (default: $KUBECONFIG, ~/.kube/config)."),
        click.option("--context", "kube_context", default=None, metavar="NAME",
                     help="Kubeconfig context for --cluster (default: the current context)."),
        click.option("--chunk-size", type=click.IntRange(min=1), default=None, metavar="N",
                     help="Objects per list request with --cluster (default 500, like kubectl)."),
    ))


def format_option(choices: Sequence[str], default: str = HUMAN_FORMAT, extra: str = "") -> Callable[[F], F]:
    """`--format` (one report) and `-o/--output`, for the commands that write a single report."""

    def decorate(func: F) -> F:
        return _stack(func, (
            click.option("--format", "fmt", type=FormatChoice(list(choices)), default=default,
                         help=_format_help(choices, default, extra)),
            output_option,
        ))

    return decorate


def report_options(choices: Sequence[str], default: str) -> Callable[[F], F]:
    """`--format` (repeatable), `-o/--output` (after the `--format` it writes) and `--config`."""

    def decorate(func: F) -> F:
        return _stack(func, (
            click.option("--format", "fmt", type=FormatChoice(list(choices)), multiple=True,
                         help=_format_help(choices, default, " (github when GITHUB_ACTIONS=true); "
                                           "repeat for several reports in one run")),
            click.option("-o", "--output", "output", multiple=True, metavar="FILE",
                         help="Write the report of the --format just before it to FILE "
                              "(default: standard output, for at most one format)."),
            config_option,
        ))

    return decorate


def complete_pools_option(func: F) -> F:
    """`--complete-pools` (lint, pools)."""
    return click.option(
        "--complete-pools", is_flag=True,
        help="The input holds every slice of every pool (a full dump; implied by --cluster): "
             "incomplete pools (SP303/SP304) are errors instead of warnings.")(func)


def ci_options(func: F) -> F:
    """`--strict` and `--fail-if-no-resources` (lint, dry-run)."""
    decorators = (
        click.option("--strict/--no-strict", default=False,
                     help="Warnings fail the run too (the same as --fail-on warning, or lower)."),
        click.option("--fail-if-no-resources/--allow-no-resources", default=False,
                     help="Exit 2 when the input holds nothing to check (a wrong path in CI)."),
    )
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def suppression_options(func: F) -> F:
    """`--show-suppressed` (lint, dry-run)."""
    return click.option(
        "--show-suppressed/--hide-suppressed", default=False,
        help="Also report suppressed findings, each with its suppression and reason.",
    )(func)


def rule_selection_options(func: F) -> F:
    """`--enable` / `--disable` rule ids or prefixes (lint)."""
    decorators = (
        click.option("--enable", multiple=True, metavar="RULE",
                     help="Run only these rules (ids or prefixes such as SA2; repeatable). With "
                          "--disable, replaces the config's rule selection."),
        click.option("--disable", multiple=True, metavar="RULE",
                     help="Do not run these rules (ids or prefixes; repeatable). With --enable, "
                          "replaces the config's rule selection."),
    )
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def load_settings(config_path: str | None) -> Config:
    """The config file in force (`--config`, else discovered, else defaults), or exit 2."""

    from .terminal import verbose

    loaded = load_config(config_path)
    if isinstance(loaded, ConfigProblem):
        raise ConfigUsageError(f"config: {loaded.message}")
    verbose(f"config: {loaded.path or 'no settings file found: defaults'}")
    return loaded


def given(ctx: click.Context, name: str) -> bool:
    """Whether option `name` came from the command line (flags beat the config file)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source is not ParameterSource.DEFAULT


def pick(ctx: click.Context, name: str, value: T, configured: T | None) -> T:
    """The flag's value if given, else the config's if set, else the flag's default."""
    if given(ctx, name) or configured is None:
        return value
    return configured


def output_specs(
    ctx: click.Context,
    formats: Sequence[str],
    outputs: Sequence[str],
    configured: Sequence[OutputSpec] | None,
    config: Config,
    *,
    choices: Sequence[str],
    default: str,
    environ: Mapping[str, str] | None = None,
) -> tuple[OutputSpec, ...]:
    """The reports to write, from `--format`/`--output`, else the config, else the default.

    Pairing rule: each `--output FILE` writes the report of the `--format` just before
    it; a `--format` with no `--output` goes to standard output, which at most one
    format may do; a lone `--output FILE` with no `--format` writes the default format.
    With no `--format` at all, the config's `format` list applies, else
    `github` under GitHub Actions (`GITHUB_ACTIONS=true`), else `default`.
    """
    env = os.environ if environ is None else environ
    if len(outputs) == 1 and not formats:
        specs = [OutputSpec(default, outputs[0])]  # `-o FILE` alone: the default report, in FILE
    elif formats or outputs:
        specs = _pair(ctx.meta.get(ORDER_KEY) or [], formats, outputs)
    elif configured:
        specs = []
        for spec in configured:
            spec = OutputSpec(canonical_format(spec.format), spec.output)
            if spec.format not in choices:
                raise ConfigUsageError(
                    f"config: {config.path}: format {spec.format!r} is not one of {', '.join(choices)} "
                    f"for `{ctx.command.name}`")
            specs.append(OutputSpec(spec.format, config.resolve(spec.output) if spec.output else None))
    elif env.get(GITHUB_ENV) == "true" and "github" in choices:
        specs = [OutputSpec("github")]
    else:
        specs = [OutputSpec(default)]
    stdout = [s.format for s in specs if s.output is None or s.output == "-"]
    if len(stdout) > 1:
        raise click.UsageError(
            f"only one report can go to standard output, not {len(stdout)} ({', '.join(stdout)}): "
            "give the others an --output FILE right after their --format")
    files = [s.output for s in specs if s.output not in (None, "-")]
    duplicates = sorted({f for f in files if files.count(f) > 1 and f is not None})
    if duplicates:
        raise click.UsageError(f"two reports would be written to {duplicates[0]}")
    from .terminal import verbose

    for spec in specs:
        where = spec.output if spec.output not in (None, "-") else "standard output"
        verbose(f"report: {spec.format} to {where}")
    return tuple(specs)


def _pair(order: Sequence[str], formats: Sequence[str], outputs: Sequence[str]) -> list[OutputSpec]:
    if not formats:
        raise click.UsageError("--output FILE must follow the --format it writes, e.g. "
                               "--format sarif --output report.sarif")
    sequence = [name for name in order if name in ("fmt", "output")]
    if sequence.count("fmt") != len(formats) or sequence.count("output") != len(outputs):
        # no order recorded (a programmatic call): pair the n-th --output with the n-th --format
        sequence = [x for i in range(len(formats))
                    for x in (["fmt", "output"] if i < len(outputs) else ["fmt"])]
        sequence += ["output"] * (len(outputs) - len(formats))
    pending: list[list[str | None]] = []
    next_format = iter(formats)
    next_output = iter(outputs)
    for name in sequence:
        if name == "fmt":
            pending.append([next(next_format), None])
        elif not pending or pending[-1][1] is not None:
            raise click.UsageError("--output FILE must follow the --format it writes (one --output per "
                                   "--format), e.g. --format sarif --output report.sarif --format text")
        else:
            pending[-1][1] = next(next_output)
    return [OutputSpec(str(fmt), out) for fmt, out in pending]
