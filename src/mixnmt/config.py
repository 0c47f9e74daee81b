"""What the config's JSON schema (workflow/schemas/config.schema.yaml) cannot say: keys
that must name each other, and each `models:` entry against its architecture's
hyperparameters (the registry's schema). Snakemake runs `check` after the schema."""

from __future__ import annotations

from typing import Any

from mixnmt import MixnmtError
from mixnmt.models import resolve


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
    baseline = config["analysis"]["baseline"]
    if baseline not in config["models"]:
        raise MixnmtError(
            f"analysis.baseline: {baseline!r} is not one of models: {', '.join(config['models'])}"
        )
