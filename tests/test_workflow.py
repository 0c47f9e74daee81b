"""The Snakemake workflow: config validation, the job graph, and the tiny chain end to end."""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml
from PIL import Image

import tinydata
from conftest import CONFIG, FAST, ROOT, TINY, TINY_MODELS, snakemake
from mixnmt.device import native_bf16
from mixnmt.figures import FIGURES
from mixnmt.files import read_lines
from mixnmt.models import REGISTRY, architecture, resolve
from mixnmt.provenance import EMPTY_KEY
from mixnmt.tables import TABLES

MODELS = list(CONFIG["models"])


def overlay(workdir: Path, text: str) -> str:
    path = workdir / "overlay.yaml"
    path.write_text(text)
    return str(path)


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


def torch_cpu_only() -> bool:
    from mixnmt.device import pick_device

    return pick_device().type == "cpu"


def test_dry_run_lists_every_stage(workdir):
    """config.yaml: every model of the grid, trained, decoded and scored once per seed."""
    result = snakemake(workdir, "-n")
    assert result.returncode == 0, result.stderr
    n, seeds = len(MODELS), len(CONFIG["seeds"])
    tests = list(CONFIG["datasets"][CONFIG["dataset"]]["test"])
    assert seeds == 3 and tests == ["test_2016_flickr", "test_2017_flickr", "test_2018_flickr"]
    t = len(tests)
    assert jobs(result) == {
        "aggregate": 1,
        "headline": 1,
        "align": n * seeds,  # every run's word alignments on the first test set
        "all": 1,
        "analyse": n,
        "contrasts": t,  # each test set's contrasts over every seed
        "decoding": 1,  # the decoding settings beside the checkpoints
        "download": 2 * (2 + t),  # train, valid and every test set, both languages
        "lengths": t,
        **{f"plot_{name}": 1 for name in FIGURES},
        **{f"table_{name}": 1 for name in TABLES},
        "prepare": 2 + t,
        "reliance": n * seeds,
        "report": 1,
        "score": n * seeds * t,
        "significance": seeds * t,
        "silver": 1,  # the first test set's silver word alignments
        "speed": n,
        "spm_encode": 4 + t,  # train and valid both ways, the test sets' sources
        "spm_train": 1,
        "train": n * seeds,
        "translate": n * seeds * t,
    }
    for model in MODELS:
        for seed in CONFIG["seeds"]:
            assert f"results/multi30k/checkpoints/{model}/seed{seed}.pt" in result.stdout


def test_cpu_experiment_runs_its_key_contrasts_with_five_seeds_on_every_test_set(workdir):
    result = snakemake(workdir, "-n", "--configfile", str(ROOT / "experiments" / "cpu.yaml"))
    assert result.returncode == 0, result.stderr
    cpu = yaml.safe_load((ROOT / "experiments" / "cpu.yaml").read_text())
    tests = list(CONFIG["datasets"][CONFIG["dataset"]]["test"])
    assert cpu["seeds"] == [1, 2, 3, 4, 5] and {"test_2017_flickr", "test_2018_flickr"} <= set(tests)
    counts = jobs(result)
    runs = len(cpu["seeds"]) * len(cpu["only"])
    assert counts["train"] == counts["reliance"] == counts["align"] == runs
    assert counts["translate"] == counts["score"] == runs * len(tests)
    for model in {name for pair in cpu["analysis"]["contrasts"] for name in pair}:
        for seed in cpu["seeds"]:
            assert f"results/multi30k-cpu/checkpoints/{model}/seed{seed}.pt" in result.stdout
            for test in tests:
                assert f"results/multi30k-cpu/translations/{model}/seed{seed}/{test}.txt" in result.stdout
    knobs = {
        name: resolve(name, {**CONFIG["models"][name], **cpu["models"][name]})[1] for name in cpu["only"]
    }
    pairs = cpu["analysis"]["contrasts"]
    differ = {(a, b): {k for k in knobs[a] if knobs[a].get(k) != knobs[b].get(k)} for a, b in pairs}
    # K=64 against 0 and the source's access, one knob each; the second order pays for its
    # second component bank with width; attention against the mixture is two designs
    assert sum(d == {"components"} for d in differ.values()) == 2
    assert sum(d == {"source"} for d in differ.values()) == 2
    assert differ["mixture-summary-gated", "mixture2-summary-gated"] == {"d_model"}
    assert len(pairs) == len(differ) == 6
    assert "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw" in result.stdout
    # its models are variants, config entries naming an architecture: each trains from its entry
    for name in cpu["only"]:
        entry = json.dumps({**CONFIG["models"][name], **cpu["models"][name]}, sort_keys=True)
        assert f"mixnmt train --model {name} --entry '{entry}'" in result.stdout, name


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
      test_2017_mscoco:
        en: {{file: test_2017_mscoco.en.gz, sha256: {a}, size: 1000}}
        de: {{file: test_2017_mscoco.de.gz, sha256: {b}, size: 1000}}
