"""A GPU slot's preparation (benchmarks/gpu_slot.py): what each device call carries, and
the calls, as the device tool takes them."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name, parse_wheel_filename

from conftest import FAST, ROOT, TINY_MODELS
from mixnmt import MixnmtError
from mixnmt.models import build, parameter_counts, resolve
from mixnmt.verify import verify

sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_session  # noqa: E402
import gpu_slot  # noqa: E402
import speed  # noqa: E402

TINY = str(ROOT / "tests" / "tiny.yaml")


def unreachable(folder: Path) -> str | None:
    """Why pip cannot fetch a device wheel here (no index reachable), or None if it can."""
    done = gpu_slot.pip(*gpu_slot.download(folder), f"jsonschema=={metadata.version('jsonschema')}")
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["pip failed"])[-1]


@pytest.mark.integration
@pytest.mark.slow(seconds=30)
def test_the_slot_carries_what_the_device_lacks_and_nothing_it_has(
    tiny_source, tmp_path, capsys, monkeypatch
):
    if why := unreachable(tmp_path / "probe"):
        pytest.skip(f"no package index reachable here: {why}")
    clone = tmp_path / "clone"  # the committed tree, its published results left behind (LEAVE_OUT)
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), *shlex.split(gpu_slot.LEAVE_OUT[0])[1:]], check=True)
    monkeypatch.setattr(gpu_slot, "ROOT", clone)
    slot = tmp_path / "slot"
    calls = gpu_slot.prepare(tiny_source, [TINY], slot)

    names = {canonicalize_name(parse_wheel_filename(w.name)[0]): w.name for w in (slot / "wheels").iterdir()}
    assert {"mixnmt", "snakemake", "jsonschema", "referencing", "rpds-py"} <= names.keys()
    assert not names.keys() & gpu_slot.image(), "a wheel would shadow the image's own"
    assert not names.keys() & gpu_slot.LEFT_OUT
    assert {"torch", "numpy", "pandas", "sacrebleu", "sentencepiece"} <= gpu_slot.image()
    for wheel in names.values():  # pure Python, or built for the device's CPython 3.12 on x86-64
        assert wheel.endswith("-none-any.whl") or re.search(r"-cp312-cp312-.*manylinux.*x86_64", wheel), wheel

    pins = yaml.safe_load(Path(TINY).read_text())["datasets"]["tiny"]
    for files in [pins["train"], pins["valid"], *pins["test"].values()]:
        for entry in files.values():
            copied = (slot / "tiny" / entry["file"]).read_bytes()
            assert hashlib.sha256(copied).hexdigest() == entry["sha256"]
    assert re.fullmatch(r"[0-9a-f]{40}\n", (slot / "COMMIT").read_text())
    carried = [clone / name for name in gpu_slot.travelling()] + [p for p in slot.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in carried) <= gpu_slot.CARRY_LIMIT
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
    assert calls[0]["command"].endswith(f"--steps tests speed --configfile {TINY}")  # times the study's


def test_a_mirror_file_that_is_not_the_pinned_one_is_named(tiny_source, tmp_path):
    mirror = tmp_path / "mirror"
    shutil.copytree(tiny_source, mirror)
    (mirror / "valid.de").write_text("edited\n")
    with pytest.raises(
        MixnmtError, match=r"mirror/valid\.de: missing, or not the file the config pins \(sha"
    ):
        gpu_slot.data(gpu_slot.load(TINY), mirror, tmp_path / "copy")


def test_a_tree_too_large_for_a_call_is_refused_before_downloads_with_the_results_left_out_after(
    tmp_path, monkeypatch
):
    """The published results outgrew a call's 64 MiB: prepare refuses such a tree in one
    line before it fetches a wheel, naming the results' share and the sparse checkout that
    leaves them behind; after it, the tree that travels has no results, the checkout is
    clean, and its undoing brings them back."""
    repo = tmp_path / "repo"
    (repo / "results/study").mkdir(parents=True)
    (repo / "code.py").write_text("x = 1\n")
    (repo / "results/study/scores.tsv").write_bytes(b"0" * 3000)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "tree"]):
        subprocess.run([*git, *step], check=True)
    monkeypatch.setattr(gpu_slot, "ROOT", repo)
    monkeypatch.setattr(gpu_slot, "CARRY_LIMIT", 2000)
    monkeypatch.setattr(gpu_slot, "wheels", lambda *a: pytest.fail("fetched wheels for a tree too large"))
    with pytest.raises(MixnmtError) as refused:
        gpu_slot.prepare(tmp_path / "mirror", [TINY], tmp_path / "slot")
    leave, undo = gpu_slot.LEAVE_OUT
    assert str(refused.value) == (
        "a call would carry 0.0 MiB, over 64 MiB (0.0 MiB of it the published results: leave them "
        f"out of the working tree, `{leave}`, prepare again, and after the calls `{undo}`)"
    )
    subprocess.run([*git, *shlex.split(leave)[1:]], check=True)
    assert gpu_slot.travelling() == ["code.py"]
    assert gpu_slot.carried([repo / "code.py"]) == 6
    assert subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True).stdout == ""
    subprocess.run([*git, *shlex.split(undo)[1:]], check=True)
    assert sorted(gpu_slot.travelling()) == ["code.py", "results/study/scores.tsv"]


def limits_broken(out: Path) -> list[str]:
    """What under `out` the device tool would not bring back: more than 8 files, a file
    over 16 MiB, one more than 2 folders down, a name of other characters."""
    files = [p for p in out.rglob("*") if p.is_file()]
    broken = [f"{len(files)} files"] if len(files) > 8 else []
    for path in files:
        relative = path.relative_to(out)
        if path.stat().st_size > 16 * 2**20 or len(relative.parts) > 3:
            broken.append(f"{relative}: too big or too deep")
        broken += [f"{relative}: name" for part in relative.parts if not re.fullmatch(r"[\w.-]+", part)]
    return broken


@pytest.mark.integration
@pytest.mark.slow(seconds=240)
def test_the_slot_dry_runs_call_by_call_and_what_comes_back_verifies(tiny_source, tmp_path, monkeypatch):
    """The slot's calls as the device would run them, a copy of the tree for its working
    tree and the CPU for its GPU, each call's minutes scaled down (the quick checks, one
    tiny model, 20 steps): each call ends in time, what it leaves under $OUT comes back
    within the tool's limits, and the results that come back pass the verification."""
    tree = tmp_path / "tree"
    for name in gpu_slot.travelling():  # what the device tool sends
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tree / name)
    (tree / "short.yaml").write_text(
        f"only: [{FAST}]\nanalysis: {{baseline: {FAST}, contrasts: []}}\nmax_steps: 20\n"
    )
    slot = tree / gpu_slot.SLOT
    gpu_slot.data(gpu_slot.load(TINY), tiny_source, slot / "tiny")
    (slot / "COMMIT").write_text("0" * 40 + "\n")
    bin_ = tmp_path / "bin"  # the device's python3, with the packages the wheels would bring
    bin_.mkdir()
    (bin_ / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_ / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(tree / "src")}
    env["CUDA_VISIBLE_DEVICES"] = ""
    overlays, said = ["tests/tiny.yaml", "short.yaml"], []
    for number, call in enumerate(
        gpu_slot.calls(overlays, ["mirror=.slot/tiny"], 3, "--quick", "--grace", "15")
    ):
        out = tmp_path / f"out{number}"
        out.mkdir()
        command = (
            "export MIXNMT_COMMIT=$(cat .slot/COMMIT); " + call["command"].split(gpu_slot.SETUP_END, 1)[1]
        )
        start = time.monotonic()
        done = subprocess.run(
            ["bash", "-c", command], cwd=tree, env={**env, "OUT": str(out)}, capture_output=True
        )
        assert time.monotonic() - start < call["timeout_s"], command
        assert limits_broken(out) == [], command
        if number == 0:  # the checks and the speed step, no study; their jobs per GPU kept
            assert sorted(p.name for p in out.iterdir()) == [
                "cuda-tests.log",
                "facts.json",
                "speed.json",
                "speed.log",
            ]
            assert json.loads((tree / "results" / gpu_session.SPEED).read_text())["jobs"] in (1, 2)
            timed = json.loads((out / "speed.json").read_text())  # the study's first model, at its size
            tiny = build(*resolve(FAST, TINY_MODELS[FAST]), speed.VOCAB, speed.VOCAB, True)
            assert [(r["model"], r["params"]) for r in timed["rows"]] == [(FAST, parameter_counts(tiny)[0])]
            assert set(timed["shared"]) == {"1", "2"}
            assert "training steps spend their time" in (out / "speed.log").read_text()  # profiler's table
        said.append(done.stdout.decode() + done.stderr.decode())
        assert (out / "facts.json").exists(), said[-1]
        assert json.loads((out / "facts.json").read_text())["commit"] == "0" * 40
    assert done.returncode == 0 and "CUDA tests: passed" in said[0] and "jobs per GPU" in said[1], said
    assert "study: exit 0 (finished)" in said[-1], said  # the study done by the last call
    published = tmp_path / "published"
    with tarfile.open(out / "results-tiny.tar.gz") as tar:
        tar.extractall(published, filter="data")
    monkeypatch.chdir(tree)
    overlays = [tree / o for o in overlays]
    assert verify(published / "tiny", overlays, quick=False, data=tiny_source).breaks == []
