"""SA003: a device selector the allocator cannot evaluate (reported by dry-run and simulate)."""

from ...core.problems import SELECTOR_ERROR as KIND
from ..base import DEVICE_CLASS_SETTING, InputRule

RULE = InputRule(
    id=KIND.id,
    slug="selector-error",
    severity=KIND.severity,
    summary="a DeviceClass or request selector fails to compile or evaluate on a device",
    description=(
        "Candidate pools are chosen the way the allocator does: a device must satisfy the "
        "DeviceClass's selectors and the request's own, evaluated in DRA's `device` CEL "
        "environment. A selector that fails to compile, or fails at run time on a device (for "
        "example `no such key` for an attribute the device lacks), is an error, not a "
        "non-match: the allocator aborts scheduling of the pod. The message is the allocator's "
        "(`class <name>: selector #<i>: CEL runtime error: …`)."
    ),
    bad_example=(
        "selectors:\n"
        "- cel:\n"
        "    expression: device.attributes[\"nic.example.com\"].model == \"x\""
    ),
    good_example=(
        "selectors:\n"
        "- cel:\n"
        "    expression: '\"model\" in device.attributes[\"nic.example.com\"] &&\n"
        "      device.attributes[\"nic.example.com\"].model == \"x\"'"
    ),
    example_setting=DEVICE_CLASS_SETTING,
)
