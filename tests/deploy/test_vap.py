"""The generated ValidatingAdmissionPolicy agrees with the webhook, case by case.

Each case is run three ways: the policy's CEL (in the Kubernetes admission environment, with
`object`/`oldObject` as the API server binds them), the webhook's `Admitter` on the same request
as an AdmissionReview, and `policies.rules.engine.check_slice`. The structural rule ids that fire must
be the same.
"""

from __future__ import annotations

import copy
import sys
from typing import Any

import pytest
from dra_affinity.policies.core.k8s_names import qualified_name_errors
from dra_affinity.policies.core.limits import limits_for
from dra_affinity.policies.model.resources import ResourceSlice, parse
from dra_affinity.policies.rules.base import Scope
from dra_affinity.policies.rules.catalog import catalog, get_rule
from dra_affinity.policies.rules.context import SliceRule
from dra_affinity.policies.rules.engine import check_slice
from dra_affinity.policies.rules.vap import (
    VAP_PER_CALL_LIMIT,
    VAP_RUNTIME_BUDGET,
    check_policy,
    estimate_policy_cost,
    structural_policy,
    structural_rules,
    whitespace_class,
)
from dra_affinity.webhook.admission import AdmissionRequest, Admitter, Verdict, parse_review
from dra_affinity.webhook.settings import WebhookSettings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.deploy.vap_harness import VapVerdict, evaluate_policy, run_expression
from tests.helpers import CLEAN_EXPRESSION, entry, slice_doc

POLICY = structural_policy()
LIMITS = limits_for(POLICY.kubernetes_version)
STRUCTURAL_RULE_IDS = tuple(r.id for r in structural_rules())
STRUCTURAL = frozenset(STRUCTURAL_RULE_IDS)
ADMITTER = Admitter(WebhookSettings())

Doc = dict[str, Any]


def review(new: Doc, old: Doc | None) -> AdmissionRequest:
    request: Doc = {
        "uid": "b7c6f0e8-0000-4000-8000-000000000001",
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceSlice"},
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceslices"},
        "name": new["metadata"]["name"],
        "operation": "UPDATE" if old is not None else "CREATE",
        "object": new,
    }
    if old is not None:
        request["oldObject"] = old
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    parsed = parse_review(body)
    assert isinstance(parsed, AdmissionRequest)
    return parsed


def webhook_verdict(new: Doc, old: Doc | None = None) -> Verdict:
    return ADMITTER.admit(review(copy.deepcopy(new), copy.deepcopy(old)))


def engine_rules(new: Doc, old: Doc | None = None) -> set[str]:
    new_slice = parse(new).obj
    old_slice = parse(old).obj if old is not None else None
    assert isinstance(new_slice, ResourceSlice)
    assert old_slice is None or isinstance(old_slice, ResourceSlice)
    return {f.rule for f in check_slice(new_slice, old_slice)} & STRUCTURAL


def assert_agree(new: Doc, old: Doc | None = None) -> tuple[VapVerdict, Verdict]:
    vap = evaluate_policy(POLICY, new, old)
    hook = webhook_verdict(new, old)
    hook_rules = set(hook.rule_ids) & STRUCTURAL
    assert vap.rule_ids == hook_rules, (vap.failed, hook.rule_ids)
    assert not vap.errors, vap.errors
    # The webhook skips the expression rules above the entry limit, as the API server's own
    # list validation does; below it the webhook is exactly check_slice.
    if len(new["spec"].get("sharingAffinity") or ()) <= LIMITS.max_entries:
        assert hook_rules == engine_rules(new, old)
    if not vap.matched:
        assert hook_rules == set()
    return vap, hook


# ------------------------------------------------------------------------------------------------
# The policy is generated from the catalog and valid
# ------------------------------------------------------------------------------------------------


def test_generated_policy_compiles_in_the_admission_environment() -> None:
    assert check_policy(POLICY) == ()