""",
    )
    result = snakemake(workdir, "-n", "--configfile", extra)
    assert result.returncode == 0, result.stderr
    counts = jobs(result)
    runs, t = len(MODELS) * len(CONFIG["seeds"]), len(CONFIG["datasets"]["multi30k"]["test"]) + 1
    assert (counts["translate"], counts["score"], counts["download"]) == (t * runs, t * runs, 2 * (2 + t))
    assert f"results/multi30k/scores/{MODELS[-1]}/seed1/test_2017_mscoco.json" in result.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--config", "max_steps=many"], "config: max_steps: 'many' is not of type 'integer', 'null'"),
        (["--config", "experiment=a/b"], "config: experiment: 'a/b' is not a name"),
        ("models:\n  lstm: {d_model: 8}\n", "config: models.lstm.arch: 'lstm' is not one of ["),
        ("models:\n  big: {arch: lstm}\n", "config: models.big.arch: 'lstm' is not one of ["),
        ("models:\n  a/b: {}\n", "config: models: 'a/b' is not a name"),
        (
            f"models:\n  {FAST}: {{d_modle: 8}}\n",
            f"config: models.{FAST}: Additional properties are not allowed ('d_modle' was",
        ),
        ("train:\n  lr: fast\n", "config: train.lr: 'fast' is not of type 'number'"),
        ("dataset: wmt14\n", "config: dataset: 'wmt14' is not one of datasets: multi30k"),
        (["--config", "foo=1"], "config: Additional properties are not allowed ('foo' was unexpected)"),
        ('experiment: "study\\n"\n', "config: experiment: 'study\\n' is not a name"),
        (["--config", "mirror=-h"], "config: mirror: '-h' is not a folder"),
        ("analysis:\n  length_buckets: [20, 10]\n", "config: analysis.length_buckets: expected increasing"),
        (
            "analysis:\n  primary: {metric: chrf, testset: test_2019}\n",
            "config: analysis.primary.testset: 'test_2019' is not one of the test sets: test_2016_flickr, ",
        ),
        (
            "analysis:\n  primary: {metric: ter, testset: null}\n",
            "config: analysis.primary.metric: 'ter' is not one of",
        ),
        (
            f"models:\n  {FAST}: {{d_model: 30, heads: 4}}\n",
            f"config: models.{FAST}: d_model=30 is not divisible",
        ),
        (
            "decode:\n  length_penalty: .nan\n",
            "config: decode.length_penalty: expected a finite number, got nan",
        ),
        ("seeds: [1.0]\n", "config: seeds.0: 1.0 is not of type 'integer'"),
        (
            "spm:\n  character_coverage: 0.9\n",
            "config: spm.character_coverage: 0.9 is less than the minimum of 0.98",
        ),
    ],
)
def test_config_violating_the_schema_is_refused(workdir, args, expected):
    if isinstance(args, str):
        args = ["--configfile", overlay(workdir, args)]
    result = snakemake(workdir, "-n", *args)
    assert result.returncode != 0
    lines = [line for line in (result.stderr + result.stdout).splitlines() if line.startswith("config: ")]
    assert len(lines) == 1 and lines[0].startswith(expected), result.stderr
    assert len((result.stderr + result.stdout).splitlines()) < 10, result.stderr  # no schema dump
    assert not (workdir / "results").exists()


def test_an_alias_bomb_overlay_is_refused_before_snakemake_merges_it(workdir):
    """479 bytes of YAML aliases expand to 4.4e8 values: Snakemake's own merge of the
    overlay onto config.yaml would hang, so the Snakefile reads it first."""
    levels = [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 6)}]" for i in range(1, 12)]
    bomb = overlay(workdir, "l0: &l0 [lol, lol]\n" + "\n".join(levels) + "\ndecode: {beam: *l11}\n")
    result = snakemake(workdir, "-n", "--configfile", bomb)
    assert result.returncode != 0
    assert f"config: {bomb}: expands to more than 100000 values (YAML aliases?); refused" in (
        result.stderr + result.stdout
    )


def test_an_alias_bomb_given_with_config_is_refused_at_once(workdir):
    """--config values are YAML too, which Snakemake parses and merges itself."""
    levels = ",".join(f"&l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 7))
    result = snakemake(workdir, "-n", "--config", f"bomb=[&l0 [1,1,1,1,1,1,1,1,1],{levels}]")
    assert result.returncode != 0
    assert "config: --config: expands to more than 100000 values (YAML aliases?); refused" in (
        result.stderr + result.stdout
    )


def test_without_a_gpu_a_run_of_many_hours_stops_before_it_starts_saying_what_fits(workdir):
    """The full study on a CPU: the last lines say what it would cost, which command fits,
    and how to insist; nothing is downloaded or trained."""
    if not torch_cpu_only():
        pytest.skip("a GPU is here: the full study runs")
    result = snakemake(workdir, "--config", "max_steps=600")
    said = result.stderr + result.stdout
    assert result.returncode != 0 and "of 600 steps" in said and "hours on 2 CPU cores" in said
    assert "--configfile experiments/cpu.yaml" in said and "--config allow_cpu=true" in said
    assert not (workdir / "data").exists() and not list((workdir / "results").rglob("*.pt"))
    # config.yaml trains in bf16: where this CPU emulates it, that is said before it starts
    assert ("emulates bf16" in said) == (not native_bf16(torch.device("cpu"))), said
    # insisting goes on, the cost said as a warning (the download, from an empty mirror,
    # is the first job and fails)
    empty = workdir / "empty"
    empty.mkdir()
    result = snakemake(workdir, "--config", "max_steps=600", "allow_cpu=true", f"mirror={empty}")
    said = result.stderr + result.stdout
    assert "hours on 2 CPU cores" in said and "here anyway" not in said, said
    assert "download" in said and not list((workdir / "results").rglob("*.pt"))


def test_numbers_and_booleans_given_with_config_are_read_as_in_a_config_file(workdir):
    """Snakemake keeps `allow_cpu=true` and what is inside `seeds=[7]` as strings; the
    workflow types them as a config file would, so the schema takes them."""
    result = snakemake(workdir, "-n", "--config", "allow_cpu=true", "seeds=[7]", "train={epochs: 1}")
    assert result.returncode == 0, result.stderr
    assert "seed7.pt" in result.stdout and "seed1.pt" not in result.stdout


def reversed_keys(value, path=()):
    """`value` with the keys of every mapping of settings in reverse order (not the named
    collections, whose order is the figures' and the first test set's)."""
    if isinstance(value, dict):
        ordered = path in {("models",)} or path[-1:] == ("test",)
        keys = list(value) if ordered else reversed(list(value))
        return {k: reversed_keys(value[k], (*path, k)) for k in keys}
    return [reversed_keys(v, path) for v in value] if isinstance(value, list) else value


def test_the_order_of_keys_never_changes_a_jobs_command(workdir):
    """Snakemake reruns a job whose parameters change: equal settings in another key order
    (an overlay merged by hand, a tool that sorts keys) give every job the same command."""
    tiny = yaml.safe_load((ROOT / "tests" / "tiny.yaml").read_text())
    commands = []
    for config in (tiny, reversed_keys(tiny)):
        path = overlay(workdir, yaml.safe_dump(config, sort_keys=False))
        result = snakemake(workdir, "-n", "-p", "--configfile", path)
        assert result.returncode == 0, result.stderr[-2000:]
        said = [line.removeprefix("Shell command: ") for line in (result.stdout + result.stderr).splitlines()]
        # the captions' folder is Snakemake's source cache, a new temporary one per invocation
        said = [re.sub(r"--captions \S+", "--captions CAPTIONS", line) for line in said]
        commands.append(sorted(line for line in said if line.startswith("mixnmt ")))
    assert commands[0] == commands[1] and any(c.startswith("mixnmt train") for c in commands[0])


def test_a_variant_that_trains_differently_trains_with_its_own_settings(workdir):
    """A config entry's `train` reaches its runs' training jobs, and no other model's."""
    tiny = yaml.safe_load((ROOT / "tests" / "tiny.yaml").read_text())
    name = tiny["only"][0]
    tiny["models"]["variant"] = {**tiny["models"][name], "arch": name, "train": {"decay": "matrices"}}
    tiny["only"].append("variant")
    result = snakemake(workdir, "-n", "-p", "--configfile", overlay(workdir, yaml.safe_dump(tiny)))
    assert result.returncode == 0, result.stdout[-2000:]
    said = [line.removeprefix("Shell command: ") for line in (result.stdout + result.stderr).splitlines()]
    trains = [line for line in said if line.startswith("mixnmt train")]
    decays = {re.search(r"--model (\S+)", c)[1]: re.search(r'"decay": "(\w+)"', c)[1] for c in trains}
    section = tiny["train"].get("decay", CONFIG["train"]["decay"])
    assert section != "matrices" and decays == dict.fromkeys(tiny["only"], section) | {"variant": "matrices"}


