"""What the config's JSON schema (workflow/schemas/config.schema.yaml) cannot say: keys
that must name each other, and each `models:` entry against its architecture's
hyperparameters (the registry's schema). Snakemake runs `check` after the schema."""

from __future__ import annotations

from typing import Any

from mixnmt import MixnmtError
from mixnmt.models import resolve


def selected(config: dict[str, Any]) -> list[str]:
    """The models this experiment trains: `only`, or every entry of `models`."""
    return list(config["only"] or config["models"])


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
    for name, entry in config["models"].items():
        resolve(name, entry)
    for i, name in enumerate(config["only"] or []):
        if name not in config["models"]:
            raise MixnmtError(f"only.{i}: {name!r} is not one of models: {', '.join(config['models'])}")
    models = selected(config)
    listed = ", ".join(models)
    baseline = config["analysis"]["baseline"]
    if baseline not in models:
        raise MixnmtError(f"analysis.baseline: {baseline!r} is not one of the experiment's models: {listed}")
    for i, pair in enumerate(config["analysis"]["contrasts"]):
        for name in pair:
            if name not in models:
                raise MixnmtError(
                    f"analysis.contrasts.{i}: {name!r} is not one of the experiment's models: {listed}"
                )
        if pair[0] == pair[1]:
            raise MixnmtError(f"analysis.contrasts.{i}: compares {pair[0]!r} with itself")
