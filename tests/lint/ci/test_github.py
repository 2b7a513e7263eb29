"""`--format github`: one workflow command per finding, at the right line, escaped as Actions wants."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from dra_affinity.lint.reporters.github_reporter import escape_data, escape_property

from tests.lint.ci.support import cli, write

COMMAND = re.compile(r"^::(?P<level>error|warning|notice) (?P<props>[^:]*)::(?P<message>.*)$")

BROKEN = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: broken
spec:
  driver: net.example.com
  nodeName: node-a
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  sharingAffinity:
    - name: subnet
      expression: 'object.?subnet.orValue("") +'
    - name: subnet
      expression: '"50%, or more: " + object.?x.orValue("")'
"""


def _commands(text: str) -> list[dict[str, str]]:
    out = []
    for line in text.splitlines():
        match = COMMAND.match(line)
        if match:
            props = dict(p.split("=", 1) for p in match.group("props").split(","))
            out.append({"level": match.group("level"), **props, "message": match.group("message")})
    return out


def test_annotations_point_at_the_text_reports_lines(tmp_path: Path) -> None:
    write(tmp_path / "bad.yaml", BROKEN)
    text = cli("lint", "bad.yaml", cwd=tmp_path).out.splitlines()
    github = cli("lint", "--format", "github", "bad.yaml", cwd=tmp_path)
    assert github.code == 1
    commands = _commands(github.out)
    located = [(c["file"], c["line"], c["col"], unquote(c["title"]).split()[0]) for c in commands]
    expected = []
    for line in text:
        match = re.match(r"^(\S+):(\d+):(\d+): (\S+) \w+: ", line)
        if match:
            expected.append(match.groups())
    assert located == expected
    assert ("bad.yaml", "12", "7", "SA102") in located  # the duplicate name, on its own line
    # every line of stdout is a workflow command except the closing summary
    assert len(commands) == len(github.out.splitlines()) - 1
    assert re.match(r"\d+ errors?, \d+ warnings?", github.out.splitlines()[-1])


def test_messages_and_properties_are_escaped(tmp_path: Path) -> None:
    write(tmp_path / "bad.yaml", BROKEN)
    out = cli("lint", "--format", "github", "--fail-on", "info", "bad.yaml", cwd=tmp_path).out
    compile_error = next(c for c in _commands(out) if "SA106" in c["title"])
    assert compile_error["level"] == "error"
    assert compile_error["title"] == "SA106 compile-error"
    # the compile error spans several lines: one command line, newlines encoded
    assert "%0A" in compile_error["message"] and "\n" not in compile_error["message"]
    assert "%25" not in compile_error["title"]
    for line in out.splitlines()[:-1]:
        props = COMMAND.match(line)
        assert props is not None, line


def test_escaping_follows_the_actions_toolkit() -> None:
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%d\n") == "a%3Ab%2Cc%25d%0A"
    assert escape_data("a:b,c") == "a:b,c"  # data keeps `:` and `,`


def test_suppressed_findings_become_notices_on_request(tmp_path: Path) -> None:
    text = BROKEN.replace(
        "    - name: subnet\n      expression: '\"50%",
        "    - name: subnet  # dra-affinity: ignore SA102 -- testing suppressed notices\n"
        "      expression: '\"50%")
    write(tmp_path / "bad.yaml", text)
    hidden = _commands(cli("lint", "--format", "github", "bad.yaml", cwd=tmp_path).out)
    assert not any("SA102" in c["title"] for c in hidden)
    shown = _commands(cli("lint", "--format", "github", "--show-suppressed", "bad.yaml", cwd=tmp_path).out)
    notice = next(c for c in shown if "SA102" in c["title"])
    assert notice["level"] == "notice" and notice["title"].startswith("suppressed SA102")
    assert "testing suppressed notices" in notice["message"]


def test_files_are_named_from_the_workspace_root(tmp_path: Path) -> None:
    write(tmp_path / "deploy" / "bad.yaml", BROKEN)
    out = cli("lint", "--format", "github", "bad.yaml", cwd=tmp_path / "deploy",
              env={"GITHUB_WORKSPACE": str(tmp_path)}).out
    assert {c["file"] for c in _commands(out)} == {"deploy/bad.yaml"}
