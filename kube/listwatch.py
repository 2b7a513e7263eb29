"""List, then watch, with client-go's discipline; one loop per resource.

What a reflector (client-go `tools/cache`) does, and what the exporter and the webhook's pool
cache did by hand, each differently:

* **List** every page (`limit`/`continue`) and check that the answer *is* a list: a JSON
  object with an `items` array and a `metadata.resourceVersion`. A proxy's HTML error page
  with status 200, a truncated body, or a Status object is an error — never an empty
  cluster. Only a complete list replaces what the consumer holds, and only then is the
  resource *synced*.
* **Watch** from the list's resourceVersion, one JSON event per line. `410 Gone` (as an
  ERROR event or the HTTP status) lists again at once; a watch that ends cleanly (the
  server-side timeout) is resumed from the last resourceVersion seen; anything else (HTTP
  error, a cut stream, a line that is not JSON — client-go's decoder ends the watch there
  too — or a watch that ends within a second without a line) is a failure.
* **Every failure backs off** before the next list, exponentially with jitter, as the
  reflector's backoff manager: 0.8 s doubling to 30 s, each wait stretched by a random
  fraction up to itself (`jitter` 1.0), reset after 2 minutes without failure. The initial
  list is no different: a transient error never ends the process.
* **Malformed items and events** are skipped, counted and logged once per kind of problem per
  resource (the first time, then with their count at most every `LOG_INTERVAL`), as the
  reflector's `HandleError` does for an event it cannot understand: an event with an unknown
  type, without an object, or an object without `metadata.name`; a list item that is not an
  object or has no name.

The consumer (`Consumer`) sees `replace` after each complete list and `apply` per event;
`ListWatch.status` says whether the resource is synced and, when it is failing, since when
and why — what `/healthz` reports.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})
MAX_PAGES = 100_000
"""A server that keeps answering with a `continue` token is broken; stop somewhere."""
MAX_LINE_BYTES = 16 * 1024 * 1024
"""One watch event: the API server's objects are at most ~3 MiB (etcd's request limit)."""
SHORT_WATCH = 1.0
"""A watch that ends sooner, without a line, is a failure (client-go's "very short watch")."""
LOG_INTERVAL = 60.0
"""Seconds between log lines of one kind of malformed item or event (with its count)."""
MAX_ERROR_CHARS = 300


class ListWatchError(Exception):
    """A list or watch that failed: the loop backs off and lists again."""


class Expired(ListWatchError):
    """`410 Gone`: the resourceVersion is too old; list again without backing off."""


@dataclass
class Backoff:
    """client-go's reflector backoff: `initial` doubling up to `cap`, each wait plus up to
    `jitter` times itself at random, back to `initial` after `reset_after` seconds without a
    failure."""

    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0
    rng: random.Random = field(default_factory=random.Random)
    _next: float = field(default=0.0, init=False)
    _last: float | None = field(default=None, init=False)
    _base: float = field(default=0.0, init=False)

    def delay(self, now: float) -> float:
        """The wait before the next attempt after a failure at `now`."""
        if self._last is None or now - self._last > self.reset_after:
            self._next = self.initial
        base = self._base = self._next
        self._next = min(self.cap, base * self.factor)
        self._last = now
        return base + self.rng.random() * self.jitter * base

    @property
    def current(self) -> float:
        """The base of the last wait handed out (0 before any failure)."""
        return self._base


class ResourceClient(Protocol):
    """The two calls one resource needs, raw: bytes, not the client's typed models (which
    drop fields they do not know). Both raise on an HTTP error or a transport failure;
    `Expired` for 410."""

    def list_page(self, token: str | None) -> bytes: ...

    def watch(self, resource_version: str) -> Iterator[bytes]:
        """The watch's lines, one event each, until the server ends the watch."""
        ...


class Consumer(Protocol):
    def replace(self, items: Sequence[Mapping[str, Any]]) -> None:
        """The complete list (only well-formed items), replacing what was held."""

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        """One well-formed ADDED / MODIFIED / DELETED event."""

    def malformed(self, problem: str) -> None:
        """An item or event skipped (counted by the consumer, e.g. in its invalid-object count)."""


@dataclass(frozen=True, slots=True)
class ListWatchStatus:
    synced: bool
    failing_since: float | None
    last_error: str | None
    backoff: float
    """The base of the current back-off (0: not failing)."""

    def describe(self, now: float) -> str:
        if self.failing_since is None:
            return "synced" if self.synced else "listing"
        state = "synced, then failing" if self.synced else "not synced: failing"
        return f"{state} for {now - self.failing_since:.0f}s (next try within {2 * self.backoff:.1f}s): " \
               f"{self.last_error}"


class ListWatch:
    """One resource's list-then-watch loop, run in a daemon thread by `start`."""

    def __init__(self, resource: str, client: Callable[[], ResourceClient], consumer: Consumer, *,
                 log: logging.Logger,
                 backoff: Backoff | None = None, clock: Callable[[], float] = time.monotonic,
                 on_list: Callable[[], None] | None = None,
                 on_failure: Callable[[], None] | None = None) -> None:
        self._make_client = client
        """Called in the loop's thread, again after a failure to build one (a kubeconfig
        being written, in-cluster credentials not mounted yet)."""
        self.client: ResourceClient | None = None
        self.consumer = consumer
        self.resource = resource
        self.backoff = backoff or Backoff()
        self._log = log
        self._clock = clock
        self._on_list = on_list
        """Called after every complete list but the first (a re-list: a restart)."""
        self._on_failure = on_failure
        self.synced = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._failing_since: float | None = None
        self._last_error: str | None = None
        self._problems: dict[str, tuple[float, int]] = {}
        """problem -> (time of its last log line, occurrences since)."""

    # -- control -----------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self.run, name=f"listwatch-{self.resource}",
                                                daemon=True)
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def status(self) -> ListWatchStatus:
        return ListWatchStatus(self.synced.is_set(), self._failing_since, self._last_error,
                               self.backoff.current if self._failing_since is not None else 0.0)

    # -- the loop ----------------------------------------------------------------------------

    def run(self) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                if self.client is None:
                    self.client = self._make_client()
                if not version:
                    version = self._list(self.client)
                version = self._watch(self.client, version)
            except Expired:
                version = ""
            except Exception as exc:  # any API or transport failure: back off, keep what is held
                version = ""
                self._failed(f"{type(exc).__name__}: {exc}")
                self._stop.wait(self.backoff.delay(self._clock()))

    def _list(self, client: ResourceClient) -> str:
        listed = list_all(client, self.resource, self._malformed)
        relist = self.synced.is_set()
        self._healthy()  # the API answered a whole list: not failing, whatever the consumer does
        self.consumer.replace(listed.items)
        self.synced.set()
        if relist and self._on_list is not None:
            self._on_list()
        return listed.version

    def _watch(self, client: ResourceClient, version: str) -> str:
        started = self._clock()
        lines = 0
        for line in client.watch(version):
            lines += 1
            if self._stop.is_set():
                break
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError as exc:  # client-go's decoder ends the watch on a frame it cannot read
                self._malformed("watch event not JSON", str(exc))
                raise ListWatchError(f"unable to decode an event from the watch stream: {exc}") from None
            kind = event.get("type") if isinstance(event, dict) else None
            obj = event.get("object") if isinstance(event, dict) else None
            if kind == "ERROR":
                code = obj.get("code") if isinstance(obj, Mapping) else None
                if code == 410:
                    raise Expired(_clip(str(obj)))
                raise ListWatchError(f"watch error: {_clip(json.dumps(obj))}")
            if kind not in EVENT_TYPES:
                self._malformed("watch event of unknown type", _clip(str(kind), 40))
                continue
            if not isinstance(obj, Mapping):
                self._malformed(f"{kind} watch event without an object", "")
                continue
            meta = obj.get("metadata")
            if isinstance(meta, Mapping) and meta.get("resourceVersion"):
                version = str(meta["resourceVersion"])
            if kind == "BOOKMARK":
                continue
            problem = _item_problem(obj)
            if problem is not None:
                self._malformed(f"{kind} watch event object {problem}", "")
                continue
            self.consumer.apply(kind, obj)
            self._healthy()
        if not lines and self._clock() - started < SHORT_WATCH and not self._stop.is_set():
            # as the reflector: a server that closes every watch at once must not be re-watched
            # in a tight loop
            raise ListWatchError("very short watch: it ended within a second without an event")
        return version

    # -- health ------------------------------------------------------------------------------

    def _healthy(self) -> None:
        if self._failing_since is not None:
            self._log.info("list-watch of %s recovered after %.0fs", self.resource,
                           self._clock() - self._failing_since)
        self._failing_since = None
        self._last_error = None

    def _failed(self, message: str) -> None:
        message = _clip(message)
        if self._failing_since is None:  # transitions are logged, not every retry
            self._failing_since = self._clock()
            self._log.warning("list-watch of %s failing (backing off, retrying): %s", self.resource, message)
        self._last_error = message
        if self._on_failure is not None:
            self._on_failure()

    def _malformed(self, problem: str, detail: str) -> None:
        self.consumer.malformed(problem)
        now = self._clock()
        last, count = self._problems.get(problem, (None, 0))
        count += 1
        if last is None or now - last >= LOG_INTERVAL:
            self._log.warning("%s: skipped %d %s%s", self.resource, count, problem,
                              f" ({_clip(detail, 120)})" if detail else "")
            self._problems[problem] = (now, 0)
        else:
            self._problems[problem] = (last, count)


