"""Batched greedy and beam search over any model's encode/step interface."""

from __future__ import annotations

import logging
import math
from typing import NamedTuple

import torch
from torch import Tensor

from mixnmt.batching import pad
from mixnmt.config import DecodeConfig
from mixnmt.models import Seq2Seq, reorder
from mixnmt.symbols import BOS, EOS, PAD

log = logging.getLogger(__name__)


class Hypothesis(NamedTuple):
    """A translation in target ids (EOS stripped) and its score: the log-probability of
    the ids and EOS divided by their number ** length_penalty, which beam search ranks by."""

    tokens: list[int]
    score: float


def max_lengths(src: Tensor, config: DecodeConfig) -> Tensor:
    """Per-sentence output limit in tokens, EOS included: a * source length + b."""
    lengths = (src != PAD).sum(1)
    return (config.max_len_a * lengths.float()).long() + config.max_len_b


def next_logprobs(logits: Tensor, at_limit: Tensor) -> Tensor:
    """Log-probabilities (N, V) of the next token; PAD and BOS are never produced, and
    rows that reached their length limit may only produce EOS."""
    logp = logits.log_softmax(-1, dtype=torch.float32)  # as .float().log_softmax(-1), in less time
    logp[:, [PAD, BOS]] = -math.inf
    rows = at_limit.nonzero().flatten()  # in place, only these rows: no other pass over (N, V)
    logp.index_fill_(0, rows, -math.inf)[rows, EOS] = 0.0
    return logp


def order_keys(x: Tensor, columns: Tensor) -> Tensor:
    """Distinct int64 keys of the entries x (fp32) at `columns` that order them as a
    stable descending sort of their row does: by value, of equal values the leftmost
    first (-0.0 below 0.0, no NaN), so that any top-k of them finds the same ones."""
    bits = x.view(torch.int32)
    ordered = bits ^ ((bits >> 31) & 0x7FFFFFFF)  # int32s in the order of the floats
    return (ordered.long() << 32) | (0xFFFFFFFF - columns)


def largest(x: Tensor, n: int, chunk: int = 64) -> tuple[Tensor, Tensor]:
    """The n largest entries of each row of x (B, N), fp32, and their columns, as the
    first n of a stable descending sort of the row: of equal values the leftmost first.
    Only the n chunks of `chunk` columns whose maxima come first in that order, which
    hold them all, and the columns after the last whole chunk are ranked: beam search's
    rows of K * V candidates cost one pass for the maxima, not a sort each."""
    b, m = x.shape
    whole = m // chunk
    columns = torch.arange(m, device=x.device).expand(b, -1)
    if whole > n:
        maxima = x[:, : whole * chunk].unflatten(1, (whole, chunk)).amax(-1)  # (B, C)
        best = order_keys(maxima, columns[:, :whole]).topk(n, dim=1).indices  # (B, n) chunks
        within = columns[0, :chunk]
        columns = torch.cat([(best[..., None] * chunk + within).flatten(1), columns[:, whole * chunk :]], 1)
    at = order_keys(x.gather(1, columns), columns).topk(n, dim=1).indices
    picked = columns.gather(1, at)
    return x.gather(1, picked), picked


@torch.no_grad()
def greedy(model: Seq2Seq, src: Tensor, config: DecodeConfig) -> list[list[Hypothesis]]:
    """Most probable next token at every step, for a batch of sources (B, S): one
    hypothesis per sentence."""
    b = src.size(0)
    limit = max_lengths(src, config)
    state = model.encode(src)
    y = torch.full((b,), BOS, dtype=torch.long, device=src.device)
    done = torch.zeros(b, dtype=torch.bool, device=src.device)
    logprob = torch.zeros(b, device=src.device)
    out = []
    for t in range(int(limit.max())):
        logits, state = model.step(state, y)
        logp = next_logprobs(logits, t + 1 >= limit)
        best, y = logp.max(-1)
        logprob += best.masked_fill(done, 0.0)
        y = y.masked_fill(done, PAD)
        out.append(y)
        done |= y == EOS
        if done.all():
            break
    tokens = [_strip(seq) for seq in torch.stack(out, 1).tolist()]
    return [
        [Hypothesis(seq, lp / (len(seq) + 1) ** config.length_penalty)]
        for seq, lp in zip(tokens, logprob.tolist())
    ]