def test_validations_are_the_structural_slice_rules_of_the_catalog() -> None:
    assert POLICY.rule_ids == STRUCTURAL_RULE_IDS == ("SA101", "SA102", "SA103", "SA104", "SA105", "SA109")
    rules = catalog()
    for validation in POLICY.validations:
        rule = rules[validation.rule_id]
        assert rule.scope is Scope.SLICE and isinstance(rule, SliceRule) and rule.vap is not None
        # The rule id leads both messages; slug and summary come from the catalog.
        assert validation.message.startswith(f"{rule.id} {rule.slug}: ")
        assert validation.message.endswith(rule.summary)
        assert validation.message_expression.startswith(f'"{rule.id} {rule.slug}: ')
        assert "\n" not in validation.message


def test_limits_come_from_policies_limits() -> None:
    by_rule = {v.rule_id: v.expression for v in POLICY.validations}
    assert f"<= {LIMITS.max_entries}" in by_rule["SA101"]
    assert f"<= {LIMITS.max_expression_bytes}" in by_rule["SA105"]
    assert f"> {LIMITS.max_entries}" in by_rule["SA105"]


# ------------------------------------------------------------------------------------------------
# Case by case
# ------------------------------------------------------------------------------------------------

PREFIX_253 = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])
NAME_CASES = [
    "subnet", "nvlink-domain", "sub_net.v1", "a..b", "A", "x" * 63, "example.com/subnet",
    f"{PREFIX_253}/k", f"{PREFIX_253}/{'k' * 63}",
    # invalid
    "", "x" * 64, "my subnet", "-subnet", "subnet-", "a/b/c", "/subnet", "example.com/",
    "Example.com/subnet", f"{PREFIX_253}x/k", "a..b/x", "ключ", "sub\tnet", "example.com/-x",
]


@pytest.mark.parametrize("name", NAME_CASES, ids=lambda n: repr(n)[:40])
def test_names_agree(name: str) -> None:
    vap, _ = assert_agree(slice_doc([entry("other"), entry(name)]))
    assert ("SA103" in vap.rule_ids) == bool(qualified_name_errors(name))


def test_name_with_trailing_newline_agrees() -> None:
    assert_agree(slice_doc([entry("subnet\n")]))


WHITESPACE_ONLY = ["", " ", " \t\r\n", "\u00a0", "\u3000\u2028", "\x1c\x1f", "\x0b\x0c", "\u0085"]
NOT_EMPTY = ["\u200b", "x", " x ", "\u180e"]


@pytest.mark.parametrize("expression", WHITESPACE_ONLY + NOT_EMPTY, ids=repr)
def test_empty_expressions_agree(expression: str) -> None:
    vap, _ = assert_agree(slice_doc([entry("subnet", expression)]))
    assert ("SA104" in vap.rule_ids) == (expression in WHITESPACE_ONLY)


def test_missing_fields_agree() -> None:
    vap, _ = assert_agree(slice_doc([{"name": "subnet"}, {"expression": CLEAN_EXPRESSION}]))
    assert vap.rule_ids == {"SA103", "SA104"}


LENGTH_CASES = {
    "ascii-at-limit": ("x" * 10240, False),
    "ascii-over": ("x" * 10241, True),
    "3-byte-under": ("€" * 3413, False),  # 10239 bytes
    "3-byte-over": ("€" * 3414, True),  # 10242 bytes, 3414 characters
    "4-byte-at-limit": ("😀" * 2560, False),
    "4-byte-over": ("😀" * 2561, True),
    "2-byte-over": ("é" * 5121, True),
}


@pytest.mark.parametrize("case", list(LENGTH_CASES))
def test_expression_lengths_agree(case: str) -> None:
    expression, too_long = LENGTH_CASES[case]
    vap, _ = assert_agree(slice_doc([entry("subnet", expression)]))
    assert ("SA105" in vap.rule_ids) == too_long


