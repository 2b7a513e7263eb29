"""Every speed layer can be switched off and the commands print the same bytes.

The end-to-end commands run through the installed console script over the shipped examples,
the tests' fixtures and generated inputs large enough to reach the size-gated layers (the
rapidyaml reader starts at 512 KiB): once with every layer on, once with
`DRA_AFFINITY_SPEED_LAYERS=none`, and a smaller set once with each layer off alone (`-name`).
The layers are read from `layers.LAYERS` after importing every module of the package, so a
layer declared tomorrow is switched off here without editing this file. Also checked: every
declaring module is in `lint.cli.LAYER_MODULES` (a spec naming a layer not imported yet finds it
there), and `docs/speed-layers.md` lists exactly the declared layers with their reasons.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest

from tests.cli import REPO, SCRIPT
from tests.test_architecture import FOLDERS

ENV = "DRA_AFFINITY_SPEED_LAYERS"

_DECLARED = """
import json, pkgutil, importlib, sys
import dra_affinity
from dra_affinity.policies.core import layers
for top in sys.argv[1:]:  # not dra_affinity.__path__: from a clone's root it holds the root itself
    package = importlib.import_module("dra_affinity." + top)
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
print(json.dumps({name: [layer.module, layer.why] for name, layer in layers.LAYERS.items()}))
"""


@cache
def declared() -> dict[str, tuple[str, str]]:
    """Every layer the package declares (name -> module, why), read in a fresh process that
    imports every module: this process may hold layers a test declared."""
    env = {k: v for k, v in os.environ.items() if k != ENV}
    out = subprocess.run([sys.executable, "-c", _DECLARED, *FOLDERS], capture_output=True,
                         text=True, check=True, env=env, timeout=120).stdout
    return {name: (module, why) for name, (module, why) in json.loads(out).items()}


# -- the commands -----------------------------------------------------------------------------

_EXTRACTION = ("examples/networking-node-a.yaml", "examples/claims.yaml", "examples/device-classes.yaml")
_DUMP = "examples/cluster/dump.yaml"
_WORKLOAD = ("--workload", "examples/capacity/nic-20-subnets.yaml", "examples/capacity/nic-pool.yaml")

EVERY: tuple[tuple[str, ...], ...] = (
    ("lint", "examples", "--format", "json"),
    ("lint", "examples", "--format", "sarif"),
    ("lint", "examples/pools/broken-pools.yaml", "--format", "json"),
    ("lint", "tests/data/cluster/resourceslices.json", "--format", "sarif"),
    ("dry-run", *_EXTRACTION),
    ("dry-run", *_EXTRACTION, "--format", "json"),
    ("dry-run", *_EXTRACTION, "--format", "sarif"),
    ("dry-run", "examples", "--format", "json"),
    ("simulate", "examples/rdma-pkey.yaml", "examples/kep-stories.yaml", "--format", "json"),
    ("simulate", "tests/data/simulate-diagnostics.yaml", "--format", "json"),
    ("simulate", *_WORKLOAD, "--compare", "--format", "json"),
    ("locks", _DUMP),
    ("locks", _DUMP, "--format", "json"),
    ("locks", _DUMP, "--format", "prometheus"),
    ("explain", "pod/web/frontend", _DUMP),
    ("explain", "team-c/e", _DUMP, "--format", "json"),
    ("test", "examples/suites/kep.yaml", "--format", "json"),
    ("test", "examples/suites/simulation.yaml", "--format", "json"),
    ("test", "examples/suites/capacity.yaml", "--format", "junit"),
    ("cel", "check", 'has(object.vlan) ? "%s".format([object.vlan]) : ""', "--object", "vlan: 100",
     "--format", "json"),
    ("pools", "examples", "--format", "json"),
)
"""Every command in the formats CI reads (text, json, sarif, junit, prometheus)."""

BIG = "{big}"
"""Stands for the generated inputs' folder (`big_inputs`)."""

LARGE: tuple[tuple[str, ...], ...] = (
    ("simulate", f"{BIG}/cluster/slices.yaml", f"{BIG}/cluster/classes.yaml", f"{BIG}/cluster/claims.yaml",
     "--summary", "--format", "json"),
    ("dry-run", f"{BIG}/cluster/slices.yaml", f"{BIG}/cluster/classes.yaml", f"{BIG}/cluster/claims.yaml",
     "--summary", "--format", "json"),
    ("locks", f"{BIG}/dump.yaml", "--format", "json"),
)
"""Inputs over 512 KiB of plain YAML, so the size-gated layers take part."""

EACH: tuple[tuple[str, ...], ...] = (
    ("lint", "examples", "--format", "sarif"),
    ("dry-run", *_EXTRACTION, "--format", "json"),
    ("simulate", "examples/rdma-pkey.yaml", "examples/kep-stories.yaml", "--format", "json"),
    ("explain", "team-c/e", _DUMP, "--format", "json"),
    LARGE[-1],
)
"""What runs with each layer off alone: the reading, extraction, scheduling and rendering
routes, and a large YAML dump (`locks`: every layer takes part)."""


