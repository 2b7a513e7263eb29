"""Workloads: seeded arrivals, weights and Zipf skew, lifetimes, one claim per value combination."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from dra_affinity.policies.model.resources import ResourceClaim, parse
from dra_affinity.policies.scheduler.workload import (
    Lifetime,
    LifetimeKind,
    TemplateSpec,
    Vary,
    Workload,
    WorkloadProblem,
    arrivals,
    variants,
    zipf_weights,
)

CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaimTemplate",
    "metadata": {"name": "nic-pod", "namespace": "ml"},
    "spec": {
        "spec": {
            "devices": {
                "requests": [{"name": "nic", "exactly": {"deviceClassName": "nic.example.com"}}],
                "config": [
                    {
                        "requests": ["nic"],
                        "opaque": {
                            "driver": "nic.example.com",
                            "parameters": {"kind": "NICConfig", "subnetID": "default", "net": {"pkey": "p0"}},
                        },
                    }
                ],
            }
        }
    },
}


def claims() -> dict[str, ResourceClaim]:
    obj = parse(CLAIM).obj
    assert isinstance(obj, ResourceClaim)
    return {obj.qualified_name: obj}


def workload(n: int = 1000, seed: int = 3, *templates: TemplateSpec) -> Workload:
    subnets = tuple(zip([f"s{k}" for k in range(1, 6)], zipf_weights(5, 1.0), strict=True))
    default = TemplateSpec(
        "ml/nic-pod",
        1.0,
        Lifetime(LifetimeKind.EXPONENTIAL, 10.0),
        (Vary(("subnetID",), subnets), Vary(("net", "pkey"), (("a", 1.0), ("b", 1.0)))),
    )
    return Workload("w", seed, n, 2.0, templates or (default,))


def test_zipf_weights_follow_the_law() -> None:
    assert zipf_weights(4, 1.0) == (1.0, 0.5, 1 / 3, 0.25)
    assert zipf_weights(3, 0.0) == (1.0, 1.0, 1.0)


def test_every_value_combination_is_one_claim_with_the_values_set() -> None:
    built = variants(workload(), claims())
    assert not isinstance(built, list)
    found, index = built
    assert len(found) == 5 * 2 == len(index)
    for v in found:
        params = v.claim.configs[0].opaque.parameters  # type: ignore[union-attr]
        assert (params["subnetID"], params["net"]["pkey"]) == v.values
        assert params["kind"] == "NICConfig"
    original = claims()["ml/nic-pod"].configs[0].opaque.parameters  # type: ignore[union-attr]
    assert original["subnetID"] == "default" and original["net"]["pkey"] == "p0"


def test_same_seed_same_arrivals_other_seed_others() -> None:
    built = variants(workload(), claims())
    assert not isinstance(built, list)
    _, index = built
    first = arrivals(workload(seed=3), index)
    assert first == arrivals(workload(seed=3), index)
    assert first != arrivals(workload(seed=4), index)
    times = [a.time for a in first]
    assert times == sorted(times) and len(first) == 1000
    # rate 2 per time unit: 1000 arrivals take about 500 time units
    assert 400 < times[-1] < 600


def test_values_arrive_with_their_frequencies() -> None:
    built = variants(workload(20000), claims())
    assert not isinstance(built, list)
    found, index = built
    counts = Counter(found[a.variant].values[0] for a in arrivals(workload(20000), index))
    share = {k: n / 20000 for k, n in counts.items()}
    total = sum(zipf_weights(5, 1.0))
    for k, w in enumerate(zipf_weights(5, 1.0), start=1):
        assert share[f"s{k}"] == pytest.approx(w / total, abs=0.02)


def test_lifetimes() -> None:
    rng = random.Random(1)
    assert Lifetime(LifetimeKind.NEVER).sample(rng) is None
    assert Lifetime(LifetimeKind.FIXED, 7.0).sample(rng) == 7.0
    samples = [Lifetime(LifetimeKind.EXPONENTIAL, 5.0).sample(rng) for _ in range(5000)]
    assert sum(s for s in samples if s is not None) / 5000 == pytest.approx(5.0, rel=0.1)


def test_problems_name_the_workload_field() -> None:
    unknown = TemplateSpec("ml/other", 1.0, Lifetime(LifetimeKind.NEVER), path=("templates", 0))
    no_config = TemplateSpec(
        "ml/nic-pod",
        1.0,
        Lifetime(LifetimeKind.NEVER),
        (Vary(("subnetID",), (("a", 1.0),), config=4, path=("templates", 1, "vary", 0)),),
        path=("templates", 1),
    )
    not_object = TemplateSpec(
        "ml/nic-pod",
        1.0,
        Lifetime(LifetimeKind.NEVER),
        (Vary(("kind", "x"), (("a", 1.0),), path=("templates", 2, "vary", 0)),),
        path=("templates", 2),
    )
    problems = variants(workload(10, 1, unknown, no_config, not_object), claims())
    assert isinstance(problems, list) and all(isinstance(p, WorkloadProblem) for p in problems)
    assert [p.path for p in problems] == [
        ("templates", 0, "claim"),
        ("templates", 1, "vary", 0, "config"),
        ("templates", 2, "vary", 0, "field"),
    ]
    assert "not in the input" in problems[0].message
