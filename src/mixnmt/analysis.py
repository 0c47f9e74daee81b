"""What the models mix: alignments and responsibilities on fixed sentences, and how the
mixture components are used over a whole test set, read while each model reads its own
translation (teacher forcing on its output), i.e. as it decoded it (`analyse`, the first
seed's run); and, while each run reads the references, its word alignments and how much
each target word moves a prior over source positions (the posterior's entropy and
divergence from the prior; `align`, every run)."""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from mixnmt import MixnmtError, checkpoint
from mixnmt.alignment import pharaoh, word_links, words
from mixnmt.batching import ParallelData, read_ids
from mixnmt.files import read_lines, sha256sum, write_json
from mixnmt.models.base import Seq2Seq, Weights
from mixnmt.usage import component_usage, entropy, rounded
from mixnmt.weights import sentence_weights

log = logging.getLogger(__name__)


def source_weights(model: Seq2Seq, weights: Weights) -> dict[str, Tensor]:
    """Each of the model's weights over source positions as (B, T, S): its target x
    source weights, and of layer x head ones every head and their mean."""
    found = {}
    for name, axes in model.analysis_axes.items():
        if axes == ("target", "source"):
            found[name] = weights[name]
        elif axes == ("layer", "head", "target", "source"):
            w = weights[name]  # (B, L, H, T, S)
            found[f"{name} mean"] = w.mean((1, 2))
            for layer, head in np.ndindex(*w.shape[1:3]):
                found[f"{name} layer {layer + 1} head {head + 1}"] = w[:, layer, head]
    return found


def divergence(q: Tensor, p: Tensor) -> Tensor:
    """KL(q || p) (nats) over the last axis."""
    return (q * (q.clamp_min(1e-30).log() - p.clamp_min(1e-30).log())).sum(-1)


@torch.no_grad()
def reference_alignments(
    loaded: checkpoint.Inference, sources: list[list[int]], references: list[str]
) -> dict[str, Any]:
    """While the model reads the references: each sentence's word counts (source,
    target), its word alignments per source weight (Pharaoh, `mixnmt.alignment`), and
    for a model with a prior and a posterior over source positions, per target token
    (EOS included) the entropy of each and KL(posterior || prior), in nats."""
    model, src_tok, tgt_tok = loaded.model, loaded.source, loaded.target
    if len(references) != len(sources):
        raise MixnmtError(f"{len(references)} references for {len(sources)} sources")
    kept = [i for i, s in enumerate(sources) if s]  # empty lines were never translated
    targets = tgt_tok.encode(references)
    data = ParallelData([sources[i] for i in kept], [targets[i] for i in kept])
    counts, links = [[0, 0] for _ in sources], defaultdict(lambda: [""] * len(sources))
    tokens = defaultdict(list)
    for indices in data.batches(max_tokens=8192):
        batch = data.collate(indices).to(loaded.device)
        weights = model.analyse(batch.src, batch.tgt_in)
        named = {name: w.float().cpu().numpy() for name, w in source_weights(model, weights).items()}
        for row, k in enumerate(indices):
            s, t = len(data.src[k]) + 1, len(data.tgt[k]) + 1
            source = words(src_tok.pieces(batch.src[row, :s].tolist()))
            target = words(tgt_tok.pieces(batch.tgt_out[row, :t].tolist()))
            counts[kept[k]] = [len(set(source) - {None}), len(set(target) - {None})]
            for name, w in named.items():
                links[name][kept[k]] = pharaoh(word_links(w[row, :t, :s], source, target))
            if {"prior", "posterior"} <= weights.keys():
                # over every candidate: padding holds no weight in either
                prior, posterior = weights["prior"][row, :t].float(), weights["posterior"][row, :t].float()
                tokens["prior_entropy"] += rounded(entropy(prior))
                tokens["posterior_entropy"] += rounded(entropy(posterior))
                tokens["kl"] += rounded(divergence(posterior, prior))
    return {"words": counts, "links": dict(links), **({"tokens": dict(tokens)} if tokens else {})}


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
    mixtures component usage over the whole test set, as JSON, naming the run and the
    translation's sha256."""
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
        "run": loaded.run,
        "translation": {"sha256": sha256sum(translation)},
        "axes": {name: list(axes) for name, axes in model.analysis_axes.items()},
        "sentences": shown,
        "components": component_usage(model, test, {"source": src_tok, "target": tgt_tok}, device),
    }
    write_json(output, result, indent=None)
    log.info("%s: weights on %d sentences -> %s", name, len(shown), output)
    return result


def align(loaded: checkpoint.Inference, source_ids: Path, references: Path, output: Path) -> dict[str, Any]:
    """The run's `reference_alignments` of a test set as JSON, naming the run."""
    sources, lines = read_ids(source_ids, len(loaded.source)), read_lines(references)
    if len(lines) != len(sources):
        raise MixnmtError(f"{references} has {len(lines)} lines but {source_ids} has {len(sources)}")
    result = {"model": loaded.name, "run": loaded.run, **reference_alignments(loaded, sources, lines)}
    write_json(output, result, indent=None)
    log.info("%s: word alignments of %d sentences -> %s", loaded.name, len(sources), output)
    return result
