"""`dra-affinity certs generate|rotate`: the webhook's CA and serving certificate.

stdout carries only the machine-usable result — the base64 `caBundle` for the
ValidatingWebhookConfiguration, or with `--secret` the Secret manifest — so
`CA_BUNDLE=$(dra-affinity certs generate ...)` works; what was written goes to stderr.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ...webhook.certs import CertSet

_KEY_TYPES = ("ecdsa-p256", "rsa-2048")


def _report(written: list[Path], names: tuple[str, ...], not_after: dt.datetime,
            kept: tuple[Path, ...] = ()) -> None:
    for path in written:
        click.echo(f"wrote {path} (mode {path.stat().st_mode & 0o777:o})", err=True)
    unchanged = [p.name for p in kept if p not in written]
    if unchanged:
        click.echo(f"unchanged: {', '.join(unchanged)} (same CA)", err=True)
    click.echo(f"serving certificate for {', '.join(names)}; valid until {not_after:%Y-%m-%d}",
               err=True)


def _ip_addresses(values: tuple[str, ...]) -> tuple[str, ...]:
    import ipaddress

    for value in values:
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise click.BadParameter(f"{value!r} is not an IPv4 or IPv6 address", param_hint="--ip") from None
    return values


def _emit(cert_set: object, secret: str | None, namespace: str) -> None:
    from ...webhook.certs import CertSet, secret_manifest

    assert isinstance(cert_set, CertSet)
    if secret:
        click.echo(secret_manifest(cert_set, secret, namespace), nl=False)
        click.echo(f"caBundle: {cert_set.ca_bundle_base64()}", err=True)
    else:
        click.echo(cert_set.ca_bundle_base64())


def _write(command: str, cert_set: CertSet, out_dir: Path) -> list[Path]:
    """`write_dir`, a directory that cannot be written being the user's to fix (exit 2)."""
    from ...webhook import certs as c

    try:
        return c.write_dir(cert_set, out_dir)
    except OSError as error:
        click.echo(f"dra-affinity certs {command}: {out_dir}: cannot write: {error.strerror or error}",
                   err=True)
        sys.exit(2)


@click.group("certs")
def certs() -> None:
    """Create and rotate the webhook's CA and serving certificate (kubernetes.io/tls layout)."""


