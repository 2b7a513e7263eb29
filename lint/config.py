"""The project's settings file: `.dra-affinity.yaml`, or `[tool.dra-affinity]` in `pyproject.toml`.

A driver repository states once what every run (a developer's, pre-commit's, CI's)
should check, instead of repeating flags in three places. The file is found by
walking up from the working directory (the first directory holding
`.dra-affinity.yaml`, `.dra-affinity.yml` or a `pyproject.toml` with a
`[tool.dra-affinity]` table wins); `--config FILE` names one explicitly.

Precedence is flags > config > defaults, decided per option by whether the flag
was given on the command line (`click`'s parameter source), so a config value is
never overridden by a flag's default. Every path in the file (ignore globs,
output files) is relative to the directory holding the file.

Errors are values: `load_config` returns a `ConfigProblem` naming file, line and key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..policies.core.findings import Severity
from ..policies.core.limits import VersionError, parse_kubernetes_version
from ..policies.core.source import FieldPath, Position, Source, render_path

YAML_NAMES = (".dra-affinity.yaml", ".dra-affinity.yml")
PYPROJECT = "pyproject.toml"
TOOL_TABLE = "dra-affinity"
COMMANDS = ("lint", "dry-run", "test")
SEVERITIES = ("error", "warning", "info")

_SETTINGS_KEYS = ("format", "fail-on", "strict", "fail-if-no-resources", "show-suppressed")
_TOP_KEYS = ("kubernetes-version", "rules", "ignore", "exclude", *_SETTINGS_KEYS, *COMMANDS)
_COMMAND_KEYS = {"lint": _SETTINGS_KEYS, "dry-run": _SETTINGS_KEYS, "test": (*_SETTINGS_KEYS, "suites")}
"""What each command's section may set: the report settings, and for `test` the suites to run."""
_RULES_KEYS = ("enable", "disable", "severity")
_IGNORE_KEYS = ("rule", "rules", "paths", "objects", "reason")


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """Why the settings file cannot be used; the CLI prints it and exits 2."""

    message: str


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """One report to write: a format, and a file (None: standard output)."""

    format: str
    output: str | None = None


@dataclass(frozen=True, slots=True)
class Ignore:
    """A config-file suppression: rules, limited to path globs and object globs, with a reason."""

    rules: tuple[str, ...]
    paths: tuple[str, ...] = ()
    objects: tuple[str, ...] = ()
    reason: str = ""
    file: str | None = None
    position: Position | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    """The command options a config file may set (None: not set, the flag's default applies)."""

    formats: tuple[OutputSpec, ...] | None = None
    fail_on: str | None = None
    strict: bool | None = None
    fail_if_no_resources: bool | None = None
    show_suppressed: bool | None = None

    def over(self, base: Settings) -> Settings:
        """These settings, falling back to `base` for anything unset (a command section over the top)."""
        mine = {f: getattr(self, f) for f in Settings.__slots__}
        return Settings(**{f: v if v is not None else getattr(base, f) for f, v in mine.items()})


@dataclass(frozen=True, slots=True)
class Config:
    """Everything a settings file says; `Config()` is "no file": all defaults."""

    path: str | None = None
    root: Path = field(default_factory=Path.cwd)
    kubernetes_version: str | None = None
    enable: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    severity: Mapping[str, Severity] = field(default_factory=dict)
    ignores: tuple[Ignore, ...] = ()
    exclude: tuple[str, ...] = ()
    """Gitignore-style patterns, relative to `root`, that no command reads (`walk.WalkFilter`)."""
    settings: Settings = field(default_factory=Settings)
    commands: Mapping[str, Settings] = field(default_factory=dict)
    suites: tuple[str, ...] = ()
    """`test: suites:`, relative to `root`: what `test` runs when given no SUITE (the pre-commit
    hook then needs no `args`, and `pre-commit try-repo`, which cannot pass any, runs it too)."""

    def for_command(self, command: str) -> Settings:
        return self.commands.get(command, Settings()).over(self.settings)

    def with_rules(self, enable: Sequence[str] | None, disable: Sequence[str] | None) -> Config:
        """Command-line `--enable`/`--disable` replace the file's rule selection as a whole.

        Flags > config: with either flag given, both of the file's lists are dropped, so
        `--enable SA201` runs SA201 even if the file disables it.
        """
        if not enable and not disable:
            return self
        return replace(self, enable=tuple(r.upper() for r in enable or ()),
                       disable=tuple(r.upper() for r in disable or ()))

    def disabled_rules(self, known: Sequence[str]) -> frozenset[str]:
        """Rule ids that must not run: outside `enable` (when given) or inside `disable`.

        Entries are ids or id prefixes (`SA2` is every advisory), matched case-insensitively.
        """

        def hit(rule_id: str, patterns: Sequence[str]) -> bool:
            return any(rule_id.startswith(p.upper()) for p in patterns)

        return frozenset(
            r for r in known if (self.enable and not hit(r, self.enable)) or hit(r, self.disable)
        )

    def resolve(self, relative: str) -> str:
        """A path written in the file, as seen from the working directory."""
        if os.path.isabs(relative):
            return relative
        joined = self.root / relative
        try:
            return os.path.relpath(joined)
        except ValueError:  # another drive (Windows)
            return str(joined)


