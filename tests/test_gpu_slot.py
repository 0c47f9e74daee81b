"""A GPU slot's preparation (benchmarks/gpu_slot.py): what each device call carries, and
the calls, as the device tool takes them."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name, parse_wheel_filename

from conftest import ROOT
from mixnmt import MixnmtError

sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_slot  # noqa: E402

TINY = str(ROOT / "tests" / "tiny.yaml")


def unreachable(folder: Path) -> str | None:
    """Why pip cannot fetch a device wheel here (no index reachable), or None if it can."""
    probe = [sys.executable, "-m", "pip", "-q", "download", "--no-deps", "--only-binary=:all:", "-d", folder]
    probe += ["--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux2014_x86_64"]
    done = subprocess.run(
        [*probe, f"jsonschema=={metadata.version('jsonschema')}"], capture_output=True, text=True
    )
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["pip failed"])[-1]


@pytest.mark.slow(seconds=30)
def test_the_slot_carries_what_the_device_lacks_and_nothing_it_has(tiny_source, tmp_path, capsys):
    if why := unreachable(tmp_path / "probe"):
        pytest.skip(f"no package index reachable here: {why}")
    slot = tmp_path / "slot"
    calls = gpu_slot.prepare(tiny_source, [TINY], slot)

    names = {canonicalize_name(parse_wheel_filename(w.name)[0]): w.name for w in (slot / "wheels").iterdir()}
    assert {"mixnmt", "snakemake", "jsonschema", "referencing", "rpds-py"} <= names.keys()
    assert not names.keys() & gpu_slot.image(), "a wheel would shadow the image's own"
    assert {"torch", "numpy", "pandas", "sacrebleu", "sentencepiece"} <= gpu_slot.image()
    for wheel in names.values():  # pure Python, or built for the device's CPython 3.12 on x86-64
        assert wheel.endswith("-none-any.whl") or re.search(r"-cp312-cp312-.*manylinux.*x86_64", wheel), wheel

    pins = yaml.safe_load(Path(TINY).read_text())["datasets"]["tiny"]
    for files in [pins["train"], pins["valid"], *pins["test"].values()]:
        for entry in files.values():
            copied = (slot / "tiny" / entry["file"]).read_bytes()
            assert hashlib.sha256(copied).hexdigest() == entry["sha256"]
    assert re.fullmatch(r"[0-9a-f]{40}\n", (slot / "COMMIT").read_text())
    carried = sum(p.stat().st_size for p in slot.rglob("*") if p.is_file())
    assert gpu_slot.travelling() + carried <= gpu_slot.CARRY_LIMIT
    assert "MiB of 64" in capsys.readouterr().err

    assert [re.search(r"--steps ([a-z ]+)", c["command"]).group(1).split()[:2] for c in calls] == [
        ["tests", "speed"],
        *[["study"]] * gpu_slot.STUDY_CALLS,
    ]
    for call in calls:
        assert len(call["command"]) <= 2000 and call["timeout_s"] <= 600 and call["carry"] == [".slot"]
        assert call["command"].startswith("python3 -m pip install -q --no-index --no-deps")
        assert '--out "$OUT"' in call["command"] and "MIXNMT_COMMIT=$(cat .slot/COMMIT)" in call["command"]
    assert all(f"--configfile {TINY} --config mirror=.slot/tiny" in c["command"] for c in calls[1:])


def test_a_mirror_file_that_is_not_the_pinned_one_is_named(tiny_source, tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(tiny_source, mirror)
    (mirror / "valid.de").write_text("edited\n")
    with pytest.raises(
        MixnmtError, match=r"mirror/valid\.de: missing, or not the file the config pins \(sha"
    ):
        gpu_slot.data(gpu_slot.load(TINY), mirror, tmp_path / "copy")
