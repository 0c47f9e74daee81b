"""One home for every default: config.yaml and its schema for the pipeline's settings, the
model constructors for hyperparameters. Nothing outside the registry lists the models."""

from __future__ import annotations

import copy
import math
import re

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from conftest import CONFIG, ROOT, TINY
from mixnmt import MixnmtError
from mixnmt.config import DecodeConfig, check, check_strictly, config_section, merge
from mixnmt.models import defaults, hyperparameter_schemas, resolve

SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
COLLECTIONS = {("models",), ("datasets",)}  # named members (models, datasets, test sets) are data


def key_paths(node: dict, path: tuple = ()) -> list[tuple]:
    """Every key of config.yaml, as a path, except the members of named collections."""
    found = []
    for key, value in node.items():
        here = (*path, key)
        named = path in COLLECTIONS or (len(path) == 3 and path[0] == "datasets" and path[2] == "test")
        if not named:
            found.append(here)
        if isinstance(value, dict):
            found += key_paths(value, here)
    return found


def schema_default(path: tuple):
    import yaml

    node = yaml.safe_load(SCHEMA.read_text())
    for key in path:
        node = node["properties"][key]
    return node["default"]


@pytest.mark.parametrize("path", key_paths(CONFIG), ids=".".join)
def test_removing_a_key_fails_naming_it_or_falls_back_to_its_documented_default(path):
    config = copy.deepcopy(CONFIG)
    parent = config
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    try:
        validate(config, str(SCHEMA))  # as the workflow checks it
        check_strictly(config, SCHEMA)
        check(config)
    except (WorkflowError, MixnmtError) as e:
        assert f"'{path[-1]}'" in str(e) or f"{path[-1]}:" in str(e), str(e)
        return
    if path[0] == "models":  # a hyperparameter: its constructor's default, documented in the entry schema
        arch, hparams = resolve(path[1], parent)
        assert (
            hparams[path[-1]] == defaults(arch)[path[-1]] == hyperparameter_schemas(arch)[path[-1]]["default"]
        )
    else:  # a setting with a default: the schema's, the only one the code sees
        assert parent[path[-1]] == schema_default(path)


def test_config_yaml_is_valid_and_consistent():
    config = copy.deepcopy(CONFIG)
    validate(config, str(SCHEMA))
    check_strictly(config, SCHEMA)
    check(config)
    assert config == CONFIG  # every key is set: no default was needed


@pytest.mark.parametrize(
    "path, value",
    [
        (("decode", "max_len_a"), math.inf),
        (("train", "lr"), math.nan),
        (("train", "betas", 1), -math.inf),
        (("models", next(iter(CONFIG["models"])), "dropout"), math.nan),
    ],
)
def test_non_finite_numbers_are_refused_with_their_key(path, value):
    """JSON Schema's bounds let NaN through; the schema checks (their number is finite) name
    the key (the workflow test shows the same line from `snakemake -n`)."""
    config = copy.deepcopy(CONFIG)
    *parents, last = path
    node = config
    for key in parents:
        node = node[key]
    node[last] = value
    key = ".".join(map(str, path))
    with pytest.raises(MixnmtError, match=f"^{key}: expected a finite number, got {value}$"):
        check_strictly(config, SCHEMA)  # a model's hyperparameters: in `check`, by their own schema
        check(config)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_non_finite_numbers_are_refused_in_a_section_or_entry_checked_alone(value):
    """What the commands check without a whole config (`mixnmt translate --length-penalty`,
    `mixnmt train --config` and `--entry`) has the same finite numbers."""
    decode = CONFIG["decode"] | {"length_penalty": value}
    with pytest.raises(MixnmtError, match=f"^decode.length_penalty: expected a finite number, got {value}$"):
        config_section(DecodeConfig, "decode", decode)
    name = next(iter(CONFIG["models"]))
    with pytest.raises(MixnmtError, match=f"^models.{name}.dropout: expected a finite number, got {value}$"):
        resolve(name, CONFIG["models"][name] | {"dropout": value})
    huge = 10**400  # an int too large for a float is a number, past its bound, not an OverflowError
    with pytest.raises(MixnmtError, match="^decode.max_len_a: 1000"):
        config_section(DecodeConfig, "decode", decode | {"max_len_a": huge})


