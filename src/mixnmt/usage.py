"""How mixtures use their candidates over a data set: mass, per-head entropy and mutual
information, which candidate leads, and on which tokens. Training logs it every epoch;
`mixnmt analyse` reports it for a test set."""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch import Tensor

from mixnmt.batching import ParallelData
from mixnmt.models import Seq2Seq
from mixnmt.symbols import PAD
from mixnmt.tokenize import Tokenizer

TOP_TOKENS = 8


def rounded(t: Tensor) -> list:
    """A tensor as (nested) lists, floats to 4 decimals."""
    return torch.round(t.double(), decimals=4).tolist() if t.is_floating_point() else t.tolist()


def entropy(p: Tensor) -> Tensor:
    """Entropy (nats) of the distributions along the last axis of p."""
    return -(p * p.clamp_min(1e-12).log()).sum(-1)


def mixtures(model: Seq2Seq) -> list[str]:
    """The model's responsibility tensors: analysis weights over mixture candidates."""
    return [name for name, axes in model.analysis_axes.items() if axes[-1] == "component"]


class ComponentUsage:
    """Running statistics of one responsibility tensor over a data set. Its candidates
    are "stay", the model's `learned` components and, if the mixture reads them, the
    source positions: counted as one candidate, "source", whose spread over the
    positions is measured on its own (`source_entropy`)."""

    def __init__(self, learned: int) -> None:
        self.learned = learned
        self.mass: Tensor | None = None  # (H, c): summed responsibility per head and candidate
        self.entropy: Tensor | None = None  # (H,): summed per-step entropy (nats) per head
        self.source_entropy: Tensor | None = None  # (H,): summed source-mass-weighted entropy over positions
        self.leads: Tensor | None = None  # (H, c): steps each candidate led, per head
        self.steps = 0
        self.tokens: dict[int, Counter] = {}  # candidate -> tokens read when it led (heads averaged)

    def add(self, pi: Tensor, read: Tensor) -> None:
        """pi (B, steps, H, n), zero at padding; read (B, steps): the token read at each step."""
        real = read != PAD
        p = pi[real].float()  # (N, H, n)
        source = p[..., 1 + self.learned :]  # (N, H, S), empty without source candidates
        if source.size(-1):  # fold the source positions into one candidate
            mass = source.sum(-1, keepdim=True)  # (N, H, 1)
            within = source / mass.clamp_min(1e-12)
            spread = (mass[..., 0] * entropy(within)).sum(0)  # (H,)
            p = torch.cat([p[..., : 1 + self.learned], mass], -1)
        else:
            spread = p.new_zeros(p.size(1))
        leads = torch.nn.functional.one_hot(p.argmax(-1), p.size(-1)).sum(0)  # (H, c)
        sums = (p.sum(0), entropy(p).sum(0), spread, leads)
        if self.mass is None:
            self.mass, self.entropy, self.source_entropy, self.leads = sums
        else:
            self.mass, self.entropy, self.source_entropy, self.leads = (
                a + b for a, b in zip((self.mass, self.entropy, self.source_entropy, self.leads), sums)
            )
        self.steps += p.size(0)
        leader = p.mean(1).argmax(-1)  # the candidate with most head-averaged mass, per step
        for candidate, token in zip(leader.tolist(), read[real].tolist()):
            self.tokens.setdefault(candidate, Counter())[token] += 1

    def usage(self) -> Tensor:
        """Mean responsibility of each candidate, over heads and steps."""
        return self.mass.mean(0) / self.steps

    def heads(self) -> dict[str, Tensor]:
        """Per head: the mean per-step entropy; the mutual information between the step
        and the chosen candidate (entropy of the mean usage minus the mean per-step
        entropy: 0 for a head that always mixes alike, up to log of the candidates for
        one that picks by input); how many candidates lead at least 1% of the steps; and
        the mean entropy over source positions (weighted by the source's mass)."""
        step_entropy = self.entropy / self.steps
        source = self.mass[:, 1 + self.learned :].sum(-1)
        return {
            "entropy": step_entropy,
            "mi": (entropy(self.mass / self.steps) - step_entropy).clamp_min(0),
            "leading": (self.leads >= 0.01 * self.steps).sum(-1),
            "source_entropy": self.source_entropy / source.clamp_min(1e-12),
        }

    def split(self) -> dict[str, float]:
        """Mean mass on stay, on the learned components and on the source, and the
        per-step entropy and mutual information, averaged over heads."""
        usage, heads = self.usage(), self.heads()
        return {
            "stay": float(usage[0]),
            "learned": float(usage[1 : 1 + self.learned].sum()),
            "source": float(usage[1 + self.learned :].sum()),
            "entropy": float(heads["entropy"].mean()),
            "mi": float(heads["mi"].mean()),
        }

    def summary(self, tokenizer: Tokenizer) -> dict[str, Any]:
        """Mean usage of "stay" (0), each component and the source (last, if read), the
        masses, entropy and mutual information of `split`, the per-head statistics of
        `heads`, how many steps each candidate led, and the tokens it led on most."""
        top = {}
        for candidate, counts in sorted(self.tokens.items()):
            tokens, n = zip(*counts.most_common(TOP_TOKENS))
            top[str(candidate)] = [list(pair) for pair in zip(tokenizer.pieces(tokens), n)]
        used = bool(self.steps)
        return {
            "usage": rounded(self.usage()) if used else [],
            "components": self.learned,
            **(self.split() if used else {}),
            "heads": {k: rounded(v) for k, v in self.heads().items()} if used else {},
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
    names = mixtures(model)
    usage = {name: ComponentUsage(model.learned_components) for name in names}
    for indices in data.batches(max_tokens=8192) if names else []:
        batch = data.collate(indices).to(device)
        weights = model.analyse(batch.src, batch.tgt_in)
        for name in names:
            read = batch.src if model.analysis_axes[name][0] == "source" else batch.tgt_in
            usage[name].add(weights[name], read)
    return {name: stats.summary(tokenizers[model.analysis_axes[name][0]]) for name, stats in usage.items()}
