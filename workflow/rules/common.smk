"""Config validation and the helpers that map config entries to files and arguments."""

import json
import re

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate


validate(config, "../schemas/config.schema.yaml")

OUT = f"results/{config['experiment']}"
SRC, TGT = config["src"], config["tgt"]


def config_error(key, message):
    raise WorkflowError(f"config: {key}: {message}")


if config["dataset"] not in config["datasets"]:
    config_error("dataset", f"{config['dataset']!r} is not one of datasets: {', '.join(config['datasets'])}")
if SRC == TGT:
    config_error("tgt", "must differ from src")
DATASET = config["datasets"][config["dataset"]]
TESTSETS = list(DATASET["test"])
SPLITS = {"train": DATASET["train"], "valid": DATASET["valid"], **DATASET["test"]}
for _split, _files in SPLITS.items():
    for _lang in (SRC, TGT):
        if _lang not in _files:
            _where = _split if _split in ("train", "valid") else f"test.{_split}"
            config_error(f"datasets.{config['dataset']}.{_where}", f"has no {_lang!r} file")
MODELS = list(config["models"])
if config["analysis"]["baseline"] not in MODELS:
    config_error("analysis.baseline", f"{config['analysis']['baseline']!r} is not one of models: {', '.join(MODELS)}")


wildcard_constraints:
    dataset="|".join(map(re.escape, config["datasets"])),
    file=r"[^/]+",
    split="|".join(map(re.escape, SPLITS)),
    lang=f"{SRC}|{TGT}",
    model="|".join(map(re.escape, MODELS)),
    testset="|".join(map(re.escape, TESTSETS)),


def logged(path):
    """Log file of a job: results/<experiment>/logs/<path>.log."""
    return f"{OUT}/logs/{path}.log"


# --- data ---------------------------------------------------------------------------


def raw_file(split, lang):
    """The downloaded file of one split and language: data/<dataset>/<file>."""
    return f"data/{config['dataset']}/{SPLITS[split][lang]['file']}"


def pinned_sha256(wildcards):
    """The sha256 the config pins for data/<dataset>/<file>."""
    dataset = config["datasets"][wildcards.dataset]
    splits = [dataset["train"], dataset["valid"], *dataset["test"].values()]
    for files in splits:
        for entry in files.values():
            if entry["file"] == wildcards.file:
                return entry["sha256"]
    config_error(f"datasets.{wildcards.dataset}", f"lists no file {wildcards.file!r}")


def download_base(wildcards, output):
    """Where to fetch from: the mirror if set, else the dataset's url.

    Declared as derived from the output so that Snakemake does not treat a change of
    mirror as a reason to download again: the pinned sha256 fixes the content.
    """
    return config["mirror"] or config["datasets"][wildcards.dataset]["url"]


def max_words(wildcards):
    """Filter arguments for prepare: training data is filtered, test data never."""
    if wildcards.split in TESTSETS:
        return ""
    return f"--max-words {int(config['prepare']['max_words'])}"


# --- tokenize -----------------------------------------------------------------------


def spm_name(lang):
    return "joint" if config["spm"]["joint"] else lang


def spm_model(lang):
    """SentencePiece model that encodes language `lang`."""
    return f"{OUT}/spm/{spm_name(lang)}.model"


def spm_training_text(wildcards):
    """Training text of the languages that share SentencePiece model `name`."""
    return [f"{OUT}/corpus/train.{lang}" for lang in (SRC, TGT) if spm_name(lang) == wildcards.name]


# --- train and translate ------------------------------------------------------------


def ids(split, lang):
    return f"{OUT}/ids/{split}.{lang}"


def train_config(wildcards):
    """JSON of the training settings: the `train` section plus seed and step cap."""
    return json.dumps({**config["train"], "seed": config["seed"], "max_steps": config["max_steps"]})


def hparams(wildcards):
    """JSON of one model's hyperparameters (`models.<model>`)."""
    return json.dumps(config["models"][wildcards.model] or {})


def translation(model, testset):
    return f"{OUT}/translations/{model}/{testset}.txt"


def systems(testset):
    """Inputs naming every model's translation of `testset`."""
    return {model: translation(model, testset) for model in MODELS}


def named(paths):
    """MODEL=PATH arguments for a dict of paths (quote with :q in the shell command)."""
    return [f"{name}={path}" for name, path in paths.items()]


# --- analysis and report ------------------------------------------------------------

FIRST_TEST = TESTSETS[0]  # speed, alignments and responsibilities are read on this one
FIGURES = ["learning_curves", "bleu_by_length", "alignments", "responsibilities", "component_usage", "cost"]


def figure(name):
    return f"{OUT}/figures/{name}.png"
