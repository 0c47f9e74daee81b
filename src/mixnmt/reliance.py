"""How much a model reads its source, as an estimate with an interval.

For each target token, its log-probability with the true source against the log of its
mean probability over N sources: the true one and N - 1 others of about the same length
(neighbours in a length-sorted order, drawn anew in each of several rounds):

    r_t = log p(y_t | y_<t, x) - log (1/N) sum_n p(y_t | y_<t, x_n),    x_1 = x

r is about 0 for a model that ignores its source and at most log N (the true source is
one of the N: a contrastive bound on how much the source tells about the token), so
neither over-confidence nor the other sources' lengths inflate it. By target position
and overall, with 95% intervals over sentences. A model whose estimate falls to zero
after a few tokens has forgotten the sentence.

Beside it, for the mixture models, mass against use: the validation loss with each
group of a mixture's candidates (stay, learned components, source positions) knocked
out, against the mass the group holds.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F
from torch import Tensor

from mixnmt import MixnmtError, checkpoint
from mixnmt.batching import ParallelData
from mixnmt.files import write_table
from mixnmt.models import Seq2Seq
from mixnmt.models.mixture import GROUPS
from mixnmt.provenance import stamped
from mixnmt.symbols import PAD
from mixnmt.usage import component_usage

log = logging.getLogger(__name__)

SOURCES = 8  # N: the true source and 7 others
ROUNDS = 2  # draws of the others, averaged
RESAMPLES = 1000  # bootstrap over sentences for the overall interval


def others(data: ParallelData, n: int, seed: int) -> list[list[int]]:
    """For each sentence, `n` other sentences of about its source length: its neighbours
    in an order sorted by source length, ties in a random order drawn from `seed`."""
    tie = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed)).tolist()
    order = sorted(range(len(data)), key=lambda i: (len(data.src[i]), tie[i]))
    n = min(n, len(data) - 1)
    chosen = [[] for _ in order]
    for k, i in enumerate(order):
        start = min(max(k - n // 2, 0), len(order) - n - 1)
        chosen[i] = [j for j in order[start : start + n + 1] if j != i][:n]
    return chosen


@torch.no_grad()
def token_nll(model: Seq2Seq, data: ParallelData, max_tokens: int, device: torch.device) -> list[Tensor]:
    """Each sentence's negative log-likelihood (nats) per target token, EOS included:
    views of one tensor, filled in place, so that no small tensor outlives a batch's large
    ones (with freed memory kept, `device.keep_freed_memory`, such leftovers scattered
    over the freed logits once grew this job's heap to 4 GB)."""
    model.eval()
    lengths = [len(t) + 1 for t in data.tgt]
    out = list(torch.empty(sum(lengths), dtype=torch.float64).split(lengths))
    for indices in data.batches(max_tokens):
        batch = data.collate(indices).to(device)
        logits = model(batch.src, batch.tgt_in).float()  # (B, T, V)
        nll = F.cross_entropy(logits.transpose(1, 2), batch.tgt_out, ignore_index=PAD, reduction="none").cpu()
        for row, i in enumerate(indices):
            out[i].copy_(nll[row, : lengths[i]])
    return out


def estimates(
    model: Seq2Seq, data: ParallelData, max_tokens: int, device: torch.device, sources: int, rounds: int
) -> tuple[list[Tensor], list[Tensor]]:
    """Per sentence and target token: the loss with the true source, and r_t."""
    true = token_nll(model, data, max_tokens, device)
    r = [torch.zeros_like(t) for t in true]
    for seed in range(rounds):
        partners = others(data, sources - 1, seed)
        losses = [true]
        for j in range(sources - 1):
            swapped = ParallelData([data.src[p[j]] for p in partners], data.tgt, name=data.name)
            losses.append(token_nll(model, swapped, max_tokens, device))
        for s in range(len(data)):
            logp = -torch.stack([loss[s] for loss in losses])  # (N, T_s)
            r[s] += (logp[0] - (logp.logsumexp(0) - math.log(len(losses)))) / rounds
    return true, r


def interval(values: Tensor) -> tuple[float, float]:
    """A normal 95% interval of the mean of `values`."""
    half = 1.96 * float(values.std()) / math.sqrt(len(values)) if len(values) > 1 else math.nan
    mean = float(values.mean())
    return mean - half, mean + half


def by_position(true: list[Tensor], r: list[Tensor], seed: int = 0) -> pd.DataFrame:
    """Per target position (0: all tokens): tokens, mean loss with the true source, the
    mean estimate and its 95% interval over sentences (by bootstrap for all tokens)."""
    rows = []
    sums = torch.stack([x.sum() for x in r])
    counts = torch.tensor([len(x) for x in r], dtype=torch.float64)
    g = torch.Generator().manual_seed(seed)
    draws = torch.randint(len(r), (RESAMPLES, len(r)), generator=g)
    boot = sums[draws].sum(1) / counts[draws].sum(1)
    rows.append(
        {
            "position": 0,
            "tokens": int(counts.sum()),
            "loss_true": mean_loss(true),
            "difference": float(sums.sum() / counts.sum()),
            "low": float(boot.quantile(0.025)),
            "high": float(boot.quantile(0.975)),
        }
    )
    for t in range(max(map(len, r))):
        reached = [s for s in range(len(r)) if len(r[s]) > t]
        values = torch.stack([r[s][t] for s in reached])
        low, high = interval(values)
        rows.append(
            {
                "position": t + 1,
                "tokens": len(reached),
                "loss_true": float(torch.stack([true[s][t] for s in reached]).mean()),
                "difference": float(values.mean()),
                "low": low,
                "high": high,
            }
        )
    return pd.DataFrame(rows)


def mean_loss(losses: list[Tensor]) -> float:
    """Mean negative log-likelihood per target token (nats) of `token_nll`'s losses."""
    return float(sum(x.sum() for x in losses) / sum(len(x) for x in losses))


def use_of_candidates(
    model: Seq2Seq,
    data: ParallelData,
    max_tokens: int,
    device: torch.device,
    tokenizers: dict,
    true: list[Tensor],
) -> pd.DataFrame:
    """Mass against use: per mixture and candidate group (stay, learned components, source
    positions), its mean responsibility and how much the loss rises when the group is
    knocked out (masked, the other candidates renormalised). Mass is not use: a group
    can hold mass the model does not need, and a small one can matter. `true`: the
    model's own losses on `data` (`token_nll`), the baseline."""
    usage = component_usage(model, data, tokenizers, device)
    base = mean_loss(true)
    rows = []
    for weights, stats in usage.items():
        for group in GROUPS:
            with model.knocked_out(weights, group):
                loss = mean_loss(token_nll(model, data, max_tokens, device))
            rows.append(
                {
                    "weights": weights,
                    "group": group,
                    "mass": stats[group],
                    "loss": loss,
                    "change": loss - base,
                }
            )
    return pd.DataFrame(rows, columns=["weights", "group", "mass", "loss", "change"])


def source_reliance(
    loaded: checkpoint.Inference,
    valid: tuple[Path, Path],
    seed: int,
    max_tokens: int,
    output: Path,
    use: Path | None = None,
    sources: int = SOURCES,
    rounds: int = ROUNDS,
) -> pd.DataFrame:
    """Per target position of the validation set (0: all tokens): the mean loss with the
    true source and the reliance estimate r (nats/token) with its 95% interval; and if
    `use` is given, there the mass against use of a mixture's candidate groups. Both
    tables name the run (`model`, `seed`, `fingerprint`) and the checkpoint's sha256."""
    name, made = loaded.name, loaded.run
    if made["seed"] is not None and made["seed"] != seed:
        raise MixnmtError(f"{loaded.files[0]}: a run of seed {made['seed']}, not {seed}")
    data = ParallelData.load(*valid, (len(loaded.source), len(loaded.target)))
    true, r = estimates(loaded.model, data, max_tokens, loaded.device, sources, rounds)
    table = by_position(true, r).round(4)
    result = pd.concat([pd.DataFrame({"model": [name] * len(table), "seed": seed}), table], axis=1)
    checked = {"fingerprint": made["fingerprint"], "checkpoint": made["checkpoint"]}  # last columns
    if use is not None:
        tokenizers = {"source": loaded.source, "target": loaded.target}
        groups = use_of_candidates(loaded.model, data, max_tokens, loaded.device, tokenizers, true).round(4)
        groups = groups.assign(model=name, seed=seed)[["model", "seed", *groups.columns]]
        write_table(use, stamped(groups.assign(**checked)))
    write_table(output, stamped(result.assign(**checked)))
    log.info(
        "%s seed %d: source reliance %.3f nats/token (%.3f to %.3f; at most log %d = %.3f)",
        name,
        seed,
        *result[["difference", "low", "high"]].iloc[0],
        sources,
        math.log(sources),
    )
    return result
