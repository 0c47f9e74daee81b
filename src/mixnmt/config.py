"""The configuration: config.yaml with overlays merged as Snakemake merges them, what
its JSON schema (workflow/schemas/config.schema.yaml) cannot say (keys that must name
each other, each `models:` entry against its architecture's hyperparameters; Snakemake
runs `check` after the schema), and its sections as typed settings (`config_section`)."""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar

import jsonschema
import yaml

from mixnmt import MixnmtError
from mixnmt.machine import auto_precision, cpu_native_bf16, cuda_available
from mixnmt.paths import run
from mixnmt.runs import data_definition, definition, fingerprint, trained_entry
from mixnmt.schema import Probability, Validator, schema_error, settings_schema

T = TypeVar("T")


def Help(text: str) -> dict[str, str]:  # noqa: N802 (reads as a type's metadata)
    """A setting's help: its JSON-schema `description`, shown by `--help`."""
    return {"description": text}


CONFIG = Path("config.yaml")
"""The one configuration, in the repository root (Snakefile's `configfile:`)."""
SCHEMA = Path("workflow/schemas/config.schema.yaml")
"""Its JSON schema, relative to the repository root."""
CPU_EXPERIMENT = Path("experiments/cpu.yaml")
"""The overlay of the experiment that fits a machine without a GPU (part one of the study)."""
FP32 = "--config 'train={precision: fp32}'"
"""The command-line override that trains in fp32 where a CPU emulates bf16."""
MAX_DEPTH = 20
"""The deepest a config may nest (config.yaml: 6): the checks walk it recursively."""
MAX_NODES = 100_000
"""The most values a config file may expand to: config.yaml has about 500, and YAML
aliases let a few hundred bytes expand to billions (an "alias bomb")."""

CPU_SECONDS = 15
"""Seconds a training job takes per epoch, per MB of the pinned training files and per
million parameters, on 2 CPU cores that compute bf16 natively, a job per core (its
validation and start included): 14.7 over part one's 30 runs, 15.5 over part two's 25 (10.3
to 12.0 for its models but the latent one, 31), 10.7 over the converged reference's (whose
tables/jobs.tsv keeps only a resumed job's last invocation), from the three studies'
tables/jobs.tsv on an AMD EPYC with AVX-512 BF16. The basis of `cpu_hours`."""
CPU_HOURS = 8
"""Training that `cpu_notice` estimates to take longer than this on a CPU stops before it
starts, unless `allow_cpu`: on cores that compute bf16 natively the three CPU studies start
(part one estimated at 0.85 hours of training, 0.84 measured; the converged reference 4.4
at its 40-epoch cap, 3.2 measured with patience), the full study (131 hours) does not."""
CPU_FP32 = 2
"""How many times bf16's time fp32 training takes on a CPU that computes bf16 natively:
1.6 to 2.2 for the study's models (issue 33, benchmarks/speed.py)."""
CPU_EMULATED_BF16 = 20
"""How many times fp32's time bf16 training takes on a CPU that emulates it (no AVX-512
BF16 or AMX): 21-23 for part one's models on an AMD EPYC with AVX2 only, 60 for config.yaml's
rnn (benchmarks/speed.py, one thread)."""
CPU_STEPS_PER_MB = 100
"""Updates of 4096-token batches per epoch, per MB of the pinned training files: 123 for
Multi30k's 1.21 MB (results/multi30k-cpu: 246 updates in two epochs), rounded."""

Count = Annotated[int, {"minimum": 1, "maximum": 2**31 - 1}]
Positive = Annotated[float, {"exclusiveMinimum": 0}]
NonNegative = Annotated[float, {"minimum": 0}]