def find_config(start: Path) -> Path | None:
    """The settings file governing `start`: the nearest one in it or any parent directory."""
    for directory in (start, *start.parents):
        for name in YAML_NAMES:
            candidate = directory / name
            if candidate.is_file():
                return candidate
        pyproject = directory / PYPROJECT
        if pyproject.is_file() and _has_tool_table(pyproject):
            return pyproject
    return None


def _has_tool_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if TOOL_TABLE not in text:  # cheap test before parsing
        return False
    import tomllib  # a start-up cost: paid only where a pyproject.toml may hold our table

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return True  # ours, and broken: load_config says where
    tool = data.get("tool")
    return isinstance(tool, dict) and TOOL_TABLE in tool


def load_config(explicit: str | None = None, *, cwd: Path | None = None) -> Config | ConfigProblem:
    """The explicit file (`--config`), else the discovered one, else defaults."""
    base = cwd or Path.cwd()
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            return ConfigProblem(f"{explicit}: no such config file")
    else:
        found = find_config(base)
        if found is None:
            return Config(root=base)
        path = found
    if path.name == PYPROJECT or path.suffix == ".toml":
        return _load_toml(path)
    return _load_yaml(path)


def _load_toml(path: Path) -> Config | ConfigProblem:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        return ConfigProblem(f"{path}: cannot read: {error}")
    except tomllib.TOMLDecodeError as error:
        return ConfigProblem(f"{path}: invalid TOML: {error}")
    if path.name == PYPROJECT:
        tool = data.get("tool", {})
        section = tool.get(TOOL_TABLE) if isinstance(tool, dict) else None
        if not isinstance(section, dict):
            return ConfigProblem(f"{path}: no [tool.{TOOL_TABLE}] table")
        data = section
    return _Parser(str(path), Source(file=str(path))).config(data, path.parent)


def _load_yaml(path: Path) -> Config | ConfigProblem:
    from ..sources.loader import load_paths

    loaded = load_paths([str(path)])
    if loaded.usage_errors:
        return ConfigProblem(loaded.usage_errors[0])
    if loaded.findings:
        finding = loaded.findings[0]
        pos = finding.primary.position
        where = f"{path}:{pos.line}:{pos.column}" if pos else str(path)
        return ConfigProblem(f"{where}: {finding.message}")
    if not loaded.documents:
        return Config(path=str(path), root=path.parent)  # an empty file: all defaults
    if len(loaded.documents) > 1:
        return ConfigProblem(f"{path}: a config file holds one YAML document")
    document = loaded.documents[0]
    return _Parser(str(path), document.source).config(document.data, path.parent)


class _Invalid(Exception):
    """Raised inside `_Parser` only, turned into a `ConfigProblem` at its edge."""


