"""The repository's root is the package `dra_affinity`; each product folder is one of its packages.

`setup.py` installs `policies/` as `dra_affinity.policies`, `lint/` as `dra_affinity.lint`, and
so on: the root plays the part of `dra_affinity`. The folders import each other relatively
(`from ...policies.core.findings import Finding` in `lint/commands/`), which names the same
module installed or not, and which a reader, an editor or an import-graph tool resolves by
walking folders alone: this file marks the root as the package those imports climb to. It is
never installed (the wheel's `dra_affinity` is the namespace package the folders make) and
defines nothing.
"""
