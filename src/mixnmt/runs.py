"""What a training run is, and the record of it that every file made from it carries.

A run is defined by its config: the model's entry, the training settings with the seed,
and the data (the pinned sha256 of the training and validation files, how they are
prepared and tokenised). Its fingerprint is a hash of exactly that definition, so the
configuration alone says what every run's fingerprint must be (`config.fingerprints`).

Every per-run file records its run: `{"model", "seed", "fingerprint", "checkpoint"}` (the
checkpoint's sha256 where one was read) in a JSON file's `run`, or as columns `model`,
`seed`, `fingerprint` of a table; a file made from several runs' translations records
each in `runs`. mixnmt.lineage reads and checks those records.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

UNDEFINING = ("save_every",)
"""Training settings that change how a run is kept, not what it computes."""
ADDED = {"precision": "fp32", "decay": "all"}
"""Training settings added after runs were first fingerprinted, with the value those runs
had: a definition leaves a setting out at that value, so that adding it kept their
fingerprints."""
ANALYSIS_ADDED = {"statistic": "welch"}
"""Analysis settings added after reports were first made, with the value those reports
had: a report's configuration leaves a setting out at that value (`report.reported`), so
that adding it changed no published report."""

IDENTITY = ("model", "seed", "fingerprint")
"""What every per-run record holds, in a table's columns too."""
RECORD = (*IDENTITY, "checkpoint")
"""A JSON file's record of its run: also the sha256 of the weights it read."""


def data_definition(config: dict[str, Any]) -> dict[str, Any]:
    """The data a run of `config` trains on: the pinned training and validation files,
    and how they are prepared and tokenised."""
    dataset = config["datasets"][config["dataset"]]
    languages = [config["src"], config["tgt"]]
    return {
        "languages": languages,
        "files": {
            split: {lang: dataset[split][lang]["sha256"] for lang in languages}
            for split in ("train", "valid")
        },
        "prepare": config["prepare"],
        "spm": config["spm"],
    }


def architecture(name: str, entry: dict | None) -> str:
    """The architecture of config entry `models.<name>`: its `arch`, else its name."""
    return (entry or {}).get("arch", name)


def trained_entry(name: str, entry: dict | None) -> dict[str, Any]:
    """What of config entry `models.<name>` its runs' training computes from: all but its
    decoding settings, its architecture named."""
    rest = {k: v for k, v in (entry or {}).items() if k not in ("arch", "decode")}
    return {"arch": architecture(name, entry), **rest}


def definition(model: str, entry: dict | None, train: Any, data: dict | None) -> dict[str, Any]:
    """Exactly what defines one training run: the model's name and config entry, its
    training settings (a `config.TrainConfig`: seed and step cap included) and its data
    (`data_definition`)."""
    settings = {
        k: v
        for k, v in dataclasses.asdict(train).items()
        if k not in UNDEFINING and (k not in ADDED or v != ADDED[k])
    }
    # as JSON reads it back (tuples as lists), so that a recorded definition equals it
    return json.loads(json.dumps({"model": model, "entry": entry or {}, "train": settings, "data": data}))


def fingerprint(definition: dict[str, Any]) -> str:
    """16 hex digits of the sha256 of a definition's canonical JSON (key order never counts)."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def identity(model: str, seed: int | None, fingerprint: str | None, checkpoint: str | None = None) -> dict:
    """A per-run file's record of its run (RECORD)."""
    return dict(zip(RECORD, (model, seed, fingerprint, checkpoint)))
