"""The distribution installs one import namespace, `dra_affinity`, and nothing generic.

`policies`, `lint`, `webhook` and the rest are the repository's folders, not installed names: packages
called `lint` and `policies` already exist on the package index, so a wheel must not put them
at the top of site-packages. A fresh clone resolves the installed names without installing
(`dra_affinity/__init__.py`). And the docs' wheel route (docs/ci.md) works as written.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import dra_affinity
from tests.cli import REPO, snapshot
from tests.test_architecture import FOLDERS


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
         str(REPO)],
        check=True, capture_output=True, cwd=out,
    )
    [built] = out.glob("dra_affinity-*.whl")
    return built


def test_the_wheel_has_one_top_level_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"dra_affinity"}
    assert "dra_affinity/__init__.py" not in names, "the tree's map is not installed: a namespace package"
    for package in ("policies", "kube", "sources", "exporter", "lint", "webhook"):
        assert f"dra_affinity/{package}/py.typed" in names
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    ).decode()
    assert "dra-affinity = dra_affinity.lint.cli:main" in entry_points


def test_a_fresh_venv_imports_the_namespace_and_not_the_folders(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        check=True, capture_output=True,
    )
    ok = subprocess.run(
        [str(python), "-c",
         "import dra_affinity.policies, dra_affinity.kube, dra_affinity.sources, dra_affinity.exporter, "
         "dra_affinity.lint, dra_affinity.webhook"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    for name in ("policies", "kube", "sources", "exporter", "lint", "webhook"):
        proc = subprocess.run([str(python), "-c", f"import {name}"], capture_output=True, text=True,
                              cwd=tmp_path)
        assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr, name


def test_a_fresh_clone_resolves_the_installed_names_without_installing(tmp_path: Path) -> None:
    """`dra_affinity/__init__.py` maps `dra_affinity.<folder>` to `./<folder>/`: from a clone's
    root, with no site-packages at all (`-S`: no install, no editable link), the imports resolve
    to the clone's own files."""
    clone = snapshot(tmp_path / "clone")
    code = ("import dra_affinity.policies.core.findings as f, dra_affinity.sources.scalar_positions; "
            "print(f.__file__); print(f.Severity.ERROR.name)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH")}
    proc = subprocess.run([sys.executable, "-S", "-c", code], cwd=clone, env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    path, severity = proc.stdout.split()
    assert Path(path) == clone / "policies" / "core" / "findings.py" and severity == "ERROR"
    # the same with the installed environment on the path: the clone's files, not the install's
    proc = subprocess.run([sys.executable, "-c", code], cwd=clone, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.split()[0]) == clone / "policies" / "core" / "findings.py"


def test_the_map_the_build_and_the_architecture_test_name_the_same_folders() -> None:
    tree = ast.parse((REPO / "setup.py").read_text())
    [built] = [ast.literal_eval(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "FOLDERS" for t in node.targets)]
    assert set(built) == set(dra_affinity.FOLDERS) == set(FOLDERS)
    assert all((REPO / folder / "__init__.py").is_file() for folder in FOLDERS)


@pytest.mark.slow
def test_the_docs_wheel_route_installs_into_a_fresh_virtualenv(tmp_path: Path) -> None:
    """docs/ci.md's two commands as written, in a copy of this checkout, with a fresh virtualenv's
    pip (build isolation, dependencies from the package index as configured): a real install,
    then the installed command's --version and a lint of an example, run outside the checkout."""
    page = (REPO / "docs" / "ci.md").read_text()
    [block] = [b for b in re.findall(r"```sh\n(.*?)```", page, re.S) if "pip wheel" in b]
    checkout = snapshot(tmp_path / "dra-affinity")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(["bash", "-e", "-c", block], cwd=checkout, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [built] = (checkout / "dist").glob("dra_affinity-*.whl")
    assert built.name.endswith("-py3-none-any.whl")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    script = env_dir / "bin" / "dra-affinity"
    version = subprocess.run([str(script), "--version"], cwd=outside, env=env, capture_output=True, text=True,
                             timeout=120)
    assert version.returncode == 0 and "0.1.0" in version.stdout, version.stdout + version.stderr
    probe = "import dra_affinity.lint.cli as cli; print(cli.__file__)"
    where = subprocess.run([str(env_dir / "bin" / "python"), "-c", probe], cwd=outside, env=env,
                           capture_output=True, text=True, timeout=120)
    assert where.stdout.startswith(str(env_dir)), where.stdout + where.stderr  # the wheel, not the checkout
    example = checkout / "examples" / "single-subnet-nic.yaml"
    lint = subprocess.run([str(script), "lint", "--strict", str(example)], cwd=outside, env=env,
                          capture_output=True, text=True, timeout=300)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "0 errors, 0 warnings, 0 infos in" in lint.stdout
    broken = subprocess.run([str(script), "lint", str(checkout / "examples" / "broken-slice.yaml")],
                            cwd=outside, env=env, capture_output=True, text=True, timeout=300)
    assert broken.returncode == 1 and "SA102 error: " in broken.stdout, broken.stdout + broken.stderr
