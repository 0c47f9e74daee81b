"""What the models mix: alignments and responsibilities on fixed sentences, and how the
mixture components are used over a whole test set. Weights are read while each model
reads its own translation (teacher forcing on its output), i.e. as it decoded it."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from mixnmt import MixnmtError, checkpoint
from mixnmt.batching import ParallelData, read_ids
from mixnmt.files import read_lines, write_json
from mixnmt.models import Seq2Seq
from mixnmt.tokenize import PAD, Tokenizer

log = logging.getLogger(__name__)

TOP_TOKENS = 8


def rounded(t: Tensor) -> list:
    return torch.round(t.float(), decimals=4).tolist()


class ComponentUsage:
    """Running statistics of one responsibility tensor over a test set."""

    def __init__(self) -> None:
        self.mass: Tensor | None = None  # summed responsibility per component
        self.entropy = 0.0  # summed entropy (nats) of every head's distribution
        self.steps = 0
        self.heads = 1
        self.tokens: dict[int, Counter] = {}  # component -> tokens read when it led

    def add(self, pi: Tensor, read: Tensor) -> None:
        """pi (B, steps, H, K+1), zero at padding; read (B, steps): the token read at each step."""
        real = read != PAD
        p = pi[real]  # (N, H, K+1)
        self.heads = p.size(1)
        self.mass = p.sum((0, 1)) if self.mass is None else self.mass + p.sum((0, 1))
        self.entropy += float(-(p * p.clamp_min(1e-12).log()).sum())
        self.steps += p.size(0)
        leader = p.mean(1).argmax(-1)  # the component with most head-averaged mass, per step
        for component, token in zip(leader.tolist(), read[real].tolist()):
            self.tokens.setdefault(component, Counter())[token] += 1

    def summary(self, tokenizer: Tokenizer) -> dict[str, Any]:
        """Mean usage of "stay" (0) and each component, mean entropy, how many steps each
        component led, and the tokens it led on most."""
        top = {}
        for component, counts in sorted(self.tokens.items()):
            tokens, n = zip(*counts.most_common(TOP_TOKENS))
            top[str(component)] = [list(pair) for pair in zip(tokenizer.pieces(tokens), n)]
        return {
            "usage": rounded(self.mass / (self.steps * self.heads)) if self.steps else [],
            "entropy": self.entropy / (self.steps * self.heads) if self.steps else None,
            "steps": self.steps,
            "led": {str(k): sum(counts.values()) for k, counts in sorted(self.tokens.items())},
            "top_tokens": top,
        }


@torch.no_grad()
def component_usage(
    model: Seq2Seq, data: ParallelData, tokenizers: dict[str, Tokenizer], device: torch.device
) -> dict[str, dict[str, Any]]:
    """Usage, entropy and favourite tokens of every responsibility tensor the model has;
    `tokenizers` maps "source" and "target" to the tokenizer of that side."""
    names = [k for k, axes in model.analysis_axes.items() if axes[-1] == "component"]
    usage = {name: ComponentUsage() for name in names}
    for indices in data.batches(max_tokens=8192) if names else []:
        batch = data.collate(indices).to(device)
        weights = model.analyse(batch.src, batch.tgt_in)
        for name in names:
            read = batch.src if model.analysis_axes[name][0] == "source" else batch.tgt_in
            usage[name].add(weights[name], read)
    return {name: stats.summary(tokenizers[model.analysis_axes[name][0]]) for name, stats in usage.items()}


@torch.no_grad()
def analyse(
    name: str,
    entry: dict | None,
    checkpoint_path: Path,
    spm_files: tuple[Path, Path],
    source_ids: Path,
    translation: Path,
    sentences: list[int],
    output: Path,
) -> dict[str, Any]:
    """Analysis weights of the model on `sentences` (indices into the test set) and, for
    mixtures, component usage over the whole test set, as JSON."""
    loaded = checkpoint.load_for_inference(checkpoint_path, spm_files, name, entry)
    model, src_tok, tgt_tok, device = loaded.model, loaded.source, loaded.target, loaded.device
    sources = read_ids(source_ids)
    targets = tgt_tok.encode(read_lines(translation))
    if len(sources) != len(targets):
        raise MixnmtError(f"{translation} has {len(targets)} lines but {source_ids} has {len(sources)}")
    for i in sentences:
        if not 0 <= i < len(sources) or not sources[i]:
            raise MixnmtError(f"analysis.sentences: {i} is not a non-empty sentence of {source_ids}")

    data = ParallelData(sources, targets, name=str(source_ids))
    shown = []
    for i in sentences:
        batch = data.collate([i]).to(device)
        weights = model.analyse(batch.src, batch.tgt_in)
        shown.append(
            {
                "index": i,
                "source": src_tok.pieces(batch.src[0].tolist()),
                "target": tgt_tok.pieces(batch.tgt_out[0].tolist()),  # what each step predicts
                "weights": {name: rounded(w[0]) for name, w in weights.items()},
            }
        )
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
