"""SA002: a suppression that silenced nothing (reported by the CLI's suppression audit)."""

from ...core.problems import UNUSED_SUPPRESSION as KIND
from ..base import InputRule

RULE = InputRule(
    id=KIND.id,
    slug="unused-suppression",
    severity=KIND.severity,
    summary="a suppression matched no finding, names no rule, or names an unknown rule",
    description=(
        "Suppressions outlive the problems they hid: once an expression is fixed, its "
        "`ignore` comment would silently hide the next, unrelated finding of the same rule on "
        "that line. Reporting unused suppressions keeps every one of them justified, as ruff's "
        "RUF100 does for `noqa`. A suppression is only judged for rules that ran: a pool rule "
        "suppressed under `--no-pools`, or a config ignore whose paths matched no file of the "
        "run, is not reported. A suppression naming no rule or an unknown rule id suppresses "
        "nothing and is always reported."
    ),
    bad_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  # guarded since, so SA201 no longer fires here\n"
        "  expression: 'has(object.subnetID) ? object.subnetID : \"\"'  # dra-affinity: ign"
        "ore SA201 -- old"
    ),
    good_example=(
        "sharingAffinity:\n"
        "- name: subnet\n"
        "  expression: 'has(object.subnetID) ? object.subnetID : \"\"'"
    ),
)
