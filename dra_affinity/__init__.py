"""The map from import names to folders: `dra_affinity.<folder>` is the folder `<folder>/` here.

The repository keeps the product's layout — `policies/`, `kube/`, `sources/`, `exporter/`,
`lint/`, `webhook/` at the top — while the installed name of each is `dra_affinity.<folder>`
(`setup.py` maps the folders; the wheel has no other top-level name). This package makes the
same name hold without installing: from a clone's root, `python -c "import
dra_affinity.policies"` finds `./policies/` through `__path__` below. Inside the folders the
imports are relative, so they need no map (the root's own `__init__.py` says why). It is never
installed: an installed `dra_affinity` is the namespace package the folders make, and the
imports resolve to the same files either way.
"""

from pathlib import Path as _Path

FOLDERS = ("policies", "kube", "sources", "exporter", "lint", "webhook")
"""The folders that install as `dra_affinity.<folder>`, lowest first (ARCHITECTURE.md)."""

__path__.append(str(_Path(__file__).resolve().parent.parent))
