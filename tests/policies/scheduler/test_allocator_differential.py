"""The project's allocations against the real structured allocator, bounded for the suite.

The long campaign (10,000 claims and more) is `python -m tests.policies.scheduler.allocdiff`;
here a few hundred generated claims per seed must all agree: placed or not as the allocator
decides, and every device picked one the allocator accepts on the project's own trajectory.
"""

from __future__ import annotations

import pytest

from tests.policies.scheduler import allocdiff

pytestmark = pytest.mark.skipif(
    allocdiff.oracle_path() is None,
    reason=f"the allocator oracle {allocdiff.ORACLE} is absent or cannot run on this machine",
)


@pytest.mark.parametrize("seed", [11, 12])
def test_generated_claims_are_placed_as_the_allocator_places_them(seed: int) -> None:
    figures = allocdiff.run(claims=250, seed=seed, keep=3)
    assert figures.claims == 250
    assert figures.placement_agree == figures.claims, figures.examples
    assert figures.accepted == figures.both_placed, figures.examples
    assert figures.both_placed > 50  # the campaign places claims, not only refuses them