@dataclass(frozen=True)
class TrainConfig:
    """The `train` section of the config, plus the global `seed` and `max_steps`. Each
    setting's type, bounds and help are declared here, once: the schema's `train` section
    is derived from them (`schema`); the values, defaults included, live in config.yaml."""

    max_tokens: Annotated[Count, {"maximum": 1_000_000}, Help("padded source-or-target tokens per batch")]
    epochs: Annotated[Count, {"maximum": 100_000}, Help("at most; `patience` may stop a run earlier")]
    lr: Annotated[Positive, Help("peak learning rate, reached after `warmup` steps")]
    warmup: Annotated[int, {"minimum": 0}, Help("steps of linear warmup, then inverse square root decay")]
    betas: Annotated[tuple[Probability, Probability], Help("AdamW's decay rates of the moment estimates")]
    weight_decay: Annotated[NonNegative, Help("AdamW's decoupled weight decay")]
    decay: Annotated[
        Literal["all", "matrices"],
        Help(
            "what the weight decay shrinks: every parameter, or the weight matrices only (2-D: "
            "linear layers and embeddings, as nanoGPT does), not biases, gains and other vectors"
        ),
    ]
    label_smoothing: Annotated[Probability, Help("mass spread over the vocabulary in the training loss")]
    clip_norm: Annotated[Positive, Help("the gradient's norm is clipped to this")]
    deterministic: Annotated[bool, Help("deterministic kernels (byte-identical reruns; slower on GPU)")]
    precision: Annotated[
        Literal["auto", "fp32", "bf16"],
        Help(
            "bf16: mixed precision (bf16 autocast; fp16 on GPUs without bf16); fp32: none; auto: bf16 "
            "where the device computes it natively (GPUs, CPUs with AVX-512 BF16 or AMX), resolved "
            "where Snakemake runs: a published experiment names bf16 or fp32"
        ),
    ]
    bleu_sentences: Annotated[
        int, {"minimum": 0}, Help("validation sentences translated (greedy) for BLEU after each epoch")
    ]
    save_every: Annotated[Count, Help("steps between saves of the resumable training state")]
    average: Annotated[
        Count, Help("also try the mean weights of the last N epochs; kept if validation loss prefers them")
    ]
    patience: Annotated[
        int | None,
        {"minimum": 1},
        Help("stop after this many epochs without a better validation loss (null: never)"),
    ]
    compile: Annotated[
        bool, Help("torch.compile the recurrent models' per-step cells or the whole Transformer (for GPUs)")
    ]
    seed: Annotated[int, {"minimum": 0, "maximum": 2**32 - 1}, Help("the run's seed (the config's `seeds`)")]
    max_steps: Annotated[
        int | None, {"minimum": 1}, Help("cap on the training steps (the config's `max_steps`)")
    ]

    GLOBAL: ClassVar[tuple[str, ...]] = ("seed", "max_steps")  # top-level keys, not in `train`

    def __post_init__(self) -> None:
        object.__setattr__(self, "betas", tuple(self.betas))  # YAML gives a list

    @classmethod
    def from_config(cls, config: dict[str, Any], seed: int, model: str | None = None) -> TrainConfig:
        """The settings of run `seed` of `model` in a loaded config: its `train` section
        under the model's own (`train_settings`), with the seed and the config's
        `max_steps`, each checked."""
        return config_section(cls, "train", cls.values(config, seed, model))

    @classmethod
    def values(cls, config: dict[str, Any], seed: int, model: str | None = None) -> dict[str, Any]:
        """`from_config`'s settings as plain values (what `mixnmt train --config` takes),
        `precision: auto` resolved on this machine: a run's fingerprint says what it computes in."""
        train = train_settings(config, model)
        if train.get("precision") == "auto":
            train = {**train, "precision": auto_precision(cuda_available(), cpu_native_bf16())}
        return {**train, "seed": int(seed), "max_steps": config["max_steps"]}


def train_settings(config: dict[str, Any], model: str | None) -> dict[str, Any]:
    """The training settings of `model`'s runs: the `train` section with the model entry's
    own over it (`own_settings`); None: the section alone."""
    return {**config["train"], **(own_settings(config, model, "train") if model else {})}


