"""The map from import names to folders: `dra_affinity.<folder>` is the folder `<folder>/` here.

The repository keeps the product's layout — `policies/`, `kube/`, `sources/`, `exporter/`,
`lint/`, `webhook/` at the top — while every import says `dra_affinity.<folder>`, the installed
name (`setup.py` maps the folders; the wheel has no other top-level name). This package makes
the same mapping hold without installing: from a clone's root, `python -c "import
dra_affinity.policies"` finds `./policies/` through `__path__` below, and so does an editor or
an import-graph tool that has no virtual environment. It is never installed: an installed
`dra_affinity` is the namespace package the folders make, and the imports resolve to the same
files either way.
"""

from pathlib import Path as _Path

FOLDERS = ("policies", "kube", "sources", "exporter", "lint", "webhook")
"""The folders that install as `dra_affinity.<folder>`, lowest first (ARCHITECTURE.md)."""

__path__.append(str(_Path(__file__).resolve().parent.parent))
