"""Read ResourceSlices (and ResourceClaims, DeviceClasses, a Pod) from a live API server — read-only.

Everything goes through `kube` (the one way to the API server): `kube.client.connect` finds
the credentials as kubectl does, and `kube.listwatch.list_all` lists a page at a time
(`limit` / `continue`, like `kubectl get --chunk-size`) and checks that each answer is a list,
the same list half the exporter and the webhook's pool cache run before they watch. Items come
back as the loader's `LoadedDocument`s, so everything downstream treats a cluster like a file.
The raw JSON is kept: the client's typed models would silently drop fields they do not know,
`sharingAffinity` first among them.

Before listing slices we check that the server serves `resource.k8s.io/v1` and that
its ResourceSlice schema (OpenAPI v3) has `spec.sharingAffinity`: a server without
the field drops it on write, so there would be nothing to lint. A server whose
`DRASharingAffinity` gate is off still publishes the field in its schema; that
cannot be told apart read-only.

`kubernetes` is imported only when a cluster is actually read: its import is
heavy, and `--help` and file linting must not pay it. Errors are values
(`ClusterRead.error`); nothing here writes to the cluster or to the kubeconfig.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..kube.client import (
    DEFAULT_TIMEOUT,
    PAGE_SIZE,
    KubeconfigError,
    KubernetesResource,
    connect,
    get,
    host,
    status_message,
)
from ..kube.listwatch import Expired, Listed, ListWatchError, list_all
from ..policies.core.api import RESOURCE_GROUP
from ..policies.core.source import Source
from .loader import LoadedDocument

GROUP_VERSION = f"{RESOURCE_GROUP}/v1"
DEFAULT_PAGE_SIZE = PAGE_SIZE
"""kubectl's default `--chunk-size`."""
_SLICE_SPEC_SCHEMA = "io.k8s.api.resource.v1.ResourceSliceSpec"
_OPENAPI_PATH = f"/openapi/v3/apis/{GROUP_VERSION}"


@dataclass(frozen=True, slots=True)
class ClusterTarget:
    """Which cluster to read and how: kubeconfig and context as kubectl takes them."""

    kubeconfig: str | None = None
    context: str | None = None
    page_size: int = DEFAULT_PAGE_SIZE
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True, slots=True)
class ClusterRead:
    """The objects read (as documents), or why none could be; `notes` are warnings."""

    documents: tuple[LoadedDocument, ...] = ()
    source: str = ""
    """How findings name the input: `cluster:<context>`."""
    error: str | None = None
    notes: tuple[str, ...] = ()
    pages: int = 0


class _ClusterError(Exception):
    """Internal: unwinds to the public functions, which turn it into `ClusterRead.error`."""


def read_resource_slices(target: ClusterTarget | None = None) -> ClusterRead:
    """Every ResourceSlice of the cluster, after checking it serves the API and the field."""
    return _read(target or ClusterTarget(), "resourceslices", "ResourceSlice", check_field=True)


def read_resource_claims(target: ClusterTarget | None = None) -> ClusterRead:
    """Every ResourceClaim of the cluster, in all namespaces."""
    return _read(target or ClusterTarget(), "resourceclaims", "ResourceClaim", check_field=False)


def read_device_classes(target: ClusterTarget | None = None) -> ClusterRead:
    """Every DeviceClass of the cluster (cluster-scoped)."""
    return _read(target or ClusterTarget(), "deviceclasses", "DeviceClass", check_field=False)