def decoding_settings(config: dict[str, Any], model: str) -> dict[str, Any]:
    """The decoding settings of `model`'s runs: the `decode` section with the model entry's
    own over it (`own_settings`)."""
    return {**config["decode"], **own_settings(config, model, "decode")}


def own_settings(config: dict[str, Any], model: str, section: str) -> dict[str, Any]:
    """The settings of section `section` (of SETTINGS) that model `model`'s entry
    overrides (its `train`: a variant that trains differently; its `decode`: one that
    decodes differently), or none."""
    return (config["models"][model] or {}).get(section, {})


def trained_twin(config: dict[str, Any], model: str) -> str:
    """The model whose runs train the weights of `model`'s: the first selected model
    whose entry is `model`'s but for its decoding settings (`model` itself, unless an
    earlier one is): variants that differ only in how they decode share one training run
    a seed, which is the run each would train."""
    training = trained_entry(model, config["models"][model])
    return next(m for m in selected(config) if trained_entry(m, config["models"][m]) == training)


@dataclass(frozen=True)
class DecodeConfig:
    """The `decode` section of the config, declared here once (its schema is derived from
    these fields; the values, defaults included, live in config.yaml)."""

    beam: Annotated[Count, {"maximum": 1000}, Help("hypotheses kept per sentence; 1 is greedy")]
    length_penalty: Annotated[
        NonNegative, Help("hypotheses are ranked by log-probability / length ** length_penalty")
    ]
    max_len_a: Annotated[
        NonNegative, {"maximum": 100}, Help("output limit: max_len_a * source length + max_len_b")
    ]
    max_len_b: Annotated[Count, {"maximum": 10_000}, Help("tokens added to the output limit")]
    batch_size: Annotated[Count, {"maximum": 100_000}, Help("sentences decoded together")]


SETTINGS: dict[str, tuple[type, tuple[str, ...]]] = {
    "train": (TrainConfig, TrainConfig.GLOBAL),
    "decode": (DecodeConfig, ()),
}
"""The config sections a dataclass declares, with the fields that are not the section's."""
OWN = {"train": "training", "decode": "decoding"}
"""The sections a model entry may override for its runs (`own_settings`), with the word
for their settings."""


def schema(path: str | Path = SCHEMA) -> dict[str, Any]:
    """The config's JSON schema: the file at `path`, with the sections of SETTINGS derived
    from their dataclasses."""
    rules = copy.deepcopy(parsed(Path(path).read_text()))
    for name, (cls, exclude) in SETTINGS.items():
        rules["properties"][name] = settings_schema(cls, exclude)
    entry = rules["properties"]["models"]["additionalProperties"]["properties"]
    for name, what in OWN.items():
        own = f"the {what} settings of this model's runs that differ from the `{name}` section's"
        entry[name] = rules["properties"][name] | {"required": [], "description": own}
    return rules


def selected(config: dict[str, Any]) -> list[str]:
    """The models this experiment trains: `only`, or every entry of `models`."""
    return list(config["only"] or config["models"])


def fingerprints(config: dict[str, Any]) -> dict[str, str]:
    """The fingerprint of every run of `config` (`mixnmt.runs`): {"<model>/seed<n>": fingerprint}."""
    return {
        run(model, seed): fingerprint(
            definition(
                model,
                config["models"][model],
                TrainConfig.from_config(config, seed, model),
                data_definition(config),
            )
        )
        for model in selected(config)
        for seed in config["seeds"]
    }


def pinned(config: dict[str, Any], dataset: str, file: str) -> dict[str, Any]:
    """The entry `datasets.<dataset>` pins for one of its files: its sha256 and size."""
    found = config["datasets"][dataset]
    for files in [found["train"], found["valid"], *found["test"].values()]:
        for entry in files.values():
            if entry["file"] == file:
                return entry
    raise MixnmtError(f"datasets.{dataset}: lists no file {file!r}")


