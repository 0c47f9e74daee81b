import json
import math

import pandas as pd
import pytest

from mixnmt import MixnmtError, checkpoint, config_section, tokenize
from mixnmt.train import METRICS, TrainConfig, inverse_sqrt, train

HPARAMS = {"d_model": 32, "heads": 2, "layers": 1, "ffn": 64, "dropout": 0.1}


@pytest.fixture(scope="module")
def tiny_ids(tiny_source, tiny_spm, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ids")
    for split in ("train", "valid"):
        for lang in ("en", "de"):
            tokenize.encode_file(tiny_spm, tiny_source / f"{split}.{lang}", folder / f"{split}.{lang}")
    return folder


def run(tiny_ids, tiny_spm, out, **config):
    train(
        "transformer",
        HPARAMS,
        TrainConfig(**{"max_tokens": 512, "lr": 3e-3, "warmup": 20, **config}),
        (tiny_ids / "train.en", tiny_ids / "train.de"),
        (tiny_ids / "valid.en", tiny_ids / "valid.de"),
        (tiny_spm, tiny_spm),
        out / "model.pt",
        out / "metrics.tsv",
        out / "manifest.json",
    )
    return pd.read_csv(out / "metrics.tsv", sep="\t"), checkpoint.load(out / "model.pt")


def test_training_writes_metrics_and_the_best_checkpoint(tiny_ids, tiny_spm, tmp_path):
    metrics, ckpt = run(tiny_ids, tiny_spm, tmp_path, epochs=4)
    assert tuple(metrics.columns) == METRICS
    assert list(metrics.epoch) == [1, 2, 3, 4]
    assert metrics.valid_loss.iloc[-1] < metrics.valid_loss.iloc[0]
    assert metrics.train_loss.iloc[-1] < metrics.train_loss.iloc[0]
    assert (metrics.valid_ppl - metrics.valid_loss.map(math.exp)).abs().max() < 1e-3
    assert (metrics.tokens_per_s > 0).all() and metrics.seconds.is_monotonic_increasing
    best = metrics.valid_loss.idxmin()
    assert ckpt["valid_loss"] == pytest.approx(metrics.valid_loss[best], rel=1e-5)
    assert ckpt["epoch"] == metrics.epoch[best]
    assert (ckpt["model"], ckpt["hparams"]) == ("transformer", HPARAMS)
    tok = tokenize.Tokenizer(tiny_spm)
    model = checkpoint.load_model(tmp_path / "model.pt", tok, tok)
    assert ckpt["params"] == sum(p.numel() for p in model.parameters())
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert (manifest["model"], manifest["params"], manifest["hparams"]) == (
        "transformer",
        ckpt["params"],
        HPARAMS,
    )
    assert manifest["best"] == {
        "epoch": ckpt["epoch"],
        "step": ckpt["step"],
        "valid_loss": ckpt["valid_loss"],
    }
    assert manifest["train"]["lr"] == 3e-3 and manifest["device"] == "cpu"


def test_max_steps_caps_training_mid_epoch(tiny_ids, tiny_spm, tmp_path):
    metrics, ckpt = run(tiny_ids, tiny_spm, tmp_path, epochs=50, max_steps=7)
    assert list(metrics.step) == [7]
    assert ckpt["step"] == 7


def test_inverse_sqrt_schedule():
    f = inverse_sqrt(100)
    assert f(0) == pytest.approx(0.01)
    assert f(99) == pytest.approx(1.0)
    assert f(399) == pytest.approx(0.5)


def test_unknown_training_setting_is_named():
    with pytest.raises(MixnmtError, match="train.learning_rate: unknown setting"):
        config_section(TrainConfig, "train", {"learning_rate": 0.1})
