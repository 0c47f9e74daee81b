"""How much a model reads its source: validation loss with the true source against a
shuffled one (every target paired with another sentence's source), by target position.
A model whose difference falls to zero after a few tokens has forgotten the sentence."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from mixnmt import checkpoint
from mixnmt.batching import ParallelData
from mixnmt.files import write_table
from mixnmt.models import Seq2Seq
from mixnmt.provenance import stamped
from mixnmt.tokenize import PAD

log = logging.getLogger(__name__)


def shuffled(data: ParallelData, seed: int = 0) -> ParallelData:
    """`data` with every target paired with another sentence's source: a fixed random
    cycle through the corpus, so no sentence keeps its own."""
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed)).tolist()
    src = list(data.src)
    for here, there in zip(order, order[1:] + order[:1]):
        src[here] = data.src[there]
    return ParallelData(src, data.tgt, name=f"{data.name} (shuffled sources)")


@torch.no_grad()
def loss_by_position(
    model: Seq2Seq, data: ParallelData, max_tokens: int, device: torch.device
) -> pd.DataFrame:
    """Summed negative log-likelihood (nats) and token count at each target position."""
    model.eval()
    sums, counts = [], []  # per batch: summed nll and real tokens at each position
    for indices in data.batches(max_tokens):
        batch = data.collate(indices).to(device)
        logits = model(batch.src, batch.tgt_in).float()  # (B, T, V)
        nll = F.cross_entropy(logits.transpose(1, 2), batch.tgt_out, ignore_index=PAD, reduction="none")
        sums.append(nll.sum(0).double().cpu())  # (T,)
        counts.append((batch.tgt_out != PAD).sum(0).cpu())  # (T,)
    total, count = (pad_sequence(x, batch_first=True).sum(0) for x in (sums, counts))
    used = count > 0
    return pd.DataFrame(
        {
            "position": (torch.arange(len(count)) + 1)[used].tolist(),
            "tokens": count[used].tolist(),
            "nll": total[used].tolist(),
        }
    )


def source_reliance(
    name: str,
    entry: dict | None,
    checkpoint_path: Path,
    spm_files: tuple[Path, Path],
    valid: tuple[Path, Path],
    seed: int,
    max_tokens: int,
    output: Path,
) -> pd.DataFrame:
    """Per target position of the validation set: mean loss with the true and with a
    shuffled source, and their difference (nats/token); position 0 is all tokens."""
    loaded = checkpoint.load_for_inference(checkpoint_path, spm_files, name, entry)
    data = ParallelData.load(*valid, (len(loaded.source), len(loaded.target)))
    true = loss_by_position(loaded.model, data, max_tokens, loaded.device)
    other = loss_by_position(loaded.model, shuffled(data), max_tokens, loaded.device)
    table = true.merge(other, on=["position", "tokens"], suffixes=("_true", "_shuffled"))
    overall = table[["tokens", "nll_true", "nll_shuffled"]].sum().to_frame().T.assign(position=0)
    table = pd.concat([overall, table], ignore_index=True)
    result = pd.DataFrame(
        {
            "model": name,
            "seed": seed,
            "position": table.position.astype(int),
            "tokens": table.tokens.astype(int),
            "loss_true": (table.nll_true / table.tokens).round(4),
            "loss_shuffled": (table.nll_shuffled / table.tokens).round(4),
        }
    )
    result["difference"] = (result.loss_shuffled - result.loss_true).round(4)
    write_table(output, stamped(result))
    log.info("%s seed %d: source reliance %.3f nats/token", name, seed, result.difference.iloc[0])
    return result