@dataclass(frozen=True, slots=True)
class Listed:
    """One complete list: its well-formed items, the resourceVersion to watch from, the pages."""

    items: list[Mapping[str, Any]]
    version: str
    pages: int


def list_all(client: ResourceClient, resource: str, malformed: Callable[[str, str], None]) -> Listed:
    """Every page of `resource` (`limit`/`continue`), each checked to be a list; an item that
    is not an object or has no name is handed to `malformed` (problem, detail) and skipped.

    The list half of the loop, and the whole of a one-shot read (`--cluster`): a proxy's
    error page or a Status object raises `ListWatchError`, never reads as an empty cluster;
    `Expired` when a `continue` token is too old (the caller lists again from the start)."""
    items: list[Mapping[str, Any]] = []
    token: str | None = None
    version = ""
    for pages in range(1, MAX_PAGES + 1):
        page = _decode_list(client.list_page(token), resource)
        for index, item in enumerate(page["items"] or ()):
            problem = _item_problem(item)
            if problem is None:
                items.append(item)
            else:
                malformed(f"list item {problem}", f"item {index} of a page: {_clip(item, 60)}")
        meta = page["metadata"]
        version = str(meta["resourceVersion"])
        next_token = meta.get("continue") or None
        if not next_token:
            return Listed(items, version, pages)
        if next_token == token:
            raise ListWatchError("the server repeated its continue token")
        token = str(next_token)
    raise ListWatchError(f"more than {MAX_PAGES} pages")


