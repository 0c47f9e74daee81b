"""A trained model's analysis weights on one sentence pair, with the subwords along their
axes: what `mixnmt translate --alignments` writes for each translation, and what the
analysis shows of fixed sentences."""

from __future__ import annotations

from typing import Any

import torch

from mixnmt import checkpoint
from mixnmt.batching import ParallelData
from mixnmt.usage import rounded


@torch.no_grad()
def sentence_weights(loaded: checkpoint.Inference, source: list[int], target: list[int]) -> dict[str, Any]:
    """The model's analysis weights while it reads `target` after `source` (ids), with the
    subwords along their axes: "source" (EOS included), "target" (what each step
    predicts, EOS included) and "weights" by name (axes: the model's `analysis_axes`)."""
    batch = ParallelData([source], [target]).collate([0]).to(loaded.device)
    weights = loaded.model.analyse(batch.src, batch.tgt_in)
    return {
        "source": loaded.source.pieces(batch.src[0].tolist()),
        "target": loaded.target.pieces(batch.tgt_out[0].tolist()),
        "weights": {name: rounded(w[0]) for name, w in weights.items()},
    }
