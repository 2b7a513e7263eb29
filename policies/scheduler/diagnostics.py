"""How the scheduler explains a device that is not viable: the KEP's four per-pod classes.

Worded once here so dry-run, `--explain`, the lock simulator and events all say the
same thing. `reason` is the machine name; `describe` the sentence a person reads.
"""

from __future__ import annotations

import enum


class Diagnostic(enum.Enum):
    LOCK_MISMATCH = "lock mismatch"
    NO_KEYS_EXTRACTED = "no keys extracted"
    CEL_EVALUATION_FAILURE = "CEL evaluation failure"
    UNKNOWN_LOCK_STATE = "unknown lock state"


def describe(diagnostic: Diagnostic, *, device: str | None = None, detail: str = "") -> str:
    """One sentence for a pod event or a report line."""
    where = f"device {device}" if device else "the device"
    text = {
        Diagnostic.LOCK_MISMATCH: f"{where} is locked to other sharing-affinity values",
        Diagnostic.NO_KEYS_EXTRACTED: (
            "the claim's configs give no value for every sharing-affinity key of the pool "
            "(strict gating), so no device of the pool is viable for this request"
        ),
        Diagnostic.CEL_EVALUATION_FAILURE: (
            "a sharing-affinity extractor failed on the claim's config: a ResourceSlice "
            "authoring error that aborts scheduling of the pod"
        ),
        Diagnostic.UNKNOWN_LOCK_STATE: (
            f"the lock of {where} cannot be reconstructed from its bound claims, so it is "
            "not used for sharing-affinity placements until it drains"
        ),
    }[diagnostic]
    return f"{text}: {detail}" if detail else text
