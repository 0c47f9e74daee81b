"""A run's fingerprint and the records that tie files to it (mixnmt.runs)."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest

from conftest import CONFIG
from mixnmt import MixnmtError
from mixnmt.cli import main
from mixnmt.config import TrainConfig, fingerprints
from mixnmt.files import sha256sum
from mixnmt.lineage import (
    held_testsets,
    records,
    refuse_foreign,
    refuse_misnamed,
    refuse_twice,
    translation_record,
)
from mixnmt.runs import data_definition, definition, fingerprint, identity

MODEL = CONFIG["analysis"]["baseline"]


def of(config: dict, model: str = MODEL, seed: int = 1) -> str:
    train = TrainConfig.from_config(config, seed)
    return fingerprint(definition(model, config["models"][model], train, data_definition(config)))


def test_the_configuration_gives_every_run_the_fingerprint_its_trainer_computes():
    found = fingerprints(CONFIG)
    assert set(found) == {f"{m}/seed{s}" for m in CONFIG["models"] for s in CONFIG["seeds"]}
    assert found[f"{MODEL}/seed2"] == of(CONFIG, seed=2) != of(CONFIG, seed=1)
    assert len(set(found.values())) == len(found)  # no two runs share one


def changed(path: str, value) -> dict:
    """CONFIG with the value at dotted `path` replaced."""
    config = copy.deepcopy(CONFIG)
    *keys, last = path.split(".")
    node = config
    for key in keys:
        node = node[key]
    node[last] = value
    return config


@pytest.mark.parametrize(
    "path, value",
    [
        (f"models.{MODEL}.dropout", 0.3),  # the model entry
        ("train.lr", 0.01),  # a training setting
        ("max_steps", 10),  # the step cap
        ("datasets.multi30k.train.en.sha256", "0" * 64),  # the pinned data
        ("prepare.max_words", 50),  # how it is prepared
        ("spm.vocab_size", 4000),  # and tokenised
        ("train.precision", "fp32"),  # what it computes in (config.yaml: bf16)
    ],
)
def test_what_defines_a_run_changes_its_fingerprint(path, value):
    assert of(changed(path, value)) != of(CONFIG)


@pytest.mark.parametrize(
    "path, value",
    [
        ("train.save_every", 7),  # how often the state is saved
        ("decode.beam", 1),  # decoding: a translation's setting, not the run's
        ("datasets.multi30k.test.test_2016_flickr.en.sha256", "0" * 64),  # a test set
        ("mirror", "/elsewhere"),
    ],
)
def test_what_does_not_define_a_run_keeps_its_fingerprint(path, value):
    assert of(changed(path, value)) == of(CONFIG)


@pytest.mark.parametrize(
    ("setting", "before", "other"), [("precision", "fp32", "bf16"), ("decay", "all", "matrices")]
)
def test_a_run_keeps_the_fingerprint_it_had_before_a_setting_was_added(setting, before, other):
    """Runs trained before `train.precision` and `train.decay` existed were fp32 on the
    CPU and decayed every parameter (the first published CPU study): their definitions have
    no such key, and a run at those values has none either; another value defines a run."""
    old = changed(f"train.{setting}", before)
    settings = definition(MODEL, CONFIG["models"][MODEL], TrainConfig.from_config(old, 1), None)["train"]
    assert setting not in settings
    new = definition(
        MODEL, CONFIG["models"][MODEL], TrainConfig.from_config(changed(f"train.{setting}", other), 1), None
    )
    assert new["train"][setting] == other and of(changed(f"train.{setting}", other)) != of(old)


@pytest.mark.parametrize("native, resolved", [(True, "bf16"), (False, "fp32")])
def test_auto_precision_is_resolved_before_it_defines_a_run(monkeypatch, native, resolved):
    """`precision: auto` becomes what this machine computes in (bf16 where native) before
    the settings reach a training job or a fingerprint: runs in different precisions never
    share one."""
    import mixnmt.config

    monkeypatch.setattr(mixnmt.config, "cuda_available", lambda: False)
    monkeypatch.setattr(mixnmt.config, "cpu_native_bf16", lambda: native)
    auto = changed("train.precision", "auto")
    assert TrainConfig.values(auto, 1)["precision"] == resolved
    assert of(auto) == of(changed("train.precision", resolved))


def test_key_order_never_changes_a_fingerprint():
    config = copy.deepcopy(CONFIG)
    config["models"][MODEL] = dict(reversed(list(config["models"][MODEL].items())))
    config["spm"] = dict(reversed(list(config["spm"].items())))
    assert of(config) == of(CONFIG)


def run_file(tmp_path, name: str, record: dict | None):
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps({"bleu": 1.0} | ({"run": record} if record else {})))
    else:
        columns = {"position": [0, 1], "difference": [0.5, 0.4]}
        record = {k: [v, v] for k, v in (record or {}).items()}
        pd.DataFrame(columns | record).to_csv(path, sep="\t", index=False)
    return path


@pytest.mark.parametrize("name", ["score.json", "reliance.tsv"])
def test_a_file_of_another_configuration_is_refused_naming_both_fingerprints(tmp_path, name):
    path = run_file(tmp_path, name, identity(MODEL, 1, "a" * 16))
    expected = {f"{MODEL}/seed1": "b" * 16}
    with pytest.raises(MixnmtError) as error:
        refuse_foreign([path], expected)
    assert str(error.value) == (
        f"{path}: run {MODEL}/seed1 has fingerprint {'a' * 16}, but this configuration's is {'b' * 16} "
        "(its model entry, training settings or data differ); remake it"
    )
    refuse_foreign([path], {f"{MODEL}/seed1": "a" * 16})  # its own configuration's
    with pytest.raises(
        MixnmtError, match=f"holds run {MODEL}/seed1, which this configuration does not train"
    ):
        refuse_foreign([path], {f"{MODEL}/seed2": "a" * 16})


@pytest.mark.parametrize("name", ["score.json", "reliance.tsv"])
def test_a_file_that_records_no_run_is_refused_as_an_old_format(tmp_path, name):
    path = run_file(tmp_path, name, None)
    assert records(path) is None
    with pytest.raises(MixnmtError, match=f"^{path}: an old format that records no run fingerprint"):
        refuse_foreign([path], {f"{MODEL}/seed1": "a" * 16})
    refuse_foreign([path], None)  # nothing expected: nothing checked


def test_a_file_of_no_runs_is_not_an_old_format(tmp_path):
    """The contrasts of an experiment without contrasts record the runs they read: none.
    The table job refused them as an old format, so such an experiment failed there."""
    path = tmp_path / "contrasts.json"
    path.write_text(json.dumps({"contrasts": [], "runs": {}}))
    assert records(path) == []
    refuse_foreign([path], {f"{MODEL}/seed1": "a" * 16})
    path.write_text(json.dumps({"contrasts": []}))
    assert records(path) is None


@pytest.mark.parametrize(("kind", "name"), [("metrics", "metrics.tsv"), ("analyses", "analysis.json")])
def test_a_file_given_as_another_models_is_refused(tmp_path, capsys, kind, name):
    """A figure or table draws each MODEL=PATH file under MODEL: a file that records
    another model's run (two models' curves given crosswise) is refused before anything
    is read or drawn, where before it was drawn under the wrong name at status 0."""
    path = run_file(tmp_path, name, identity(MODEL, 1, "a" * 16))
    refuse_misnamed({MODEL: path, "other": run_file(tmp_path, "old.json", None)})  # an old format: no run
    with pytest.raises(MixnmtError, match=f"^{path}: holds run {MODEL}/seed1, given as other's$"):
        refuse_misnamed({"other": path})
    figure = {"metrics": "learning_curves", "analyses": "responsibilities"}[kind]
    out = tmp_path / "out" / "f.png"
    assert main(["plot", figure, f"--{kind}", f"other={path}", "--output", str(out)]) == 1
    assert f"{path}: holds run {MODEL}/seed1, given as other's" in capsys.readouterr().err
    assert not out.parent.exists()


def test_a_run_in_two_files_of_one_per_run_is_refused(tmp_path, capsys):
    """`mixnmt table reliance` reads one file per run: a copy of one under another name
    counted its run twice (its standard deviation over one run was 0, at status 0)."""
    (tmp_path / "a").mkdir()
    one = run_file(tmp_path / "a", "reliance.tsv", identity(MODEL, 1, "a" * 16))
    copy = run_file(tmp_path, "copy.tsv", identity(MODEL, 1, "a" * 16))
    other = run_file(tmp_path, "other.tsv", identity(MODEL, 2, "a" * 16))
    refuse_twice([one, other], "--reliance_runs")
    with pytest.raises(MixnmtError) as error:
        refuse_twice([one, other, copy], "--reliance_runs")
    assert str(error.value) == f"--reliance_runs: {MODEL}/seed1 in two files ({one}, {copy})"
    out = tmp_path / "out" / "r.tsv"
    assert main(["table", "reliance", "--reliance_runs", str(one), str(copy), "--output", str(out)]) == 1
    assert f"--reliance_runs: {MODEL}/seed1 in two files" in capsys.readouterr().err
    assert not out.parent.exists()


@pytest.mark.parametrize(("kind", "name"), [("lengths", "t.tsv"), ("contrast_runs", "t.json")])
def test_a_test_set_in_two_files_of_one_per_test_set_is_refused(tmp_path, capsys, kind, name):
    """BLEU-by-length tables and contrast files are one per test set: a copy of one under
    another name drew its curves twice or listed its contrasts twice, at status 0."""
    (tmp_path / "a").mkdir()
    one, copy, other = tmp_path / "a" / name, tmp_path / name, tmp_path / f"other{name[1:]}"
    for path, testset in ((one, "test_a"), (copy, "test_a"), (other, "test_b")):
        if name.endswith(".json"):
            path.write_text(json.dumps({"testset": testset, "contrasts": [], "runs": {}}))
        else:
            pd.DataFrame({"testset": [testset] * 2, "bucket": ["<=4", "5-6"]}).to_csv(
                path, sep="\t", index=False
            )
    assert [held_testsets(p) for p in (one, other)] == [["test_a"], ["test_b"]]
    refuse_twice([one, other], f"--{kind}", "testset")
    with pytest.raises(MixnmtError) as error:
        refuse_twice([one, other, copy], f"--{kind}", "testset")
    assert str(error.value) == f"--{kind}: test_a in two files ({one}, {copy})"
    out = tmp_path / "out" / "o"
    manifest = tmp_path / "manifest.json"
    manifest.write_text("{}")
    command = (
        ["plot", "bleu_by_length"]
        if kind == "lengths"
        else ["table", "contrasts", "--manifests", f"m={manifest}"]
    )
    assert main([*command, f"--{kind}", str(one), str(copy), "--output", str(out)]) == 1
    assert f"--{kind}: test_a in two files ({one}, {copy})" in capsys.readouterr().err
    assert not out.parent.exists()


def test_a_translation_changed_after_its_record_is_refused(tmp_path):
    text, record = tmp_path / "t.txt", tmp_path / "t.json"
    text.write_text("ein Hund\n")
    made = identity(MODEL, 1, "a" * 16, "c" * 64)
    record.write_text(json.dumps({"run": made, "output": {"sha256": sha256sum(text)}}))
    assert translation_record(text) == (made | {"translation": sha256sum(text)}, None)
    text.write_text("ein Hund\nzwei Katzen\n")
    with pytest.raises(MixnmtError, match=f"^{text}: changed since {record} was written"):
        translation_record(text)
    record.unlink()
    assert translation_record(text) == (None, None)  # a translation made by hand has no run
