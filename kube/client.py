"""`listwatch.ResourceClient` over the official `kubernetes` client, raw bytes.

The typed models would drop fields they do not know (`sharingAffinity` first among them) and
the client's own decoding turns a body that is not JSON into a string, which read as an empty
list; here every body comes back as bytes for `listwatch` to check. `kubernetes` is imported
when a client is built, not with this module (it costs ~0.4 s).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from dra_affinity.kube.listwatch import Expired, ListWatchError, iter_lines
from dra_affinity.policies.core.api import RESOURCE_GROUP

VERSION = "v1"
PAGE_SIZE = 500
"""kubectl's default `--chunk-size`."""


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
        response = self._call(**kwargs)
        try:
            return bytes(response.data or b"")
        finally:
            response.release_conn()

    def watch(self, resource_version: str) -> Iterator[bytes]:
        response = self._call(watch=True, resource_version=resource_version,
                              timeout_seconds=self.watch_seconds, allow_watch_bookmarks=True,
                              _request_timeout=self.watch_seconds + 30, _preload_content=False)
        try:
            yield from iter_lines(response.stream(amt=None, decode_content=True))
        finally:
            response.release_conn()

    def _call(self, **kwargs: Any) -> Any:
        from kubernetes.client.exceptions import ApiException

        try:
            return self._api.list_cluster_custom_object(RESOURCE_GROUP, VERSION, self.plural, **kwargs)
        except ApiException as exc:
            if exc.status == 410:
                raise Expired(f"{self.plural}: 410 Gone") from None
            raise ListWatchError(f"{self.plural}: {_status(exc)}") from None


def _status(exc: Any) -> str:
    """`HTTP <code>: <message>` from a Status body, else the status line."""
    message = ""
    try:
        body = json.loads(exc.body or b"")
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            message = body["message"]
    except (ValueError, TypeError):
        pass
    reason = exc.reason or ""
    return f"HTTP {exc.status or 0} {reason}: {message}".rstrip(": ") if message or reason \
        else f"HTTP {exc.status or 0}"
