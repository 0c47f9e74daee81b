"""The DVC project: `dvc repro` drives the Snakemake workflow, `dvc push/pull` carry the
checkpoints, and data.dvc pins the published Multi30k files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.utils import update_config

import tinydata
from conftest import FAST, ROOT, TINY_MODELS
from mixnmt.files import sha256sum

MIRROR = ROOT.parent / "shared" / "data" / "multi30k"
MODELS = list(TINY_MODELS)


def run(*command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.org",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.org",
    }
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def project(folder: Path, overlay: Path | None = None) -> Path:
    """A git + DVC working copy of the project whose config.yaml is config.yaml + `overlay`."""
    for name in ("Snakefile", "dvc.yaml", ".dvcignore", ".gitignore"):
        shutil.copy(ROOT / name, folder / name)
    for name in ("workflow", "profiles", "envs"):
        shutil.copytree(ROOT / name, folder / name)
    shutil.copytree(ROOT / "src", folder / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    if overlay:
        update_config(config, yaml.safe_load(overlay.read_text()))
    if config["only"]:  # DVC has a stage pair per entry of `models`: keep the experiment's only
        config["models"] = {name: config["models"][name] for name in config["only"]}
        config["only"] = None
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    run("git", "init", "-q", cwd=folder)
    run("dvc", "init", "-q", cwd=folder)
    run("dvc", "config", "core.analytics", "false", cwd=folder)
    return folder


def snakemake(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return run(sys.executable, "-m", "snakemake", "--cores", "2", *args, cwd=folder)


def stages_run(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage")}


@pytest.mark.slow
def test_dvc_repro_push_and_pull(tmp_path):
    (tmp_path / "project").mkdir()
    work = project(tmp_path / "project", ROOT / "tests" / "tiny.yaml")
    tinydata.write_corpus(work / "data" / "tiny-source")
    snakemake(work, "--until", "download")
    run("dvc", "add", "data", cwd=work)
    run("git", "add", "-A", cwd=work)
    run("git", "commit", "-qm", "tiny project", cwd=work)

    first = run("dvc", "repro", cwd=work)
    train = {f"train@{m}" for m in MODELS}
    evaluate = {f"evaluate@{m}" for m in MODELS}
    assert stages_run(first.stdout) == {"prepare", "report"} | train | evaluate
    out = work / "results" / "tiny"
    assert (out / "report.html").exists() and (out / "scores.json").exists()
    metrics = run("dvc", "metrics", "show", "--json", cwd=work).stdout
    assert '"bleu"' in metrics and "test_a" in metrics

    again = run("dvc", "repro", cwd=work)
    assert stages_run(again.stdout) == set() and "Data and pipelines are up to date" in again.stdout

    config = yaml.safe_load((work / "config.yaml").read_text())
    config["models"][FAST]["dropout"] = 0.2
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    changed = run("dvc", "repro", cwd=work)
    assert stages_run(changed.stdout) == {f"train@{FAST}", f"evaluate@{FAST}", "report"}

    checkpoints = {m: sha256sum(out / "checkpoints" / m / "seed1.pt") for m in MODELS}
    run("dvc", "remote", "add", "-d", "store", str(tmp_path / "remote"), cwd=work)
    run("dvc", "push", cwd=work)
    shutil.rmtree(work / ".dvc" / "cache")
    shutil.rmtree(out / "checkpoints")
    run("dvc", "pull", cwd=work)
    assert {m: sha256sum(out / "checkpoints" / m / "seed1.pt") for m in MODELS} == checkpoints
    assert "up to date" in run("dvc", "status", cwd=work).stdout.lower()


def test_data_dvc_pins_the_published_files():
    record = yaml.safe_load((ROOT / "data.dvc").read_text())["outs"][0]
    files = config_files()
    assert (record["path"], record["nfiles"]) == ("data", len(files))


def config_files() -> dict[str, str]:
    """File name -> sha256 of every file the default dataset lists."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    dataset = config["datasets"][config["dataset"]]
    splits = [dataset["train"], dataset["valid"], *dataset["test"].values()]
    return {entry["file"]: entry["sha256"] for split in splits for entry in split.values()}


@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"no local copy of Multi30k at {MIRROR}")
def test_dvc_status_is_clean_after_downloading_from_the_mirror(tmp_path):
    work = project(tmp_path)
    shutil.copy(ROOT / "data.dvc", work / "data.dvc")
    snakemake(work, "--until", "download", "--config", f"mirror={MIRROR}")
    assert {p.name: sha256sum(p) for p in (work / "data" / "multi30k").iterdir()} == config_files()
    assert "modified" not in run("dvc", "status", "data.dvc", cwd=work).stdout  # only: not in the cache yet
    run("dvc", "commit", "--force", "data.dvc", cwd=work)  # cache the download, as `dvc pull` would
    assert (work / "data.dvc").read_text() == (ROOT / "data.dvc").read_text()  # the recorded hash held
    assert "Data and pipelines are up to date" in run("dvc", "status", "data.dvc", cwd=work).stdout
