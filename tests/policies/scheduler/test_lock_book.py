"""LockBook: updates object by object give exactly the reconstruction of the final objects.

The exporter's correctness rests on it: after any sequence of watch events (claims allocated,
released, deleted, re-created; slices changing generation, moving, disappearing), the book's
states must equal `LockBook.build` over what the cluster then holds. The sequence is seeded
random over a small cluster so every kind of transition occurs many times.
"""

from __future__ import annotations

import copy
import random
import sys
from typing import Any

from dra_affinity.policies.core.findings import PoolRef
from dra_affinity.policies.model.resources import ResourceClaim, ResourceSlice, parse
from dra_affinity.policies.scheduler.lock_book import LockBook
from dra_affinity.policies.scheduler.locks import LockStatus

from tests.cli import REPO

sys.path.insert(0, str(REPO / "bench"))
from gen_cluster import claim, driver_of, generate, pool_slices


def _model(doc: dict[str, Any]) -> Any:
    result = parse(doc)
    assert result.obj is not None, result.findings
    return result.obj


def _key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def test_incremental_updates_equal_a_rebuild() -> None:
    rng = random.Random(7)
    pools, per_pool = 6, 4
    doc = generate(devices=pools * per_pool, pools=pools, claims=60, pending=5, seed=3)
    objects = {(o["kind"], _key(o)): o for o in doc["items"]}
    book = LockBook.build([_model(o) for o in objects.values() if o["kind"] == "ResourceSlice"],
                          [_model(o) for o in objects.values() if o["kind"] == "ResourceClaim"])
    for step in range(400):
        roll = rng.random()
        p, d = rng.randrange(pools), rng.randrange(per_pool)
        if roll < 0.45:  # allocate (or re-allocate) a claim, sometimes with disagreeing values
            name = f"c-{rng.randrange(30)}"
            params = {"subnet": f"subnet-{rng.randrange(2)}", "tenant": "team-0"}
            if rng.random() < 0.1:
                params = {"subnet": "subnet-0"}  # no tenant: unreconstructable
            obj = claim(name, "x", driver_of(p), params,
                        (f"node-{p:04d}", f"nic-{d:03d}") if rng.random() < 0.8 else None)
            objects[("ResourceClaim", f"x/{name}")] = obj
            book.put_claim(_model(obj))
        elif roll < 0.7:  # delete some claim
            keys = [k for k in objects if k[0] == "ResourceClaim"]
            if keys:
                gone = rng.choice(keys)
                del objects[gone]
                book.remove_claim(gone[1])
        elif roll < 0.9:  # one slice of a pool changes generation (the pool is incomplete meanwhile)
            meta, devices = pool_slices(p, per_pool, generation=rng.randrange(1, 4))
            obj = meta if rng.random() < 0.5 else devices
            objects[("ResourceSlice", obj["metadata"]["name"])] = obj
            book.put_slice(_model(obj))
        else:  # a slice disappears, or comes back
            meta, devices = pool_slices(p, per_pool)
            obj = rng.choice([meta, devices])
            slice_key = ("ResourceSlice", obj["metadata"]["name"])
            if slice_key in objects and rng.random() < 0.5:
                del objects[slice_key]
                book.remove_slice(slice_key[1])
            else:
                objects[slice_key] = obj
                book.put_slice(_model(obj))
        if step % 20 == 19:
            fresh = LockBook.build(
                [_model(copy.deepcopy(o)) for o in objects.values() if o["kind"] == "ResourceSlice"],
                [_model(copy.deepcopy(o)) for o in objects.values() if o["kind"] == "ResourceClaim"])
            assert book.states == fresh.states, f"step {step}"
            assert list(book.pools) == list(fresh.pools)
            listed = LockBook.build(fresh._slices.values(), [])  # the exporter's list: claims at once
            listed.put_claims(fresh.claims.values())
            assert listed.states == fresh.states, f"step {step}"
    statuses = {s.status for s in book.states.values()}
    assert {LockStatus.LOCKED, LockStatus.CLEAN} <= statuses