def test_a_variant_that_decodes_differently_shares_its_twins_training(workdir):
    """A config entry that differs from another only in its `decode` trains nothing: its
    runs keep the other's (`mixnmt share`), and it decodes with its own settings."""
    tiny = yaml.safe_load((ROOT / "tests" / "tiny.yaml").read_text())
    name = tiny["only"][0]
    tiny["models"]["variant"] = {**tiny["models"][name], "arch": name, "decode": {"length_penalty": 2.0}}
    tiny["only"].append("variant")
    result = snakemake(workdir, "-n", "-p", "--configfile", overlay(workdir, yaml.safe_dump(tiny)))
    assert result.returncode == 0, result.stdout[-2000:]
    said = [line.removeprefix("Shell command: ") for line in (result.stdout + result.stderr).splitlines()]
    models = {
        kind: [re.search(r"--model (\S+)", c)[1] for c in said if c.startswith(f"mixnmt {kind} ")]
        for kind in ("train", "share", "translate")
    }
    seeds, testsets = len(tiny["seeds"]), len(tiny["datasets"]["tiny"]["test"])
    assert sorted(models["train"]) == sorted(tiny["only"][:-1]) * seeds
    assert models["share"] == ["variant"] * seeds
    assert models["translate"].count("variant") == seeds * testsets
    (shared,) = [c for c in said if c.startswith("mixnmt share ")]
    assert f"checkpoints/{name}/seed1.pt" in shared and "checkpoints/variant/seed1.pt" in shared