def read_pod(namespace: str, name: str,
             target: ClusterTarget | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """One Pod as the API returns it (for `explain pod/NS/NAME`), or why it cannot be read."""
    target = target or ClusterTarget()
    try:
        api_client, _ = _client(target)
    except _ClusterError as failure:
        return None, str(failure)
    try:
        status, body = _get(api_client, f"/api/v1/namespaces/{namespace}/pods/{name}", target)
        if status == 404:
            return None, f"pod {namespace}/{name} not found"
        if not 200 <= status < 300:
            return None, f"reading pod {namespace}/{name} failed: {status_message(status, body)}"
        pod = _json(body, f"pod {namespace}/{name}")
        return (pod if isinstance(pod, dict) else None), None
    except _ClusterError as failure:
        return None, str(failure)
    finally:
        api_client.close()


def _read(target: ClusterTarget, resource: str, kind: str, *, check_field: bool) -> ClusterRead:
    try:
        api_client, context = _client(target)
    except _ClusterError as failure:
        return ClusterRead(error=str(failure))
    source = f"cluster:{context}"
    try:
        notes: list[str] = []
        _require_resource(api_client, resource, target)
        if check_field:
            notes.extend(_require_field(api_client, target))
        listed = _list_all(api_client, resource, kind, target, notes)
    except _ClusterError as failure:
        return ClusterRead(source=source, error=str(failure))
    finally:
        api_client.close()
    documents: list[LoadedDocument] = []
    for index, item in enumerate(listed.items):
        # List items come without apiVersion/kind; give them the list's, as kubectl does.
        data = {"apiVersion": GROUP_VERSION, "kind": kind, **item}
        documents.append(LoadedDocument(data, Source(file=source), kind, GROUP_VERSION, index))
    return ClusterRead(documents=tuple(documents), source=source, notes=tuple(notes), pages=listed.pages)


# -- connection -----------------------------------------------------------------------------------


def _client(target: ClusterTarget) -> tuple[Any, str]:
    try:
        return connect(target.kubeconfig, target.context)
    except KubeconfigError as failure:
        raise _ClusterError(str(failure)) from None


def _get(api_client: Any, path: str, target: ClusterTarget) -> tuple[int, bytes]:
    try:
        return get(api_client, path, target.timeout)
    except ListWatchError as failure:
        raise _ClusterError(str(failure)) from None


def _json(body: bytes, what: str) -> Any:
    try:
        return json.loads(body)
    except ValueError as error:
        raise _ClusterError(f"{what}: the response is not JSON ({error})") from None


# -- checks ---------------------------------------------------------------------------------------


def _require_resource(api_client: Any, resource: str, target: ClusterTarget) -> None:
    """Discovery of `resource.k8s.io/v1`: a clear error when the server does not serve it."""
    status, body = _get(api_client, f"/apis/{GROUP_VERSION}", target)
    if status == 404:
        raise _ClusterError(
            f"{host(api_client)} does not serve {GROUP_VERSION} ({status_message(status, body)}): "
            "DRA's v1 API needs Kubernetes 1.34 or later, and sharingAffinity 1.37 or later"
        )
    if not 200 <= status < 300:
        raise _ClusterError(f"discovery of {GROUP_VERSION} failed: {status_message(status, body)}")
    listing = _json(body, f"discovery of {GROUP_VERSION}")
    served = {r.get("name") for r in listing.get("resources") or () if isinstance(r, dict)}
    if resource not in served:
        raise _ClusterError(f"{host(api_client)} serves {GROUP_VERSION} but not {resource}")


def _require_field(api_client: Any, target: ClusterTarget) -> list[str]:
    """`spec.sharingAffinity` in the served ResourceSlice schema; notes when it cannot be told."""
    status, body = _get(api_client, _OPENAPI_PATH, target)
    unverified = "could not verify that the cluster knows ResourceSlice spec.sharingAffinity"
    if not 200 <= status < 300:
        return [f"{unverified} (OpenAPI v3: {status_message(status, body)})"]
    try:
        document = json.loads(body)
        properties = document["components"]["schemas"][_SLICE_SPEC_SCHEMA]["properties"]
    except (ValueError, KeyError, TypeError):
        return [f"{unverified} (no {_SLICE_SPEC_SCHEMA} in its OpenAPI v3 document)"]
    if "sharingAffinity" not in properties:
        raise _ClusterError(
            f"{host(api_client)} serves {GROUP_VERSION} but its ResourceSlice has no "
            "spec.sharingAffinity (KEP-5981, alpha in Kubernetes 1.37): the API server drops the "
            "field on write, so there is nothing to lint"
        )
    return []


# -- listing --------------------------------------------------------------------------------------


def _list_all(api_client: Any, resource: str, kind: str, target: ClusterTarget,
              notes: list[str]) -> Listed:
    """Every item of `resource`, page by page; restarts once when a `continue` token expires
    (a new list from the start gives a consistent snapshot). Skipped items become notes."""
    pager = KubernetesResource(api_client, resource, list_timeout=target.timeout, page_size=target.page_size)
    skipped: dict[str, int] = {}

    def malformed(problem: str, detail: str) -> None:
        skipped[problem] = skipped.get(problem, 0) + 1

    try:
        try:
            listed = list_all(pager, resource, malformed)
        except Expired:  # the continue token is too old: a new list from the start, once
            skipped.clear()
            listed = list_all(pager, resource, malformed)
    except Expired:
        raise _ClusterError(f"listing {resource}: the continue token expired twice; "
                            "try a larger --chunk-size") from None
    except ListWatchError as failure:  # its message names the server or the resource
        raise _ClusterError(str(failure)) from None
    notes.extend(f"{count} {problem} in the {kind}List; skipped" for problem, count in skipped.items())
    return listed
