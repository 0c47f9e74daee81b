"""Source reliance: log p(y | x) against the mean probability over N length-matched
sources, by target position, with intervals."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from conftest import FAST, tiny_model
from mixnmt.batching import ParallelData
from mixnmt.reliance import by_position, estimates, others, token_nll
from mixnmt.tokenize import EOS

VOCAB = 30


def corpus(n: int = 23) -> ParallelData:
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 9, (n, 2), generator=g).tolist()
    return ParallelData(
        [torch.randint(4, VOCAB, (s,), generator=g).tolist() for s, _ in lengths],
        [torch.randint(4, VOCAB, (t,), generator=g).tolist() for _, t in lengths],
        name="random",
    )


class Blind(nn.Module):
    """A model that cannot see its source: every sentence reads as the same one."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, src, tgt):
        return self.model(torch.full_like(src[:, :1], EOS), tgt)


def test_token_losses_are_each_sentences_own():
    model = tiny_model(FAST, VOCAB, dropout=0.0)[2]
    data = corpus()
    losses = token_nll(model, data, max_tokens=40, device=torch.device("cpu"))
    with torch.no_grad():
        for i in range(len(data)):
            batch = data.collate([i])
            alone = F.cross_entropy(model(batch.src, batch.tgt_in)[0], batch.tgt_out[0], reduction="none")
            assert len(losses[i]) == len(data.tgt[i]) + 1  # EOS included
            assert torch.allclose(losses[i].float(), alone, atol=1e-4)


def test_the_others_are_other_sentences_of_about_the_same_length():
    data = corpus(40)
    for seed in (0, 1):
        chosen = others(data, 7, seed)
        assert all(len(c) == 7 and i not in c and len(set(c)) == 7 for i, c in enumerate(chosen))
        lengths = sorted(len(s) for s in data.src)
        for i, c in enumerate(chosen):  # within 7 places of it in length order
            first, last = (
                lengths.index(len(data.src[i])),
                len(lengths) - lengths[::-1].index(len(data.src[i])),
            )
            lo, hi = lengths[max(first - 7, 0)], lengths[min(last - 1 + 7, len(lengths) - 1)]
            assert all(lo <= len(data.src[j]) <= hi for j in c)
    assert others(data, 7, 0) != others(data, 7, 1)  # each round draws anew among equal lengths


def test_a_model_that_cannot_see_its_source_relies_on_it_not_at_all():
    blind = Blind(tiny_model(FAST, VOCAB, dropout=0.0)[2])
    true, r = estimates(blind, corpus(), 40, torch.device("cpu"), sources=8, rounds=2)
    assert all(torch.allclose(x, torch.zeros_like(x), atol=1e-6) for x in r)
    table = by_position(true, r)
    assert table.difference.abs().max() < 1e-6


def test_the_estimate_is_at_most_log_n_and_has_an_interval_per_position():
    model = tiny_model(FAST, VOCAB, dropout=0.0)[2]
    data = corpus()
    true, r = estimates(model, data, 40, torch.device("cpu"), sources=4, rounds=2)
    assert max(float(x.max()) for x in r) <= math.log(4) + 1e-9
    table = by_position(true, r)
    assert table.position.tolist() == list(range(max(len(t) for t in data.tgt) + 2))
    assert table.tokens.iloc[0] == sum(len(t) + 1 for t in data.tgt) == table.tokens.iloc[1:].sum()
    overall = sum(float(x.sum()) for x in r) / table.tokens.iloc[0]
    assert table.difference.iloc[0] == pytest.approx(overall)
    reached = table[table.tokens > 1]
    assert (reached.low <= reached.difference).all() and (reached.difference <= reached.high).all()
