"""Running the installed `dra-affinity` as CI and pre-commit do: chosen cwd, env and stdin."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

from tests.cli import REPO, SCRIPT, Run

SCHEMA = Path(__file__).with_name("data") / "sarif-schema-2.1.0.json"
_CI_VARIABLES = ("GITHUB_ACTIONS", "GITHUB_WORKSPACE", "GITHUB_WORKFLOW", "CI_PROJECT_DIR")


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        stdin: str | None = None) -> Run:
    """The console script with a clean CI environment plus `env` (the runner's own CI vars dropped)."""
    assert SCRIPT.exists(), f"console script not installed at {SCRIPT}"
    environ = {k: v for k, v in os.environ.items() if k not in _CI_VARIABLES}
    environ.update(env or {})
    proc = subprocess.run([str(SCRIPT), *args], input=stdin.encode() if stdin is not None else None,
                          capture_output=True, cwd=cwd or REPO, env=environ, timeout=120)
    result = Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    assert "Traceback" not in result.err, result.err
    return result


def write(path: Path, text: str) -> Path:
    """Write dedented YAML (tests state line numbers against what they write)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def sarif_validator() -> Any:
    from jsonschema import Draft7Validator

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)


def assert_valid_sarif(log: dict[str, Any]) -> None:
    """Valid against the official schema, and every artifact URI a valid URI reference.

    jsonschema checks `format: uri` only with an optional package, so URIs are
    checked here against RFC 3986's character set (no spaces, no raw backslashes).
    """
    import re

    errors = sorted(sarif_validator().iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, [(list(e.absolute_path), e.message) for e in errors[:5]]
    uri = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]+$")
    for found in _values(log, "uri"):
        assert uri.match(found), found


def _values(node: Any, key: str) -> list[Any]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == key] + [x for v in node.values() for x in _values(v, key)]
    if isinstance(node, list):
        return [x for v in node for x in _values(v, key)]
    return []


SLICE = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: {name}
spec:
  driver: net.example.com
  nodeName: node-a
  pool: {{name: {pool}, generation: 1, resourceSliceCount: 1}}
  sharingAffinity:
    - name: subnet
      expression: |
        has(object.spec) ?
          "%s".format([object.spec.subnet]) : ""
"""
"""A slice with two warnings: SA202 on the `expression` key (11:7) and SA201 inside the block
scalar, at `object.spec.subnet` (13:24: expression line 2, column 16, mapped to the file)."""

DRY_RUN = """
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: meta
spec:
  driver: net.example.com
  nodeName: node-a
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  sharingAffinity:
    - name: subnet
      expression: object.subnet
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: pod-a
  namespace: ml
spec:
  devices:
    requests:
      - name: nic
        exactly:
          deviceClassName: nic
    config:
      - requests: ["nic"]
        opaque:
          driver: net.example.com
          parameters: {kind: Other}
"""
"""A slice whose unguarded extractor (line 11) fails on the claim's config (line 25): slice-error."""
