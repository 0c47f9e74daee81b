"""A decoding variant's runs (mixnmt.share): its trained twin's training, kept as its own,
and decoded with its own settings."""

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import FAST, TINY_MODELS, train_config
from mixnmt import MixnmtError, checkpoint
from mixnmt.files import sha256sum, write_json
from mixnmt.paths import METRICS, Layout, decoding_of
from mixnmt.runs import architecture, definition, fingerprint
from mixnmt.share import RunFiles, share
from mixnmt.train import TrainConfig, TrainFiles, train
from mixnmt.translator import carried_settings

TWIN = TINY_MODELS[FAST]
PENALTY = {"length_penalty": 2.0}
VARIANT = {**TWIN, "arch": architecture(FAST, TWIN), "decode": PENALTY}
CONFIG = TrainConfig(**dataclasses.asdict(train_config(max_tokens=512, lr=3e-3, warmup=20, epochs=2)))
TIMED = ("tokens_per_s", "seconds")
"""The metrics that measure the machine, not the run."""


def kept(root: Path, name: str, seed: int = CONFIG.seed) -> RunFiles:
    """Where run `seed` of model `name` keeps its files in an experiment folder `root`."""
    layout = Layout(str(root))
    return RunFiles(
        Path(layout.checkpoint(name, seed)),
        Path(layout.train("metrics.tsv", name, seed)),
        Path(layout.train("manifest.json", name, seed)),
    )


def trained(name: str, entry: dict, ids: Path, spm: Path, root: Path) -> RunFiles:
    """Run CONFIG.seed of model `name` (entry `entry`) trained on the tiny ids in `ids`."""
    files = kept(root, name)
    pairs = [(ids / f"{split}.en", ids / f"{split}.de") for split in ("train", "valid")]
    train(name, entry, CONFIG, TrainFiles(*pairs, (spm, spm), *dataclasses.astuple(files), root / "state.pt"))
    return files


@pytest.fixture(scope="module")
def twin(tiny_ids, tiny_spm, tmp_path_factory) -> RunFiles:
    return trained(FAST, TWIN, tiny_ids, tiny_spm, tmp_path_factory.mktemp("twin"))


def test_a_shared_run_keeps_the_checkpoint_training_the_variant_writes(twin, tiny_ids, tiny_spm, tmp_path):
    """The variant trained on its own and its twin's run shared give the same checkpoint
    byte for byte, the same metrics but for the machine's timing, and manifests that
    record the same run; the shared one names its twin."""
    own = trained("variant", VARIANT, tiny_ids, tiny_spm, tmp_path / "own")
    shared = kept(tmp_path / "shared", "variant")
    share(twin, "variant", VARIANT, CONFIG, None, shared)
    assert sha256sum(shared.checkpoint) == sha256sum(own.checkpoint) != sha256sum(twin.checkpoint)
    payload, wanted = checkpoint.load(shared.checkpoint), definition("variant", VARIANT, CONFIG, None)
    assert payload["model"] == "variant" and payload["definition"] == wanted
    tables = [pd.read_csv(f.metrics, sep="\t").drop(columns=list(TIMED)) for f in (own, shared, twin)]
    assert [*METRICS[:-2], "model", "seed", "fingerprint"] == list(tables[0].columns)
    pd.testing.assert_frame_equal(tables[0], tables[1])
    assert set(tables[2].model) == {FAST} and set(tables[1].model) == {"variant"}
    records = [json.loads(f.manifest.read_text()) for f in (own, shared)]
    for key in ("run", "definition", "model", "arch", "params", "hparams", "train", "steps", "best"):
        assert records[0][key] == records[1][key], key
    for kind in ("checkpoint", "metrics"):
        path = getattr(shared, kind)
        assert records[1][kind] == {"path": str(path), "sha256": sha256sum(path)}
    twins = {"run": f"{FAST}/seed{CONFIG.seed}", "checkpoint": sha256sum(twin.checkpoint)}
    assert records[1]["shares"] == twins and "shares" not in records[0]
    assert records[1]["run"]["fingerprint"] == fingerprint(wanted)


@pytest.mark.parametrize(
    "entry, config",
    [
        ({**VARIANT, "dropout": 0.3}, CONFIG),  # another hyperparameter
        (VARIANT, dataclasses.replace(CONFIG, seed=2)),  # another seed
        (VARIANT, dataclasses.replace(CONFIG, epochs=3)),  # other training settings
    ],
)
def test_a_run_that_trained_otherwise_is_not_shared(twin, tmp_path, entry, config):
    shared = kept(tmp_path, "variant", config.seed)
    refused = f"^{twin.checkpoint}: not the training of models.variant with seed {config.seed} "
    with pytest.raises(MixnmtError, match=refused):
        share(twin, "variant", entry, config, None, shared)
    assert not any(path.exists() for path in dataclasses.astuple(shared))


def test_a_twins_manifest_of_another_checkpoint_is_refused(twin, tmp_path):
    other = dataclasses.replace(twin, manifest=tmp_path / "manifest.json")
    record = json.loads(twin.manifest.read_text())
    write_json(other.manifest, record | {"checkpoint": {**record["checkpoint"], "sha256": "0" * 64}})
    shared = kept(tmp_path, "variant")
    with pytest.raises(MixnmtError, match=f"^{other.manifest}: not the manifest of {twin.checkpoint} "):
        share(other, "variant", VARIANT, CONFIG, None, shared)
    assert not any(path.exists() for path in dataclasses.astuple(shared))


def test_a_variant_decodes_with_its_own_settings_over_those_of_the_experiment(twin, tmp_path):
    """The settings that travel with a checkpoint: the experiment's decode.json beside it,
    with its model entry's own over them."""
    shared = kept(tmp_path, "variant")
    share(twin, "variant", VARIANT, CONFIG, None, shared)
    experiment = {"beam": 3, "length_penalty": 1.0, "max_len_a": 1.5, "max_len_b": 10, "batch_size": 8}
    for files in (twin, shared):
        write_json(decoding_of(files.checkpoint), experiment)
    assert dataclasses.asdict(carried_settings(twin.checkpoint)) == experiment
    assert dataclasses.asdict(carried_settings(shared.checkpoint)) == experiment | PENALTY
