"""One run's settings: flags over the config file over defaults, decided once, before the run.

A reporting command (`lint`, `dry-run`, `test`) resolves its options into one frozen object
first (`resolved`), and the command's body receives only that object: precedence lives
here, once (a flag given on the command line wins; else the config file's value; else the
flag's default — click's parameter source tells which), and a body cannot mix up a flag with
the config value it overrides.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import click

from ..policies.core.findings import Severity
from ..policies.core.limits import (
    DEFAULT_KUBERNETES_VERSION,
    KubernetesVersion,
    parse_kubernetes_version,
)
from .config import Config, OutputSpec
from .options import given, load_settings, output_specs, pick

S = TypeVar("S")

Params = Mapping[str, Any]
"""A command's parameters as click parsed them, by parameter name."""


@dataclass(frozen=True, slots=True)
class ReportSettings:
    """What `lint`, `dry-run` and `test` decide alike: the config in force and the reports.

    `threshold` is the lowest severity that fails the run (`--fail-on`, `--strict`);
    `kubernetes_version` is `--kubernetes-version`, else the config's, else the default (the
    default alone for a command without the flag).
    """

    config: Config
    outputs: tuple[OutputSpec, ...]
    threshold: Severity = Severity.ERROR
    show_suppressed: bool = False
    fail_if_no_resources: bool = False
    kubernetes_version: KubernetesVersion = DEFAULT_KUBERNETES_VERSION


def resolved(
    resolve: Callable[[click.Context, Params], S],
) -> Callable[[Callable[[S], None]], Callable[..., None]]:
    """Decorator for a click command body taking one settings object.

    click calls the returned callback with every parameter; `resolve` turns them (with the
    context, which knows where each value came from) into the frozen settings, usage errors
    raised there as anywhere in click, and the body runs with the result alone. The body's
    docstring stays the command's help.
    """

    def decorate(body: Callable[[S], None]) -> Callable[..., None]:
        @functools.wraps(body)
        def callback(**params: Any) -> None:
            body(resolve(click.get_current_context(), params))

        return callback

    return decorate


def report_settings(
    ctx: click.Context,
    params: Params,
    config: Config,
    *,
    command: str,
    choices: Sequence[str],
    default: str,
    fail_on: bool = False,
    strict: bool = False,
    version: bool = False,
) -> ReportSettings:
    """The shared settings of a reporting command, from its parameters and `config`.

    The flags a command has are named by the keywords: `fail_on` (`--fail-on`), `strict`
    (`--strict`, also `--fail-if-no-resources` and `--show-suppressed`), `version`
    (`--kubernetes-version`). Checked in this order, as the commands always did: the reports
    first, then the threshold.
    """
    section = config.for_command(command)
    outputs = output_specs(ctx, params["fmt"], params["output"], section.formats, config,
                           choices=choices, default=default)
    threshold = Severity.ERROR
    if fail_on:
        threshold = Severity.parse(pick(ctx, "fail_on", params["fail_on"], section.fail_on))
    show = fail_if_none = False
    if strict:
        if pick(ctx, "strict", params["strict"], section.strict):
            threshold = min(threshold, Severity.WARNING)
        show = pick(ctx, "show_suppressed", params["show_suppressed"], section.show_suppressed)
        fail_if_none = pick(ctx, "fail_if_no_resources", params["fail_if_no_resources"],
                            section.fail_if_no_resources)
    kubernetes_version = DEFAULT_KUBERNETES_VERSION
    if version:
        kubernetes_version = params["kubernetes_version"]
        if not given(ctx, "kubernetes_version") and config.kubernetes_version is not None:
            kubernetes_version = parse_kubernetes_version(config.kubernetes_version)
    return ReportSettings(config, outputs, threshold, show, fail_if_none, kubernetes_version)


def config_for(params: Params) -> Config:
    """The config file in force for this run (`--config`, else discovered), or exit 2."""
    return load_settings(params["config_path"])
