"""The offline install of docs/running.md, "On a GPU": a wheelhouse made from envs/pip-lock.txt,
installed with no index next to a torch that is already there, which it never touches."""

from __future__ import annotations

import base64
import hashlib
import re
import subprocess
import sys
import venv
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
import tomllib

from conftest import ROOT

LOCK = ROOT / "envs" / "pip-lock.txt"
TORCH_ONLY = {"torch", "filelock", "fsspec", "mpmath", "networkx", "sympy"}


def name(requirement: str) -> str:
    return re.split(r"[ <>=!~;\[]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def locked() -> dict[str, str]:
    pins = [line.split("==") for line in LOCK.read_text().splitlines() if line and not line.startswith("#")]
    return {name(package): version for package, version in pins}


def test_the_lock_pins_every_dependency_but_torch_and_its_own():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    needed = {name(r) for r in project["dependencies"]} | {"pytest", "setuptools"}
    needed |= {name(r) for extra in ("workflow", "slurm") for r in project["optional-dependencies"][extra]}
    pins = locked()
    assert needed - {"torch"} <= pins.keys()
    assert not TORCH_ONLY & pins.keys()


def run(*command: str | Path) -> str:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True)
    assert done.returncode == 0, f"{command}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


def stand_in_torch(folder: Path) -> None:
    """A wheel of this torch's name, version and requirements, holding one module: to pip
    it is the installed torch of a GPU image (the real one is 200 MB to unpack, a minute
    of this test, and pip's choices read its metadata only)."""
    version = metadata.version("torch").split("+")[0]
    info = f"torch-{version}.dist-info"
    files = {
        "torch/__init__.py": f"__version__ = {version!r}\n",
        f"{info}/METADATA": "\n".join(
            ["Metadata-Version: 2.1", "Name: torch", f"Version: {version}"]
            + [f"Requires-Dist: {r}" for r in metadata.requires("torch") or []]
        )
        + "\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }

    def record(text: str) -> str:
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        return f"sha256={digest},{len(text.encode())}"

    rows = [f"{name},{record(text)}" for name, text in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = "\n".join(rows) + "\n"
    with zipfile.ZipFile(folder / f"torch-{version}-py3-none-any.whl", "w") as wheel:
        for name, text in files.items():
            wheel.writestr(name, text)


@pytest.mark.integration
@pytest.mark.slow(seconds=60)
def test_a_fresh_venv_installs_from_the_wheelhouse_alone_and_keeps_its_torch(tmp_path):
    wheelhouse, env = tmp_path / "wheelhouse", tmp_path / "venv"
    pip = [sys.executable, "-m", "pip", "-q"]
    # README's wheelhouse line (on a networked machine), and torch as the GPU image has it
    run(*pip, "wheel", "--no-deps", "-r", LOCK, "-w", wheelhouse)
    stand_in_torch(wheelhouse)
    run(*pip, "download", *(metadata.requires("torch") or []), "-d", wheelhouse)
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    # (without compiling bytecode: two thirds of the time, and nothing pip decides)
    offline = ["-m", "pip", "install", "-q", "--no-compile", "--no-index", "--find-links", wheelhouse]
    run(python, *offline, "torch")

    def torch_files() -> list[str]:  # version, location and files: all but who requires it
        shown = run(python, "-m", "pip", "show", "-f", "torch").splitlines()
        return [line for line in shown if not line.startswith("Required-by:")]

    before = torch_files()
    # README's offline install line
    run(python, *offline, "-r", LOCK)
    run(python, *offline, "--no-deps", "--no-build-isolation", "-e", ROOT)
    assert torch_files() == before
    assert run(env / "bin" / "snakemake", "--version").startswith("9.")
    assert "usage: mixnmt" in run(env / "bin" / "mixnmt", "--help")
