"""The time-boxed GPU session (benchmarks/gpu_session.py), dry-run on the CPU: facts, the
CUDA tests (skipped here), the determinism check, the benchmark, the study stopped at
its deadline, and the tarball without checkpoints."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_session  # noqa: E402

CHILD = """
import signal, subprocess, sys, time
def record(word):
    def handler(*_):
        with open(sys.argv[1], "a") as f:
            f.write(word + "\\n")
        sys.exit(1)
    return handler
if len(sys.argv) == 2:  # Snakemake, as under load: its KeyboardInterrupt lost, SIGTERM heard
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, record("no new jobs"))
    subprocess.Popen([sys.executable, __file__, sys.argv[1], "child"])
else:  # a trainer: saves its state on SIGINT
    signal.signal(signal.SIGINT, record("saved"))
time.sleep(60)
"""


def test_run_until_stops_a_process_group_at_its_deadline(tmp_path):
    """Every process of the group hears SIGINT, as trainers under Snakemake do, and the
    leader SIGTERM, which stops one that misses its SIGINT."""
    (tmp_path / "job.py").write_text(CHILD)
    said = tmp_path / "said"
    start = time.time()
    code = gpu_session.run_until(
        [sys.executable, tmp_path / "job.py", said], time.time() + 3, tmp_path / "log"
    )
    assert code == 1 and time.time() - start < 15
    while time.time() - start < 15 and len(said.read_text().splitlines()) < 2:
        time.sleep(0.1)  # the child may finish after its parent
    assert sorted(said.read_text().splitlines()) == ["no new jobs", "saved"]
    assert "deadline reached: SIGTERM to" in (tmp_path / "log").read_text()


ORPHAN = """
import signal, subprocess, sys, time
if len(sys.argv) == 2:  # the leader ends at once on SIGTERM, leaving its job behind
    subprocess.Popen([sys.executable, __file__, sys.argv[1], "job"])
    time.sleep(60)
else:  # a job started as the signals came: it never hears SIGINT
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    open(sys.argv[1], "w").write("started")
    time.sleep(600)
"""


def test_nothing_of_the_group_outlives_the_grace(tmp_path):
    """A job left running when its leader ended (seen as trainers training on for an hour
    after a dry run) is killed when the grace ends."""
    (tmp_path / "job.py").write_text(ORPHAN)
    started = tmp_path / "started"
    start = time.time()
    command = [sys.executable, tmp_path / "job.py", started]
    gpu_session.run_until(command, time.time() + 3, tmp_path / "log", grace=3)
    assert started.exists() and time.time() - start < 20
    pids = subprocess.run(["pgrep", "-f", str(tmp_path / "job.py")], capture_output=True, text=True)
    assert pids.stdout == "", pids.stdout


def test_an_interrupted_session_stops_its_group(tmp_path):
    """Ctrl-C (or SIGTERM) to the session stops the running step's processes and is raised again."""
    (tmp_path / "job.py").write_text(ORPHAN)
    started = tmp_path / "started"

    def alarm(*_):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(3)
    try:
        with pytest.raises(KeyboardInterrupt):
            gpu_session.run_until(
                [sys.executable, tmp_path / "job.py", started], time.time() + 60, tmp_path / "log", 3
            )
    finally:
        signal.signal(signal.SIGALRM, previous)
    pids = subprocess.run(["pgrep", "-f", str(tmp_path / "job.py")], capture_output=True, text=True)
    assert started.exists() and pids.stdout == "", pids.stdout
    assert "# interrupted: SIGTERM to" in (tmp_path / "log").read_text()


@pytest.mark.slow(seconds=20)
def test_a_killed_study_leaves_no_lock_behind(tmp_path):
    """Snakemake killed at the end of the grace keeps its lock on the directory; the next
    call's study would stop at once (LockException), as on the first GPU slot."""
    (tmp_path / "Snakefile").write_text(
        'rule slow:\n    output: "done"\n    shell: "sleep 60; touch {output}"\n'
    )
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        tmp_path / "Snakefile",
        "-d",
        tmp_path,
        "--cores",
        "1",
    ]
    deadline = time.time() + 15
    code = gpu_session.run_study(command, deadline, tmp_path / "log", grace=0)
    assert code == -signal.SIGKILL
    assert "releasing its lock" in (tmp_path / "log").read_text()
    assert not list((tmp_path / ".snakemake" / "locks").glob("*")), "the lock is still there"


