"""deploy/README.md can be followed: its install and rotation steps run as written (up to the
`kubectl apply`, which needs a cluster), and every command it shows exists."""

from __future__ import annotations

import base64
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import kubernetes_validate
import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from dra_affinity.lint.cli import main

from tests.deploy.manifests import DEPLOY, Obj, find, kubectl, render

README = DEPLOY / "README.md"
SERVICE_DNS = "dra-affinity-webhook.dra-affinity.svc"


def readme_block(tag: str) -> str:
    """The ```sh block right after `<!-- tested: TAG -->`."""
    match = re.search(rf"<!-- tested: {re.escape(tag)} -->\n```sh\n(.*?)\n```", README.read_text(), re.DOTALL)
    assert match, f"no tested block {tag!r} in {README}"
    return match.group(1)


def shell_blocks() -> list[str]:
    return re.findall(r"^[ \t]*```sh\n(.*?)\n[ \t]*```", README.read_text(), re.DOTALL | re.MULTILINE)


def run_block(script: str, cwd: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{script}\n--- stderr:\n{proc.stderr}"


def _certificates(pem: bytes) -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(pem)


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    """A copy of deploy/ where the README's steps may create deploy/overlays/local."""
    kubectl()
    shutil.copytree(DEPLOY, tmp_path / "deploy", ignore=shutil.ignore_patterns("local"))
    return tmp_path


def _rendered_local(checkout: Path) -> list[Obj]:
    objects = render(checkout / "deploy" / "overlays" / "local")
    for obj in objects:
        kubernetes_validate.validate(obj, "1.37", strict=True)
    return objects


def test_local_overlay_install_and_rotation_steps_work(checkout: Path) -> None:
    run_block(readme_block("local-overlay"), checkout)
    local = checkout / "deploy" / "overlays" / "local"
    objects = _rendered_local(checkout)

    ca_pem = (local / "certs" / "ca.crt").read_bytes()
    bundle = (local / "ca-bundle.txt").read_text().strip()
    (webhook,) = find(objects, "ValidatingWebhookConfiguration")["webhooks"]
    assert webhook["clientConfig"]["caBundle"] == bundle
    assert base64.b64decode(bundle) == ca_pem
    assert webhook["failurePolicy"] == "Ignore"  # the first rollout keeps the fail-open component

    secret = find(objects, "Secret")
    assert secret["type"] == "kubernetes.io/tls" and secret["metadata"]["namespace"] == "dra-affinity"
    tls_crt = base64.b64decode(secret["data"]["tls.crt"])
    assert tls_crt == (local / "certs" / "tls.crt").read_bytes()
    pod = find(objects, "Deployment")["spec"]["template"]["spec"]
    assert secret["metadata"]["name"] in [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v]
    assert pod["containers"][0]["image"] == "registry.example.com/dra-affinity:0.1.0"

    # What the API server will check: the serving certificate is for the Service and chains to
    # the bundle it was given.
    (leaf,) = _certificates(tls_crt)[:1]
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert SERVICE_DNS in names.get_values_for_type(x509.DNSName)
    usages = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usages
    leaf.verify_directly_issued_by(_certificates(ca_pem)[0])

    run_block(readme_block("rotate"), checkout)
    rotated = _rendered_local(checkout)
    assert (local / "ca-bundle.txt").read_text().strip() == bundle  # same CA: nothing to publish
    new_crt = base64.b64decode(find(rotated, "Secret")["data"]["tls.crt"])
    assert new_crt != tls_crt
    _certificates(new_crt)[0].verify_directly_issued_by(_certificates(ca_pem)[0])


def _command_lines() -> list[str]:
    """The README's shell lines, continuations joined, heredoc bodies and comments dropped."""
    lines: list[str] = []
    for block in shell_blocks():
        heredoc: str | None = None
        for line in re.sub(r"\\\n\s*", " ", block).splitlines():
            if heredoc is not None:
                heredoc = None if line.strip() == heredoc else heredoc
                continue
            marker = re.search(r"<<'?(\w+)'?", line)
            heredoc = marker.group(1) if marker else None
            lines.append(line)
    return lines


def _commands(program: str) -> list[list[str]]:
    """Every `program ...` invocation in the README, without its redirections."""
    found = []
    for line in _command_lines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.commenters = "#"
        lexer.whitespace_split = True
        current: list[str] = []
        for token in [*lexer, ";"]:
            if token and set(token) <= set("&|;()<>"):
                if current[:1] == [program]:
                    found.append(current[1:])
                current = [] if token not in (">", "<", ">>") else ["<redirect>"]
            elif current[:1] != ["<redirect>"]:
                current.append(token)
    return found


def test_every_dra_affinity_command_in_the_readme_exists() -> None:
    commands = _commands("dra-affinity")
    assert len(commands) >= 5
    runner = CliRunner()
    for args in commands:
        result = runner.invoke(main, [*args, "--help"])
        assert result.exit_code == 0, f"dra-affinity {' '.join(args)}: {result.output}"


def test_every_kustomization_and_file_the_readme_applies_exists() -> None:
    for args in _commands("kubectl"):
        for flag in ("-k", "-f"):
            if flag in args:
                target = args[args.index(flag) + 1]
                if target in ("-", "deploy/overlays/local"):  # stdin; made by the tested steps
                    continue
                assert (DEPLOY.parent / target).exists(), f"kubectl {' '.join(args)}"
