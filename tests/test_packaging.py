"""The distribution installs one import namespace, `dra_affinity`, and nothing generic.

`policies`, `lint` and `webhook` are the repository's folders, not installed names: packages
called `lint` and `policies` already exist on the package index, so a wheel must not put them
at the top of site-packages.
"""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.cli import REPO


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
    for package in ("policies", "lint", "webhook"):
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
        [str(python), "-c", "import dra_affinity.policies, dra_affinity.lint, dra_affinity.webhook"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stderr
    for name in ("policies", "lint", "webhook"):
        proc = subprocess.run([str(python), "-c", f"import {name}"], capture_output=True, text=True,
                              cwd=tmp_path)
        assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr, name
