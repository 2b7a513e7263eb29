"""`--format github`: GitHub Actions workflow commands, one annotation per finding.

`::error file=F,line=L,col=C,title=T::message` lines make the runner annotate the
pull request's diff at the finding's line. Chosen automatically when
`GITHUB_ACTIONS=true` and no format is given (yamllint's friendliest default,
peer-tools §A9). Values are escaped as the Actions toolkit does: `%`, CR and LF
everywhere, and `:` and `,` inside properties, so a message cannot end the command
early or start another one. Files are named relative to `$GITHUB_WORKSPACE`.
"""

from __future__ import annotations

from ...policies.core.findings import Finding, Severity
from ...policies.rules.catalog import catalog
from .paths import PathNamer
from .run import RunResult

_COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """A command's message: `%`, CR and LF percent-encoded."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value: as data, and `:` and `,`, which end a property, encoded too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _title(finding: Finding, prefix: str = "") -> str:

    rule = catalog().get(finding.rule)
    return f"{prefix}{finding.rule} {rule.slug}" if rule is not None else f"{prefix}{finding.rule}"


def annotation(finding: Finding, namer: PathNamer, *, command: str | None = None,
               prefix: str = "", note: str = "") -> str:
    """One workflow command for `finding` (`command` overrides the severity's)."""
    loc = finding.primary
    properties: list[tuple[str, str]] = []
    file = namer.relative(loc.file)
    if file is not None:
        properties.append(("file", file))
        if loc.position is not None:
            properties += [("line", str(loc.position.line)), ("col", str(loc.position.column))]
    properties.append(("title", _title(finding, prefix)))
    obj = loc.object
    subject = ""
    if obj is not None:
        name = f"{obj.namespace}/{obj.name}" if obj.namespace else (obj.name or "<unnamed>")
        subject = f"{obj.kind}/{name}: "
    where = "" if file is not None or loc.file is None else f"{loc.file}: "
    message = f"{where}{subject}{finding.message}{note}"
    for extra in finding.locations[1:]:
        position = f":{extra.position.line}:{extra.position.column}" if extra.position else ""
        message += f"\nalso at {extra.file or '<input>'}{position} {extra.field_path}".rstrip()
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::{command or _COMMANDS[finding.severity]} {props}::{escape_data(message)}"


def render(run: RunResult) -> str:
    namer = PathNamer()
    lines = [f"::{n.level} title=dra-affinity::{escape_data(n.message)}" for n in run.notifications]
    lines += [annotation(f, namer) for f in run.findings]
    if run.show_suppressed:
        for item in run.suppressed:
            why = item.by.reason or "no reason"
            reason = f" [suppressed by {item.by.kind.value} at {item.by.where()}: {why}]"
            lines.append(annotation(item.finding, namer, command="notice", prefix="suppressed ", note=reason))
    from ..terminal import current

    if run.summary and not current().quiet:  # -q: the annotations alone
        lines.append(run.summary)
    return "\n".join(lines)