def test_a_long_value_is_cut_short_in_the_message(workdir):
    result = snakemake(
        workdir, "-n", "--configfile", overlay(workdir, f"train:\n  lr: {list(range(5000))}\n")
    )
    lines = [line for line in (result.stderr + result.stdout).splitlines() if line.startswith("config: ")]
    assert result.returncode != 0 and len(lines) == 1 and lines[0].startswith("config: train.lr: [0, 1, 2")
    assert len(lines[0]) < 250, lines[0]


@pytest.mark.slow(seconds=25)
def test_separate_vocabularies_run_end_to_end(workdir):
    """spm.joint: false trains one SentencePiece model per language, and a model that
    reads with one and writes with the other, its embeddings untied, learns the task."""
    tinydata.write_corpus(workdir / "data" / "tiny-source")
    separate = overlay(
        workdir, f"spm: {{joint: false}}\nonly: [{FAST}]\nanalysis: {{baseline: {FAST}, contrasts: []}}\n"
    )
    out = workdir / "results" / "tiny"
    score = out / "scores" / FAST / "seed1" / "test_a.json"
    tiny = str(ROOT / "tests" / "tiny.yaml")
    result = snakemake(workdir, str(score.relative_to(workdir)), "--configfile", tiny, separate)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(p.name for p in (out / "spm").glob("*.model")) == sorted(
        f"{lang}.model" for lang in (CONFIG["src"], CONFIG["tgt"])
    )
    payload = torch.load(out / "checkpoints" / FAST / "seed1.pt", weights_only=True)
    assert payload["vocab"]["shared"] is False and payload["vocab"]["src"] != payload["vocab"]["tgt"]
    assert json.loads(score.read_text())["bleu"] > 50


def test_a_link_planted_inside_the_experiment_folder_is_refused_before_any_job(workdir, tmp_path_factory):
    """Snakemake writes benchmark files through a link at their path: a link committed under
    results/ must not let a rebuild overwrite a file elsewhere."""
    victim = tmp_path_factory.mktemp("outside") / "precious.txt"
    victim.write_text("keep me\n")
    planted = workdir / "results" / "multi30k" / "benchmarks" / "download" / "train.en.gz.tsv"
    planted.parent.mkdir(parents=True)
    planted.symlink_to(victim)
    result = snakemake(workdir, "--config", f"mirror={tmp_path_factory.mktemp('mirror')}")
    assert result.returncode != 0
    assert f"{planted.relative_to(workdir)}: a symbolic link inside results/multi30k" in result.stderr
    assert victim.read_text() == "keep me\n" and not (workdir / "data").exists()


SIXTH = """\"\"\"A sixth architecture, added by the test as a user would: a GRU decoder that attends
(dot product) over the source embeddings themselves.\"\"\"

import math

import torch
from torch import Tensor, nn

from mixnmt.models.base import Dropout, PositiveInt, Probability, Seq2Seq, State, Weights, source_mask
from mixnmt.symbols import PAD


class Sixth(Seq2Seq):
    analysis_axes = {"alignment": ("target", "source")}

    def __init__(
        self, src_vocab, tgt_vocab, shared_vocab, *, d_model: PositiveInt = 32, dropout: Probability = 0.1
    ):
        super().__init__(src_vocab, tgt_vocab, shared_vocab, d_model)
        self.cell = nn.GRUCell(2 * d_model, d_model)
        self.drop = Dropout(dropout)

    @property
    def static_state(self) -> frozenset[str]:
        return frozenset({"memory", "mask"})

    def encode(self, src: Tensor) -> State:
        memory = self.embed(self.src_embed, src)
        return {"memory": memory, "mask": source_mask(src), "s": memory.new_zeros(src.size(0), self.d_model)}

    def advance(self, state: State, y: Tensor) -> tuple[Tensor, Tensor]:
        scores = (state["memory"] @ state["s"][:, :, None])[..., 0] / math.sqrt(self.d_model)
        a = scores.masked_fill(~state["mask"], -math.inf).softmax(-1)
        c = (a[:, None] @ state["memory"])[:, 0]
        return self.cell(torch.cat([self.drop(self.embed(self.tgt_embed, y)), c], -1), state["s"]), a

    def step(self, state: State, y: Tensor) -> tuple[Tensor, State]:
        s, _ = self.advance(state, y)
        return self.output(s), {**state, "s": s}

    def teacher_forcing(self, src: Tensor, tgt: Tensor, keep_weights: bool = False) -> tuple[Tensor, Weights]:
        state, logits, weights = self.encode(src), [], []
        for t in range(tgt.size(1)):
            state["s"], a = self.advance(state, tgt[:, t])
            logits.append(self.output(state["s"]))
            weights.append(a)
        alignment = torch.stack(weights, 1) * (tgt != PAD)[..., None]
        return torch.stack(logits, 1), {"alignment": alignment} if keep_weights else {}
"""