def test_templates_hold_nothing_and_a_recreated_claim_is_extracted_again() -> None:
    meta, devices = pool_slices(0, 1)
    book = LockBook.build([_model(meta), _model(devices)], [])
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "x"},
                "spec": {"spec": {"devices": {"requests": [{"name": "nic", "exactly": {
                    "deviceClassName": "nic.example.com"}}]}}}}
    model = _model(template)
    assert not isinstance(model, ResourceSlice)
    book.put_claim(model)
    assert "x/t" not in book.claims
    ref = next(iter(book.states))
    where = ("node-0000", "nic-000")
    book.put_claim(_model(claim("c", "x", driver_of(0), {"subnet": "a", "tenant": "t"}, where)))
    assert book.states[ref].lock == {"subnet": "a", "tenant": "t"}
    book.remove_claim("x/c")
    book.put_claim(_model(claim("c", "x", driver_of(0), {"subnet": "b", "tenant": "t"}, where)))
    assert book.states[ref].lock == {"subnet": "b", "tenant": "t"}
    assert isinstance(book.claims["x/c"], ResourceClaim)


def test_a_focused_book_reconstructs_the_claims_candidate_pools_exactly() -> None:
    """`explain`'s book (focus on one claim) holds, on every pool the claim can be offered or
    holds, exactly the full book's states, and leaves the claims of other pools out."""
    doc = generate(devices=40, pools=8, claims=120, pending=4, seed=5)
    models = [_model(o) for o in doc["items"]]
    slices = [m for m in models if isinstance(m, ResourceSlice)]
    claims = [m for m in models if isinstance(m, ResourceClaim)]
    classes = [m for m in models if not isinstance(m, (ResourceSlice, ResourceClaim))]
    full = LockBook.build(slices, claims, classes)
    pending = next(c for c in claims if not c.allocation)
    allocated = next(c for c in claims if c.allocation and c.allocation[0].driver != pending.requests[0]
                     .exactly.device_class_name)  # type: ignore[union-attr]
    for target in (pending, allocated):
        book = LockBook.build(slices, claims, classes, focus=[target.qualified_name])
        assert book.scope is not None
        driver = target.requests[0].exactly.device_class_name  # type: ignore[union-attr]
        # the DeviceClass selects the pools of its driver; a held pool is in scope too
        assert {r for r in full.pools if r.driver == driver} <= book.scope
        assert {r.pool_ref for r in full.held_by(target.qualified_name)} <= book.scope
        assert book.scope < set(full.pools)
        inside = {r: s for r, s in full.states.items() if r.pool_ref in book.scope}
        assert {r: s for r, s in book.states.items() if r.pool_ref in book.scope} == inside
        assert any(s.holders for s in inside.values())
        assert target.qualified_name in book.claims
        assert all(any(PoolRef(a.driver, a.pool) in book.scope for a in c.allocation)
                   for name, c in book.claims.items() if name != target.qualified_name)
        assert len(book.claims) < len(full.claims)


def test_a_claim_put_again_under_its_name_is_extracted_from_its_new_configs() -> None:
    """The book's extractions go through `ExtractionMemo`: a claim re-put with other configs (no
    removal between) gets the new lock, equal contents are evaluated once, and each claim's
    extraction carries its own name."""
    meta, devices = pool_slices(0, 2)
    book = LockBook.build([_model(meta), _model(devices)], [])
    first, second = sorted(book.states)
    book.put_claim(_model(claim("c", "x", driver_of(0), {"subnet": "a", "tenant": "t"},
                                ("node-0000", "nic-000"))))
    once = book.evaluations
    assert once > 0 and book.states[first].lock == {"subnet": "a", "tenant": "t"}
    book.put_claim(_model(claim("c", "x", driver_of(0), {"subnet": "b", "tenant": "t"},
                                ("node-0000", "nic-000"))))
    assert book.states[first].lock == {"subnet": "b", "tenant": "t"}
    twice = book.evaluations
    assert twice == 2 * once
    book.put_claim(_model(claim("d", "x", driver_of(0), {"subnet": "b", "tenant": "t"},
                                ("node-0000", "nic-001"))))
    assert book.states[second].lock == {"subnet": "b", "tenant": "t"}
    assert book.evaluations == twice  # the same contents as c's: shared, not evaluated again
    assert book.extraction(book.claims["x/d"], "nic", first.pool_ref).claim == "x/d"
