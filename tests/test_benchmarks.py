"""The benchmark scripts refuse what they cannot measure before measuring anything."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from conftest import FAST, ROOT, TINY_MODELS, tiny_model
from mixnmt.paths import Layout


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


def test_speed_reads_a_study_in_the_languages_of_its_configuration(speed, tmp_path):
    """speed.py --data reads a study's training ids, SentencePiece models and first test
    set in the languages its configuration names. (It read ids/train.en as the source and
    the first ids/test*.en, and gave the source's SentencePiece model to both sides, which
    a study with a model per language refuses.)"""
    from mixnmt.config import load

    overlay = tmp_path / "reversed.yaml"
    overlay.write_text("src: de\ntgt: en\nspm: {joint: false}\n")
    layout = Layout(str(tmp_path / "study"))
    assert speed.study_files(load(ROOT / "tests" / "tiny.yaml", overlay), layout, FAST, 1) == {
        "train": (layout.ids("train", "de"), layout.ids("train", "en")),
        "checkpoint": None,
        "spm": (layout.spm("de"), layout.spm("en")),
        "test": layout.ids("test_a", "de"),
    }


def study_with(folder: Path, model: str, spm: Path, seed: int = 1) -> Layout:
    """An experiment's folder holding an untrained checkpoint of tiny model `model` (of
    `seed`) on the joint SentencePiece model `spm`."""
    import shutil

    from mixnmt import checkpoint
    from mixnmt.tokenize import Tokenizer

    layout = Layout(str(folder))
    for target in (layout.checkpoint(model, seed), layout.spm("joint")):
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(spm, layout.spm("joint"))
    tok = Tokenizer(spm)
    record = checkpoint.vocab_record(tok)
    arch, hparams, weights = tiny_model(model, len(tok), dropout=0.0)
    checkpoint.save(
        layout.checkpoint(model, seed),
        model,
        arch,
        hparams,
        weights,
        {"src": record, "tgt": record, "shared": True},
    )
    return layout


def diagnosis_script(name: str):
    import importlib

    sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


@pytest.mark.parametrize(
    "script, refusal",
    [
        ("lockin", "has no learned components to lock onto"),
        ("looping", "weighs no source positions (attention, or a mixture with source: states)"),
    ],
)
def test_a_diagnosis_names_the_run_it_cannot_read_in_one_line(script, refusal, tiny_spm, tmp_path, capsys):
    """lockin.py and looping.py read a trained study's runs: a run that is missing, or of a
    model they cannot diagnose, is one line naming its checkpoint (they were tracebacks)."""
    layout = study_with(tmp_path / "tiny", FAST, tiny_spm)  # a transformer
    for name, line in ((FAST, f"{FAST} {refusal}"), ("nope", "not found")):
        with pytest.raises(SystemExit) as stopped:
            diagnosis_script(script).main(
                [layout.root, name, "--configfile", str(ROOT / "tests" / "tiny.yaml")]
            )
        error = f"{script}.py: error: {layout.checkpoint(name, 1)}: {line}\n"
        assert stopped.value.code == 1 and capsys.readouterr().err == error


def tiny_model_that(holds: Callable[[torch.nn.Module], bool]) -> str:
    """The first tiny model (in tiny.yaml's order) of which `holds` is true."""
    return next(name for name in TINY_MODELS if holds(tiny_model(name, 64)[2]))


@pytest.mark.parametrize(
    "script, diagnosable",
    [
        ("looping", lambda model: "alignment" in model.analysis_axes),
        ("lockin", lambda model: bool(model.learned_components)),
    ],
    ids=["looping", "lockin"],
)
def test_a_diagnosis_reads_the_languages_test_set_and_seed_of_the_studys_configuration(
    script, diagnosable, tiny_source, tiny_spm, tmp_path, capsys, monkeypatch
):
    """A study of German into English with seeds 4 and 5: looping.py reads the German ids of
    the study's first test set, lockin.py its German and English validation ids, each by
    the configuration that made the study, and both the run of its first seed. (They read
    `ids/<t>.en` of config.yaml's first test set t, and `ids/valid.en` as the source,
    whatever the study: a file-not-found, and the validation set read backwards; and seed
    1's run, which a study of seeds 4-6 such as experiments/cpu-components.yaml lacks.)"""
    from mixnmt.batching import ParallelData
    from mixnmt.tokenize import encode_file

    model = tiny_model_that(diagnosable)
    overlay = tmp_path / "reversed.yaml"
    overlay.write_text("experiment: reversed\nsrc: de\ntgt: en\nseeds: [4, 5]\n")
    layout = study_with(tmp_path / "reversed", model, tiny_spm, seed=4)
    Path(layout.ids("valid", "de")).parent.mkdir()
    for split, lang in (("valid", "de"), ("valid", "en"), ("test_a", "de")):
        encode_file(tiny_spm, tiny_source / f"{split}.{lang}", Path(layout.ids(split, lang)))
    Path(layout.translation(model, "test_a", 4)).parent.mkdir(parents=True)
    shutil.copy(tiny_source / "test_a.en", layout.translation(model, "test_a", 4))
    loaded, load = [], ParallelData.load
    monkeypatch.setattr(
        ParallelData, "load", lambda *files, **kw: loaded.append(files[:2]) or load(*files, **kw)
    )

    tiny = str(ROOT / "tests" / "tiny.yaml")
    diagnosis_script(script).main([layout.root, model, "--configfile", tiny, "--configfile", str(overlay)])
    header, *lines = capsys.readouterr().out.splitlines()
    rows = [dict(zip(header.split("\t"), line.split("\t"))) for line in lines]
    assert rows and {row["model"] for row in rows} == {model}
    if script == "looping":
        assert sum(int(row["n"]) for row in rows) == len((tiny_source / "test_a.de").read_text().splitlines())
    else:
        assert loaded == [(layout.ids("valid", "de"), layout.ids("valid", "en"))]


def test_speed_measures_the_old_path_eager_whatever_the_configuration_compiles(speed):
    """The old path is fp32 and eager, as every model ran before mixed precision: an
    experiment with `train.compile` compiles only the new path, so the ratio is the two
    changes' together. (The old path compiled too, hiding what compiling gains.)"""
    from mixnmt.config import TrainConfig, load

    config = load(ROOT / "tests" / "tiny.yaml")
    settings = TrainConfig.values(config | {"max_steps": None}, seed=1) | {"compile": True}
    job = {"model": FAST, "entry": config["models"][FAST], "settings": settings}
    device = torch.device("cpu")
    assert speed.trainer(job | {"path": "new", "precision": "bf16"}, device).config.compile
    assert not speed.trainer(job | {"path": speed.BEFORE, "precision": "fp32"}, device).config.compile