def prepare_arguments(config: dict[str, Any], split: str) -> list[str]:
    """`mixnmt prepare`'s options for a split: training and validation pairs are filtered
    by length, test sets never; the first test set checks the sentences the analysis
    will show (before any model is trained)."""
    testsets = list(config["datasets"][config["dataset"]]["test"])
    if split == testsets[0]:
        return ["--shown", *map(str, config["analysis"]["sentences"])]
    if split in testsets:
        return []
    return ["--max-words", str(config["prepare"]["max_words"])]


def depth(value: Any) -> int:
    """How deep mappings and lists nest in `value` (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(item, dict | list) and level <= MAX_DEPTH:
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def nodes(value: Any, limit: int = MAX_NODES) -> int:
    """How many values `value` holds, counted as its aliases expand (each reference
    again); stops counting past `limit`, so an alias bomb costs no more than that."""
    count, stack = 0, [value]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count


class DuplicateKey(yaml.YAMLError):
    pass


class UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (plain YAML keeps the
    last silently: a second `decode:` would replace the first)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
            if key in seen:
                raise DuplicateKey(f"the key {key!r} is given twice, at lines {seen[key]} and {line}")
            seen[key] = line
        return super().construct_mapping(node, deep)


def read(path: str | Path) -> dict[str, Any]:
    """One config file's mapping, refused in one line if unreadable, not UTF-8 YAML, not
    a mapping, with a key given twice, nested more than MAX_DEPTH deep or expanding to
    more than MAX_NODES values."""
    try:
        config = parsed(Path(path).read_text(encoding="utf-8")) or {}
    except OSError as e:
        raise MixnmtError(
            f"{path}: cannot read the config ({e.strerror}); run from the repository root"
        ) from None
    except UnicodeDecodeError as e:
        raise MixnmtError(f"{path}: not UTF-8 text (byte {e.start}); save the config as UTF-8") from None
    except RecursionError:
        raise MixnmtError(f"{path}: nested more than {MAX_DEPTH} deep; refused") from None
    except DuplicateKey as e:
        raise MixnmtError(f"{path}: {e}") from None
    except yaml.YAMLError as e:
        raise MixnmtError(f"{path}: not a YAML config ({' '.join(str(e).split())[:200]})") from None
    if not isinstance(config, dict):
        raise MixnmtError(f"{path}: expected a config mapping, got a {type(config).__name__}")
    if nodes(config) > MAX_NODES:
        raise MixnmtError(f"{path}: expands to more than {MAX_NODES} values (YAML aliases?); refused")
    if depth(config) > MAX_DEPTH:
        raise MixnmtError(f"{path}: nested more than {MAX_DEPTH} deep; refused")
    return copy.deepcopy(config)


@functools.lru_cache(maxsize=256)
def parsed(text: str) -> Any:
    """YAML `text` as UniqueKeyLoader reads it, parsed once a process (checking every
    published study reads config.yaml, the schema and every overlay once per study);
    callers copy what they change."""
    return yaml.load(text, UniqueKeyLoader)


def merge(config: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """`config` updated by `overlay`, mappings merged key by key (as Snakemake merges
    --configfile overlays) and anything else replaced."""
    merged = dict(config)
    for key, value in overlay.items():
        both = isinstance(value, dict) and isinstance(merged.get(key), dict)
        merged[key] = merge(merged[key], value) if both else value
    return merged


YAML_SCALARS = {f"tag:yaml.org,2002:{kind}" for kind in ("bool", "int", "float", "null")}


def typed(value: Any) -> Any:
    """A `--config` value with its scalars typed as a config file types them: Snakemake
    keeps `allow_cpu=true`, `seeds=[1,2]` and `train={epochs: 3}` as strings ('true',
    '1', '3'). A string is retyped only where YAML's resolver reads it as a boolean,
    number or null (a plain scalar: no alias can expand)."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    if (
        isinstance(value, str)
        and yaml.resolver.Resolver().resolve(yaml.ScalarNode, value, (True, False)) in YAML_SCALARS
    ):
        return yaml.safe_load(value)
    return value


