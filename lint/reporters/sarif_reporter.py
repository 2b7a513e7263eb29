"""`--format sarif`: SARIF 2.1.0 for GitHub code scanning, GitLab and IDE viewers.

What peers got wrong and this does not (peer-tools §A9, §D): every result has a
real region (line and column; findings inside a CEL expression point at the exact
character, mapped by the lint command), `results` is present even when empty,
the rules carry their catalog docs as help text, and nothing but the log goes to
the output. Columns count Unicode code points (`columnKind`), as the loader does.
URIs are relative to the checkout (`SRCROOT`), so uploads resolve from any
working directory.

Beyond the schema, the SARIF validator's advice (`sarif multitool validate`, SARIF2xxx) is
followed where it applies: `$schema` (SARIF2008); the tool's name, version and
`informationUri` (SARIF2005: where a reader of an uploaded log learns what made it, taken
from the package's own `Project-URL`, so the address is written once, in pyproject.toml);
plain-text messages as sentences ending with a period (SARIF2001).
"""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import PackageNotFoundError, metadata, version
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ...policies.core.findings import Finding, Location, Severity
from ...policies.rules.base import Rule
from ...policies.rules.catalog import catalog
from ..suppressions import Suppressed
from .paths import PathNamer
from .run import ExtraRule, RunResult

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
TOOL_NAME = "dra-affinity"
BASE_ID = "SRCROOT"
_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _tool_version() -> str:
    try:
        return version("dra-affinity")
    except PackageNotFoundError:
        return "0+unknown"


def _information_uri() -> str | None:
    """The package's home page (`Project-URL: Homepage`), else its first project URL."""
    try:
        entries = metadata("dra-affinity").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    urls = [(label.strip().lower(), url.strip()) for label, _, url in (e.partition(",") for e in entries)]
    return next((url for label, url in urls if label == "homepage"), urls[0][1] if urls else None)


def _sentence(text: str) -> str:
    """A message as SARIF viewers expect it: a sentence that ends with a period."""
    return text if text.endswith((".", "?", "!")) else f"{text}."


def _text(rule: Rule) -> str:
    parts = [f"{rule.id} {rule.slug} ({rule.severity.label}, {rule.scope.value} rule)",
             rule.summary[:1].upper() + rule.summary[1:] + ".", rule.description]
    if rule.upstream:
        parts.append(f"Also enforced by: {rule.upstream}.")
    for title, example in (("Bad", rule.bad_example), ("Good", rule.good_example)):
        if example:
            parts.append(f"{title}:\n" + "\n".join("    " + line for line in example.splitlines()))
    return "\n\n".join(parts)


def _markdown(rule: Rule) -> str:
    parts = [f"**{rule.id} {rule.slug}** ({rule.severity.label}, {rule.scope.value} rule)",
             rule.summary[:1].upper() + rule.summary[1:] + ".", rule.description]
    if rule.upstream:
        parts.append(f"Also enforced by: {rule.upstream}.")
    for title, example in (("Bad", rule.bad_example), ("Good", rule.good_example)):
        if example:
            parts.append(f"{title}:\n\n```yaml\n{example}\n```")
    parts.append(f"`dra-affinity rules {rule.id}` prints this help.")
    return "\n\n".join(parts)


def rule_descriptor(rule: Rule) -> dict[str, Any]:
    """A catalog rule as a SARIF `reportingDescriptor`, docs included."""
    return {
        "id": rule.id,
        "name": rule.slug,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.description},
        "help": {"text": _text(rule), "markdown": _markdown(rule)},
        "defaultConfiguration": {"level": _LEVELS[rule.severity]},
        "properties": {"tags": [TOOL_NAME, f"{rule.scope.value}-rule"]},
    }


def _extra_descriptor(rule: ExtraRule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.slug,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.description},
        "help": {"text": f"{rule.summary}.\n\n{rule.description}"},
        "defaultConfiguration": {"level": _LEVELS[rule.severity]},
        "properties": {"tags": [TOOL_NAME]},
    }


def _object_name(loc: Location) -> str | None:
    obj = loc.object
    if obj is None:
        return None
    name = f"{obj.namespace}/{obj.name}" if obj.namespace else (obj.name or "<unnamed>")
    return f"{obj.kind}/{name}"


