"""Where a decoder reads the source while it loops: numbers per model of a trained study,
on its own translations of its configuration's first test set (its first seed).

    python benchmarks/looping.py results/multi30k-cpu mixture-states-gated attention-small

Each translation is fed back through the model (teacher forcing on its own output, so
the weights are the ones it decoded with, up to beam search), and at every target step
its read position is the source position of most weight: the summed responsibilities of
the decoder's first mixture over the source states (a mixture with `source: states`), or
the attention weights (a model with an alignment). Per model, for translations that
loop (`evaluate.loops`) and those that do not:
- n, length: how many, and target tokens per source token;
- source: the mean weight on the source per step (1 for attention);
- revisit: the share of steps that read a position read before, not at the last step
  (the decoder returns to a place it has left);
- back: the share of steps whose read position lies left of the last step's;
- same: the share of steps that read the last step's position again (a decoder stuck);
- reached: the furthest position read, as a share of the source (1: its last token);
- covered: the share of the source's positions that are ever read;
- stay: the mean responsibility of "stay" (the previous state) per step, mixtures only.
Numbers, not tests: the note of issue 34 reports them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import diagnosis
import torch

from mixnmt import MixnmtError
from mixnmt.batching import ParallelData, read_ids
from mixnmt.evaluate import loops
from mixnmt.symbols import PAD


def reads(weights: dict[str, torch.Tensor], sources: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per step (B, T): the weight on the source, the read position, and the weight of
    "stay" (nan where the model has none), from `teacher_forcing`'s weights."""
    if "alignment" in weights:  # (B, T, S)
        alignment = weights["alignment"]
        nan = torch.full(alignment.shape[:2], float("nan"))
        return alignment.sum(-1), alignment.argmax(-1), nan
    pi = next(w for name, w in weights.items() if name.startswith("decoder_")).float()  # (B, T, H, n)
    source = pi[..., -sources:].mean(2)  # (B, T, S): the heads' mean
    return source.sum(-1), source.argmax(-1), pi[..., 0].mean(2)


@torch.no_grad()
def diagnose(root: Path, name: str, config: dict[str, Any], max_tokens: int = 2048) -> list[dict]:
    layout, seed, model, *spm = diagnosis.first_run(root, name, config)
    if "alignment" not in model.analysis_axes and getattr(model, "source", None) != "states":
        raise MixnmtError(
            f"{layout.checkpoint(name, seed)}: {name} weighs no source positions "
            "(attention, or a mixture with source: states)"
        )
    testset = next(iter(config["datasets"][config["dataset"]]["test"]))
    hyps = Path(layout.translation(name, testset, seed)).read_text().splitlines()
    data = ParallelData(
        read_ids(layout.ids(testset, config["src"]), len(spm[0])), spm[1].encode(hyps), testset
    )
    rows = {True: [], False: []}
    for indices in data.batches(max_tokens):
        batch = data.collate(indices)
        weights = model.analyse(batch.src, batch.tgt_in)
        mass, position, stay = reads(weights, batch.src.size(1))
        for row, i in enumerate(indices):
            t = int((batch.tgt_in[row] != PAD).sum())
            s = int((batch.src[row] != PAD).sum())
            p = position[row, :t].tolist()
            earlier = [p[k] in p[: k - 1] and p[k] != p[k - 1] for k in range(1, t)]
            back = [p[k] < p[k - 1] for k in range(1, t)]
            same = [p[k] == p[k - 1] for k in range(1, t)]
            rows[loops(hyps[i])].append(
                {
                    "length": t / s,
                    "source": float(mass[row, :t].mean()),
                    "revisit": sum(earlier) / max(t - 1, 1),
                    "back": sum(back) / max(t - 1, 1),
                    "same": sum(same) / max(t - 1, 1),
                    "reached": max(p) / max(s - 1, 1),
                    "covered": len(set(p)) / s,
                    "stay": float(stay[row, :t].mean()),
                }
            )
    return [
        {
            "model": name,
            "loops": looped,
            "n": len(found),
            **{k: sum(r[k] for r in found) / len(found) for k in found[0]},
        }
        for looped, found in rows.items()
        if found
    ]


def main(argv: list[str] | None = None) -> None:
    diagnosis.main(__doc__, diagnose, "checkpoints, spm, ids, translations", argv)


if __name__ == "__main__":
    sys.exit(main())