@dataclass(frozen=True, slots=True)
class _Parser:
    """Validates the decoded file; every message names file:line:col and the key path."""

    file: str
    source: Source

    def config(self, data: Any, root: Path) -> Config | ConfigProblem:
        try:
            return self._config(data, root)
        except _Invalid as error:
            return ConfigProblem(str(error))

    def fail(self, path: FieldPath, message: str) -> _Invalid:
        pos = self.source.locate(path)
        where = f"{self.file}:{pos.line}:{pos.column}" if pos else self.file
        key = render_path(path) or "<config>"
        return _Invalid(f"{where}: {key}: {message}")

    def _mapping(self, value: Any, path: FieldPath, allowed: Sequence[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, "must be a mapping")
        for key in value:
            if key not in allowed:
                from ..policies.model.schema import unknown_field_message

                where = self.source.locate((*path, key))
                at = f"{self.file}:{where.line}:{where.column}" if where else self.file
                message = unknown_field_message(path, str(key), allowed)
                if "did you mean" not in message:
                    message += f"; expected one of {', '.join(allowed)}"
                raise _Invalid(f"{at}: {message}")
        return value

    def _config(self, data: Any, root: Path) -> Config:
        if data is None:
            return Config(path=self.file, root=root)
        top = self._mapping(data, (), _TOP_KEYS)
        rules = self._mapping(top.get("rules") or {}, ("rules",), _RULES_KEYS)
        version = top.get("kubernetes-version")
        if isinstance(version, float):  # YAML/TOML read 1.30 as the number 1.3
            raise self.fail(("kubernetes-version",), f'quote the version ("{version}" is read as a '
                            'number, so "1.30" would become 1.3)')
        if version is not None and not isinstance(version, str):
            raise self.fail(("kubernetes-version",), 'must be a version such as "1.37"')
        if version is not None:

            try:
                parse_kubernetes_version(str(version))
            except VersionError as error:
                raise self.fail(("kubernetes-version",), str(error)) from None
        sections = {name: self._mapping(top[name], (name,), _COMMAND_KEYS[name])
                    for name in COMMANDS if top.get(name) is not None}
        commands = {name: self._settings(section, (name,)) for name, section in sections.items()}
        return Config(
            path=self.file,
            root=root,
            kubernetes_version=str(version) if version is not None else None,
            enable=self._rule_patterns(rules.get("enable"), ("rules", "enable")),
            disable=self._rule_patterns(rules.get("disable"), ("rules", "disable")),
            severity=self._severities(rules.get("severity"), ("rules", "severity")),
            ignores=self._ignores(top.get("ignore"), ("ignore",)),
            exclude=self._strings(top.get("exclude"), ("exclude",)),
            settings=self._settings(top, ()),
            commands=commands,
            suites=self._strings(sections.get("test", {}).get("suites"), ("test", "suites")),
        )

    def _strings(self, value: Any, path: FieldPath) -> tuple[str, ...]:
        if value is None:
            return ()
        if isinstance(value, str):
            return (value,)
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(path, "must be a string or a list of non-empty strings")
        return tuple(value)

    def _rule_patterns(self, value: Any, path: FieldPath) -> tuple[str, ...]:
        from ..policies.rules.catalog import catalog

        patterns = tuple(p.upper() for p in self._strings(value, path))
        known = list(catalog())
        for i, pattern in enumerate(patterns):
            if not any(r.startswith(pattern) for r in known):
                raise self.fail((*path, i), f"{pattern!r} is neither a rule id nor the prefix of one")
        return patterns

    def _severities(self, value: Any, path: FieldPath) -> dict[str, Severity]:
        from ..policies.rules.catalog import catalog

        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(path, "must map rule ids to error, warning or info")
        out: dict[str, Severity] = {}
        for rule, level in value.items():
            if str(rule).upper() not in catalog():
                raise self.fail((*path, rule), "unknown rule id")
            if level not in SEVERITIES:
                raise self.fail((*path, rule), "must be error, warning or info")
            out[str(rule).upper()] = Severity.parse(level)
        return out

    def _ignores(self, value: Any, path: FieldPath) -> tuple[Ignore, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(path, "must be a list of {rules, paths, objects, reason}")
        out: list[Ignore] = []
        for i, entry in enumerate(value):
            at: FieldPath = (*path, i)
            item = self._mapping(entry, at, _IGNORE_KEYS)
            rules = self._strings(item.get("rule"), (*at, "rule")) + self._strings(
                item.get("rules"), (*at, "rules"))
            reason = item.get("reason", "")
            if not isinstance(reason, str):
                raise self.fail((*at, "reason"), "must be a string")
            out.append(Ignore(
                rules=tuple(r.upper() for r in rules),
                paths=self._strings(item.get("paths"), (*at, "paths")),
                objects=self._strings(item.get("objects"), (*at, "objects")),
                reason=reason.strip(),
                file=self.file,
                position=self.source.locate(at),
            ))
        return tuple(out)

    def _settings(self, data: Mapping[str, Any], path: FieldPath) -> Settings:
        fail_on = data.get("fail-on")
        if fail_on is not None and fail_on not in SEVERITIES:
            raise self.fail((*path, "fail-on"), "must be error, warning or info")
        flags: dict[str, bool | None] = {}
        for key in ("strict", "fail-if-no-resources", "show-suppressed"):
            flag = data.get(key)
            if flag is not None and not isinstance(flag, bool):
                raise self.fail((*path, key), "must be true or false")
            flags[key] = flag
        return Settings(
            formats=self._formats(data.get("format"), (*path, "format")),
            fail_on=fail_on,
            strict=flags["strict"],
            fail_if_no_resources=flags["fail-if-no-resources"],
            show_suppressed=flags["show-suppressed"],
        )

    def _formats(self, value: Any, path: FieldPath) -> tuple[OutputSpec, ...] | None:
        if value is None:
            return None
        items = value if isinstance(value, list) else [value]
        out: list[OutputSpec] = []
        for i, item in enumerate(items):
            at: FieldPath = (*path, i) if isinstance(value, list) else path
            if isinstance(item, str):
                out.append(OutputSpec(item))
                continue
            spec = self._mapping(item, at, ("format", "output"))
            name, output = spec.get("format"), spec.get("output")
            if not isinstance(name, str):
                raise self.fail(at, "needs `format:` (text, json, sarif, junit, github)")
            if output is not None and not isinstance(output, str):
                raise self.fail((*at, "output"), "must be a file name")
            out.append(OutputSpec(name, output))
        if not out:
            raise self.fail(path, "names no format")
        return tuple(out)
