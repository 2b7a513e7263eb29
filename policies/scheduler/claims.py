"""Claim checks the API server makes that extraction depends on (reported as input errors, SA000).

A claim the API server would reject never reaches the scheduler; when one shows up in
a dry-run input, say so precisely instead of extracting from it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from ..core.findings import Finding, Location
from ..core.k8s_names import go_quote
from ..core.problems import INPUT_ERROR
from ..core.source import FieldPath, render_path
from ..model.resources import DeviceRequest, ResourceClaim
from .candidates import missing_class
from .extraction import device_requests, request_names


def claim_problems(claim: ResourceClaim) -> Iterator[Finding]:
    """Config entries naming unknown requests, and configs without `opaque`."""
    known = {r.name for r in claim.requests} | set(request_names(claim))
    spec: FieldPath = (*claim.spec_path, "devices", "config")
    for config in claim.configs:
        base: FieldPath = (*spec, config.index)
        if config.opaque is None:
            yield _finding(claim, (*base, "opaque"), "Required value")
        for i, name in enumerate(config.requests):
            if name not in known:
                yield _finding(
                    claim,
                    (*base, "requests", i),
                    f"Invalid value: {go_quote(name)}: must be the name of a request in the claim "
                    "or the name of a request and its subrequest separated with '/'",
                )


def _finding(claim: ResourceClaim, path: FieldPath, body: str) -> Finding:
    return INPUT_ERROR.finding(f"{render_path(path)}: {body}", Location.at(claim.source, path, claim.ref))


def missing_class_finding(claim: ResourceClaim, request: DeviceRequest, reason: str) -> Finding:
    """A request naming a DeviceClass the input does not hold (the scheduler leaves the claim pending).

    `reason`: `candidates.missing_class`'s text for the request, the one a rejection carries too."""
    index = next((i for i, r in enumerate(claim.requests) if r.name == request.name.split("/", 1)[0]), None)
    path: tuple[str | int, ...] = (*claim.spec_path, "devices", "requests")
    if index is not None:
        path = (*path, index)
    return INPUT_ERROR.finding(
        f"claim {claim.qualified_name} {reason}; give the class's file, or fix the name",
        Location.at(claim.source, path, claim.ref))


def missing_class_problems(claim: ResourceClaim, classes: Collection[str]) -> Iterator[Finding]:
    """Each request (or subrequest) of `claim` naming a DeviceClass not in `classes`
    (`candidates.missing_class`: none when no classes are given)."""
    if not classes:
        return
    for request in device_requests(claim).values():
        reason = missing_class(request, classes)
        if reason is not None:
            yield missing_class_finding(claim, request, reason)
