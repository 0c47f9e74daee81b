"""The container of `--software-deployment-method apptainer`: its definition installs what
the conda environments pin, and the workflow runs every job in the configured image."""

from __future__ import annotations

import re
import stat

import yaml

import tinydata
from conftest import ROOT, snakemake

DEFINITION = ROOT / "workflow" / "container" / "mixnmt.def"


def definition() -> tuple[dict[str, str], dict[str, list[str]]]:
    """The header (Bootstrap, From, ...) and the %sections of DEFINITION, comments dropped;
    a line outside both is refused, as `apptainer build` would."""
    header: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    current = None
    for number, raw in enumerate(DEFINITION.read_text().splitlines(), start=1):
        line = raw.strip()
        if line.startswith("%"):
            current = sections.setdefault(line[1:].split()[0], [])
        elif current is not None:
            current.append(raw)
        elif line and not line.startswith("#"):
            key, sep, value = line.partition(":")
            assert sep and key.isalpha(), f"{DEFINITION}:{number}: not a header line: {raw!r}"
            header[key] = value.strip()
    return header, sections


def environment_pins() -> tuple[str, dict[str, str]]:
    """The Python version and the pip pins that every env of envs/*.yaml agrees on."""
    pythons, pins = set(), {}
    for path in sorted((ROOT / "envs").glob("*.yaml")):
        for dep in yaml.safe_load(path.read_text())["dependencies"]:
            if isinstance(dep, str) and dep.startswith("python="):
                pythons.add(dep.removeprefix("python="))
            elif isinstance(dep, dict):
                for line in dep["pip"]:
                    if line.startswith("-"):  # an option: torch.yaml's CPU index
                        continue
                    package, version = line.partition(";")[0].strip().split("==")
                    version = version.partition("+")[0]  # torch's CPU build: the same torch
                    assert pins.setdefault(package.lower(), version) == version, f"{path}: {line} differs"
    (python,) = pythons
    return python, pins


def locked() -> dict[str, str]:
    lines = (ROOT / "envs" / "pip-lock.txt").read_text().splitlines()
    pins = dict(line.split("==") for line in lines if line and not line.startswith("#"))
    return {package.lower().replace("_", "-"): version for package, version in pins.items()}


def test_the_image_definition_parses_and_pins_what_the_environments_pin():
    header, sections = definition()
    python, pins = environment_pins()
    assert header["Bootstrap"] == "docker"
    assert re.fullmatch(rf"python:{re.escape(python)}-slim-\w+", header["From"]), header["From"]
    assert {"files", "post", "environment", "test", "help"} <= sections.keys()
    (copied,) = [line.split() for line in sections["files"] if line.strip()]
    assert copied[0] == "envs/pip-lock.txt"
    post = "\n".join(sections["post"])
    assert f"pip install --no-cache-dir torch=={pins.pop('torch')}\n" in post
    assert f"pip install --no-cache-dir -r {copied[1]}\n" in post
    # the aligner (envs/align.yaml) is compiled in the image, outside the lock
    assert f"pip install --no-cache-dir eflomal=={pins.pop('eflomal')}\n" in post
    assert "eflomal" in "\n".join(sections["test"])
    lock = locked()
    assert {package: lock.get(package) for package in pins} == pins  # the lock pins the envs' versions
    assert 'exec python -m mixnmt "$@"' in post  # the `mixnmt` of the rules: the checkout's code


FAKE_APPTAINER = """#!/bin/sh
# Records each call; runs the command after the image, on the host.
echo "$*" >> "$(dirname "$0")/calls.log"
[ "$1" = --version ] && { echo "apptainer version 1.4.0"; exit 0; }
while [ $# -gt 0 ]; do case "$1" in *.sif) shift; exec "$@";; esac; shift; done
exit 1
"""


def test_apptainer_runs_every_job_in_the_configured_image(workdir, tmp_path):
    """With `--sdm apptainer` every job runs as `apptainer exec ... IMAGE bash -c ...`, the
    image being config key `container` (a stand-in apptainer runs it on the host)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "apptainer"
    fake.write_text(FAKE_APPTAINER)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    image = tmp_path / "image.sif"
    image.touch()
    tinydata.write_corpus(workdir / "data" / "tiny-source")
    target = "results/tiny/spm/joint.model"
    tiny = str(ROOT / "tests" / "tiny.yaml")
    options = ["--sdm", "apptainer", "--configfile", tiny, "--config", f"container={image}"]
    result = snakemake(workdir, target, *options, path=bin_dir)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (workdir / target).is_file()
    runs = [line for line in (bin_dir / "calls.log").read_text().splitlines() if line.startswith("exec ")]
    commands = [re.search(r"\bmixnmt ([\w-]+)", line).group(1) for line in runs]
    assert sorted(set(commands)) == ["download", "prepare", "spm-train"]
    assert all(f" {image} bash -c " in line for line in runs)
    done = re.search(r"(\d+) of (\d+) steps \(100%\) done", result.stderr)
    assert done and int(done.group(1)) == len(runs), result.stderr[-2000:]
