"""The benchmark scripts refuse what they cannot measure before measuring anything."""

from __future__ import annotations

import subprocess
import sys

import pytest

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