@pytest.mark.parametrize("overlay", sorted((ROOT / "experiments").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_experiment_passes_the_config_check(overlay, monkeypatch):
    from mixnmt.config import load

    monkeypatch.chdir(ROOT)
    assert load(overlay)["experiment"] == yaml.safe_load(overlay.read_text())["experiment"]


def test_a_reference_scored_on_a_test_set_the_dataset_lacks_is_refused():
    config = copy.deepcopy(CONFIG)
    reference = {"name": "A et al.", "setting": "tiny", "metric": "bleu_lc", "scores": {"test_2099": 40.0}}
    config["analysis"]["references"] = [reference]
    validate(config, str(SCHEMA))
    tests = ", ".join(CONFIG["datasets"][CONFIG["dataset"]]["test"])
    with pytest.raises(MixnmtError) as error:
        check(config)
    expected = f"analysis.references.0.scores: 'test_2099' is not one of the test sets: {tests}"
    assert str(error.value) == expected


@pytest.mark.parametrize(
    "contrasts, message",
    [
        ([["a", "a"]], "analysis.contrasts.0: compares 'a' with itself"),
        (
            [["a", "b"], ["a", "c"], ["a", "b"]],
            "analysis.contrasts.2: compares 'a' with 'b', as contrast 0 does",
        ),
        ([["a", "b"], ["b", "a"]], "analysis.contrasts.1: compares 'b' with 'a', as contrast 0 does"),
    ],
)
def test_a_contrast_is_of_two_models_and_made_once(contrasts, message):
    """A contrast repeated (in either order) counted one test twice in Holm's family and
    showed twice in the tables, at status 0."""
    config = copy.deepcopy(CONFIG)
    names = dict(zip("abc", config["models"]))
    config["analysis"]["contrasts"] = [[names[x] for x in pair] for pair in contrasts]
    validate(config, str(SCHEMA))
    for letter, name in names.items():
        message = message.replace(f"'{letter}'", repr(name))
    with pytest.raises(MixnmtError, match=f"^{re.escape(message)}$"):
        check(config)


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("seeds", 0), 1.0, "seeds.0: 1.0 is not of type 'integer'"),
        (("decode", "beam"), 10**20, "decode.beam: 100000000000000000000 is greater than the maximum of"),
        (("analysis", "bootstrap"), 10**12, "analysis.bootstrap: 1000000000000 is greater than the maximum"),
        (("train", "max_tokens"), 4096.0, "train.max_tokens: 4096.0 is not of type 'integer'"),
        # an output limit past any sentence (1e300 overflowed to empty translations at rc 0)
        (("decode", "max_len_a"), 1.0e300, "decode.max_len_a: 1e+300 is greater than the maximum of 100"),
        (("decode", "max_len_b"), 10**6, "decode.max_len_b: 1000000 is greater than the maximum of 10000"),
    ],
)
def test_integers_must_be_ints_and_sizes_are_bounded(path, value, message):
    from mixnmt.config import check_strictly

    schema = ROOT / "workflow" / "schemas" / "config.schema.yaml"
    check_strictly(CONFIG, schema)
    config = copy.deepcopy(CONFIG)
    *parents, last = path
    node = config
    for key in parents:
        node = node[key]
    node[last] = value
    with pytest.raises(MixnmtError, match=f"^{re.escape(message)}"):
        check_strictly(config, schema)


@pytest.mark.parametrize(
    "value, message",
    [(32.0, "32.0 is not of type 'integer'"), (10**11, "100000000000 is greater than the maximum of 65536")],
)
def test_a_model_size_must_be_an_int_of_sane_size(value, message):
    name = next(iter(CONFIG["models"]))
    with pytest.raises(MixnmtError, match=f"^models.{name}.d_model: {re.escape(message)}"):
        resolve(name, {**CONFIG["models"][name], "d_model": value})


def overlay(name: str) -> dict:
    return merge(CONFIG, yaml.safe_load((ROOT / "experiments" / f"{name}.yaml").read_text()))


def cpu_studies(precision: str) -> list[str]:
    """The CPU studies (experiments/cpu*.yaml) that train in `precision`."""
    names = sorted(path.stem for path in (ROOT / "experiments").glob("cpu*.yaml"))
    return [name for name in names if overlay(name)["train"]["precision"] == precision]


