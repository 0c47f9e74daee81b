import random

import torch

from mixnmt.batching import ParallelData, padding_fraction
from mixnmt.symbols import BOS, EOS, PAD


def corpus(n=500, seed=0):
    rng = random.Random(seed)
    src = [[rng.randint(4, 50) for _ in range(rng.randint(1, 30))] for _ in range(n)]
    tgt = [[rng.randint(4, 50) for _ in range(max(1, len(s) + rng.randint(-3, 3)))] for s in src]
    return ParallelData(src, tgt)


def test_batches_respect_token_budget_and_cover_every_sentence_once():
    data = corpus()
    batches = data.batches(max_tokens=200, generator=torch.Generator().manual_seed(1))
    assert sorted(i for b in batches for i in b) == list(range(len(data)))
    for b in batches:
        batch = data.collate(b)
        assert max(batch.src.numel(), batch.tgt_in.numel()) <= 200


def test_batches_are_length_sorted_with_little_padding():
    data = corpus(2000)
    batches = data.batches(max_tokens=400, generator=torch.Generator().manual_seed(1))
    assert padding_fraction(data, batches) < 0.15
    sizes = {len(b) for b in batches}
    assert len(sizes) > 3  # sentence counts vary with length: budgets are in tokens


def test_batch_order_is_reproducible_and_changes_between_epochs():
    data = corpus()
    g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    epoch1 = data.batches(300, g1)
    assert epoch1 == data.batches(300, g2)
    assert data.batches(300, g1) != epoch1
    assert data.batches(300) == data.batches(300)  # no generator: fixed order


def test_collate_shifts_target_and_pads():
    data = ParallelData([[5, 6, 7], [8]], [[9, 10], [11, 12, 13]])
    batch = data.collate([0, 1])
    assert batch.src.tolist() == [[5, 6, 7, EOS], [8, EOS, PAD, PAD]]
    assert batch.tgt_in.tolist() == [[BOS, 9, 10, PAD], [BOS, 11, 12, 13]]
    assert batch.tgt_out.tolist() == [[9, 10, EOS, PAD], [11, 12, 13, EOS]]
    assert batch.target_tokens == 7
