"""Source reliance: loss by target position, true against shuffled sources."""

import torch
import torch.nn.functional as F

from conftest import FAST, tiny_model
from mixnmt.batching import ParallelData
from mixnmt.reliance import loss_by_position, shuffled
from mixnmt.tokenize import PAD

VOCAB = 30


def corpus(n: int = 23) -> ParallelData:
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 9, (n, 2), generator=g).tolist()
    return ParallelData(
        [torch.randint(4, VOCAB, (s,), generator=g).tolist() for s, _ in lengths],
        [torch.randint(4, VOCAB, (t,), generator=g).tolist() for _, t in lengths],
        name="random",
    )


def test_loss_by_position_adds_up_to_each_sentences_own_loss():
    model = tiny_model(FAST, VOCAB, dropout=0.0)[2]
    data = corpus()
    table = loss_by_position(model, data, max_tokens=40, device=torch.device("cpu"))
    # every sentence alone: its loss at each of its positions (its EOS included)
    expected_nll, expected_tokens = {}, {}
    with torch.no_grad():
        for i in range(len(data)):
            batch = data.collate([i])
            nll = F.cross_entropy(model(batch.src, batch.tgt_in)[0], batch.tgt_out[0], reduction="none")
            for t, value in enumerate(nll.tolist(), start=1):
                if batch.tgt_out[0, t - 1] != PAD:
                    expected_nll[t] = expected_nll.get(t, 0.0) + value
                    expected_tokens[t] = expected_tokens.get(t, 0) + 1
    assert table.position.tolist() == sorted(expected_tokens)
    assert table.tokens.tolist() == [expected_tokens[t] for t in table.position]
    assert torch.allclose(
        torch.tensor(table.nll.tolist()), torch.tensor([expected_nll[t] for t in table.position]), atol=1e-3
    )


def test_shuffled_pairs_every_target_with_another_source():
    data = corpus()
    other = shuffled(data)
    assert other.tgt == data.tgt
    assert sorted(map(tuple, other.src)) == sorted(map(tuple, data.src))
    assert all(a is not b for a, b in zip(other.src, data.src))
