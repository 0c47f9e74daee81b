"""Why a mixture's decoder heads lock onto one candidate: numbers per head of a trained
checkpoint, on the validation set of its experiment.

    python benchmarks/lockin.py results/multi30k-cpu mixture-summary mixture-summary-qknorm

For each model (the study's first seed) and each head of each decoder mixture, over the
real target steps of the validation set, scoring stay and the learned components
(softmax units, after the head's scale):
- entropy, mi: the mean per-step entropy of the responsibilities and the mutual
  information between step and candidate (as the mixing table);
- lead: the share of steps that the head's most frequent leader leads;
- query: the share of the queries' energy that varies from step to step,
  mean ||q_t - mean q||^2 / mean ||q_t||^2 (0: the same query at every step);
- fixed, step: how far apart the candidates' scores are at a typical step because of
  the candidate alone (the standard deviation over candidates of their mean score) and
  because of the step (the standard deviation over steps of a candidate's score, mean
  over candidates). A head whose `fixed` dwarfs its `step` picks the same candidate
  whatever it reads: a constant bias, not a mixture;
- keys: the mean norm of the learned components' keys, and their spread (std / mean).
Numbers, not tests: the note of issue 20 reports them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import diagnosis
import torch
from torch import Tensor

from mixnmt import MixnmtError
from mixnmt.batching import ParallelData
from mixnmt.symbols import PAD
from mixnmt.usage import entropy


class Scores:
    """Collects, per head, the scores of stay and the learned components at every step
    a decoder Mix sees (B, H, 1+K), and its queries (B, H, dh)."""

    def __init__(self, mix: torch.nn.Module):
        self.mix, self.scores, self.queries = mix, [], []
        mix.register_forward_hook(self.record)

    def record(self, mix, args, output) -> None:
        q, memory = args
        query, k_self, _ = mix.project(q)
        stay, learned = mix.scores(query, k_self, memory)[:2]
        self.scores.append(torch.cat([stay, learned], -1))
        self.queries.append(query)

    def table(self, real: Tensor) -> list[dict[str, float]]:
        """One row per head; `real` (steps,) marks the steps that read a real token."""
        s = torch.cat(self.scores)[real].double()  # (N, H, c)
        q = torch.cat(self.queries)[real].double()  # (N, H, dh)
        pi = s.softmax(-1)
        step_entropy = entropy(pi).mean(0)
        leads = torch.nn.functional.one_hot(pi.argmax(-1), pi.size(-1)).double().mean(0)  # (H, c)
        keys = self.mix.keys_values(self.mix.components)[0].detach().double().norm(dim=-1)  # (K, H)
        centred = s - s.mean(-1, keepdim=True)  # a step's scores up to their common shift
        rows = []
        for head in range(s.size(1)):
            qh = q[:, head]
            rows.append(
                {
                    "head": head,
                    "entropy": float(step_entropy[head]),
                    "mi": float((entropy(pi[:, head].mean(0)) - step_entropy[head]).clamp_min(0)),
                    "lead": float(leads[head].max()),
                    "query": float((qh - qh.mean(0)).square().sum(-1).mean() / qh.square().sum(-1).mean()),
                    "fixed": float(centred[:, head].mean(0).std()),
                    "step": float(centred[:, head].std(0).mean()),
                    "keys": float(keys[:, head].mean()),
                    "keys_spread": float(keys[:, head].std() / keys[:, head].mean()),
                }
            )
        return rows


@torch.no_grad()
def diagnose(
    root: Path, model_name: str, config: dict[str, Any], max_tokens: int = 4096
) -> list[dict[str, float]]:
    layout, seed, model, *spm = diagnosis.first_run(root, model_name, config)
    if not model.learned_components:
        raise MixnmtError(
            f"{layout.checkpoint(model_name, seed)}: {model_name} has no learned components to lock onto"
        )
    sizes = (len(spm[0]), len(spm[1]))
    data = ParallelData.load(layout.ids("valid", config["src"]), layout.ids("valid", config["tgt"]), sizes)
    mixes = {name: Scores(mix) for name in model.decoder.mixtures for mix in model.mixes(f"decoder_{name}")}
    real = []
    for indices in data.batches(max_tokens):
        batch = data.collate(indices)
        model(batch.src, batch.tgt_in)
        real.append((batch.tgt_in != PAD).t().flatten())  # steps in the order the hooks saw them
    real = torch.cat(real)
    return [
        {"model": model_name, "weights": name, **row} for name, s in mixes.items() for row in s.table(real)
    ]


def main(argv: list[str] | None = None) -> None:
    diagnosis.main(__doc__, diagnose, "checkpoints, spm and ids", argv)


if __name__ == "__main__":
    sys.exit(main())
