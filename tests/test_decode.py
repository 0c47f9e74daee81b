import itertools
import math

import pytest
import torch

from conftest import FAST, VARIANTS, decode_config, sequence_logprob, tiny_model
from mixnmt import decode
from mixnmt.batching import pad
from mixnmt.decode import beam_search, greedy, largest, search, translate_ids
from mixnmt.symbols import BOS, EOS, UNK


def model_for(name, vocab, seed=0):
    return tiny_model(name, vocab, seed, dropout=0.0)[2]


def sources(vocab, n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randint(4, vocab, (int(torch.randint(1, 10, (1,), generator=g)),), generator=g).tolist()
        for _ in range(n)
    ]


@pytest.mark.parametrize("name", VARIANTS)
def test_beam_of_one_is_greedy(name):
    model = model_for(name, 30)
    src = pad([s + [EOS] for s in sources(30)])
    config = decode_config(beam=1)
    beam, best = beam_search(model, src, config), greedy(model, src, config)
    assert [[h.tokens for h in hyps] for hyps in beam] == [[h.tokens for h in hyps] for hyps in best]
    assert [hyps[0].score for hyps in beam] == pytest.approx([hyps[0].score for hyps in best], rel=1e-5)


@pytest.mark.parametrize("name", VARIANTS)
def test_static_state_passes_through_steps_and_beams_need_not_reorder_it(name, monkeypatch):
    model = model_for(name, 30)
    if not model.static_state:
        pytest.skip(f"{name} declares no static decoder state")
    src = pad([s + [EOS] for s in sources(30)])
    state = model.encode(src)
    _, new = model.step(state, torch.full((src.size(0),), BOS))
    assert all(new[key] is state[key] for key in model.static_state)
    config = decode_config(beam=4)
    fast = beam_search(model, src, config)
    # reorder every entry, as a model without the declaration
    monkeypatch.setattr(type(model), "static_state", property(lambda self: frozenset()))
    assert beam_search(model, src, config) == fast


@pytest.mark.parametrize("columns", [12, 64, 640, 700, 4003])
def test_largest_ranks_as_a_stable_sort_leftmost_first_of_equal_values(columns):
    g = torch.Generator().manual_seed(columns)
    x = torch.randn(7, columns, generator=g)
    x[1] = -math.inf  # a row with nothing left
    x[2, : columns // 2] = -math.inf  # and one with half
    x[3] = x[3].round()  # ties
    x[4] = 1.0  # all equal
    x[5, -3:] = 9.0  # the best after the last whole chunk
    values, at = largest(x, 8)
    expected = x.sort(dim=1, descending=True, stable=True)
    assert torch.equal(values, expected.values[:, :8])
    assert torch.equal(at, expected.indices[:, :8])


def test_beam_search_ranks_a_large_vocabulary_as_a_full_sort_would(monkeypatch):
    """At a vocabulary of thousands, `largest` ranks only a few chunks of each sentence's
    K * V candidates: the hypotheses are those of a stable sort of all of them."""
    model = model_for(FAST, 3000)
    src = pad([s + [EOS] for s in sources(3000, n=5)])
    config = decode_config(beam=4, max_len_b=6)
    chunked = beam_search(model, src, config, nbest=4)
    monkeypatch.setattr(
        decode,
        "largest",
        lambda x, n: [t[:, :n].contiguous() for t in x.sort(dim=1, descending=True, stable=True)],
    )
    assert beam_search(model, src, config, nbest=4) == chunked


@pytest.mark.parametrize("length_penalty", [0.0, 1.0])
def test_wide_beam_finds_the_exact_n_best_hypotheses(length_penalty):
    """With a beam as wide as the hypothesis space, search is exhaustive: its n best are
    the n best of all outputs, with their exact scores."""
    vocab, limit = 6, 4  # outputs: UNK, 4, 5 then EOS; at most 3 tokens before EOS
    model = model_for(FAST, vocab, seed=3)
    src = torch.tensor([[4, 5, 4, EOS]])
    config = decode_config(beam=40, length_penalty=length_penalty, max_len_a=0.0, max_len_b=limit)
    candidates = [list(c) for n in range(limit) for c in itertools.product([UNK, 4, 5], repeat=n)]
    with torch.no_grad():
        scored = {
            tuple(c): sequence_logprob(model, src, c, limit) / (len(c) + 1) ** length_penalty
            for c in candidates
        }
    ranked = sorted(scored, key=scored.get, reverse=True)[:5]
    (found,) = beam_search(model, src, config, nbest=5)
    assert [tuple(h.tokens) for h in found] == ranked
    assert [h.score for h in found] == pytest.approx([scored[c] for c in ranked], abs=1e-5)
    assert beam_search(model, src, config)[0] == found[:1]


@pytest.mark.parametrize("length_penalty", [0.0, 0.6, 1.0])
def test_greedy_scores_its_hypothesis_as_the_beam_ranks(length_penalty):
    model = model_for(FAST, 30)
    config = decode_config(beam=1, length_penalty=length_penalty, max_len_b=5)
    srcs = sources(30)
    for src, hyps in zip(srcs, search(model, srcs, config, torch.device("cpu"), nbest=3)):
        (best,) = hyps  # greedy search finds one, whatever the n asked for
        limit = int(config.max_len_a * (len(src) + 1)) + config.max_len_b
        with torch.no_grad():
            logprob = sequence_logprob(model, torch.tensor([src + [EOS]]), best.tokens, limit)
        assert best.score == pytest.approx(logprob / (len(best.tokens) + 1) ** length_penalty, abs=1e-5)


@pytest.mark.parametrize("beam", [1, 4])
def test_translate_ids_keeps_order_empty_lines_and_batch_independence(beam):
    model = model_for(FAST, 30)
    srcs = sources(30, n=9)
    srcs[3] = []
    config = decode_config(beam=beam, batch_size=4, max_len_b=5)
    batched = translate_ids(model, srcs, config, torch.device("cpu"))
    alone = [translate_ids(model, [s], config, torch.device("cpu"))[0] for s in srcs]
    assert batched == alone
    assert batched[3] == []
    ((tokens, score),) = search(model, srcs, config, torch.device("cpu"), nbest=2)[3]
    assert tokens == [] and math.isnan(score)  # never decoded: no score
    limits = [math.floor(config.max_len_a * (len(s) + 1)) + config.max_len_b for s in srcs]
    assert all(len(h) < lim for h, lim in zip(batched, limits))