class _Builder:
    def __init__(self, run: RunResult, namer: PathNamer) -> None:

        self.run = run
        self.namer = namer
        rules: list[dict[str, Any]] = [rule_descriptor(r) for r in catalog().values()]
        rules += [_extra_descriptor(r) for r in run.extra_rules]
        self.rules = rules
        self.index = {r["id"]: i for i, r in enumerate(rules)}

    def location(self, loc: Location, message: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        uri = self.namer.relative(loc.file)
        if uri is not None:
            physical: dict[str, Any] = {"artifactLocation": self._artifact(uri)}
            if loc.position is not None:
                physical["region"] = {"startLine": loc.position.line, "startColumn": loc.position.column}
            out["physicalLocation"] = physical
        logical = _object_name(loc)
        if logical is not None:
            entry: dict[str, Any] = {"fullyQualifiedName": logical, "kind": "resource"}
            if loc.object is not None and loc.object.name:
                entry["name"] = loc.object.name
            out["logicalLocations"] = [entry]
        if loc.field_path or (uri is None and loc.file):
            properties: dict[str, Any] = {}
            if loc.field_path:
                properties["field"] = loc.field_path
            if uri is None and loc.file:
                properties["input"] = loc.file  # <stdin>, cluster:<context>
            out["properties"] = properties
        if message:
            out["message"] = {"text": message}
        return out

    def _artifact(self, uri: str) -> dict[str, Any]:
        if uri.startswith("/"):
            return {"uri": Path(uri).as_uri()}
        return {"uri": quote(uri), "uriBaseId": BASE_ID}

    def result(self, finding: Finding, suppressed: Suppressed | None = None) -> dict[str, Any]:
        primary = finding.primary
        subject = _object_name(primary)
        pool = f" (pool {finding.pool.driver}/{finding.pool.name})" if finding.pool else ""
        text = f"{subject}{pool}: {finding.message}" if subject else finding.message
        out: dict[str, Any] = {
            "ruleId": finding.rule,
            "level": _LEVELS[finding.severity],
            "message": {"text": _sentence(text)},
            "locations": [self.location(primary)] if finding.locations else [],
            "partialFingerprints": {f"{TOOL_NAME}/v1": _fingerprint(finding)},
        }
        if finding.rule in self.index:
            out["ruleIndex"] = self.index[finding.rule]
        if len(finding.locations) > 1:
            out["relatedLocations"] = [
                {"id": i, **self.location(loc, _object_name(loc) or loc.field_path or None)}
                for i, loc in enumerate(finding.locations[1:], start=1)
            ]
        if suppressed is not None:
            by = suppressed.by
            suppression: dict[str, Any] = {"kind": "inSource" if by.kind.in_source else "external",
                                           "status": "accepted"}
            if by.reason:
                suppression["justification"] = by.reason
            if by.file is not None:
                suppression["location"] = self.location(Location(file=by.file, position=by.position))
            suppression["properties"] = {"form": by.kind.value}
            out["suppressions"] = [suppression]
        return out


def _fingerprint(finding: Finding) -> str:
    """Stable across line moves: rule, file, object, field and message, not the position."""
    primary = finding.primary
    parts = [finding.rule, primary.file or "", _object_name(primary) or "", primary.field_path,
             finding.message]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def build(run: RunResult, namer: PathNamer | None = None) -> dict[str, Any]:
    """The SARIF log as a JSON-ready dict (one run)."""
    namer = namer or PathNamer()
    builder = _Builder(run, namer)
    results = [builder.result(f) for f in run.findings]
    if run.show_suppressed:
        results += [builder.result(s.finding, s) for s in run.suppressed]
    invocation: dict[str, Any] = {"executionSuccessful": run.successful}
    if run.notifications:
        invocation["toolExecutionNotifications"] = [
            {"level": "error" if n.level == "error" else "warning", "message": {"text": _sentence(n.message)}}
            for n in run.notifications
        ]
    root = Path(namer.root).as_uri().rstrip("/") + "/"
    driver: dict[str, Any] = {"name": TOOL_NAME, "version": _tool_version(),
                              "semanticVersion": _tool_version()}
    information = _information_uri()
    if information is not None:
        driver["informationUri"] = information
    return {
        "$schema": SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {**driver, "rules": builder.rules}},
            "automationDetails": {"id": f"{TOOL_NAME}/{run.command}/"},
            "originalUriBaseIds": {BASE_ID: {"uri": root}},
            "columnKind": "unicodeCodePoints",
            "invocations": [invocation],
            "results": results,
        }],
    }


def render(run: RunResult) -> str:
    return json.dumps(build(run), indent=2, ensure_ascii=False)

