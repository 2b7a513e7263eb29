"""Options shared by several commands, declared once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from policies.limits import (
    DEFAULT_KUBERNETES_VERSION,
    KubernetesVersion,
    VersionError,
    format_kubernetes_version,
    parse_kubernetes_version,
)

F = TypeVar("F", bound=Callable[..., Any])


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
    return click.option(
        "--kubernetes-version",
        type=KubernetesVersionType(),
        default=format_kubernetes_version(DEFAULT_KUBERNETES_VERSION),
        show_default=True,
        help="Target Kubernetes release: selects limits and the CEL environment.",
    )(func)
