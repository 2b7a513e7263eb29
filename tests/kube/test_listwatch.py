"""The list-watch loop against scripted API answers: what it hands its consumer, what it
refuses as a list, how it backs off. The real client against a fake API server is exercised
by the exporter's and the pool cache's tests."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from dra_affinity.kube.listwatch import Backoff, Expired, ListWatch, ListWatchError, iter_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def test_backoff_doubles_with_jitter_up_to_its_cap_and_resets_after_quiet() -> None:
    backoff = Backoff(rng=random.Random(7))
    now = 0.0
    bases = []
    for _ in range(8):
        wait = backoff.delay(now)
        bases.append(backoff.current)
        assert backoff.current <= wait < 2 * backoff.current  # jitter 1.0: up to the base again
        now += wait
    assert bases == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    backoff.delay(now + 121)  # two quiet minutes: from the start again
    assert backoff.current == 0.8


def _page(items: list[Any], version: str = "10", token: str | None = None) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": version}
    if token:
        meta["continue"] = token
    return json.dumps({"kind": "ThingList", "metadata": meta, "items": items}).encode()


def _obj(name: str, version: str = "5") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}}


class _Script:
    """List answers and watch streams, in order; an exception in the script is raised."""

    def __init__(self, lists: list[bytes | Exception], watches: list[list[bytes] | Exception]) -> None:
        self.lists = lists
        self.watches = watches
        self.tokens: list[str | None] = []
        self.watched_from: list[str] = []

    def list_page(self, token: str | None) -> bytes:
        self.tokens.append(token)
        answer = self.lists.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def watch(self, resource_version: str) -> Iterator[bytes]:
        self.watched_from.append(resource_version)
        answer = self.watches.pop(0) if self.watches else []
        if isinstance(answer, Exception):
            raise answer
        yield from answer


class _Consumer:
    def __init__(self, done: int) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.problems: list[str] = []
        self.done = done
        self.loop: ListWatch | None = None

    def replace(self, items: Sequence[Mapping[str, Any]]) -> None:
        self.calls.append(("replace", [i["metadata"]["name"] for i in items]))
        self._check()

    def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
        self.calls.append((event_type, obj["metadata"]["name"]))
        self._check()

    def malformed(self, problem: str) -> None:
        self.problems.append(problem)

    def _check(self) -> None:
        if len(self.calls) >= self.done and self.loop is not None:
            self.loop.stop()


def _run(script: _Script, consumer: _Consumer) -> tuple[ListWatch, list[float]]:
    waits: list[float] = []

    class _Recorded(Backoff):
        def delay(self, now: float) -> float:
            waits.append(super().delay(now))
            return 0.0

    loop = ListWatch("things", lambda: script, consumer, log=logging.getLogger("test"),
                     backoff=_Recorded(rng=random.Random(1)))
    consumer.loop = loop
    loop.run()
    return loop, waits


@pytest.mark.parametrize("answer", [
    b"<html><body>502 Bad Gateway</body></html>",
    _page([_obj("a")])[:30],
    json.dumps({"kind": "Status", "code": 500, "metadata": {}}).encode(),
    json.dumps({"kind": "ThingList", "items": []}).encode(),  # no resourceVersion
    json.dumps({"kind": "ThingList", "metadata": {"resourceVersion": "1"}, "items": {}}).encode(),
    b"[]",
])
def test_a_response_that_is_not_a_list_is_a_failure_never_an_empty_cluster(answer: bytes) -> None:
    script = _Script([answer, ListWatchError("HTTP 500"), _page([_obj("a")])], [])
    consumer = _Consumer(done=1)
    loop, waits = _run(script, consumer)
    assert consumer.calls == [("replace", ["a"])]  # only the real list reached the consumer
    assert len(waits) == 2 and waits[1] >= 2 * 0.8 > waits[0] >= 0.8  # backed off, doubling
    assert loop.synced.is_set() and loop.status().failing_since is None


def test_pages_are_joined_and_malformed_items_skipped_and_counted() -> None:
    script = _Script([_page([_obj("a"), "junk", {"metadata": {}}], token="p2"),
                      _page([_obj("b"), None], version="11")], [])
    consumer = _Consumer(done=1)
    _run(script, consumer)
    assert consumer.calls == [("replace", ["a", "b"])]
    assert script.tokens == [None, "p2"]
    assert consumer.problems == ["list item not an object", "list item without metadata.name",
                                 "list item not an object"]


def test_events_are_applied_and_malformed_ones_skipped_then_the_watch_resumes() -> None:
    good = [json.dumps({"type": "ADDED", "object": _obj("b", "12")}).encode(),
            b'{"type": "MODIFIED"}',
            b'{"type": "SURPRISE", "object": {"metadata": {"name": "x"}}}',
            b'{"type": "DELETED", "object": {"metadata": {"resourceVersion": "13"}}}',
            json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "14"}}}).encode()]
    script = _Script([_page([_obj("a")])], [good, [json.dumps({"type": "DELETED", "object": _obj("a", "15")})
                                                    .encode()]])
    consumer = _Consumer(done=3)
    _run(script, consumer)
    assert consumer.calls == [("replace", ["a"]), ("ADDED", "b"), ("DELETED", "a")]
    assert script.watched_from == ["10", "14"]  # resumed after a clean end, no list
    assert consumer.problems == ["MODIFIED watch event without an object", "watch event of unknown type",
                                 "DELETED watch event object without metadata.name"]


def test_an_undecodable_event_ends_the_watch_and_a_410_lists_again_at_once() -> None:
    gone = json.dumps({"type": "ERROR", "object": {"kind": "Status", "code": 410}}).encode()
    script = _Script([_page([_obj("a")]), _page([_obj("a"), _obj("b")], version="20"),
                      _page([_obj("b")], version="30")],
                     [[b"<html>"], [gone], Expired("410")])
    consumer = _Consumer(done=3)
    _, waits = _run(script, consumer)
    assert consumer.calls == [("replace", ["a"]), ("replace", ["a", "b"]), ("replace", ["b"])]
    assert len(waits) == 1  # the undecodable line backs off; the 410s list again at once
    assert consumer.problems == ["watch event not JSON"]


def test_lines_are_split_across_chunks_and_bounded() -> None:
    assert list(iter_lines(iter([b'{"a"', b':1}\n{"b":2}\n', b"tail"]))) == [b'{"a":1}', b'{"b":2}', b"tail"]
    with pytest.raises(ListWatchError, match="longer than 8 bytes"):
        list(iter_lines(iter([b"0123456789"]), limit=8))


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "object", "metadata", "name", "items", "kind", "resourceVersion",
                         "continue", "code"]), inner, max_size=4),
    max_leaves=12)
_LINES = st.one_of(st.binary(max_size=40), _JSONISH.map(lambda v: json.dumps(v).encode()),
                   st.builds(lambda t, o: json.dumps({"type": t, "object": o}).encode(),
                             st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "X"]),
                             _JSONISH))
_PAGES = st.one_of(st.binary(max_size=40), _JSONISH.map(lambda v: json.dumps(v).encode()),
                   st.builds(lambda items: _page(items), st.lists(_JSONISH, max_size=4)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_PAGES, min_size=1, max_size=4), st.lists(st.lists(_LINES, max_size=6), max_size=3))
def test_whatever_the_server_answers_the_loop_goes_on_and_hands_over_only_well_formed_objects(
        pages: list[bytes], streams: list[list[bytes]]) -> None:
    handed: list[Mapping[str, Any]] = []
    holder: list[ListWatch] = []

    class _Hostile:
        def list_page(self, token: str | None) -> bytes:
            if not pages:
                holder[0].stop()
                raise ListWatchError("script over")
            return pages.pop(0)

        def watch(self, resource_version: str) -> Iterator[bytes]:
            yield from (streams.pop(0) if streams else [])

    class _Recording:
        def replace(self, items: Sequence[Mapping[str, Any]]) -> None:
            handed.extend(items)

        def apply(self, event_type: str, obj: Mapping[str, Any]) -> None:
            assert event_type in {"ADDED", "MODIFIED", "DELETED"}
            handed.append(obj)

        def malformed(self, problem: str) -> None:
            pass

    class _NoWait(Backoff):
        def delay(self, now: float) -> float:
            super().delay(now)
            return 0.0

    loop = ListWatch("things", _Hostile, _Recording(), log=logging.getLogger("test"), backoff=_NoWait())
    holder.append(loop)
    loop.run()  # returns (stopped by the script's end), never raises
    assert all(isinstance(o, Mapping) and isinstance(o["metadata"]["name"], str) and o["metadata"]["name"]
               for o in handed)
