"""SA001: a suppression that does not say why (reported by the CLI's suppression audit)."""

from ...core.problems import SUPPRESSION_WITHOUT_REASON as KIND
from ..base import InputRule

RULE = InputRule(
    id=KIND.id,
    slug="suppression-without-reason",
    severity=KIND.severity,
    summary="a suppression (inline comment, `dra-affinity.io/ignore` annotation or config ignore) "
    "gives no reason",
    description=(
        "A suppression silences a rule for one line, one object or a set of files. Without a "
        "reason, the next reader cannot tell a deliberate exception from a finding someone "
        "wanted to go away, and cannot tell when it may be removed. The suppression still "
        "applies; this finding asks for the reason. Inline comments take it after `--`, "
        "annotations after `:`, config ignores in `reason:`."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: object.subnetID  # dra-affinity: ignore SA201"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: object.subnetID  # dra-affinity: ignore SA201 -- admission requires subnetID"
    ),
)
