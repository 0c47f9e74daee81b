"""A decoding variant's runs: the training run of the model it decodes differently, kept
as its own.

Models whose entries differ only in their `decode` settings (`config.trained_twin`) train
the same weights from a seed: training the variant would repeat its twin's run step for
step. `share` writes the variant's checkpoint, metrics and manifest from the twin's as
that training would: the same checkpoint byte for byte (the variant's name, definition and
fingerprint in it), the same metrics under the variant's identity, and a manifest that
says whose run it shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mixnmt import MixnmtError, checkpoint
from mixnmt.config import TrainConfig
from mixnmt.files import read_json, read_lines, sha256sum, write_json, write_lines
from mixnmt.paths import run
from mixnmt.runs import definition, fingerprint, identity, trained_entry


@dataclass(frozen=True)
class RunFiles:
    """What a training run keeps (`train.TrainFiles`' outputs)."""

    checkpoint: Path
    metrics: Path
    manifest: Path


def training(of: dict[str, Any]) -> dict[str, Any]:
    """What of a run's definition its training computes from: all but the model's name and
    its entry's decoding settings (`runs.trained_entry`)."""
    return {**of, "model": None, "entry": trained_entry(of["model"], of["entry"])}


def share(
    twin: RunFiles, name: str, entry: dict | None, config: TrainConfig, data: dict | None, files: RunFiles
) -> None:
    """Keep the run `twin` trained as run `config.seed` of model `name` (config entry
    `entry`, data `data`), whose training it is: refused if the twin's definition differs
    from the variant's in more than the model's name and decoding settings."""
    wanted = definition(name, entry, config, data)
    payload = checkpoint.read(twin.checkpoint)
    had = payload.get("definition")
    if had is None or training(had) != training(wanted):
        raise MixnmtError(
            f"{twin.checkpoint}: not the training of models.{name} with seed {config.seed} "
            f"(its run differs in more than the model's name and decoding settings); retrain it"
        )
    record = read_json(twin.manifest)
    if record.get("checkpoint", {}).get("sha256") != sha256sum(twin.checkpoint):
        raise MixnmtError(
            f"{twin.manifest}: not the manifest of {twin.checkpoint} (it records another checkpoint)"
        )
    own = identity(name, config.seed, fingerprint(wanted))
    checkpoint.write(
        files.checkpoint, payload | {"model": name, "definition": wanted, "fingerprint": own["fingerprint"]}
    )
    header, *rows = read_lines(twin.metrics)
    columns = header.split("\t")
    renamed = {"model": name, "fingerprint": own["fingerprint"]}
    write_lines(
        files.metrics,
        [header, *("\t".join(renamed.get(c, v) for c, v in zip(columns, r.split("\t"))) for r in rows)],
    )
    weights = sha256sum(files.checkpoint)
    write_json(
        files.manifest,
        record
        | {
            "run": own | {"checkpoint": weights},
            "definition": wanted,
            "model": name,
            "checkpoint": {"path": str(files.checkpoint), "sha256": weights},
            "metrics": {"path": str(files.metrics), "sha256": sha256sum(files.metrics)},
            "shares": {"run": run(had["model"], config.seed), "checkpoint": record["checkpoint"]["sha256"]},
        },
    )