def load(*overlays: str | Path) -> dict[str, Any]:
    """config.yaml with `overlays` merged on it in order, checked as the workflow checks
    it (the schema with strict integers, then `check`). Outside the repository root (no
    config.yaml here), the first overlay is the whole config (PATH/config.yaml), checked
    against the schema of its repository (PATH/workflow/schemas)."""
    files = [CONFIG, *overlays] if CONFIG.is_file() or not overlays else list(overlays)
    config: dict[str, Any] = {}
    for path in files:
        config = merge(config, read(path))
    check_strictly(config, Path(files[0]).parent / SCHEMA)
    check(config)
    return config


def for_dvc(config: dict[str, Any]) -> dict[str, Any]:
    """`config` as DVC runs it: dvc.yaml has a stage pair per entry of `models`, so the
    models that `only` names become the entries, and `only` is null."""
    if not config["only"]:
        return config
    return config | {"models": {name: config["models"][name] for name in config["only"]}, "only": None}


def check_strictly(config: dict[str, Any], path: str | Path = SCHEMA) -> None:
    """Raise MixnmtError, naming the key, if `config` breaks the JSON schema (`schema` of
    the file at `path`) once integers must be ints (Snakemake's validation, which fills in
    the defaults, counts 1.0 as an integer)."""
    error = jsonschema.exceptions.best_match(Validator(schema(path)).iter_errors(config))
    if error is not None:
        raise MixnmtError(schema_error(error))


def check(config: dict[str, Any]) -> None:
    """Raise MixnmtError, naming the key, on the first inconsistency of a schema-valid config."""
    if config["dataset"] not in config["datasets"]:
        raise MixnmtError(
            f"dataset: {config['dataset']!r} is not one of datasets: {', '.join(config['datasets'])}"
        )
    if config["src"] == config["tgt"]:
        raise MixnmtError("tgt: must differ from src")
    dataset = config["datasets"][config["dataset"]]
    splits = {"train": dataset["train"], "valid": dataset["valid"]}
    splits |= {f"test.{name}": files for name, files in dataset["test"].items()}
    for where, files in splits.items():
        for lang in (config["src"], config["tgt"]):
            if lang not in files:
                raise MixnmtError(f"datasets.{config['dataset']}.{where}: has no {lang!r} file")
    check_models(config["models"])
    for i, name in enumerate(config["only"] or []):
        if name not in config["models"]:
            raise MixnmtError(f"only.{i}: {name!r} is not one of models: {', '.join(config['models'])}")
    models = selected(config)
    listed = ", ".join(models)
    baseline = config["analysis"]["baseline"]
    if baseline not in models:
        raise MixnmtError(f"analysis.baseline: {baseline!r} is not one of the experiment's models: {listed}")
    contrasts = config["analysis"]["contrasts"]
    for i, pair in enumerate(contrasts):
        for name in pair:
            if name not in models:
                raise MixnmtError(
                    f"analysis.contrasts.{i}: {name!r} is not one of the experiment's models: {listed}"
                )
        if pair[0] == pair[1]:
            raise MixnmtError(f"analysis.contrasts.{i}: compares {pair[0]!r} with itself")
        if (j := [set(p) for p in contrasts].index(set(pair))) < i:  # one test twice in Holm's family
            raise MixnmtError(
                f"analysis.contrasts.{i}: compares {pair[0]!r} with {pair[1]!r}, as contrast {j} does"
            )
    primary = config["analysis"]["primary"]["testset"]
    if primary is not None and primary not in dataset["test"]:
        raise MixnmtError(
            f"analysis.primary.testset: {primary!r} is not one of the test sets: {', '.join(dataset['test'])}"
        )
    for i, reference in enumerate(config["analysis"]["references"]):
        for testset in reference["scores"]:
            if testset not in dataset["test"]:
                raise MixnmtError(
                    f"analysis.references.{i}.scores: {testset!r} is not one of the test sets: "
                    f"{', '.join(dataset['test'])}"
                )
    edges = config["analysis"]["length_buckets"]
    if sorted(set(edges)) != edges:
        raise MixnmtError(f"analysis.length_buckets: expected increasing word counts, got {edges}")