@pytest.fixture(scope="module")
def big_inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The benchmarks' scheduler cluster at 1,200 claims and a 1,000-claim cluster dump, as YAML."""
    folder = tmp_path_factory.mktemp("big")
    subprocess.run([sys.executable, "-m", "bench.gen_slices", "--cluster", "1200", str(folder / "cluster")],
                   cwd=REPO, check=True, capture_output=True, timeout=120)
    subprocess.run([sys.executable, "bench/gen_cluster.py", str(folder / "dump.yaml"), "--devices", "100",
                    "--pools", "10", "--claims", "1000", "--pending", "10", "--seed", "1"],
                   cwd=REPO, check=True, capture_output=True, timeout=120)
    for name in ("cluster/claims.yaml", "dump.yaml"):
        assert (folder / name).stat().st_size >= 512 * 1024, name
    return folder


def _run(args: Sequence[str], spec: str) -> tuple[int, bytes, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"GITHUB_ACTIONS", "GITHUB_WORKSPACE"}}
    env[ENV] = spec
    proc = subprocess.run([str(SCRIPT), *args], capture_output=True, cwd=REPO, timeout=300, env=env)
    err = proc.stderr.decode(errors="replace")
    assert "Traceback" not in err, err
    return proc.returncode, proc.stdout, err


Runs = dict[tuple[str, tuple[str, ...]], tuple[int, bytes, str]]
"""(spec, command) -> (exit code, stdout, stderr)."""


def _runs(commands: Sequence[tuple[str, ...]], specs: Sequence[str], big: Path) -> Runs:
    """Each command under each spec, a few child processes at a time."""
    jobs = [(spec, tuple(a.replace(BIG, str(big)) for a in args)) for spec in specs for args in commands]
    with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
        results = list(pool.map(lambda job: _run(job[1], job[0]), jobs))
    return dict(zip(jobs, results, strict=True))


def _differences(runs: Runs, spec: str) -> Iterator[str]:
    for (where, args), (code, out, _) in runs.items():
        if where != spec:
            continue
        base_code, base_out, _ = runs["all", args]
        if (code, out) != (base_code, base_out):
            yield (f"{ENV}={spec} dra-affinity {' '.join(args)}: exit {code} (layers on: {base_code}), "
                   f"{len(out)} bytes (layers on: {len(base_out)})")


def test_every_command_prints_the_same_bytes_with_every_layer_off(big_inputs: Path) -> None:
    commands = (*EVERY, *LARGE)
    runs = _runs(commands, ("all", "none"), big_inputs)
    assert not list(_differences(runs, "none"))
    assert {code for code, _, _ in runs.values()} <= {0, 1}, "a command failed to run: see its stderr"
    assert all(out for _, out, _ in runs.values())


def test_each_layer_alone_off_prints_the_same_bytes(big_inputs: Path) -> None:
    names = sorted(declared())
    assert names, "no speed layer declared"
    specs = ("all", *(f"-{name}" for name in names))
    runs = _runs(EACH, specs, big_inputs)
    assert not [d for spec in specs[1:] for d in _differences(runs, spec)]


def test_a_misspelt_layer_is_a_usage_error() -> None:
    code, out, err = _run(("lint", "examples/single-subnet-nic.yaml"), "-no-such-layer")
    assert code == 2 and not out
    assert "unknown speed layer(s) no-such-layer" in err
    assert all(name in err for name in declared())


def test_a_layer_not_imported_yet_can_be_named() -> None:
    """`lint` never imports the scheduler, yet `-extraction-memo` is a known name for it."""
    code, out, err = _run(("lint", "examples/single-subnet-nic.yaml", "--format", "json"), "-extraction-memo")
    assert code == 0, err
    assert json.loads(out)["findings"] == []


# -- where layers are declared and documented -------------------------------------------------


def test_every_declaring_module_is_imported_before_the_setting_is_checked() -> None:
    from dra_affinity.lint.cli import LAYER_MODULES

    modules = {module for module, _ in declared().values()}
    assert modules <= set(LAYER_MODULES), sorted(modules - set(LAYER_MODULES))


DOC = REPO / "docs" / "speed-layers.md"
_ROW = re.compile(r"^\| `([a-z0-9-]+)` \| `([\w.]+)` \| (.+?) \| (.+?) \|$", re.MULTILINE)


def test_the_docs_page_lists_every_layer_with_its_reason() -> None:
    """docs/speed-layers.md has one table row per layer: name, module, the declared reason
    word for word, and where its figures are."""
    rows = {m[1]: (m[2], m[3], m[4]) for m in _ROW.finditer(DOC.read_text(encoding="utf-8"))}
    layers = declared()
    assert sorted(rows) == sorted(layers)
    for name, (module, why) in layers.items():
        assert rows[name][0] == module.removeprefix("dra_affinity."), name
        assert rows[name][1] == why, name
        assert rows[name][2].strip(), name
