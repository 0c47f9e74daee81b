"""The benchmark scripts refuse what they cannot measure before measuring anything."""

from __future__ import annotations

import subprocess
import sys
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


@pytest.mark.parametrize("device, runs", [("cpu", [1, 1, 1, 1]), ("cuda", [2, 2, 2, 2])])
def test_speed_times_a_gpu_on_shapes_it_has_seen(device, runs, monkeypatch):
    """On a GPU every batch runs once untimed, then all are timed; elsewhere the first
    two warm up and the rest are timed."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import speed

    monkeypatch.setattr(speed, "sync", lambda device: None)
    batches = [SimpleNamespace(target_tokens=10 * (i + 1)) for i in range(4)]
    seen = []
    rate = speed.throughput(seen.append, batches, torch.device(device))
    assert [sum(b is batch for b in seen) for batch in batches] == runs and rate > 0