def check_models(models: dict[str, Any]) -> None:
    """Raise MixnmtError, naming the key, if an entry of `models:` cannot make a model.
    Building one imports torch, 3 s of every Snakemake start; so an entry that this code
    and this torch have built before is not built again (`built_before`)."""
    markers = {name: built_before(name, entry) for name, entry in models.items()}
    unbuilt = [name for name, marker in markers.items() if marker is None or not marker.exists()]
    if not unbuilt:
        return
    from mixnmt.models import check as check_model  # the registry imports torch: only here

    for name in unbuilt:
        check_model(name, models[name])
        try:
            if marker := markers[name]:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
        except OSError:  # a read-only home: built again next time
            pass


def built_before(name: str, entry: Any) -> Path | None:
    """The marker, under the user's cache folder, of a `models:` entry that built, named by
    what the build depends on: the entry, the package's source, Python's and torch's
    versions (None where torch's is unknown)."""
    if (versions := code_and_versions()) is None:
        return None
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    key = hashlib.sha256(json.dumps([name, entry, versions], sort_keys=True).encode())
    return cache / "mixnmt" / "built" / key.hexdigest()


@functools.cache
def code_and_versions() -> list[str] | None:
    """A digest of the package's source files, and the Python and torch versions."""
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(f"{path.relative_to(package)}\0".encode() + path.read_bytes())
    return [digest.hexdigest(), sys.version, torch_version]


def primary(config: dict[str, Any]) -> tuple[str, str]:
    """The pre-declared metric and test set of the claims (analysis.primary)."""
    chosen = config["analysis"]["primary"]
    return chosen["metric"], chosen["testset"] or next(iter(config["datasets"][config["dataset"]]["test"]))


def cpu_hours(config: dict[str, Any], cores: int, native: bool, runs: list[str] | None = None) -> float:
    """Roughly the hours that training runs of `config`'s models `runs` (default: every
    model and seed) take on `cores` CPU cores, in the precision its `train.precision` gives on
    cores that compute bf16 natively (`native`) or emulate it, within `max_steps` where it
    caps them: in proportion to each model's parameters."""
    runs = every_run(config) if runs is None else runs
    spm, hours = config["spm"], 0.0
    for name, count in Counter(runs).items():
        size = parameters(name, config["models"][name], spm["vocab_size"], spm["joint"])
        own = config | {"train": train_settings(config, name)}
        per_epoch = count * size / 1e6 * training_megabytes(config) * CPU_SECONDS
        hours += per_epoch * cpu_epochs(own) * 2 / cores / 3600 * cpu_slowdown(own, native)
    return hours


def cpu_slowdown(config: dict[str, Any], native: bool) -> float:
    """Training's time in `config`'s `train.precision`, as a multiple of bf16's on cores
    that compute bf16 natively, on cores that do (`native`) or emulate it."""
    setting = config["train"]["precision"]
    if (auto_precision(False, native) if setting == "auto" else setting) == "fp32":
        return CPU_FP32
    return 1.0 if native else CPU_FP32 * CPU_EMULATED_BF16


def parameters(name: str, entry: dict | None, vocab: int, shared_vocab: bool) -> int:
    """The parameters of config entry `models.<name>` at vocabulary size `vocab`, built on
    the meta device (nothing allocated or drawn)."""
    import torch  # with the registry: only here

    from mixnmt.models import Undrawn, build, parameter_counts, resolve

    arch, hparams = resolve(name, entry)
    with torch.device("meta"), Undrawn():
        return parameter_counts(build(arch, hparams, vocab, vocab, shared_vocab, name))[0]