@pytest.mark.parametrize("case", [
    "clean", "eight", "nine", "nine-with-duplicate", "nine-with-long-expression", "duplicates",
    "three-duplicates", "duplicate-empty-names", "empty-list", "devices-and-affinity",
    "empty-devices-and-affinity", "device-slice", "everything-wrong",
])
def test_structural_cases_agree(case: str) -> None:
    long = "x" * 10241
    entries = {
        "clean": [entry("subnet"), entry("pkey")],
        "eight": [entry(f"k{i}") for i in range(8)],
        "nine": [entry(f"k{i}") for i in range(9)],
        "nine-with-duplicate": [entry(f"k{i % 8}") for i in range(9)],
        "nine-with-long-expression": [entry(f"k{i}", long if i == 3 else CLEAN_EXPRESSION) for i in range(9)],
        "duplicates": [entry("subnet"), entry("pkey"), entry("subnet")],
        "three-duplicates": [entry("subnet")] * 3,
        "duplicate-empty-names": [entry(""), entry("")],
        "empty-list": [],
        "devices-and-affinity": [entry("subnet")],
        "empty-devices-and-affinity": [entry("subnet")],
        "device-slice": None,
        "everything-wrong": [entry("bad name", " "), entry("bad name", long), entry("ok", "")],
    }[case]
    devices = {"devices-and-affinity": [{"name": "nic0"}], "empty-devices-and-affinity": [],
               "device-slice": [{"name": "nic0"}]}.get(case)
    expected = {
        "clean": set(), "eight": set(), "nine": {"SA101"}, "nine-with-duplicate": {"SA101", "SA102"},
        "nine-with-long-expression": {"SA101"}, "duplicates": {"SA102"}, "three-duplicates": {"SA102"},
        "duplicate-empty-names": {"SA103"}, "empty-list": set(), "devices-and-affinity": {"SA109"},
        "empty-devices-and-affinity": {"SA109"}, "device-slice": set(),
        "everything-wrong": {"SA102", "SA103", "SA104", "SA105"},
    }[case]
    vap, _ = assert_agree(slice_doc(entries, devices=devices))
    assert vap.rule_ids == expected
    assert vap.matched == (entries is not None)


def test_update_ratchets_long_expressions_like_the_webhook() -> None:
    long, other = "x" * 10241, "y" * 10241
    old = slice_doc([entry("subnet", long), entry("pkey")])
    unchanged_moved = slice_doc([entry("pkey"), entry("renamed", long)])
    vap, _ = assert_agree(unchanged_moved, old)
    assert "SA105" not in vap.rule_ids
    vap, _ = assert_agree(slice_doc([entry("subnet", other)]), old)
    assert vap.rule_ids == {"SA105"}
    vap, _ = assert_agree(slice_doc([entry("subnet", long)]), None)
    assert vap.rule_ids == {"SA105"}


def test_update_that_drops_sharing_affinity_is_not_matched() -> None:
    old = slice_doc([entry("subnet")])
    new = slice_doc(None, devices=[{"name": "nic0"}])
    vap, hook = assert_agree(new, old)
    assert not vap.matched and hook.allowed


def test_messages_name_the_fields_the_webhook_reports() -> None:
    doc = slice_doc([entry("subnet", " "), entry("subnet"), entry("bad name", "x" * 10241)],
                    devices=[{"name": "nic0"}])
    vap, hook = assert_agree(doc)
    assert vap.rule_ids == {"SA102", "SA103", "SA104", "SA105", "SA109"}
    for finding in hook.findings:
        if finding.rule in STRUCTURAL:
            message = vap.failed[finding.rule]
            assert message.startswith(f"{finding.rule} {get_rule(finding.rule).slug}: ")
            assert finding.primary.field_path in message, (finding.primary.field_path, message)


# ------------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------------

NAMES = st.sampled_from(["subnet", "pkey", "nvlink-domain", "example.com/subnet", "", "bad name",
                         "-x", "x" * 64, "a/b/c", "Example.com/x", "ключ"])
EXPRESSIONS = st.sampled_from([CLEAN_EXPRESSION, "", " \t", "\u3000", "\x1c", "x" * 10241, "€" * 3414,
                               "😀" * 2560])
ENTRIES = st.lists(
    st.fixed_dictionaries({}, optional={"name": NAMES, "expression": EXPRESSIONS}), max_size=10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries=ENTRIES, devices=st.sampled_from([None, [], [{"name": "nic0"}]]),
       old_entries=st.none() | ENTRIES)
