"""The benchmark scripts refuse what they cannot measure before measuring anything."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from conftest import ROOT


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--models", "nope"], "--models: nope not in config.yaml's models"),
        (["--data", "missing"], "--data missing: not an experiment's results folder (no ids/ in it)"),
        (
            ["--json", "/proc/speed.json"],
            "--json /proc/speed.json: cannot write it",
        ),  # found after 72 s before
    ],
)
def test_speed_refuses_what_it_cannot_measure_or_keep_at_once(argv, message, tmp_path):
    done = subprocess.run(
        [sys.executable, ROOT / "benchmarks" / "speed.py", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.fixture
def speed(monkeypatch):
    """benchmarks/speed.py as a module."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import speed

    return speed


@pytest.mark.parametrize("device, runs", [("cpu", [1, 1, 1, 1]), ("cuda", [2, 2, 2, 2])])
def test_speed_times_a_gpu_on_shapes_it_has_seen(device, runs, speed, monkeypatch):
    """On a GPU every batch runs once untimed, then all are timed; elsewhere the first
    two warm up and the rest are timed."""
    monkeypatch.setattr(speed, "sync", lambda device: None)
    batches = [SimpleNamespace(target_tokens=10 * (i + 1)) for i in range(4)]
    seen = []
    rate = speed.throughput(seen.append, batches, torch.device(device))
    assert [sum(b is batch for b in seen) for batch in batches] == runs and rate > 0


def test_the_matmul_peak_is_timed_on_warm_products(speed, monkeypatch):
    """The first product sets up the library (cuBLAS's handle and kernels on a GPU): timed,
    it stopped the search for a size at the smallest, and an H100's bf16 peak read 453
    GFLOP/s, its models' MFU 115-1468%."""
    waits = []

    def first_slow(device: torch.device) -> None:
        time.sleep(0 if waits else 0.2)
        waits.append(device)

    sides = []
    randn = torch.randn
    monkeypatch.setattr(speed, "sync", first_slow)
    monkeypatch.setattr(torch, "randn", lambda n, m, **kw: sides.append(n) or randn(n, m, **kw))
    assert speed.matmul_peak(torch.device("cpu"), torch.float32, repeats=1) > 0
    assert max(sides) > 256, sides


@pytest.mark.parametrize(
    "script, refusal",
    [
        ("lockin", "has no learned components to lock onto"),
        ("looping", "weighs no source positions (attention, or a mixture with source: states)"),
    ],
)
def test_a_diagnosis_names_the_run_it_cannot_read_in_one_line(
    script, refusal, random_checkpoint, tiny_spm, capsys
):
    """lockin.py and looping.py read a trained study's runs: a run that is missing, or of a
    model they cannot diagnose, is one line naming its checkpoint (they were tracebacks)."""
    import importlib
    import shutil

    from mixnmt.paths import Layout

    sys.path.insert(0, str(ROOT / "benchmarks"))
    diagnosis = importlib.import_module(script)
    study = random_checkpoint.parent / "study"
    layout = Layout(str(study))
    for source, target in ((random_checkpoint, layout.checkpoint("m", 1)), (tiny_spm, layout.spm("joint"))):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
    for name, line in (("m", f"m {refusal}"), ("nope", "not found")):  # m: a transformer
        with pytest.raises(SystemExit) as stopped:
            diagnosis.main([str(study), name])
        error = f"{script}.py: error: {layout.checkpoint(name, 1)}: {line}\n"
        assert stopped.value.code == 1 and capsys.readouterr().err == error