def every_run(config: dict[str, Any]) -> list[str]:
    """The model of each training run of `config`: each selected model once per seed, but
    a decoding variant whose runs share another's (`trained_twin`)."""
    return [name for name in selected(config) if trained_twin(config, name) == name for _ in config["seeds"]]


def training_megabytes(config: dict[str, Any]) -> float:
    """The size of the pinned training files (MB, as downloaded)."""
    train = config["datasets"][config["dataset"]]["train"]
    return sum(train[lang]["size"] for lang in (config["src"], config["tgt"])) / 1e6


def cpu_epochs(config: dict[str, Any]) -> float:
    """The epochs each run trains: `train.epochs`, or fewer where `max_steps` caps them."""
    per_epoch = training_megabytes(config) * CPU_STEPS_PER_MB * 4096 / config["train"]["max_tokens"]
    epochs = config["train"]["epochs"]
    return min(epochs, config["max_steps"] / per_epoch) if config["max_steps"] is not None else epochs


def cpu_notice(config: dict[str, Any], cores: int, native: bool, runs: list[str] | None = None) -> str | None:
    """What training runs of `config`'s models `runs` (default: every model and seed; the
    workflow passes those it is about to run) mean on `cores` CPU cores that compute bf16
    natively (`native`) or emulate it, if they would take hours, within `max_steps` where
    it caps them; None when the run is quick (`cpu_fits` says what fits instead)."""
    runs = every_run(config) if runs is None else runs
    hours = cpu_hours(config, cores, native, runs)
    if hours < CPU_HOURS:
        return None
    epochs = cpu_epochs(config)
    length = (
        f"{config['max_steps']} steps" if epochs < config["train"]["epochs"] else f"up to {epochs} epochs"
    )
    emulation = ""
    if not native and any(train_settings(config, name)["precision"] == "bf16" for name in set(runs)):
        fp32 = cpu_hours(merge(config, {"train": {"precision": "fp32"}}), cores, native, runs)
        emulation = (
            f" in bf16, which they emulate (about {CPU_EMULATED_BF16} times fp32's time; in fp32, about "
            f"{fp32:.{1 if fp32 < 10 else 0}f} hours: {FP32})"
        )
    return (
        f"no GPU here: this run has {len(runs)} training jobs (one per model and seed) of {length} on "
        f"{training_megabytes(config):.1f} MB of training files, roughly {hours:.0f} hours on {cores} "
        f"CPU cores{emulation}."
    )


def cpu_fits(short: dict[str, Any], cores: int, native: bool) -> str:
    """The command of the CPU experiment (`short`: config.yaml with CPU_EXPERIMENT) that
    fits `cores` CPU cores, in fp32 where they emulate bf16, with its time there."""
    command = f"snakemake --cores all --configfile {CPU_EXPERIMENT}"
    if not native and short["train"]["precision"] == "bf16":
        short, command = merge(short, {"train": {"precision": "fp32"}}), f"{command} {FP32}"
    return (
        "The CPU experiment (part one of the study: small models, five seeds of two epochs each) "
        f"trains in about {cpu_hours(short, cores, native):.1f} hours here: `{command}`."
    )


def config_section(cls: type[T], name: str, values: dict[str, Any]) -> T:
    """Build dataclass `cls` from config section `name`, naming any unknown or missing
    key and any value outside its declared type and bounds."""
    fields = [f.name for f in dataclasses.fields(cls)]
    for key in values:
        if key not in fields:
            raise MixnmtError(f"{name}.{key}: unknown setting (expected one of {', '.join(sorted(fields))})")
    for key in fields:
        if key not in values:
            raise MixnmtError(f"{name}.{key}: missing setting")
    error = jsonschema.exceptions.best_match(Validator(settings_schema(cls)).iter_errors(values))
    if error is not None:
        raise MixnmtError(schema_error(error, name))
    return cls(**values)