def test_random_slices_agree(entries: list[Doc], devices: list[Doc] | None,
                             old_entries: list[Doc] | None) -> None:
    old = slice_doc(old_entries) if old_entries is not None else None
    assert_agree(slice_doc(entries, devices=devices), old)


def _matches_all(pattern: str, chars: list[str]) -> list[bool]:
    # One evaluation per chunk (cel-cpp caps a comprehension at 10,000 iterations).
    out: list[bool] = []
    for start in range(0, len(chars), 5000):
        chunk = chars[start:start + 5000]
        result = run_expression(f"object.map(c, c.matches(r'^{pattern}$'))", POLICY.kubernetes_version,
                                {"object": chunk})
        assert result.error is None and isinstance(result.value, list)
        out.extend(bool(v) for v in result.value)
    return out


def test_whitespace_class_is_exactly_str_isspace() -> None:
    # Every code point up to U+3100 (all of the white space is below it) and the ends of the
    # range; surrogates cannot be in a CEL string.
    codes = [c for c in range(0x3100) if not 0xD800 <= c <= 0xDFFF] + [0xFEFF, 0xFFFF, sys.maxunicode]
    chars = [chr(c) for c in codes]
    assert _matches_all(whitespace_class(), chars) == [c.isspace() for c in chars]


# ------------------------------------------------------------------------------------------------
# Cost
# ------------------------------------------------------------------------------------------------


def _worst_case(old: bool) -> tuple[Doc, Doc | None]:
    """8 entries with the longest valid names and expressions the rules allow."""
    name = f"{PREFIX_253}/{'k' * 63}"
    entries = [entry(f"{name[:-1]}{i}", "€" * (LIMITS.max_expression_bytes // 3)) for i in range(8)]
    new = slice_doc(entries)
    if not old:
        return new, None
    long_entries = [entry(e["name"], "x" * (LIMITS.max_expression_bytes + 100)) for e in entries]
    return slice_doc(long_entries), slice_doc(long_entries)


@pytest.mark.parametrize("update", [False, True], ids=["create", "ratcheting-update"])
def test_worst_case_runtime_cost_is_within_the_api_server_limits(update: bool) -> None:
    new, old = _worst_case(update)
    vap, _ = assert_agree(new, old)
    assert vap.rule_ids == set()
    assert vap.max_cost <= VAP_PER_CALL_LIMIT
    assert vap.total_cost <= VAP_RUNTIME_BUDGET
    # Reported in the issue note; keep it visible when the test runs with -s.
    print(f"worst-case {'UPDATE' if update else 'CREATE'} runtime cost: max {vap.max_cost:,} per expression, "
          f"{vap.total_cost:,} in all", file=sys.stderr)


def test_denied_slices_with_every_message_stay_within_the_budget() -> None:
    long = "x" * (LIMITS.max_expression_bytes + 1)
    doc = slice_doc([entry(f"bad name {i}", long if i % 2 else " " * 10000) for i in range(8)] +
                    [entry("bad name 0")])
    vap, _ = assert_agree(doc)
    assert vap.rule_ids == {"SA101", "SA102", "SA103", "SA104"}
    assert vap.max_cost <= VAP_PER_CALL_LIMIT and vap.total_cost <= VAP_RUNTIME_BUDGET


def test_static_estimates_within_declared_bounds_fit_the_per_call_limit() -> None:
    costs = {c.where: c for c in estimate_policy_cost(POLICY)}
    checked = [c for where, c in costs.items() if not where.endswith("messageExpression")]
    assert all(c.bounded.max <= VAP_PER_CALL_LIMIT for c in checked)
    assert sum(c.bounded.max for c in checked) <= VAP_RUNTIME_BUDGET
    # Without size knowledge (how the scheduler prices extractors) the comprehensions over the
    # object are unbounded: the API server does not estimate VAP costs statically, it stops an
    # evaluation at run time, which the tests above measure.
    assert costs["spec.validations[1].expression"].unbounded.unbounded
