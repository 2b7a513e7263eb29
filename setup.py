"""Packaging glue pyproject.toml cannot express: the folders install under `dra_affinity`.

The repository keeps the product's layout (`policies/`, `kube/`, `sources/`, `exporter/`,
`lint/`, `webhook/` at the top), while the installed import names are `dra_affinity.policies`,
`dra_affinity.kube`, `dra_affinity.sources`, `dra_affinity.exporter`, `dra_affinity.lint` and
`dra_affinity.webhook`, so nothing generic lands at the top of
site-packages. `dra_affinity` itself is a PEP 420 namespace package: the wheel has no other
top-level name.
"""

from setuptools import find_packages, setup

FOLDERS = ("policies", "kube", "sources", "exporter", "lint", "webhook")

setup(
    packages=[f"dra_affinity.{name}" for name in find_packages(include=[f"{f}*" for f in FOLDERS])],
    package_dir={f"dra_affinity.{folder}": folder for folder in FOLDERS},
)
