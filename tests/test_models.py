"""Behaviour every registered model must show; a new model only needs an entry in SMALL."""

import pytest
import torch
import torch.nn.functional as F

from mixnmt import MixnmtError
from mixnmt.batching import ParallelData
from mixnmt.models import REGISTRY, build
from mixnmt.tokenize import BOS, PAD

VOCAB = 40
SMALL = {
    "transformer": {"d_model": 32, "heads": 4, "layers": 2, "ffn": 64, "dropout": 0.1},
}


def make(name, shared=True, seed=0):
    torch.manual_seed(seed)
    return build(name, SMALL[name], VOCAB, VOCAB, shared_vocab=shared)


def batch(seed=0):
    """Three sentences of different lengths, right-padded."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB, (3, 9), generator=g)
    src[1, 6:] = PAD
    src[2, 3:] = PAD
    tgt = torch.randint(4, VOCAB, (3, 7), generator=g)
    tgt[:, 0] = BOS
    return src, tgt


def test_every_model_has_test_sizes():
    assert set(SMALL) == set(REGISTRY)


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("shared", [True, False])
def test_forward_shape(name, shared):
    src, tgt = batch()
    assert make(name, shared)(src, tgt).shape == (3, 7, VOCAB)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_incremental_decoding_matches_teacher_forcing(name):
    model = make(name).eval()
    src, tgt = batch()
    with torch.no_grad():
        full = model(src, tgt)
        state, steps = model.encode(src), []
        for t in range(tgt.size(1)):
            logits, state = model.step(state, tgt[:, t])
            steps.append(logits)
    assert (torch.stack(steps, 1) - full).abs().max() < 1e-4


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_padding_does_not_change_a_sentence(name):
    model = make(name).eval()
    src, tgt = batch()
    with torch.no_grad():
        padded = model(src, tgt)
        for i, length in enumerate([9, 6, 3]):
            alone = model(src[i : i + 1, :length], tgt[i : i + 1])
            assert (alone - padded[i : i + 1]).abs().max() < 1e-4
        extra = F.pad(src, (0, 5), value=PAD)  # more padding changes nothing either
        assert (model(extra, tgt) - padded).abs().max() < 1e-4


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_parameter_gets_a_gradient(name):
    model = make(name, shared=False).train()
    src, tgt = batch()
    model(src, tgt).logsumexp(-1).mean().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_learns_a_copy_task(name):
    g = torch.Generator().manual_seed(0)
    seqs = [
        torch.randint(4, VOCAB, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g).tolist()
        for _ in range(256)
    ]
    data = ParallelData(seqs, seqs)
    model = make(name).train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses: list[float] = []
    while len(losses) < 300:
        for indices in data.batches(max_tokens=320, generator=g):
            b = data.collate(indices)
            loss = F.cross_entropy(
                model(b.src, b.tgt_in).flatten(0, 1), b.tgt_out.flatten(), ignore_index=PAD
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    assert last < 0.3 * first, (first, last)


def test_build_rejects_unknown_models_and_hyperparameters():
    with pytest.raises(MixnmtError, match="models.lstm: unknown model"):
        build("lstm", {}, VOCAB, VOCAB, True)
    with pytest.raises(MixnmtError, match="models.transformer.d_modle: unknown hyperparameter"):
        build("transformer", {"d_modle": 32}, VOCAB, VOCAB, True)
    with pytest.raises(MixnmtError, match="models.transformer: d_model=30 is not divisible by heads=4"):
        build("transformer", {"d_model": 30, "heads": 4}, VOCAB, VOCAB, True)