def _validity_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--days, --ca-days and --key-type, as `generate` and `rotate` both take them."""
    for option in reversed((
        click.option("--days", type=click.IntRange(1, 3650), default=365, show_default=True,
                     help="Validity of the serving certificate."),
        click.option("--ca-days", type=click.IntRange(1, 36500), default=3650, show_default=True,
                     help="Validity of the CA."),
        click.option("--key-type", type=click.Choice(_KEY_TYPES), default="ecdsa-p256",
                     show_default=True, help="Key algorithm of the new keys."),
    )):
        command = option(command)
    return command


@certs.command("generate", short_help="A new CA and a serving certificate for <service>.<namespace>.svc.")
@click.option("--service", required=True, help="Name of the webhook's Service.")
@click.option("--namespace", required=True, help="Namespace of the Service.")
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write ca.crt, ca.key, tls.crt, tls.key here (keys mode 0600).")
@click.option("--secret", metavar="NAME", help="Print a kubernetes.io/tls Secret manifest named NAME.")
@click.option("--cluster-domain", default="cluster.local", show_default=True,
              help="Cluster DNS domain of the Service's names in the certificate.")
@click.option("--dns-name", "extra_dns", multiple=True, help="Extra DNS name for the serving certificate.")
@click.option("--ip", "ips", multiple=True, metavar="ADDRESS",
              help="IP address for the serving certificate (an IP SAN), e.g. 127.0.0.1 for a local "
                   "`curl https://127.0.0.1:8443` smoke test; repeatable.")
@_validity_options
@click.option("--force", is_flag=True, help="Overwrite existing files in --out-dir.")
def generate(service: str, namespace: str, out_dir: Path | None, secret: str | None, cluster_domain: str,
             extra_dns: tuple[str, ...], ips: tuple[str, ...], days: int, ca_days: int, key_type: str,
             force: bool) -> None:
    """A new CA and a serving certificate for <service>.<namespace>.svc (and its other names).

    Prints the base64 caBundle (or, with --secret, the Secret manifest on stdout and the
    caBundle on stderr). Keep ca.key: `certs rotate` signs the next certificate with it.

    Exit code 0; 2 on usage errors or files that cannot be written.
    """
    from ...webhook import certs as c

    if out_dir is None and not secret:
        raise click.UsageError("give --out-dir, --secret, or both")
    as_ip = [n for n in extra_dns if _is_ip(n)]
    if as_ip:
        raise click.BadParameter(f"{as_ip[0]!r} is an IP address: give it with --ip (a DNS name SAN "
                                 "holding an address matches no client)", param_hint="--dns-name")
    ips = _ip_addresses(ips)
    if out_dir is not None and (out_dir / c.TLS_CRT).exists() and not force:
        raise click.UsageError(f"{out_dir / c.TLS_CRT} exists: use `certs rotate`, or --force to replace")
    cert_set = c.generate(service, namespace, cluster_domain=cluster_domain, extra_dns_names=extra_dns,
                          ip_addresses=ips,
                          validity=dt.timedelta(days=days), ca_validity=dt.timedelta(days=ca_days),
                          key_type="rsa-2048" if key_type == "rsa-2048" else "ecdsa-p256")
    if out_dir is not None:
        _report(_write("generate", cert_set, out_dir), (*cert_set.dns_names, *cert_set.ip_addresses),
                cert_set.serving.certificate.not_valid_after_utc)
    elif secret:
        click.echo("note: without --out-dir the CA key is not kept; rotation will need a new CA",
                   err=True)
    _emit(cert_set, secret, namespace)


@certs.command("rotate")
@click.option("--out-dir", required=True, type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="Directory written by `certs generate` (rewritten in place, atomically per file).")
@click.option("--new-ca", is_flag=True,
              help="Also make a new CA; the old one stays in ca.crt until it expires (overlap).")
@click.option("--secret", metavar="NAME", help="Print a kubernetes.io/tls Secret manifest named NAME.")
@click.option("--namespace", help="Namespace of the --secret manifest (default: from <svc>.<ns>.svc).")
@_validity_options
def rotate(out_dir: Path, new_ca: bool, secret: str | None, namespace: str | None, days: int,
           ca_days: int, key_type: str) -> None:
    """Issue a new serving certificate for the same DNS names.

    Signed by the existing CA when ca.key is present and the CA outlives the new
    certificate; otherwise (or with --new-ca) by a new CA that is added to ca.crt in front of
    the old one. With a new CA, publish the printed caBundle (it trusts old and new) to the
    webhook configuration before the new files reach the webhook pods.

    Exit code 0; 2 on usage errors or a directory that cannot be read or written.
    """
    from ...webhook import certs as c

    current = c.read_dir(out_dir)
    if isinstance(current, c.CertProblem):
        click.echo(f"dra-affinity certs rotate: {current.message}", err=True)
        sys.exit(2)
    rotated = c.rotate(current, new_ca=new_ca, validity=dt.timedelta(days=days),
                       ca_validity=dt.timedelta(days=ca_days),
                       key_type="rsa-2048" if key_type == "rsa-2048" else "ecdsa-p256")
    if rotated.ca is not None and current.ca is not None and \
            rotated.ca.certificate != current.ca.certificate:
        click.echo(f"new CA; ca.crt now holds {len(rotated.bundle)} CA certificate(s)", err=True)
    _report(_write("rotate", rotated, out_dir), (*rotated.dns_names, *rotated.ip_addresses),
            rotated.serving.certificate.not_valid_after_utc, kept=(out_dir / c.CA_KEY, out_dir / c.CA_CRT))
    _emit(rotated, secret, namespace or _namespace_of(rotated.dns_names))


def _is_ip(value: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _namespace_of(dns_names: tuple[str, ...]) -> str:
    for name in dns_names:
        parts = name.split(".")
        if len(parts) >= 3 and parts[2] == "svc":
            return parts[1]
    return "default"