def with_a_sixth_architecture(folder: Path) -> Path:
    """A git checkout of the project with one more architecture, registered as the README
    says (one module, one registry entry), and in the tiny experiment. (Variants of an
    architecture, config entries, are config.yaml's own models: the dry runs' subject.)"""
    for name in ("Snakefile", "config.yaml"):
        shutil.copy(ROOT / name, folder / name)
    for name in ("workflow", "profiles", "envs", "tests"):
        shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "src", folder / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    models = folder / "src" / "mixnmt" / "models"
    (models / "sixth.py").write_text(SIXTH)
    registry = (models / "__init__.py").read_text()
    registry = registry.replace(  # the import, and the entry at the top of REGISTRY
        "\nREGISTRY: dict[str, type[Seq2Seq]] = {\n",
        "\nfrom mixnmt.models.sixth import Sixth\n\nREGISTRY: dict[str, type[Seq2Seq]] = {\n"
        '    "sixth": Sixth,\n',
    )
    (models / "__init__.py").write_text(registry)
    added = {"sixth": {"d_model": 24}}
    tiny = {**TINY, "only": [*TINY["only"], *added], "models": {**TINY_MODELS, **added}}
    (folder / "tests" / "tiny.yaml").write_text(yaml.safe_dump(tiny, sort_keys=False))
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-qm", "a sixth architecture"]):
        subprocess.run([*git, *command], check=True)  # a checkout: results record its commit
    return folder


def attends(name: str, entry: dict | None) -> bool:
    """Whether a model's analysis weights include a distribution over source positions."""
    return any(axes[-1] == "source" for axes in REGISTRY[resolve(name, entry)[0]].analysis_axes.values())


