"""Where every command's input comes from: files, directories, stdin, or a live cluster.

Loading (`load_input`: documents with positions, input findings, usage errors) and
modelling (`model_objects`: typed slices, claims and classes) are shared by `lint`,
`pools`, `dry-run`, `simulate` and `test`, so they all read input the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..policies.core.findings import Finding
from ..policies.model.resources import DeviceClass, ResourceClaim, ResourceSlice, parse
from ..sources.loader import LoadResult
from .options import cluster_options, exclude_option

if TYPE_CHECKING:
    from ..sources.cluster import ClusterTarget
    from ..sources.loader import LoadedDocument
    from ..sources.walk import ExcludePatterns, SkipReason, WalkFilter
    from .config import Config

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(slots=True)
class Input(LoadResult):
    """Documents from files or a cluster, with what went wrong getting them: what the loader
    gives (a cluster read fills only `documents` and `usage_errors` of it), plus the notes a
    cluster read adds."""

    notes: list[str] = field(default_factory=list)


NO_PATH_TERMINAL = ("no PATH given and standard input is a terminal: give a file or directory, "
                    "or - to read standard input")
NO_PATH_EMPTY = "no PATH given and standard input is empty: give a file or directory, or pipe YAML in"


def stdin_is_terminal(paths: Sequence[str]) -> bool:
    """No PATH and a terminal on stdin: waiting for input nobody is typing is a usage error."""
    if paths:
        return False
    isatty = getattr(sys.stdin, "isatty", None)
    return sys.stdin is None or (isatty is not None and isatty())


def check_implicit_stdin(paths: Sequence[str], inputs: Input) -> Input:
    """With no PATH, stdin that held nothing is a usage error (`lint $UNSET` must not pass)."""
    if not paths and not inputs.documents and not inputs.findings and not inputs.usage_errors:
        inputs.usage_errors.append(NO_PATH_EMPTY)
    return inputs


EMPTY_STDIN = ("standard input (-) held no ResourceSlice, ResourceClaim, ResourceClaimTemplate or "
               "DeviceClass: did the command feeding it fail? (`set -o pipefail` makes the pipeline "
               "fail with it)")


def warn_empty(yielded: Mapping[str, int]) -> list[str]:
    """Warn on stderr about every argument that read as nothing — no object of a kind the tool
    reads and no input error (empty stdin, an empty directory, a file holding only a
    Deployment) — and return them (`--fail-if-no-resources` makes them an error).

    Why: `kubectl get resourceslices -o yaml | dra-affinity lint -` must not pass in silence
    when kubectl failed and the pipe was empty."""
    empty = [argument for argument, count in yielded.items() if count == 0]
    context = click.get_current_context(silent=True)
    prefix = f"dra-affinity {context.info_name}" if context is not None else "dra-affinity"
    for argument in empty:
        message = EMPTY_STDIN if argument == "-" else (
            f"{argument}: no ResourceSlice, ResourceClaim, ResourceClaimTemplate or DeviceClass in it")
        click.echo(f"{prefix}: warning: {message}", err=True)
    return empty


def load_input(
    paths: tuple[str, ...], cluster: ClusterTarget | None = None, walk: WalkFilter | None = None
) -> Input:
    """Files, directories and stdin (`-`, the default), or every ResourceSlice of a cluster.

    Every document is kept, so positions below a document's start are composed only when a
    finding asks for one (`load_paths(lazy_positions=True)`); `lint` reads files one by one
    instead (`dra_affinity.lint.file_lint`)."""
    if cluster is not None:
        from ..sources.cluster import read_resource_slices

        read = read_resource_slices(cluster)
        if read.error is not None:
            return Input(usage_errors=[read.error], notes=list(read.notes))
        return Input(documents=list(read.documents), notes=list(read.notes))
    if stdin_is_terminal(paths):
        return Input(usage_errors=[NO_PATH_TERMINAL])
    from ..sources.loader import load_paths

    loaded = load_paths(list(paths) or ["-"], stdin=sys.stdin, walk=walk, lazy_positions=True)
    if paths:
        warn_empty(loaded.yielded)
    return check_implicit_stdin(paths, Input(
        documents=list(loaded.documents),
        findings=list(loaded.findings),
        usage_errors=list(loaded.usage_errors),
        files=loaded.files,
        texts=loaded.texts,
        not_walked=loaded.not_walked,
    ))


def exclude_patterns(excludes: Sequence[str], config: Config | None = None) -> tuple[ExcludePatterns, ...]:
    """`--exclude` patterns (relative to the working directory) plus the config file's
    `exclude:` (relative to the file's directory)."""
    from ..sources.walk import ExcludePatterns

    patterns = [ExcludePatterns(tuple(excludes), ".")] if excludes else []
    if config is not None and config.exclude:
        patterns.append(ExcludePatterns(config.exclude, str(config.root)))
    return tuple(patterns)


def walk_filter(excludes: Sequence[str], config: Config | None = None) -> WalkFilter:
    """The walk policy of one run (it counts what it skipped): see `exclude_patterns`."""
    from ..sources.walk import WalkFilter

    return WalkFilter(excludes=exclude_patterns(excludes, config))


@dataclass
class Objects:
    """Modelled input: what each command works on, plus the counts reporters print."""

    slices: list[ResourceSlice] = field(default_factory=list)
    claims: list[ResourceClaim] = field(default_factory=list)
    classes: list[DeviceClass] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    usage_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: int = 0
    skipped: int = 0
    not_walked: dict[SkipReason, int] = field(default_factory=dict)
    objects: int = 0
    """Objects of a kind we model (including ones that failed the structural check)."""
    pods: list[dict[str, Any]] = field(default_factory=list)
    """Pod documents, kept only when asked for (`explain pod/NS/NAME` resolves their claims)."""


def model_objects(inputs: Input, *, trusted: bool = False, keep_pods: bool = False) -> Objects:
    """Turn loaded documents into model objects; never raises for bad input.

    `trusted`: the objects are as an API server stored them (a cluster read, a `kubectl get`
    dump), so the structural check runs only for an object the model cannot build.
    """
    out = Objects(findings=list(inputs.findings), usage_errors=list(inputs.usage_errors),
                  notes=list(inputs.notes), files=inputs.files, not_walked=dict(inputs.not_walked))
    for document in inputs.documents:
        model_document(out, document, trusted=trusted, keep_pods=keep_pods)
    return out


def model_document(out: Objects, document: LoadedDocument, *, trusted: bool = False,
                   keep_pods: bool = False) -> None:
    """Model one document into `out` (`model_objects`' step; `lint` calls it per document as
    the loader builds them)."""
    if keep_pods and document.kind == "Pod":
        out.pods.append(document.data)
        return
    result = parse(document.data, document.source, trusted=trusted)
    out.findings.extend(result.findings)
    if not result.recognised:
        out.skipped += 1
        return
    out.objects += 1
    obj = result.obj
    if isinstance(obj, ResourceSlice):
        out.slices.append(obj)
    elif isinstance(obj, ResourceClaim):
        out.claims.append(obj)
    elif isinstance(obj, DeviceClass):
        out.classes.append(obj)


def load_objects(
    paths: Sequence[str], cluster: ClusterTarget | None = None, walk: WalkFilter | None = None
) -> Objects:
    """Load and model everything in `paths` (`-` or nothing: stdin), or the cluster's slices."""
    return model_objects(load_input(tuple(paths), cluster, walk))


def load_cluster_input(target: ClusterTarget) -> Input:
    """Every ResourceSlice, DeviceClass and ResourceClaim of the cluster (read-only, paginated),
    as documents; the first read that fails ends the reading with its usage error."""
    from ..sources.cluster import read_device_classes, read_resource_claims, read_resource_slices

    combined = Input()
    for read in (read_resource_slices(target), read_device_classes(target), read_resource_claims(target)):
        combined.notes.extend(read.notes)
        if read.error is not None:
            combined.usage_errors.append(read.error)
            return combined
        combined.documents.extend(read.documents)
    return combined


def load_cluster_state(target: ClusterTarget) -> Objects:
    """The cluster's slices, classes and claims (`load_cluster_input`), modelled.

    What `locks`, `explain`, `dry-run`, `simulate` and the exporter reconstruct from; the
    objects passed the API server's validation, so they are modelled trusted.
    """
    combined = load_cluster_input(target)
    return model_objects(combined, trusted=not combined.usage_errors)


def input_options(func: F) -> F:
    """PATH arguments, `--exclude` and the live-cluster options, shared by `lint` and `pools`."""
    func = cluster_options(func)
    func = exclude_option(func)
    return click.argument("paths", nargs=-1, metavar="[PATH|-]...")(func)


def cluster_target(
    paths: tuple[str, ...], cluster: bool, kubeconfig: str | None, context: str | None, chunk_size: int | None
) -> ClusterTarget | None:
    """The cluster to read, or None for files; a click usage error for contradictory options."""
    if not cluster:
        given = [name for name, value in (("--kubeconfig", kubeconfig), ("--context", context),
                                           ("--chunk-size", chunk_size)) if value is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)} only apply with --cluster")
        return None
    if paths:
        raise click.UsageError("--cluster reads the cluster instead of PATHs; give one or the other")
    from ..sources.cluster import DEFAULT_PAGE_SIZE, ClusterTarget

    return ClusterTarget(kubeconfig=kubeconfig, context=context, page_size=chunk_size or DEFAULT_PAGE_SIZE)


def report_problems(command: str, inputs: Input) -> None:
    """Notes and usage errors go to stderr, prefixed like every CLI message."""
    from .terminal import warn

    for note in inputs.notes:
        warn(command, note)
    for message in inputs.usage_errors:
        click.echo(f"dra-affinity {command}: {message}", err=True)