@pytest.mark.integration
@pytest.mark.slow(seconds=110)
def test_the_whole_session_dry_runs_on_the_cpu(tmp_path):
    """Checks (quick), then the tiny study stopped at the deadline while it trains: the
    trainers save their states, and the tarball leaves them out. (The speed step runs in
    tests/test_gpu_slot.py's dry run, in a call of its own as on a slot.)"""
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    shutil.copy(ROOT / "config.yaml", work / "config.yaml")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT / "src"),
        "CUDA_VISIBLE_DEVICES": "",
    }
    command = [sys.executable, ROOT / "benchmarks" / "gpu_session.py", "--quick", "--minutes", "10"]
    # a grace as long as a loaded CI machine needs for Snakemake to stop its jobs (15 s was
    # exceeded once beside the other test worker: SIGKILL, exit -9); a quick stop ends it sooner
    command += ["--study-minutes", "0.75", "--grace", "45", "--out", out, "--directory", work, "--jobs", "2"]
    command += ["--steps", "tests", "determinism", "study"]
    endless = tmp_path / "endless.yaml"  # training still runs when the study's time is up
    endless.write_text("train: {epochs: 100000}\nallow_cpu: true\n")
    command += ["--configfile", ROOT / "tests" / "tiny.yaml", endless]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    said = done.stdout + done.stderr
    assert "CUDA tests: passed" in said and "determinism: identical" in said, said
    assert "study: exit 1 (stopped" in said, said
    facts = json.loads((out / "facts.json").read_text())
    assert facts["torch"] and facts["gpu"] is None and facts["commit"]
    assert "no CUDA device on this machine" in (out / "cuda-tests.log").read_text()
    assert not (out / "speed.json").exists()  # the step not asked for
    assert "deadline reached: SIGTERM to" in (out / "study.log").read_text()
    states = list((work / "results" / "tiny" / "states").glob("*/seed1.pt"))
    assert states, "no training state was saved at the deadline"
    with tarfile.open(out / "results-tiny.tar.gz") as tar:
        names = tar.getnames()
    assert any(n.startswith("tiny/logs/train/") for n in names)
    assert not any("/checkpoints" in n or "/states" in n for n in names)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--config", "experiment=../../elsewhere"], "experiment: '../../elsewhere' is not a name"),
        (["--out", "FILE"], "--out FILE: not a folder it can write"),
    ],
)
def test_a_session_that_would_pack_or_write_the_wrong_place_stops_at_once(
    tmp_path, monkeypatch, argv, message
):
    """An experiment named as a path would pack a folder outside results/; an --out that is
    a file would fail after the checks: both stop before anything runs, in one line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "FILE").write_text("")
    with pytest.raises(SystemExit) as stop:
        gpu_session.main(["--minutes", "1", "--directory", str(ROOT), *argv])
    assert message in str(stop.value) and "\n" not in str(stop.value)


def test_the_determinism_check_trains_anew_over_an_earlier_sessions_checkpoints(tmp_path, monkeypatch):
    """A second session in one folder retrains, rather than comparing the first one's
    checkpoints; it trains in bf16 where the device computes it, as the GPU studies do,
    not in the fp32 that tiny.yaml chose for CPUs."""
    stale = tmp_path / "results" / "determinism-1" / "checkpoints" / "old.pt"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"from an earlier session")
    seen = []
    monkeypatch.setattr(gpu_session, "run_until", lambda cmd, *_: seen.append((cmd, stale.exists())) or 1)
    verdict = gpu_session.determinism(tmp_path, tmp_path, time.time() + 60, quick=True)
    ((command, stale_there),) = seen
    assert verdict["verdict"] == "failed" and not stale_there
    given = command[command.index("--config") + 1 : command.index("--resources")]
    assert "train={precision: auto}" in given
