"""Source reliance: log p(y | x) against the mean probability over N length-matched
sources, by target position, with intervals."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from conftest import FAST, VARIANTS, tiny_model
from mixnmt.batching import ParallelData
from mixnmt.reliance import by_position, estimates, others, token_nll, use_of_candidates
from mixnmt.symbols import EOS, PAD

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


def test_token_losses_leave_no_small_tensor_behind_each_batch():
    """They are views of one tensor: small tensors kept from each batch once fragmented
    the heap that `device.keep_freed_memory` keeps, to 4 GB on Multi30k's validation set."""
    model = tiny_model(FAST, VOCAB, dropout=0.0)[2]
    losses = token_nll(model, corpus(), max_tokens=40, device=torch.device("cpu"))
    assert len({loss.untyped_storage().data_ptr() for loss in losses}) == 1


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


def mixture_weights(model) -> list[str]:
    return [w for w, axes in model.analysis_axes.items() if axes[-1] == "component"]


@pytest.mark.parametrize("name", [n for n in VARIANTS if mixture_weights(tiny_model(n, VOCAB)[2])])
def test_knocking_out_a_group_without_mass_changes_nothing(name):
    """A group with no candidates (no learned components, no source states) holds no
    mass: knocking it out leaves every logit as it was. One with candidates does not."""
    _, hparams, model = tiny_model(name, VOCAB, dropout=0.0)
    data = corpus()
    batch = data.collate(range(6))
    with torch.no_grad():
        before, pis = model.teacher_forcing(batch.src, batch.tgt_in, keep_weights=True)
        for weights in mixture_weights(model):
            reads_source = pis[weights].size(-1) > 1 + hparams["components"]
            for group, empty in (("learned", hparams["components"] == 0), ("source", not reads_source)):
                with model.knocked_out(weights, group):
                    after = model(batch.src, batch.tgt_in)
                assert torch.equal(after, before) == empty, (weights, group)


def test_a_knocked_out_group_gets_no_responsibility_and_the_rest_renormalise():
    name = next(n for n in VARIANTS if "source=states" in n and "components=8" in n)
    model = tiny_model(name, VOCAB, dropout=0.0)[2]
    batch = corpus().collate(range(6))
    with torch.no_grad(), model.knocked_out("decoder_responsibilities", "source"):
        pi = model.analyse(batch.src, batch.tgt_in)["decoder_responsibilities"]  # (B, T, H, 1+K+S)
    real = batch.tgt_in != PAD
    assert pi[real][..., 1 + model.learned_components :].abs().max() == 0
    assert torch.allclose(pi[real].sum(-1), torch.ones(1))
    assert all(not m.knocked_out for m in model.mixes("decoder_responsibilities"))  # restored


def test_mass_against_use_has_a_row_per_mixture_and_group():
    name = next(n for n in VARIANTS if "source=initial" in n and "components=0" in n)
    model = tiny_model(name, VOCAB, dropout=0.0)[2]
    tokenizers = {"source": Pieces(), "target": Pieces()}
    data, cpu = corpus(), torch.device("cpu")
    table = use_of_candidates(model, data, 40, cpu, tokenizers, token_nll(model, data, 40, cpu))
    assert list(table.weights.unique()) == mixture_weights(model)
    assert (table.groupby("weights").mass.sum() - 1).abs().max() < 1e-3
    nothing = table[table.group != "stay"]  # no components and no source: stay is all
    assert (nothing.mass == 0).all() and (nothing.change == 0).all()
    assert (table[table.group == "stay"].change != 0).all()  # without stay, the cell cannot move


class Pieces:
    def pieces(self, ids):
        return [str(i) for i in ids]