@torch.no_grad()
def beam_search(model: Seq2Seq, src: Tensor, config: DecodeConfig, nbest: int = 1) -> list[list[Hypothesis]]:
    """Batched beam search with length normalisation score / length ** length_penalty:
    the `nbest` best finished hypotheses of each source (B, S), best first.

    Each step ranks 2K candidates per sentence (`largest`: of equal scores, the lower
    beam's, then the lower token's first); EOS candidates among the best K are
    finished hypotheses, the best K others continue. A sentence is done once K
    hypotheses have finished, and leaves the batch; at the length limit only EOS may follow.
    """
    b, k = src.size(0), config.beam
    device = src.device
    limit = max_lengths(src, config).repeat_interleave(k)  # (B*K,)
    state = reorder(model.encode(src), torch.arange(b, device=device).repeat_interleave(k))
    scores = torch.full((b, k), -math.inf, device=device)
    scores[:, 0] = 0.0  # all beams start identical: keep one
    y = torch.full((b * k,), BOS, dtype=torch.long, device=device)
    history = torch.empty(b, k, 0, dtype=torch.long, device=device)
    found: list[list[Hypothesis]] = [[] for _ in range(b)]  # finished, in the order found
    finished = torch.zeros(b, dtype=torch.long, device=device)
    offsets = torch.arange(b, device=device)[:, None] * k
    sentence = list(range(b))  # the input sentence of each row of the shrinking batch
    for t in range(int(limit.max())):
        logits, state = model.step(state, y)
        logp = next_logprobs(logits, t + 1 >= limit)  # (B*K, V)
        v = logp.size(-1)
        cand = logp.add_(scores.view(-1, 1)).view(b, k * v)
        top_scores, top = largest(cand, 2 * k)  # (B, 2K)
        origin, token = top // v, top % v
        is_eos = token == EOS
        # Finished hypotheses: EOS among the best K candidates of a sentence still searching.
        final = is_eos & (torch.arange(2 * k, device=device) < k) & (finished < k)[:, None]
        rows, cols = (final & (top_scores > -math.inf)).nonzero(as_tuple=True)
        if len(rows):
            normed = (top_scores[rows, cols] / (t + 1) ** config.length_penalty).tolist()
            tokens = history[rows, origin[rows, cols]].tolist()
            for i, seq, score in zip(rows.tolist(), tokens, normed):
                found[sentence[i]].append(Hypothesis(seq, score))
        finished += final.sum(1)
        # The K best non-EOS candidates continue.
        scores, keep = largest(top_scores.masked_fill(is_eos, -math.inf), k)  # (B, K)
        origin = origin.gather(1, keep)
        y = token.gather(1, keep).flatten()
        history = torch.cat([history.gather(1, origin[..., None].expand(-1, -1, t)), y.view(b, k, 1)], 2)
        state = reorder(state, (offsets + origin).flatten(), keep=model.static_state)  # within sentences
        searching = finished < k
        if not bool(searching.any()):
            break
        if not bool(searching.all()):  # the sentences that are done leave the batch
            live = searching.nonzero().flatten()
            rows = (offsets[live] + torch.arange(k, device=device)).flatten()
            state, y, limit = reorder(state, rows), y[rows], limit[rows]
            scores, history, finished = scores[live], history[live], finished[live]
            sentence = [sentence[i] for i in live.tolist()]
            b = len(sentence)
            offsets = torch.arange(b, device=device)[:, None] * k
    # sorted() is stable: of equal scores, the first found wins
    return [sorted(hyps, key=lambda h: -h.score)[:nbest] or [Hypothesis([], -math.inf)] for hyps in found]


def _strip(seq: list[int]) -> list[int]:
    """Tokens before the first EOS (or padding)."""
    for i, tok in enumerate(seq):
        if tok in (EOS, PAD):
            return seq[:i]
    return seq


def search(
    model: Seq2Seq,
    sources: list[list[int]],
    config: DecodeConfig,
    device: torch.device,
    nbest: int = 1,
    dtype: torch.dtype | None = None,
) -> list[list[Hypothesis]]:
    """The `nbest` best hypotheses of every source sentence (ids), best first, in input
    order (greedy search, beam 1, finds one), under autocast to `dtype` if given (the
    model's training precision); an empty source gives one empty hypothesis, never
    decoded, so without a score (nan)."""
    out = [[Hypothesis([], math.nan)] for _ in sources]
    order = sorted((i for i, s in enumerate(sources) if s), key=lambda i: len(sources[i]))
    for start in range(0, len(order), config.batch_size):
        chunk = order[start : start + config.batch_size]
        src = pad([sources[i] + [EOS] for i in chunk]).to(device)
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            found = greedy(model, src, config) if config.beam == 1 else beam_search(model, src, config, nbest)
        for i, hyps in zip(chunk, found):
            out[i] = hyps
    return out


def translate_ids(
    model: Seq2Seq,
    sources: list[list[int]],
    config: DecodeConfig,
    device: torch.device,
    dtype: torch.dtype | None = None,
) -> list[list[int]]:
    """Target ids of the best hypothesis for every source sentence, in input order (under
    autocast to `dtype`, if given); an empty source gives []."""
    return [hyps[0].tokens for hyps in search(model, sources, config, device, dtype=dtype)]