@pytest.mark.slow(seconds=200)
def test_tiny_experiment_end_to_end(workdir, tmp_path_factory):
    project = with_a_sixth_architecture(tmp_path_factory.mktemp("project"))
    tinydata.write_corpus(workdir / "data" / "tiny-source")
    result = snakemake(workdir, "--configfile", str(project / "tests" / "tiny.yaml"), project=project)
    assert result.returncode == 0, result.stderr[-3000:]
    out = workdir / "results" / "tiny"

    tiny = yaml.safe_load((project / "tests" / "tiny.yaml").read_text())
    entries, models = tiny["models"], sorted(tiny["only"])
    assert "sixth" in models
    # the whole run's line, at the start and as the last run is done (decoding follows)
    said = result.stderr + result.stdout
    runs = len(models) * len(tiny["seeds"])
    assert f"training: 0 of {runs} runs done" in said and f"training: {runs} of {runs} runs done" in said
    table = pd.read_csv(out / "scores.tsv", sep="\t").set_index(["testset", "model"])
    assert list(table.index) == [(t, m) for t in ("test_a", "test_b") for m in models]
    assert (table.params > 0).all()
    # Every run, translation, score and table records the commit that made it.
    head = subprocess.run(["git", "-C", project, "rev-parse", "HEAD"], capture_output=True, text=True)
    commit = head.stdout.strip()
    assert set(table.commit) == set(table.train_commit) == {commit}
    stamped = [*(out / "tables").rglob("*.tsv"), *(out / "reliance").rglob("*.tsv")]
    assert len(stamped) == len(TABLES) + 2 + len(models) and all(
        set(pd.read_csv(path, sep="\t").commit) == {commit} for path in stamped
    )
    records = [*(out / "scores").rglob("*.json"), *(out / "significance").rglob("*.json")]
    records += (out / "contrasts").rglob("*.json")
    assert len(records) == 2 * len(models) + 4 and all(
        json.loads(p.read_text())["commit"] == commit for p in records
    )
    # The tiny task is learnable: the studied models that attend to the source nearly solve it.
    for name, entry in TINY_MODELS.items():
        if attends(name, entry):
            assert (table.xs(name, level="model").bleu > 50).all(), table
    for model in models:
        for testset, n in (("test_a", 30), ("test_b", 20)):
            hyps = read_lines(out / "translations" / model / "seed1" / f"{testset}.txt")
            assert len(hyps) == n
        assert (
            read_lines(out / "translations" / model / "seed1" / "test_a.txt")[5] == ""
        )  # the empty source line
        made = json.loads((out / "translations" / model / "seed1" / "test_a.json").read_text())
        assert made["git"] == {"commit": commit, "dirty": False} and made["sentences"] == 30
        assert made["inputs"][str(Path("results/tiny/checkpoints") / model / "seed1.pt")]  # its sha256
        manifest = json.loads((out / "train" / model / "seed1" / "manifest.json").read_text())
        assert manifest["model"] == model and manifest["params"] > 0
        assert manifest["arch"] == architecture(model, entries.get(model))
        assert (
            f"{manifest['params']} parameters" in (out / "logs" / "train" / model / "seed1.log").read_text()
        )
    # A sentence typed at `mixnmt translate --text` gets the translation the workflow made,
    # from any directory: the checkpoint carries the experiment's decoding settings (beam 3,
    # tests/tiny.yaml's, where config.yaml's is 5).
    assert json.loads((out / "checkpoints" / "decode.json").read_text())["beam"] == TINY["decode"]["beam"]
    first = read_lines(out / "corpus" / "test_a.en")[0]
    spm = out / "spm" / "joint.model"
    typed = subprocess.run(
        [Path(sys.executable).parent / "mixnmt", "translate", "--text", "--checkpoint",
         (out / "checkpoints" / FAST / "seed1.pt").resolve(), "--spm", spm.resolve()],
        input=f"{first}\n", capture_output=True, text=True, cwd=tmp_path_factory.mktemp("elsewhere"),
        env={**os.environ, "PYTHONPATH": str(project / "src")},
    )  # fmt: skip
    assert typed.returncode == 0, typed.stderr
    assert typed.stdout == read_lines(out / "translations" / FAST / "seed1" / "test_a.txt")[0] + "\n"
    sixth = json.loads((out / "analysis" / "sixth.json").read_text())
    assert (
        sixth["axes"] == {"alignment": ["target", "source"]} and sixth["sentences"][0]["weights"]["alignment"]
    )
    metrics = pd.read_csv(out / "train" / FAST / "seed1" / "metrics.tsv", sep="\t")
    assert len(metrics) == 40 and metrics.valid_loss.iloc[-1] < metrics.valid_loss.iloc[0]

    # The analysis: every table and figure, and the report that gathers them.
    scores_md = (out / "scores.md").read_text()
    # three metrics on two test sets: every model has intervals, all but the baseline p-values
    n = len(models)
    assert scores_md.count("±") == 3 * 2 * n and scores_md.count("(p=") == 3 * 2 * (n - 1)
    assert (
        "bs:200|seed:12345" in scores_md
        and (table.ter >= 0).all()
        and table.bleu_p.notna().sum() == 2 * (n - 1)
    )
    lengths = pd.concat(
        pd.read_csv(out / "tables" / "lengths" / f"{t}.tsv", sep="\t") for t in ("test_a", "test_b")
    )
    assert set(lengths.model) == set(models) and set(lengths.bucket) == {"<=4", "5-6", "7-9", ">9"}
    assert lengths.groupby(["testset", "model"]).sentences.sum().tolist() == [30] * n + [20] * n
    cost = pd.read_csv(out / "tables" / "cost.tsv", sep="\t")
    assert (
        sorted(cost.model) == models
        and (cost[["greedy_sentences_per_s", "beam_sentences_per_s"]] > 0).all().all()
    )
    jobs = pd.read_csv(out / "tables" / "jobs.tsv", sep="\t").set_index("job")
    runs = [f"{m}/seed1" for m in models]
    assert {f"train/{r}" for r in runs} | {f"translate/{r}/test_a" for r in runs} <= set(jobs.index)
    assert {f"speed/{m}" for m in models} <= set(jobs.index) and (
        jobs[["seconds", "peak_rss_mb"]] > 0
    ).all().all()
    components = pd.read_csv(out / "tables" / "components.tsv", sep="\t")
    analyses = [json.loads((out / "analysis" / f"{m}.json").read_text()) for m in models]
    mixtures = {a["model"] for a in analyses if any(axes[-1] == "component" for axes in a["axes"].values())}
    assert mixtures and set(components.model) == mixtures
    # Word alignments against the silver ones (where eflomal is installed; else it says why):
    # a row per weight over source positions, per layer x head weight its mean and best head,
    # each from every run's alignments.
    aligned = [json.loads((out / "word_alignments" / r).with_suffix(".json").read_text()) for r in runs]
    assert [(a["model"], a["run"]["seed"]) for a in aligned] == [(m, 1) for m in models]
    errors = pd.read_csv(out / "tables" / "alignment_errors.tsv", sep="\t")
    over_source = [
        (a["model"], w, axes) for a in analyses for w, axes in a["axes"].items() if axes[-1] == "source"
    ]
    if importlib.util.find_spec("eflomal") is None:
        assert errors.weights.str.startswith("skipped: eflomal is not installed").all()
    else:
        plain = {(m, w if axes == ["target", "source"] else f"{w} mean") for m, w, axes in over_source}
        best = errors.weights.str.endswith(" best head")
        assert set(zip(errors.model[~best], errors.weights[~best])) == plain
        assert sorted(errors.model[best]) == sorted(m for m, _, axes in over_source if "head" in axes)
        assert errors.best_heads[best].str.fullmatch(r"layer \d+, head \d+ \(seed 1\)").all()
        assert errors.aer.between(0, 1).all() and (errors.sentences == 29).all()  # test_a's non-empty lines
        assert (errors.seeds == 1).all() and errors.aer_sd.isna().all()  # one seed: no spread
    posteriors = pd.read_csv(out / "tables" / "posteriors.tsv", sep="\t")
    latent = [a["model"] for a in analyses if {"prior", "posterior"} <= a["axes"].keys()]
    assert latent and posteriors.model.tolist() == latent and (posteriors.kl > 0).all()
    contrasts = pd.read_csv(out / "tables" / "contrasts.tsv", sep="\t")
    pairs = [tuple(pair) for pair in tiny["analysis"]["contrasts"]]
    assert list(zip(contrasts.a, contrasts.b)) == pairs * 2
    assert contrasts.chrf_p.isna().all() and contrasts.chrf_delta.notna().all()  # one run: no Welch's t
    primary = contrasts.testset == next(iter(tiny["datasets"]["tiny"]["test"]))  # chrF on the first
    assert (contrasts.chrf_verdict[primary] == "undecided").all() and primary.sum() == len(pairs)
    assert (contrasts.chrf_verdict[~primary] == "descriptive").all() and (
        contrasts.bleu_verdict == "descriptive"
    ).all()
    reliance = pd.read_csv(out / "tables" / "reliance.tsv", sep="\t")
    overall = reliance[reliance.position == 0].set_index("model").difference
    assert sorted(overall.index) == models and (overall > 0).all()  # every tiny model reads its source
    assert table.reliance.notna().all() and table.bleu_lc.notna().all()
    use = pd.read_csv(out / "tables" / "use.tsv", sep="\t")
    assert set(use.model) == mixtures and set(use.group) == {"stay", "learned", "source"}
    assert (use.groupby(["model", "weights"]).mass.sum() - 1).abs().max() < 1e-3
    for name in mixtures:
        usage = pd.read_csv(out / "train" / name / "seed1" / "metrics.tsv", sep="\t")
        assert any(column.endswith(".mi") for column in usage.columns), name
    for name in FIGURES:
        png = (out / "figures" / f"{name}.png").read_bytes()
        svg = out / "figures" / f"{name}.svg"
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and ET.parse(svg).getroot().tag.endswith("svg"), name
        if name == "alignment_errors" and importlib.util.find_spec("eflomal") is None:
            assert "<!-- skipped: eflomal is not installed" in svg.read_text()  # it says why it is empty
        else:
            assert len(png) > 10_000, name
    report = (out / "report.html").read_text()
    empty = {}  # figures with nothing to show (alignment errors without eflomal): a line saying why
    for name in FIGURES:
        with Image.open(out / "figures" / f"{name}.png") as image:
            if EMPTY_KEY in image.text:
                empty[name] = image.text[EMPTY_KEY]
    assert report.count('<img alt="') == len(FIGURES) - len(empty)
    assert all(f'<p class="note">{html.escape(why)}</p>' in report for why in empty.values())
    assert report.count(": manifest</summary>") == len(models)
    for a, b in tiny["analysis"]["contrasts"]:  # the answer, from the contrast table
        assert f"<li>{b} against {a} (1 and 1 runs): " in report
    assert "from one run of a model, no claim" in report
    for section in (
        "The answer",
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
    # Every number traces back to its run: the chain checks, every score computed again.
    verified = subprocess.run(
        [Path(sys.executable).parent / "mixnmt", "verify", out, "--configfile", "tests/tiny.yaml",
         "--data", workdir / "data" / "tiny"],
        capture_output=True, text=True, cwd=project, env={**os.environ, "PYTHONPATH": str(project / "src")},
    )  # fmt: skip
    assert verified.returncode == 0 and verified.stdout == "", verified.stdout + verified.stderr
    assert "0 broken, 0 skipped" in verified.stderr and "every score recomputed" in verified.stderr

    # A second run has nothing to do, also when the data now come from another mirror.
    mirror = workdir / "data" / "tiny-source"
    again = snakemake(
        workdir,
        "--configfile",
        str(project / "tests" / "tiny.yaml"),
        "--config",
        f"mirror={mirror}",
        project=project,
    )
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr

    # A deleted translation whose score is kept: a plain run does not see it (README,
    # "What a plain rerun does not see"); naming it rebuilds it, byte for byte.
    translation = out / "translations" / FAST / "seed1" / "test_a.txt"
    made, kept = translation.relative_to(workdir), translation.read_bytes()
    translation.unlink()
    plain = snakemake(workdir, "-n", "--configfile", str(project / "tests" / "tiny.yaml"), project=project)
    assert plain.returncode == 0 and "Nothing to be done" in plain.stdout + plain.stderr
    named = snakemake(  # the target first: --configfile takes every word after it
        workdir, str(made), "--configfile", str(project / "tests" / "tiny.yaml"), project=project
    )
    assert named.returncode == 0 and translation.read_bytes() == kept, named.stderr[-3000:]

    # Snakemake's own report: the workflow description, the score table and every study
    # table, report.html, the figures, and the run time of every rule.
    built = snakemake(
        workdir, "--configfile", str(project / "tests" / "tiny.yaml"), "--report", "snakemake-report.html",
        project=project,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    assert "(ERROR/" not in built.stdout + built.stderr  # every caption is valid reStructuredText
    page = (workdir / "snakemake-report.html").read_text()
    assert "read attention as a mixture model" in page  # workflow/report/workflow.rst
    for name in ["scores.tsv", "report.html", *(f"{t}.tsv" for t in TABLES), *(f"{f}.png" for f in FIGURES)]:
        assert name in page, name
    for rule in ("train", "translate", "speed", "reliance", "report"):
        assert f'"rule": "{rule}"' in page or f'"rule":"{rule}"' in page, rule


FAKE_GPU = """# A stand-in for a GPU of {memory} bytes: what the workflow asks of torch.cuda.
import torch

import mixnmt.machine


class Properties:
    total_memory = {memory}


mixnmt.machine.GPU_DRIVERS = ("/",)  # a driver is loaded
torch.cuda.is_available = lambda: True
torch.cuda.get_device_properties = lambda device=0: Properties()
"""


@pytest.mark.slow(seconds=25)
def test_on_a_gpu_a_latent_training_takes_the_shares_its_memory_needs(workdir, tmp_path):
    """Once the id files exist, a training job asks for its GPU shares (resource gpu_jobs):
    on a GPU too small for a latent model's widest batch, all of them; others one."""
    tinydata.write_corpus(workdir / "data" / "tiny-source")
    tiny = str(ROOT / "tests" / "tiny.yaml")
    assert snakemake(workdir, "--configfile", tiny, "--until", "spm_encode").returncode == 0
    fake = tmp_path / "fake-gpu"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text(FAKE_GPU.format(memory=2**20))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(fake), str(ROOT / "src")])}
    command = [sys.executable, "-m", "snakemake", "-s", ROOT / "Snakefile", "-d", workdir, "-n"]
    command += ["--cores", "2", "--resources", "gpu_jobs=4", "--configfile", tiny]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    jobs = re.findall(r"rule train:.*?wildcards: model=([\w-]+),.*?gpu_jobs=(\d+)", done.stdout, re.S)
    shares = {model: int(n) for model, n in jobs}
    entries = {name: resolve(name, TINY_MODELS.get(name)) for name in shares}
    holding = {name for name, (arch, h) in entries.items() if REGISTRY[arch].held_bytes(h, 1, 1, 1)}
    assert set(shares) == set(TINY["only"]) and holding  # the latent model
    assert shares == {name: 4 if name in holding else 1 for name in shares}


