"""`--format junit`: JUnit XML for Jenkins, GitLab (`artifacts:reports:junit`) and friends.

A linter is not a test runner, so the mapping is chosen to make CI pages useful:
`lint` reports one test case per object checked (kubeconform's choice), failing when
it has a finding at or above the failure threshold, so the count of tests is the
count of slices and a clean run is all green rather than empty; findings below the
threshold go to `<system-out>`. `dry-run` reports one case per claim × request ×
pool, `test` one per suite case. One XML declaration, nothing else on the stream
(Kyverno's interleaved progress text broke Jenkins, peer-tools §A9).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from xml.etree import ElementTree as ET

from ...policies.core.findings import Finding, ObjectRef, Severity
from ..suppressions import Suppressed
from .run import RunResult, TestCase

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    """XML 1.0 cannot carry most control characters, even escaped."""
    return _XML_INVALID.sub("\ufffd", text)


def finding_line(finding: Finding) -> str:
    """`file:line:col: severity RULE message`, the text reporter's shape without colour."""
    loc = finding.primary
    where = loc.file or "<input>"
    if loc.position is not None:
        where += f":{loc.position.line}:{loc.position.column}"
    return f"{where}: {finding.severity.label} {finding.rule} {finding.message}"


def _object_key(file: str | None, ref: ObjectRef | None) -> tuple[str | None, str, str | None, str | None]:
    if ref is None:
        return (file, "", None, None)
    return (file, ref.kind, ref.namespace, ref.name)


def _name(ref: ObjectRef | None, file: str | None) -> str:
    if ref is None:
        return file or "<input>"
    name = f"{ref.namespace}/{ref.name}" if ref.namespace else (ref.name or "<unnamed>")
    return f"{ref.kind}/{name}"


def object_cases(
    suite: str,
    objects: Iterable[tuple[str | None, ObjectRef | None, int | None]],
    findings: Sequence[Finding],
    suppressed: Sequence[Suppressed],
    threshold: Severity,
) -> tuple[TestCase, ...]:
    """One case per object (file, ref, line); findings go to their primary object's case.

    A finding on no listed object (a file that does not parse) gets a case of its own,
    named after its file.
    """
    order: dict[tuple[str | None, str, str | None, str | None], tuple[str | None, ObjectRef | None,
                                                                    int | None]] = {}
    for file, ref, line in objects:
        order.setdefault(_object_key(file, ref), (file, ref, line))
    failures: dict[tuple[str | None, str, str | None, str | None], list[str]] = {}
    output: dict[tuple[str | None, str, str | None, str | None], list[str]] = {}
    for finding in findings:
        loc = finding.primary
        key = _object_key(loc.file, loc.object)
        if key not in order:
            key = _object_key(loc.file, None)
            line = loc.position.line if loc.position else None
            order.setdefault(key, (loc.file, None, line))
        bucket = failures if finding.severity >= threshold else output
        bucket.setdefault(key, []).append(finding_line(finding))
    for item in suppressed:
        loc = item.finding.primary
        key = _object_key(loc.file, loc.object)
        reason = f" ({item.by.reason})" if item.by.reason else ""
        if key in order:
            output.setdefault(key, []).append(
                f"suppressed by {item.by.kind.value} at {item.by.where()}{reason}: "
                + finding_line(item.finding))
    return tuple(
        TestCase(suite=suite, name=_name(ref, file), classname=file or "<input>", file=file, line=line,
                 failures=tuple(failures.get(key, ())), output=tuple(output.get(key, ())))
        for key, (file, ref, line) in sorted(order.items(), key=lambda kv: (kv[0][0] or "", kv[1][2] or 0))
    )


def render(run: RunResult) -> str:
    suites: dict[str, list[TestCase]] = {}
    for case in run.cases:
        suites.setdefault(case.suite, []).append(case)
    failed = sum(c.failed for c in run.cases)
    root = ET.Element("testsuites", name=f"dra-affinity {run.command}", tests=str(len(run.cases)),
                      failures=str(failed), errors="0", skipped="0")
    for name, cases in suites.items():
        node = ET.SubElement(root, "testsuite", name=_clean(name), tests=str(len(cases)),
                             failures=str(sum(c.failed for c in cases)), errors="0", skipped="0")
        files = {c.file for c in cases}
        if len(files) == 1 and None not in files:
            node.set("file", _clean(str(next(iter(files)))))
        for case in cases:
            _case(node, case)
    for notification in run.notifications:
        if notification.level == "error":  # the run is incomplete: say so where CI looks
            error = ET.SubElement(root, "testsuite", name="dra-affinity", tests="1", failures="0",
                                  errors="1", skipped="0")
            ET.SubElement(ET.SubElement(error, "testcase", classname="dra-affinity", name="input"),
                          "error", message=_clean(notification.message))
            root.set("errors", str(int(root.get("errors", "0")) + 1))
            root.set("tests", str(int(root.get("tests", "0")) + 1))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _case(parent: ET.Element, case: TestCase) -> None:
    node = ET.SubElement(parent, "testcase", classname=_clean(case.classname), name=_clean(case.name))
    if case.file:
        node.set("file", _clean(case.file))
    if case.line:
        node.set("line", str(case.line))
    if case.failures:
        failure = ET.SubElement(node, "failure", message=_clean(case.failures[0]))
        failure.text = _clean("\n".join(case.failures))
    if case.output:
        ET.SubElement(node, "system-out").text = _clean("\n".join(case.output))
