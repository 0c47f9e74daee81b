"""The Snakemake workflow: config validation, the job graph, and the tiny chain end to end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

import tinydata
from conftest import ROOT
from mixnmt.files import read_lines


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    """Run the project's workflow in `workdir`, where config.yaml is a copy of the project's."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(ROOT / "Snakefile"),
            "-d",
            str(workdir),
            "--cores",
            "2",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.fixture
def workdir(tmp_path) -> Path:
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    return tmp_path


def overlay(workdir: Path, text: str) -> str:
    path = workdir / "overlay.yaml"
    path.write_text(text)
    return str(path)


FIGURES = ("learning_curves", "bleu_by_length", "alignments", "responsibilities", "component_usage", "cost")


def jobs(result: subprocess.CompletedProcess) -> dict[str, int]:
    """The job-count table of a dry run."""
    counts = {}
    lines = result.stdout.splitlines()
    start = lines.index("Job stats:") + 3
    for line in lines[start:]:
        if not line.strip() or line.startswith("total"):
            break
        name, count = line.split()
        counts[name] = int(count)
    return counts


def test_dry_run_lists_every_stage(workdir):
    result = snakemake(workdir, "-n")
    assert result.returncode == 0, result.stderr
    assert jobs(result) == {
        "aggregate": 1,
        "all": 1,
        "analyse": 5,
        "components_table": 1,
        "cost_table": 1,
        "download": 6,
        "lengths": 1,
        **{f"plot_{name}": 1 for name in FIGURES},
        "prepare": 3,
        "report": 1,
        "score": 5,
        "significance": 1,
        "speed": 5,
        "spm_encode": 5,
        "spm_train": 1,
        "train": 5,
        "translate": 5,
    }
    for model in ("rnn", "mixture", "mixture2", "transformer", "attention"):
        assert f"results/multi30k/checkpoints/{model}.pt" in result.stdout
    assert "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw" in result.stdout


def test_command_line_overrides(workdir):
    result = snakemake(workdir, "-n", "--config", "experiment=smoke", "mirror=/srv/mirror", "max_steps=5")
    assert result.returncode == 0, result.stderr
    assert "results/smoke/scores.tsv" in result.stdout and "results/multi30k" not in result.stdout
    assert "mixnmt download /srv/mirror data/multi30k/train.en.gz" in result.stdout
    assert '"max_steps": 5' in result.stdout


def test_overlay_adds_a_test_set(workdir):
    a, b = "a" * 64, "b" * 64
    extra = overlay(
        workdir,
        f"""
datasets:
  multi30k:
    test:
      test_2017_flickr:
        en: {{file: test_2017_flickr.en.gz, sha256: {a}}}
        de: {{file: test_2017_flickr.de.gz, sha256: {b}}}
""",
    )
    result = snakemake(workdir, "-n", "--configfile", extra)
    assert result.returncode == 0, result.stderr
    counts = jobs(result)
    assert (counts["translate"], counts["score"], counts["download"]) == (10, 10, 8)
    assert "results/multi30k/scores/transformer/test_2017_flickr.json" in result.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--config", "max_steps=many"], "'many' is not of type 'integer', 'null'"),
        (["--config", "experiment=a/b"], "'a/b' does not match"),
        (
            "models:\n  transfomer: {d_model: 8}\n",
            "Additional properties are not allowed ('transfomer' was unexpected)",
        ),
        ("train:\n  lr: fast\n", "'fast' is not of type 'number'"),
        ("dataset: wmt14\n", "config: dataset: 'wmt14' is not one of datasets: multi30k"),
    ],
)
def test_config_violating_the_schema_is_refused(workdir, args, expected):
    if isinstance(args, str):
        args = ["--configfile", overlay(workdir, args)]
    result = snakemake(workdir, "-n", *args)
    assert result.returncode != 0
    assert expected in result.stderr + result.stdout
    assert not (workdir / "results").exists()


