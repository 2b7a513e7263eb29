"""Read ResourceSlices (and ResourceClaims) from a live API server — read-only.

Lists go through the official `kubernetes` client, a page at a time (`limit` /
`continue`, like `kubectl get --chunk-size`), and come back as the loader's
`LoadedDocument`s, so everything downstream treats a cluster like a file. The raw
JSON is kept (`_preload_content=False`): the client's typed models would silently
drop fields they do not know, `sharingAffinity` first among them.

Before listing slices we check that the server serves `resource.k8s.io/v1` and that
its ResourceSlice schema (OpenAPI v3) has `spec.sharingAffinity`: a server without
the field drops it on write, so there would be nothing to lint. A server whose
`DRASharingAffinity` gate is off still publishes the field in its schema; that
cannot be told apart read-only.

`kubernetes` is imported only when a cluster is actually read: it costs about
0.4 s, which `--help` and file linting must not pay. Errors are values
(`ClusterRead.error`); nothing here writes to the cluster or to the kubeconfig.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dra_affinity.policies.core.api import RESOURCE_GROUP
from dra_affinity.policies.core.source import Source
from dra_affinity.sources.loader import LoadedDocument

GROUP_VERSION = f"{RESOURCE_GROUP}/v1"
DEFAULT_PAGE_SIZE = 500
"""kubectl's default `--chunk-size`."""
DEFAULT_TIMEOUT = 30.0
MAX_PAGES = 100_000
"""A server that keeps answering with a `continue` token is a bug; stop somewhere."""
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
            return None, f"reading pod {namespace}/{name} failed: {_status_message(status, body)}"
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
        items, pages = _list_all(api_client, resource, target)
    except _ClusterError as failure:
        return ClusterRead(source=source, error=str(failure))
    finally:
        api_client.close()
    documents: list[LoadedDocument] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            notes.append(f"item {index} of the {kind}List is not an object; skipped")
            continue
        # List items come without apiVersion/kind; give them the list's, as kubectl does.
        data = {"apiVersion": GROUP_VERSION, "kind": kind, **item}
        documents.append(LoadedDocument(data, Source(file=source), kind, GROUP_VERSION, index))
    return ClusterRead(documents=tuple(documents), source=source, notes=tuple(notes), pages=pages)


# -- connection -----------------------------------------------------------------------------------


def api_client(target: ClusterTarget) -> tuple[Any, str | None]:
    """An ApiClient and its context name, or (None, why not): for long-running readers (exporter)."""
    try:
        return _client(target)
    except _ClusterError as failure:
        return None, str(failure)


def _client(target: ClusterTarget) -> tuple[Any, str]:
    """An ApiClient for the target and the context's name; kubeconfig is never written back."""
    import yaml
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    try:
        if target.kubeconfig is None and _in_cluster_only():
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)
            return client.ApiClient(configuration), "in-cluster"
        contexts, active = config.list_kube_config_contexts(config_file=target.kubeconfig)
        names = [c.get("name") for c in contexts or ()]
        context = target.context or (active or {}).get("name")
        if target.context is not None and target.context not in names:
            listed = ", ".join(str(n) for n in names) or "none"
            raise _ClusterError(f"context {target.context!r} not found in kubeconfig (contexts: {listed})")
        api_client = config.new_client_from_config(
            config_file=target.kubeconfig, context=target.context, persist_config=False
        )
    except _ClusterError:
        raise
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError,
            yaml.YAMLError) as error:
        where = target.kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise _ClusterError(f"cannot load kubeconfig {where}: {error}") from None
    return api_client, str(context or "default")


def _in_cluster_only() -> bool:
    """No kubeconfig anywhere but a service account mounted: we run in a pod."""
    from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION

    configured = os.environ.get("KUBECONFIG") or KUBE_CONFIG_DEFAULT_LOCATION
    has_file = any(os.path.exists(os.path.expanduser(p)) for p in configured.split(os.pathsep) if p)
    return not has_file and "KUBERNETES_SERVICE_HOST" in os.environ


def _host(api_client: Any) -> str:
    return str(getattr(api_client.configuration, "host", "") or "the API server")