def test_a_cpu_newcomer_hears_the_cost_of_the_full_study_and_where_the_short_one_is():
    from mixnmt.config import CPU_SECONDS, cpu_fits, cpu_hours, cpu_notice, every_run, parameters

    notice = cpu_notice(CONFIG, 2, True)
    runs = every_run(CONFIG)
    megabytes = sum(entry["size"] for entry in CONFIG["datasets"][CONFIG["dataset"]]["train"].values()) / 1e6
    millions = sum(parameters(name, CONFIG["models"][name], 8000, True) for name in runs) / 1e6
    hours = millions * CONFIG["train"]["epochs"] * megabytes * CPU_SECONDS / 3600
    assert notice == (
        f"no GPU here: this run has {len(runs)} training jobs (one per model and seed) of up to 40 epochs "
        f"on {megabytes:.1f} MB of training files, roughly {hours:.0f} hours on 2 CPU cores."
    )
    assert cpu_notice(CONFIG, 16, True) != notice  # more cores, less time
    one = copy.deepcopy(CONFIG) | {"seeds": [1], "only": [CONFIG["analysis"]["baseline"]]}
    assert cpu_notice({**one, "train": {**CONFIG["train"], "epochs": 3}}, 2, True) is None
    # 28 kB of synthetic text: minutes, not hours
    assert cpu_notice(merge(CONFIG, TINY), 2, True) is None
    # the runs this invocation trains
    assert cpu_notice(CONFIG, 2, True, runs=runs[: len(runs) // 2]) != notice
    assert cpu_notice(CONFIG, 2, True, runs=[]) is None  # DVC's stages after training
    capped = cpu_notice({**CONFIG, "max_steps": 600}, 2, True)  # the README's quick run on a GPU
    assert "of 600 steps" in capped and f"roughly {hours * 600 / (40 * 121):.0f} hours" in capped
    # what fits instead, and its time on these cores
    short = overlay("cpu")
    assert cpu_fits(short, 2, True) == (
        "The CPU experiment (part one of the study: small models, five seeds of two epochs each) trains in "
        f"about {cpu_hours(short, 2, True):.1f} hours here: "
        "`snakemake --cores all --configfile experiments/cpu.yaml`."
    )
    # in proportion to the models' parameters: config.yaml's baseline against part two's
    reference, name = overlay("cpu-reference"), CONFIG["analysis"]["baseline"]
    alone = {"only": [name], "seeds": [1], "train": {"epochs": 2}}
    ratio = cpu_hours(merge(CONFIG, alone), 2, True) / cpu_hours(merge(reference, alone), 2, True)
    sizes = [parameters(name, config["models"][name], 8000, True) for config in (CONFIG, reference)]
    assert ratio == pytest.approx(sizes[0] / sizes[1]) and ratio > 1.5


def test_every_cpu_study_is_in_one_precisions_test():
    """The two tests below take the CPU studies by precision: none may fall outside both
    (an `auto` study would), and neither may be empty."""
    names = sorted(path.stem for path in (ROOT / "experiments").glob("cpu*.yaml"))
    bf16, fp32 = cpu_studies("bf16"), cpu_studies("fp32")
    assert bf16 and fp32 and sorted(bf16 + fp32) == names


@pytest.mark.parametrize("experiment", cpu_studies("bf16"))
def test_the_cpu_studies_start_where_the_cores_compute_bf16_and_stop_where_they_emulate_it(experiment):
    """Each published CPU study starts without `allow_cpu` on cores with AVX-512 BF16 or
    AMX; where bf16 is emulated it stops, naming the fp32 override for this run, and what
    fits there is the CPU experiment in fp32, not itself as it was given."""
    from mixnmt.config import (
        CPU_EMULATED_BF16,
        CPU_FP32,
        cpu_fits,
        cpu_hours,
        cpu_notice,
        every_run,
        train_settings,
    )

    study, short = overlay(experiment), overlay("cpu")
    assert "allow_cpu" not in yaml.safe_load((ROOT / "experiments" / f"{experiment}.yaml").read_text())
    assert cpu_notice(study, 2, True) is None
    fp32 = merge(study, {"train": {"precision": "fp32"}})  # the same hours wherever bf16 is not used
    emulated, fp32_hours = cpu_notice(study, 2, False), cpu_hours(fp32, 2, True)
    assert emulated.endswith(
        f"CPU cores in bf16, which they emulate (about {CPU_EMULATED_BF16} times fp32's time; "
        f"in fp32, about {fp32_hours:.{1 if fp32_hours < 10 else 0}f} hours: "
        "--config 'train={precision: fp32}')."
    )
    fits = cpu_hours(short, 2, True) * CPU_FP32
    assert cpu_fits(short, 2, False).endswith(
        f"trains in about {fits:.1f} hours here: "
        "`snakemake --cores all --configfile experiments/cpu.yaml --config 'train={precision: fp32}'`."
    )
    assert cpu_hours(fp32, 2, False) == fp32_hours
    # fp32 takes CPU_FP32 times bf16's time: the runs in bf16 (all, but a model's own precision) pay it
    bf16 = [m for m in every_run(study) if train_settings(study, m)["precision"] == "bf16"]
    hours = cpu_hours(study, 2, True)
    assert fp32_hours == pytest.approx(hours + (CPU_FP32 - 1) * cpu_hours(study, 2, True, bf16))
    auto = merge(study, {"train": {"precision": "auto"}})  # bf16 where native, fp32 elsewhere
    assert cpu_hours(auto, 2, True) == cpu_hours(study, 2, True)
    assert cpu_hours(auto, 2, False) == cpu_hours(fp32, 2, False)


def test_the_emulation_notice_follows_the_runs_precisions_not_the_section_alone():
    """A run in bf16 by its entry's own precision is emulated too where the section says
    fp32, and runs all in fp32 by their own precision emulate nothing where it says bf16."""
    from mixnmt.config import cpu_notice, every_run

    study = overlay("cpu-precision")
    (bf16,) = [m for m in study["only"] if "train" not in study["models"][m]]
    flipped = merge(study, {"train": {"precision": "fp32"}})
    flipped["models"][bf16] = {**flipped["models"][bf16], "train": {"precision": "bf16"}}
    assert "which they emulate" in cpu_notice(flipped, 2, False)
    fp32_runs = [m for m in every_run(study) if m != bf16]
    assert "which they emulate" in cpu_notice(study, 2, False)
    assert "emulate" not in cpu_notice(study, 2, False, runs=fp32_runs * 20)


@pytest.mark.parametrize("experiment", cpu_studies("fp32"))
def test_the_cpu_studies_in_fp32_start_on_any_cpu(experiment):
    """The CPU studies in fp32, which every CPU computes natively: each starts on 2 cores
    whether or not they have bf16, in the same estimated time."""
    from mixnmt.config import CPU_HOURS, cpu_hours, cpu_notice

    study = overlay(experiment)
    assert study["train"]["precision"] == "fp32"
    assert cpu_notice(study, 2, True) is None and cpu_notice(study, 2, False) is None
    assert cpu_hours(study, 2, False) == cpu_hours(study, 2, True) < CPU_HOURS


def test_each_training_and_decoding_setting_is_declared_once_with_its_help(capsys):
    """The `train` and `decode` settings are the fields of their dataclasses: the schema's
    sections are derived from them (the file declares none of them), and `--help` lists
    each with its description."""
    import dataclasses

    import yaml

    from mixnmt.cli import parser
    from mixnmt.config import SETTINGS, schema

    derived = schema()["properties"]
    for section, (cls, exclude) in SETTINGS.items():
        properties = derived[section]["properties"]
        assert list(properties) == [f.name for f in dataclasses.fields(cls) if f.name not in exclude]
        assert set(properties) == set(CONFIG[section]) and all(p["description"] for p in properties.values())
        assert "properties" not in yaml.safe_load(SCHEMA.read_text())["properties"][section]
    commands = (("train", "train"), ("translate", "decode"), ("speed", "decode"), ("decoding", "decode"))
    for command, section in commands:
        with pytest.raises(SystemExit):
            parser().parse_args([command, "--help"])
        shown = " ".join(capsys.readouterr().out.split())
        for name, p in derived[section]["properties"].items():  # listed, or an option of its own
            assert f"{name}: {p['description']}" in shown or f"{p['description']}" in shown
            assert f"{name}:" in shown or f"--{name.replace('_', '-')}" in shown


def test_mixnmt_config_writes_an_overlay_merged_as_dvc_runs_it(tmp_path, monkeypatch, capsys):
    """`mixnmt config OVERLAY --output config.yaml`: config.yaml with the overlay merged on
    it, checked, and `only`'s models as the entries of `models` (dvc.yaml's stage pairs);
    a bad overlay is refused in one line and the output left as it was."""
    import yaml

    from mixnmt.cli import main

    monkeypatch.chdir(ROOT)
    output = tmp_path / "config.yaml"
    assert main(["config", "tests/tiny.yaml", "--output", str(output)]) == 0
    written = yaml.safe_load(output.read_text())
    expected = merge(CONFIG, TINY)
    assert written["only"] is None and list(written["models"]) == expected["only"]
    assert written["models"] == {name: expected["models"][name] for name in expected["only"]}
    assert {k: v for k, v in written.items() if k not in ("only", "models")} == {
        k: v for k, v in expected.items() if k not in ("only", "models")
    }
    check_strictly(written)  # valid as it stands
    check(written)
    assert output.read_text().startswith("# config.yaml with tests/tiny.yaml merged on it")
    before = output.read_text()
    bad = tmp_path / "bad.yaml"
    bad.write_text("only: [nonexistent]\n")
    assert main(["config", str(bad), "--output", str(output)]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"mixnmt config: error: only.0: 'nonexistent' is not one of models: {', '.join(CONFIG['models'])}"
    ]
    assert output.read_text() == before and sorted(tmp_path.iterdir()) == sorted([output, bad])


@pytest.mark.parametrize(
    "text, message",
    [
        ("decode:\n  beam: 1\ndecode:\n  beam: 5\n", "the key 'decode' is given twice, at lines 1 and 3"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than 20 deep; refused"),
        (
            "train: {lr: 0.1}\nx: \xe9\n".encode("latin-1"),
            "not UTF-8 text (byte 20); save the config as UTF-8",
        ),
    ],
)
def test_a_config_file_that_is_not_plain_utf8_yaml_is_refused_in_one_line(tmp_path, text, message):
    """A key given twice (YAML keeps the last silently), nesting deep enough to exhaust the
    recursive checks, Latin-1 bytes: each refused naming the file."""
    from mixnmt.config import read

    path = tmp_path / "overlay.yaml"
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    with pytest.raises(MixnmtError) as error:
        read(path)
    assert str(error.value) == f"{path}: {message}"


def test_a_config_read_twice_is_parsed_once_and_each_reader_gets_its_own_copy(tmp_path):
    """`read` parses a text once a process (checking every study reads each overlay once per
    study), yet what a caller changes never reaches the next reader, and a file rewritten
    in place is read anew."""
    from mixnmt.config import parsed, read

    path = tmp_path / "overlay.yaml"
    path.write_text("train: {epochs: 3}\nseeds: [1, 2]\n")
    first = read(path)
    first["train"]["epochs"], first["seeds"][0] = 99, 99
    hits = parsed.cache_info().hits
    assert read(path) == {"train": {"epochs": 3}, "seeds": [1, 2]}
    assert parsed.cache_info().hits == hits + 1
    path.write_text("train: {epochs: 4}\nseeds: [1, 2]\n")  # the same size, at once
    assert read(path)["train"]["epochs"] == 4


@pytest.mark.parametrize(
    "entry",
    [
        "allow_cpu=true",
        "seeds=[1,2]",
        "train={epochs: 3, lr: 0.5, precision: fp32}",
        "max_steps=null",
        "only=[rnn, attention]",
        "mirror=../data/multi30k",
    ],
)
def test_a_config_entry_is_typed_as_the_same_text_in_a_config_file(entry):
    """Snakemake reads `allow_cpu=true` and the values inside a list or mapping as
    strings; the workflow retypes them as YAML would."""
    from snakemake.cli import parse_config

    from mixnmt.config import typed

    key, text = entry.split("=", 1)
    assert typed(parse_config([entry])) == yaml.safe_load(f"{key}: {text}")


def test_prepare_filters_training_pairs_never_test_sets_and_checks_the_shown_sentences():
    from mixnmt.config import prepare_arguments

    first, *others = CONFIG["datasets"][CONFIG["dataset"]]["test"]
    shown = [str(i) for i in CONFIG["analysis"]["sentences"]]
    assert prepare_arguments(CONFIG, first) == ["--shown", *shown]
    assert all(prepare_arguments(CONFIG, t) == [] for t in others)
    max_words = ["--max-words", str(CONFIG["prepare"]["max_words"])]
    assert prepare_arguments(CONFIG, "train") == prepare_arguments(CONFIG, "valid") == max_words


def test_a_file_the_dataset_does_not_pin_is_named():
    from mixnmt.config import pinned

    entry = CONFIG["datasets"]["multi30k"]["train"]["en"]
    assert pinned(CONFIG, "multi30k", entry["file"]) == entry
    with pytest.raises(MixnmtError, match="^datasets.multi30k: lists no file 'other.gz'$"):
        pinned(CONFIG, "multi30k", "other.gz")


def test_cublas_gets_its_deterministic_workspace_before_any_gpu_work():
    """cuBLAS reads CUBLAS_WORKSPACE_CONFIG at a process's first GPU matrix product: importing
    mixnmt sets it (a test session's first CUDA test, or the trainer, runs later)."""
    import subprocess
    import sys

    variable = "CUBLAS_WORKSPACE_CONFIG"
    code = f"import os; os.environ.pop({variable!r}, None); import mixnmt; print(os.environ[{variable!r}])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    from mixnmt import CUBLAS_WORKSPACE

    assert done.stdout.strip() == CUBLAS_WORKSPACE


def test_a_models_entry_that_built_is_not_built_again_until_code_or_entry_change(monkeypatch, tmp_path):
    """Building the models to check them imports torch, 3 s of every Snakemake start: an
    entry that built with this code is remembered; one that does not build is refused
    every time, and other code builds every entry again."""
    import mixnmt.config
    import mixnmt.models

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built, build = [], mixnmt.models.check
    monkeypatch.setattr(mixnmt.models, "check", lambda name, entry: (built.append(name), build(name, entry)))
    check(CONFIG)
    assert sorted(built) == sorted(CONFIG["models"])
    built.clear()
    check(CONFIG)
    assert built == []

    name, entry = next((n, e) for n, e in CONFIG["models"].items() if "heads" in resolve(n, e)[1])
    d_model = resolve(name, entry)[1]["d_model"]
    broken = copy.deepcopy(CONFIG)
    broken["models"][name] = {**(entry or {}), "heads": next(h for h in range(3, d_model) if d_model % h)}
    for _ in range(2):
        with pytest.raises(MixnmtError, match=f"^models.{name}: .*not divisible"):
            check(broken)
        assert built == [name]
        built.clear()

    monkeypatch.setattr(mixnmt.config, "code_and_versions", lambda: ["other code"])
    check(CONFIG)
    assert sorted(built) == sorted(CONFIG["models"])


def variant_training(name: str, own: dict, section: str = "train") -> dict:
    """CONFIG with a variant of model `name` that trains (or with section="decode",
    decodes) with `own` settings (`<name>-own`)."""
    from mixnmt.models import architecture

    entry = CONFIG["models"][name] or {}
    variant = {**entry, "arch": architecture(name, entry), section: own}
    return merge(CONFIG, {"models": {f"{name}-own": variant}})


def test_a_model_entrys_train_settings_override_the_sections_for_its_runs_only():
    """A variant that trains differently is a config entry: `train` in it overrides the
    `train` section for its runs, is checked with the config, and is no hyperparameter."""
    from mixnmt.config import TrainConfig, fingerprints
    from mixnmt.paths import run
    from mixnmt.readme import contrasts_legend, differences

    name = next(iter(CONFIG["models"]))
    config = variant_training(name, {"decay": "matrices", "epochs": 3})
    check_strictly(config, SCHEMA)
    check(config)
    own, section = TrainConfig.from_config(config, 1, f"{name}-own"), TrainConfig.from_config(config, 1, name)
    assert (own.decay, own.epochs) == ("matrices", 3) != (section.decay, section.epochs)
    assert own == TrainConfig.from_config(merge(config, {"train": {"decay": "matrices", "epochs": 3}}), 1)
    assert resolve(f"{name}-own", config["models"][f"{name}-own"]) == resolve(name, CONFIG["models"][name])
    prints = fingerprints(config)
    assert prints[run(name, 1)] == fingerprints(CONFIG)[run(name, 1)] != prints[run(f"{name}-own", 1)]
    # what a contrast of the two changes, as the README says it
    section = CONFIG["train"]
    assert differences(config, name, f"{name}-own") == (
        f"train.epochs {section['epochs']} → 3; train.decay {section['decay']} → matrices"
    )
    legends = [contrasts_legend(c) for c in (CONFIG, config)]
    assert legends[0].endswith("resolve to differently.")
    assert legends[1] == legends[0][:-1] + ", and every training setting (train.<key>) their runs differ in."


@pytest.mark.parametrize(
    "own, expected",
    [
        ({"decay": "biases"}, r"train.decay: 'biases' is not one of \['all', 'matrices'\]$"),
        ({"seed": 3}, r"train: Additional properties are not allowed \('seed' was unexpected\)$"),
        ({"lr": -1}, r"train.lr: -1 is less than or equal to the minimum of 0$"),
    ],
)
def test_a_model_entrys_train_settings_are_checked_with_their_key(own, expected):
    name = next(iter(CONFIG["models"]))
    with pytest.raises(MixnmtError, match=f"^models.{name}-own.{expected}"):
        check_strictly(variant_training(name, own), SCHEMA)


def test_a_model_entrys_decode_settings_make_a_variant_that_shares_its_twins_training():
    """A variant that decodes differently is a config entry: `decode` in it overrides the
    `decode` section for its runs, is no hyperparameter, and its runs are the training runs
    of the first model whose entry is the same but for it (its trained twin)."""
    from mixnmt.config import cpu_hours, decoding_settings, every_run, fingerprints, trained_twin
    from mixnmt.paths import run
    from mixnmt.readme import contrasts_legend, differences

    name = next(iter(CONFIG["models"]))
    config = variant_training(name, {"length_penalty": 2.0}, "decode")
    check_strictly(config, SCHEMA)
    check(config)
    assert decoding_settings(config, f"{name}-own") == CONFIG["decode"] | {"length_penalty": 2.0}
    assert decoding_settings(config, name) == CONFIG["decode"] != decoding_settings(config, f"{name}-own")
    assert resolve(f"{name}-own", config["models"][f"{name}-own"]) == resolve(name, CONFIG["models"][name])
    assert trained_twin(config, f"{name}-own") == trained_twin(config, name) == name
    assert [trained_twin(config, m) for m in CONFIG["models"]] == list(CONFIG["models"])
    # the variant's runs add no training (and no CPU hours); alone, it trains its own
    assert every_run(config) == every_run(CONFIG) and cpu_hours(config, 2, True) == cpu_hours(CONFIG, 2, True)
    alone = merge(config, {"only": [f"{name}-own"]})
    assert trained_twin(alone, f"{name}-own") == f"{name}-own"
    assert every_run(alone) == [f"{name}-own"] * len(CONFIG["seeds"])
    # another hyperparameter, or other training settings, make another training
    apart = merge(config, {"models": {f"{name}-own": {"train": {"epochs": 3}}}})
    assert trained_twin(apart, f"{name}-own") == f"{name}-own"
    prints = fingerprints(config)
    assert prints[run(name, 1)] == fingerprints(CONFIG)[run(name, 1)] != prints[run(f"{name}-own", 1)]
    # what a contrast of the two changes, as the README says it
    penalty = CONFIG["decode"]["length_penalty"]
    assert differences(config, name, f"{name}-own") == f"decode.length_penalty {penalty} → 2.0"
    legends = [contrasts_legend(c) for c in (CONFIG, config)]
    assert legends[1] == legends[0][:-1] + ", and every decoding setting (decode.<key>) their runs differ in."
    both = merge(config, {"models": {name: {"train": {"epochs": 3}}}})
    assert contrasts_legend(both).endswith(
        ", and every training and decoding setting (train.<key>, decode.<key>) their runs differ in."
    )


@pytest.mark.parametrize(
    "own, expected",
    [
        ({"beam": 0}, r"decode.beam: 0 is less than the minimum of 1$"),
        ({"seed": 3}, r"decode: Additional properties are not allowed \('seed' was unexpected\)$"),
    ],
)
def test_a_model_entrys_decode_settings_are_checked_with_their_key(own, expected):
    name = next(iter(CONFIG["models"]))
    with pytest.raises(MixnmtError, match=f"^models.{name}-own.{expected}"):
        check_strictly(variant_training(name, own, "decode"), SCHEMA)


def test_a_model_that_trains_longer_counts_so_in_the_cpu_estimate():
    from mixnmt.config import cpu_hours

    name = next(iter(CONFIG["models"]))
    config = variant_training(name, {"epochs": 2 * CONFIG["train"]["epochs"]})
    hours = {model: cpu_hours(config, 2, True, [model]) for model in (name, f"{name}-own")}
    assert hours[f"{name}-own"] == pytest.approx(2 * hours[name])
