"""What the models mix: alignments and responsibilities on fixed sentences, and how the
mixture components are used over a whole test set. Weights are read while each model
reads its own translation (teacher forcing on its output), i.e. as it decoded it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from mixnmt import MixnmtError, checkpoint
from mixnmt.batching import ParallelData, read_ids
from mixnmt.files import read_lines, write_json
from mixnmt.usage import component_usage, rounded

log = logging.getLogger(__name__)


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


@torch.no_grad()
def analyse(
    loaded: checkpoint.Inference,
    source_ids: Path,
    translation: Path,
    references: Path,
    sentences: list[int],
    output: Path,
) -> dict[str, Any]:
    """Analysis weights of the model on `sentences` (indices into the test set), with
    their source, reference and translation text (the sample translations), and for
    mixtures component usage over the whole test set, as JSON."""
    name, model, src_tok, tgt_tok, device = (
        loaded.name,
        loaded.model,
        loaded.source,
        loaded.target,
        loaded.device,
    )
    sources = read_ids(source_ids, len(src_tok))
    translations, reference_lines = read_lines(translation), read_lines(references)
    targets = tgt_tok.encode(translations)
    if len(sources) != len(targets):
        raise MixnmtError(f"{translation} has {len(targets)} lines but {source_ids} has {len(sources)}")
    for i in sentences:
        if not 0 <= i < len(sources) or not sources[i]:
            raise MixnmtError(f"analysis.sentences: {i} is not a non-empty sentence of {source_ids}")

    shown = []
    for i in sentences:
        text = {
            "source": src_tok.decode([sources[i]])[0],
            "reference": reference_lines[i],
            "translation": translations[i],
        }
        shown.append({"index": i, "text": text, **sentence_weights(loaded, sources[i], targets[i])})
    decoded = [i for i, s in enumerate(sources) if s]  # empty lines were never translated
    test = ParallelData([sources[i] for i in decoded], [targets[i] for i in decoded])
    result = {
        "model": name,
        "axes": {name: list(axes) for name, axes in model.analysis_axes.items()},
        "sentences": shown,
        "components": component_usage(model, test, {"source": src_tok, "target": tgt_tok}, device),
    }
    write_json(output, result, indent=None)
    log.info("%s: weights on %d sentences -> %s", name, len(shown), output)
    return result