@pytest.mark.slow
def test_tiny_experiment_end_to_end(workdir):
    tinydata.write_corpus(workdir / "data" / "tiny-source")
    result = snakemake(workdir, "--configfile", str(ROOT / "tests" / "tiny.yaml"))
    assert result.returncode == 0, result.stderr[-3000:]
    out = workdir / "results" / "tiny"

    models = ["attention", "mixture", "mixture2", "rnn", "transformer"]
    table = pd.read_csv(out / "scores.tsv", sep="\t").set_index(["testset", "model"])
    assert list(table.index) == [(t, m) for t in ("test_a", "test_b") for m in models]
    assert (table.params > 0).all() and "commit" in table.columns  # cites each training run
    # The tiny task is learnable: the models that attend to the source nearly solve it.
    assert (table.xs("attention", level="model").bleu > 50).all(), table
    assert (table.xs("transformer", level="model").bleu > 50).all(), table
    for model in models:
        for testset, n in (("test_a", 30), ("test_b", 20)):
            hyps = read_lines(out / "translations" / model / f"{testset}.txt")
            assert len(hyps) == n
        assert read_lines(out / "translations" / model / "test_a.txt")[5] == ""  # the empty source line
        manifest = json.loads((out / "train" / model / "manifest.json").read_text())
        assert manifest["model"] == model and manifest["params"] > 0
        assert f"{manifest['params']} parameters" in (out / "logs" / "train" / f"{model}.log").read_text()
    metrics = pd.read_csv(out / "train" / "transformer" / "metrics.tsv", sep="\t")
    assert len(metrics) == 40 and metrics.valid_loss.iloc[-1] < metrics.valid_loss.iloc[0]

    # The analysis: every table and figure, and the report that gathers them.
    scores_md = (out / "scores.md").read_text()
    # three metrics on two test sets: every model has intervals, all but the baseline p-values
    assert scores_md.count("±") == 3 * 2 * 5 and scores_md.count("(p=") == 3 * 2 * 4
    assert "bs:200|seed:12345" in scores_md and (table.ter >= 0).all() and table.bleu_p.notna().sum() == 8
    lengths = pd.concat(
        pd.read_csv(out / "tables" / "lengths" / f"{t}.tsv", sep="\t") for t in ("test_a", "test_b")
    )
    assert set(lengths.model) == set(models) and set(lengths.bucket) == {"<=4", "5-6", "7-9", ">9"}
    assert lengths.groupby(["testset", "model"]).sentences.sum().tolist() == [30] * 5 + [20] * 5
    cost = pd.read_csv(out / "tables" / "cost.tsv", sep="\t")
    assert (
        sorted(cost.model) == models
        and (cost[["greedy_sentences_per_s", "beam_sentences_per_s"]] > 0).all().all()
    )
    components = pd.read_csv(out / "tables" / "components.tsv", sep="\t")
    assert set(components.model) == {"mixture", "mixture2"}
    for name in (
        "learning_curves",
        "bleu_by_length",
        "alignments",
        "responsibilities",
        "component_usage",
        "cost",
    ):
        png = (out / "figures" / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000, name
        assert ET.parse(out / "figures" / f"{name}.svg").getroot().tag.endswith("svg"), name
    report = (out / "report.html").read_text()
    assert report.count('<img alt="') == 6 and report.count("<details>") == len(models)
    for section in (
        "Scores",
        "BLEU by source length",
        "Learning curves",
        "Alignments",
        "Mixture components",
        "Size and cost",
        "Runs",
        "Configuration",
    ):
        assert f">{section}</h2>" in report

    # A second run has nothing to do, also when the data now come from another mirror.
    mirror = workdir / "data" / "tiny-source"
    again = snakemake(
        workdir, "--configfile", str(ROOT / "tests" / "tiny.yaml"), "--config", f"mirror={mirror}"
    )
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