WATCH = """# Records, as the process ends, whether it imported torch.
import atexit
import sys

atexit.register(lambda: open({path!r}, "a").write(str("torch" in sys.modules) + "\\n"))
"""


def torch_needed_to_know_the_machine() -> str | None:
    """Why this machine's facts need torch (a GPU driver loaded, no CPU flags), or None."""
    import mixnmt.machine

    if loaded := [path for path in mixnmt.machine.GPU_DRIVERS if os.path.exists(path)]:
        return f"a GPU driver is loaded ({loaded[0]}): torch says whether CUDA works"
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists() or "\nflags" not in cpuinfo.read_text():
        return "no CPU flags in /proc/cpuinfo: torch says whether the CPU computes bf16"
    return None


@pytest.mark.skipif(bool(torch_needed_to_know_the_machine()), reason=str(torch_needed_to_know_the_machine()))
def test_a_snakemake_start_imports_torch_only_to_build_models_it_has_not_built(workdir, tmp_path):
    """Snakemake reads the Snakefile at every start (on a cluster, in every job): without
    a GPU driver it learns what the machine offers without torch (3 s to import), and the
    config's models, once built, are not built again to check them."""
    watch = tmp_path / "watch"
    watch.mkdir()
    (watch / "sitecustomize.py").write_text(WATCH.format(path=str(tmp_path / "imported")))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(watch), str(ROOT / "src")])}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    command = [sys.executable, "-m", "snakemake", "-s", ROOT / "Snakefile", "-d", workdir, "-n"]
    command += ["--cores", "2", "--configfile", str(ROOT / "tests" / "tiny.yaml")]
    for _ in range(2):
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "imported").read_text().split() == ["True", "False"]


