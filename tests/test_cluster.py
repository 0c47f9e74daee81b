"""The SLURM profile on a real one-node cluster (tests/cluster/start-slurm.sh starts one)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import tinydata
from conftest import FAST, ROOT, TINY


def cluster_state() -> str | None:
    """The state of the node `localhost`, if a SLURM cluster answers."""
    if shutil.which("sinfo") is None:
        return None
    try:
        done = subprocess.run(
            ["sinfo", "-h", "-n", "localhost", "-o", "%t"], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def job_name(log_folder: str) -> str:
    """`rule_train` stays; a group job's folder `group_data_download_prepare_...` (the group,
    then its rules) becomes `group_data`."""
    return log_folder if log_folder.startswith("rule_") else "_".join(log_folder.split("_")[:2])


@pytest.mark.integration
@pytest.mark.slow(seconds=130)  # mostly waiting for SLURM
@pytest.mark.skipif(
    cluster_state() not in ("idle", "mix", "alloc"),
    reason="no SLURM cluster on localhost; tests/cluster/start-slurm.sh starts one (as root, with apt-get)",
)
def test_tiny_experiment_through_the_slurm_profile(tmp_path):
    """The path of one model from download to score, as SLURM jobs: the data group, a
    GPU training job, a GPU translation job and the summary group."""
    plugin = importlib.util.find_spec("snakemake_executor_plugin_slurm")
    assert plugin, 'the SLURM profile needs its executor plugin: pip install -e ".[test,slurm]"'
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    tinydata.write_corpus(tmp_path / "data" / "tiny-source")
    target = f"results/tiny/scores/{FAST}/seed{TINY['seeds'][0]}/test_a.json"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(tmp_path),
         "--profile", str(ROOT / "profiles" / "slurm"), "--configfile", str(ROOT / "tests" / "tiny.yaml"),
         "--slurm-status-command", "squeue", "--slurm-no-account",
         "--slurm-init-seconds-before-status-checks", "2", target],  # a test cluster answers at once
        capture_output=True, text=True, env=env, timeout=1200,
    )  # fmt: skip
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-4000:]
    # job -> SLURM job id, from "... submitted with SLURM jobid 41 (log: .../slurm_logs/<job>/...)"
    submitted = {
        job_name(line.split("/slurm_logs/")[1].split("/")[0]): line.split("SLURM jobid ")[1].split()[0]
        for line in log.splitlines()
        if "submitted with SLURM jobid" in line
    }
    assert sorted(submitted) == ["group_data", "group_summary", "rule_train", "rule_translate"], submitted
    score = pd.read_json(tmp_path / target, typ="series")
    assert score["model"] == FAST and score["bleu"] > 20
    # The GPU rules asked SLURM for a GPU (the test cluster has a stand-in one); the others did not.
    for rule, job in submitted.items():
        details = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True).stdout
        assert ("gpu" in details) == rule.startswith("rule_"), (rule, details)
