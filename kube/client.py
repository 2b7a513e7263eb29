"""The one way to the API server: credentials as kubectl finds them, and raw-bytes reads.

`connect` loads a kubeconfig (or, in a pod without one, the service account) as kubectl does,
and never writes it back; `KubernetesResource` is `listwatch.ResourceClient` over the official
`kubernetes` client; `get` reads one path (discovery, OpenAPI, one object). The typed models
would drop fields they do not know (`sharingAffinity` first among them) and the client's own
decoding turns a body that is not JSON into a string, which read as an empty list; here every
body comes back as bytes for the caller to check. Every failure is a `ListWatchError` (or a
`KubeconfigError`) whose message names the server or the HTTP status. `kubernetes` is imported
when a client is built, not with this module (it is heavy to import).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from ..policies.core.api import RESOURCE_GROUP
from .listwatch import Expired, ListWatchError, iter_lines

VERSION = "v1"
DEFAULT_TIMEOUT = 30.0
"""Seconds for one request that is not a watch."""
PAGE_SIZE = 500
"""kubectl's default `--chunk-size`."""


class KubeconfigError(Exception):
    """No usable kubeconfig, context or in-cluster credentials; the message says which file."""


class Unreachable(ListWatchError):
    """The request got no HTTP answer: refused, timed out, or a TLS failure."""


def connect(kubeconfig: str | None = None, context: str | None = None) -> tuple[Any, str]:
    """An ApiClient and its context's name, as kubectl picks them: `kubeconfig`, else
    $KUBECONFIG or ~/.kube/config, else (in a pod with neither) the service account.
    The kubeconfig is never written back."""
    import yaml
    from kubernetes import config
    from kubernetes.config.config_exception import ConfigException

    try:
        if kubeconfig is None and _in_cluster_only():
            return connect_in_cluster(), "in-cluster"
        contexts, active = config.list_kube_config_contexts(config_file=kubeconfig)
        names = [c.get("name") for c in contexts or ()]
        name = context or (active or {}).get("name")
        if context is not None and context not in names:
            listed = ", ".join(str(n) for n in names) or "none"
            raise KubeconfigError(f"context {context!r} not found in kubeconfig (contexts: {listed})")
        api_client = config.new_client_from_config(config_file=kubeconfig, context=context,
                                                   persist_config=False)
    except KubeconfigError:
        raise
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError,
            yaml.YAMLError) as error:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise KubeconfigError(f"cannot load kubeconfig {where}: {error}") from None
    return api_client, str(name or "default")


def connect_in_cluster() -> Any:
    """An ApiClient with the pod's service account (token re-read as it rotates)."""
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_incluster_config(client_configuration=configuration)
    return client.ApiClient(configuration)


def _in_cluster_only() -> bool:
    """No kubeconfig anywhere but a service account mounted: we run in a pod."""
    from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION

    configured = os.environ.get("KUBECONFIG") or KUBE_CONFIG_DEFAULT_LOCATION
    has_file = any(os.path.exists(os.path.expanduser(p)) for p in configured.split(os.pathsep) if p)
    return not has_file and "KUBERNETES_SERVICE_HOST" in os.environ


def host(api_client: Any) -> str:
    """The server a client talks to, for messages."""
    return str(getattr(api_client.configuration, "host", "") or "the API server")


def get(api_client: Any, path: str, timeout: float = DEFAULT_TIMEOUT) -> tuple[int, bytes]:
    """GET `path` with the client's credentials: (status, body), whatever the status;
    `Unreachable` when no HTTP answer came."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    try:
        request = api_client.param_serialize(method="GET", resource_path=path,
                                             header_params={"Accept": "application/json"},
                                             auth_settings=["BearerToken"])
        response = api_client.call_api(*request, _request_timeout=timeout)
        return int(response.status), bytes(response.read() or b"")
    except ApiException as error:  # TLS problems surface as status 0
        raise Unreachable(f"cannot reach {host(api_client)}: {error.reason}") from None
    except urllib3.exceptions.HTTPError as error:
        raise Unreachable(f"cannot reach {host(api_client)}: {getattr(error, 'reason', None) or error}") \
            from None


def status_message(status: int, body: object, reason: str | None = None) -> str:
    """`HTTP <code> <reason>: <message>` from a Kubernetes Status body, else the status line."""
    message = ""
    try:
        decoded = json.loads(body if isinstance(body, (bytes, str)) else b"")
    except (ValueError, TypeError):
        decoded = None
    if isinstance(decoded, dict):
        if isinstance(decoded.get("message"), str):
            message = decoded["message"]
        if not reason and isinstance(decoded.get("reason"), str):
            reason = decoded["reason"]
    head = f"HTTP {status} {reason or ''}".rstrip()
    return f"{head}: {message}" if message else head


class KubernetesResource:
    """Lists and watches of one cluster-scoped listing (`/apis/resource.k8s.io/v1/<plural>`)."""

    def __init__(self, api_client: Any, plural: str, *, watch_seconds: int = 300,
                 list_timeout: float = 60.0, page_size: int = PAGE_SIZE) -> None:
        from kubernetes import client

        self._api = client.CustomObjectsApi(api_client)
        self.plural = plural
        self.watch_seconds = watch_seconds
        self.list_timeout = list_timeout
        self.page_size = page_size

    def list_page(self, token: str | None) -> bytes:
        kwargs: dict[str, Any] = {"limit": self.page_size, "_request_timeout": self.list_timeout,
                                  "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        response = self._call("listing", **kwargs)
        try:
            return bytes(response.data or b"")
        finally:
            response.release_conn()

    def watch(self, resource_version: str) -> Iterator[bytes]:
        response = self._call("watching", watch=True, resource_version=resource_version,
                              timeout_seconds=self.watch_seconds, allow_watch_bookmarks=True,
                              _request_timeout=self.watch_seconds + 30, _preload_content=False)
        try:
            yield from iter_lines(response.stream(amt=None, decode_content=True))
        finally:
            response.release_conn()

    def _call(self, doing: str, **kwargs: Any) -> Any:
        import urllib3
        from kubernetes.client.exceptions import ApiException

        try:
            return self._api.list_cluster_custom_object(RESOURCE_GROUP, VERSION, self.plural, **kwargs)
        except ApiException as exc:
            if exc.status == 410:
                raise Expired(f"{self.plural}: 410 Gone") from None
            if not exc.status:  # TLS problems surface as status 0
                raise Unreachable(f"cannot reach {host(self._api.api_client)}: {exc.reason}") from None
            message = status_message(int(exc.status), exc.body, exc.reason)
            raise ListWatchError(f"{doing} {self.plural}: {message}") from None
        except urllib3.exceptions.HTTPError as exc:
            raise Unreachable(f"cannot reach {host(self._api.api_client)}: "
                              f"{getattr(exc, 'reason', None) or exc}") from None