def _get(api_client: Any, path: str, target: ClusterTarget) -> tuple[int, bytes]:
    """GET `path` with the client's credentials; (status, body). Transport errors → _ClusterError."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    try:
        request = api_client.param_serialize(
            method="GET",
            resource_path=path,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = api_client.call_api(*request, _request_timeout=target.timeout)
        return int(response.status), bytes(response.read() or b"")
    except ApiException as error:  # TLS problems surface as status 0
        raise _ClusterError(f"cannot reach {_host(api_client)}: {error.reason}") from None
    except urllib3.exceptions.HTTPError as error:
        raise _ClusterError(f"cannot reach {_host(api_client)}: {_transport_reason(error)}") from None


def _transport_reason(error: Exception) -> str:
    reason = getattr(error, "reason", None)
    return str(reason or error)


def _status_message(status: int, body: bytes) -> str:
    """The `message` of a Kubernetes Status body, else the HTTP status."""
    try:
        decoded = json.loads(body)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict) and isinstance(decoded.get("message"), str):
        return f"{status} {decoded.get('reason') or ''}: {decoded['message']}".replace(" :", ":")
    return f"HTTP {status}"


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
            f"{_host(api_client)} does not serve {GROUP_VERSION} ({_status_message(status, body)}): "
            "DRA's v1 API needs Kubernetes 1.34 or later, and sharingAffinity 1.37 or later"
        )
    if not 200 <= status < 300:
        raise _ClusterError(f"discovery of {GROUP_VERSION} failed: {_status_message(status, body)}")
    listing = _json(body, f"discovery of {GROUP_VERSION}")
    served = {r.get("name") for r in listing.get("resources") or () if isinstance(r, dict)}
    if resource not in served:
        raise _ClusterError(f"{_host(api_client)} serves {GROUP_VERSION} but not {resource}")


def _require_field(api_client: Any, target: ClusterTarget) -> list[str]:
    """`spec.sharingAffinity` in the served ResourceSlice schema; notes when it cannot be told."""
    status, body = _get(api_client, _OPENAPI_PATH, target)
    unverified = "could not verify that the cluster knows ResourceSlice spec.sharingAffinity"
    if not 200 <= status < 300:
        return [f"{unverified} (OpenAPI v3: {_status_message(status, body)})"]
    try:
        document = json.loads(body)
        properties = document["components"]["schemas"][_SLICE_SPEC_SCHEMA]["properties"]
    except (ValueError, KeyError, TypeError):
        return [f"{unverified} (no {_SLICE_SPEC_SCHEMA} in its OpenAPI v3 document)"]
    if "sharingAffinity" not in properties:
        raise _ClusterError(
            f"{_host(api_client)} serves {GROUP_VERSION} but its ResourceSlice has no "
            "spec.sharingAffinity (KEP-5981, alpha in Kubernetes 1.37): the API server drops the "
            "field on write, so there is nothing to lint"
        )
    return []


# -- listing --------------------------------------------------------------------------------------


def _list_all(api_client: Any, resource: str, target: ClusterTarget) -> tuple[list[Any], int]:
    """Every item of `resource`, page by page; restarts once when a `continue` token expires."""
    from kubernetes import client

    api = client.ResourceV1Api(api_client)
    lister: Callable[..., Any] = api.list_resource_slice
    if resource == "resourceclaims":
        lister = api.list_resource_claim_for_all_namespaces
    elif resource == "deviceclasses":
        lister = api.list_device_class
    for attempt in range(2):
        items: list[Any] = []
        token: str | None = None
        for page in range(1, MAX_PAGES + 1):
            body = _page(api_client, lister, target, token, restartable=attempt == 0)
            if body is None:
                break  # the token expired: list again from the start, for a consistent snapshot
            batch = body.get("items") if isinstance(body, dict) else None
            items.extend(batch or ())
            meta = body.get("metadata") if isinstance(body, dict) else None
            next_token = meta.get("continue") if isinstance(meta, dict) else None
            if not next_token:
                return items, page
            if next_token == token:
                raise _ClusterError(f"listing {resource}: the server repeated its continue token")
            token = str(next_token)
        else:
            raise _ClusterError(f"listing {resource}: more than {MAX_PAGES} pages")
    raise _ClusterError(f"listing {resource}: the continue token expired twice; try a larger --chunk-size")


def _page(
    api_client: Any,
    lister: Callable[..., Any],
    target: ClusterTarget,
    token: str | None,
    *,
    restartable: bool,
) -> Any:
    """One page as decoded JSON; None when an expired token asks for a restart."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    try:
        response = lister(
            limit=target.page_size,
            _continue=token,
            _preload_content=False,
            _request_timeout=target.timeout,
        )
        body = response.data
    except ApiException as error:
        if error.status == 410 and token is not None and restartable:
            return None
        if not error.status:
            raise _ClusterError(f"cannot reach {_host(api_client)}: {error.reason}") from None
        raise _ClusterError(
            f"listing {GROUP_VERSION} failed: {_status_message(int(error.status), _bytes(error.body))}"
        ) from None
    except urllib3.exceptions.HTTPError as error:
        raise _ClusterError(f"cannot reach {_host(api_client)}: {_transport_reason(error)}") from None
    return _json(body, f"listing {GROUP_VERSION}")


def _bytes(body: object) -> bytes:
    if isinstance(body, bytes):
        return body
    return str(body or "").encode()