@pytest.mark.parametrize("limit", [None, "1000/1s"])
def test_snakemakes_default_job_rate_limit_is_lifted_and_a_sites_own_kept(workdir, tmp_path, limit):
    """Under the default limit (100 jobs a second, which never binds) Snakemake's scheduler
    passes multiply with every job that finishes (timers that start timers); without it,
    one pass per finished job. A limit set on purpose is kept. The jobs take a second each
    (a download over a network): the timers are of a second."""
    tinydata.write_corpus(workdir / "data" / "tiny-source")
    mixnmt = tmp_path / "bin" / "mixnmt"
    mixnmt.parent.mkdir()
    mixnmt.write_text(
        f'#!/bin/sh\nsleep 1\nexec {shlex.quote(str(Path(sys.executable).parent / "mixnmt"))} "$@"\n'
    )
    mixnmt.chmod(0o755)
    command = [
        "--cores",
        "1",
        "--until",
        "download",
        "--verbose",
        "--configfile",
        str(ROOT / "tests" / "tiny.yaml"),
    ]
    done = snakemake(
        workdir, *command, *(["--max-jobs-per-timespan", limit] if limit else []), path=mixnmt.parent
    )
    assert done.returncode == 0, done.stderr[-3000:]
    passes, jobs = done.stderr.count("Ready jobs"), done.stderr.count("Finished jobid")
    assert jobs == len(TINY["datasets"]["tiny"]["test"]) * 2 + 4  # a download per file
    assert passes > 2 * jobs if limit else passes <= jobs + 1, (passes, jobs)


def test_a_stopped_run_says_its_states_are_saved_and_a_rerun_says_it_resumes(workdir):
    """A stop fails the running training jobs; the terminal then names the runs whose
    states were saved, and the next start names those it resumes (here a failing
    download stands in for the stop)."""
    from mixnmt.paths import Layout

    model = next(iter(CONFIG["models"]))
    layout = Layout(f"results/{CONFIG['experiment']}")
    state = workdir / layout.state(model, 1)
    state.parent.mkdir(parents=True)
    state.write_bytes(b"a saved state")
    found = CONFIG["datasets"][CONFIG["dataset"]]["train"][CONFIG["src"]]["file"]
    (workdir / "empty").mkdir()
    result = snakemake(
        workdir, f"data/{CONFIG['dataset']}/{found}", "--config", f"mirror={workdir / 'empty'}"
    )
    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert f"resuming from their saved training states: {model}/seed1" in said
    assert f"training states saved: {model}/seed1; the same command resumes them" in said