def _decode_list(body: bytes, resource: str) -> dict[str, Any]:
    """The page as a list object, or a `ListWatchError` saying why it is not one."""
    try:
        page = json.loads(body)
    except ValueError as exc:
        start = body[:60].decode("utf-8", "replace").strip()
        raise ListWatchError(f"listing {resource}: the response is not JSON ({exc}; it starts "
                             f"with {start!r})") from None
    if not isinstance(page, dict):
        raise ListWatchError(f"listing {resource}: the response is a JSON {type(page).__name__}, not a list")
    kind = page.get("kind")
    if kind == "Status" or (isinstance(kind, str) and not kind.endswith("List")):
        raise ListWatchError(f"listing {resource}: the response is a {_clip(kind, 40)}, not a list")
    items, meta = page.get("items"), page.get("metadata")
    if items is not None and not isinstance(items, list):
        raise ListWatchError(f"listing {resource}: `items` is not an array")
    if not isinstance(meta, dict) or not isinstance(meta.get("resourceVersion"), str) \
            or not meta["resourceVersion"]:
        raise ListWatchError(f"listing {resource}: the response has no metadata.resourceVersion")
    return page


def _item_problem(obj: object) -> str | None:
    if not isinstance(obj, Mapping):
        return "not an object"
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return "without metadata.name"
    return None


def _clip(text: object, limit: int = MAX_ERROR_CHARS) -> str:
    value = str(text)
    return value if len(value) <= limit else value[:limit - 1] + "…"


def iter_lines(chunks: Iterator[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """Newline-separated lines of a stream, each bounded by `limit` bytes."""
    buffer = bytearray()
    for chunk in chunks:
        buffer += chunk
        while (end := buffer.find(b"\n")) >= 0:
            yield bytes(buffer[:end])
            del buffer[:end + 1]
        if len(buffer) > limit:
            raise ListWatchError(f"a watch event longer than {limit} bytes")
    if buffer.strip():
        yield bytes(buffer)
