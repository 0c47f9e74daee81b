"""The helpers that map config entries to files and arguments."""

import json
import os
import re

from snakemake.exceptions import WorkflowError

from mixnmt import MixnmtError
from mixnmt.config import (
    TrainConfig,
    fingerprints,
    pinned,
    prepare_arguments,
    primary,
    selected,
    trained_twin,
)
from mixnmt.files import refuse_links
from mixnmt.inputs import BENCHMARKED, INPUTS, input_files
from mixnmt.paths import Layout, run
from mixnmt.report import reported
from mixnmt.runs import data_definition
from mixnmt.figures import FIGURES
from mixnmt.tables import TABLES


def canonical(value):
    """JSON of a config value with its keys sorted: a parameter of a rule, so that the
    order of keys in the YAML files (an overlay's, a merge's) never reruns a job."""
    return json.dumps(value, sort_keys=True)


OUT = f"results/{config['experiment']}"
# The paths of OUT's files that code outside the workflow reads too.
LAYOUT = Layout(OUT)
corpus = LAYOUT.corpus
try:
    refuse_links(OUT)
except MixnmtError as e:
    raise WorkflowError(str(e)) from None
SRC, TGT = config["src"], config["tgt"]
DATASET = config["datasets"][config["dataset"]]
TESTSETS = list(DATASET["test"])
SPLITS = {"train": DATASET["train"], "valid": DATASET["valid"], **DATASET["test"]}
MODELS = selected(config)
# A decoding variant's runs keep its trained twin's (mixnmt.share): model -> twin.
TWINS = {m: trained_twin(config, m) for m in MODELS}
TRAINED = [m for m in MODELS if TWINS[m] == m]
SHARED = [m for m in MODELS if TWINS[m] != m]
SEEDS = [str(seed) for seed in config["seeds"]]
FIRST_SEED = SEEDS[0]  # figures and per-model analyses show this seed's runs


def alternatives(names):
    """A wildcard's regular expression that matches exactly `names`."""
    return "|".join(map(re.escape, names)) or "(?!)"


wildcard_constraints:
    dataset=alternatives(config["datasets"]),
    file=r"[^/]+",
    split=alternatives(SPLITS),
    lang=f"{SRC}|{TGT}",
    model=alternatives(MODELS),
    testset=alternatives(TESTSETS),
    seed="|".join(SEEDS),


def logged(path):
    """Log file of a job: results/<experiment>/logs/<path>.log."""
    return f"{OUT}/logs/{path}.log"


# --- data ---------------------------------------------------------------------------


def raw_file(split, lang):
    """The downloaded file of one split and language: data/<dataset>/<file>."""
    return f"data/{config['dataset']}/{SPLITS[split][lang]['file']}"


def download_base(wildcards, output):
    """Where to fetch from: the mirror if set, else the dataset's url.

    Declared as derived from the output so that Snakemake does not treat a change of
    mirror as a reason to download again: the pinned sha256 fixes the content.
    """
    return config["mirror"] or config["datasets"][wildcards.dataset]["url"]


# --- tokenize -----------------------------------------------------------------------


def spm_name(lang):
    return "joint" if config["spm"]["joint"] else lang


def spm_model(lang):
    """SentencePiece model that encodes language `lang`."""
    return LAYOUT.spm(spm_name(lang))


def spm_training_text(wildcards):
    """Training text of the languages that share SentencePiece model `name`."""
    return [
        corpus("train", lang) for lang in (SRC, TGT) if spm_name(lang) == wildcards.name
    ]


# --- train and translate ------------------------------------------------------------


ids = LAYOUT.ids  # checkpoints: LAYOUT.checkpoint (`checkpoint` is a Snakemake keyword)
translation = LAYOUT.translation


def train_config(wildcards):
    """JSON of the training settings: the `train` section under the model's own, plus
    seed and step cap."""
    return canonical(TrainConfig.values(config, wildcards.seed, wildcards.model))


# What defines the data of every run, and the fingerprint the configuration gives each
# run (mixnmt.runs): the jobs that gather per-run files refuse any of another run.
DATA = canonical(data_definition(config))
RUNS = canonical(fingerprints(config))


def entry(wildcards):
    """JSON of one model's config entry (`models.<model>`)."""
    return canonical(config["models"][wildcards.model] or {})


def systems(testset, seed, suffix=".txt"):
    """Inputs naming every model's translation of `testset` (training seed `seed`), or
    with suffix=".json" its record."""
    return {model: translation(model, testset, seed, suffix) for model in MODELS}


def contrasted_runs(testset, suffix=".txt"):
    """{model/seedN: translation of `testset`} (or its record) of every run of a
    contrasted model."""
    contrasted = dict.fromkeys(
        m for pair in config["analysis"]["contrasts"] for m in pair
    )
    return {
        run(m, s): translation(m, testset, s, suffix) for m in contrasted for s in SEEDS
    }


def primary_metric(testset):
    """--primary METRIC where `testset` is the pre-declared one (analysis.primary), else nothing."""
    metric, chosen = primary(config)
    return ["--primary", metric] if testset == chosen else []


def every_run(pattern):
    """`pattern` (with {model} and {seed}) for every model and seed."""
    return expand(pattern, model=MODELS, seed=SEEDS)


def named(paths):
    """MODEL=PATH arguments for a dict of paths (quote with :q in the shell command)."""
    return [f"{name}={path}" for name, path in paths.items()]


# --- analysis and report ------------------------------------------------------------

FIRST_TEST = TESTSETS[0]  # speed, alignments and responsibilities are read on this one
SILVER = LAYOUT.silver  # the first test set's, by mixnmt silver


figure = LAYOUT.figure
table = LAYOUT.table


def benchmarked(rule):
    """The benchmark file of one job of `rule` (a key of BENCHMARKED)."""
    return LAYOUT.benchmark(rule, BENCHMARKED[rule])


# the files of each kind of input of a figure or table (mixnmt.inputs)
INPUT_FILES = input_files(LAYOUT, MODELS, SEEDS, TESTSETS, TABLES, SHARED)


def inputs_of(kinds):
    """Named input files of a figure or table: {kind: files}."""
    return {kind: INPUT_FILES[kind] for kind in kinds}


def input_args(kinds):
    """The `--<kind> FILE...` arguments of `mixnmt plot|table`, with MODEL=PATH for
    per-model kinds (quote with :q in the shell command)."""
    found = []
    for kind in kinds:
        files = INPUT_FILES[kind]
        found += [
            f"--{kind}",
            *(named(dict(zip(MODELS, files))) if INPUTS[kind].per_model else files),
        ]
    return found
