"""Behaviour every registered model must show; a new model only needs an entry in SMALL."""

import math

import pytest
import torch
import torch.nn.functional as F
import yaml

from conftest import ROOT
from mixnmt import MixnmtError
from mixnmt.batching import ParallelData
from mixnmt.models import REGISTRY, build, resolve
from mixnmt.tokenize import BOS, PAD

VOCAB = 40
SMALL = {
    "rnn": {"d_model": 32, "hidden": 48, "dropout": 0.1},
    "mixture": {"d_model": 32, "components": 6, "heads": 4, "dropout": 0.1},
    "mixture2": {"d_model": 32, "components": 6, "heads": 4, "dropout": 0.1},
    "transformer": {"d_model": 32, "heads": 4, "layers": 2, "ffn": 64, "dropout": 0.1},
    "attention": {"d_model": 32, "hidden": 48, "dropout": 0.1},
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
def test_analysis_weights_are_distributions_that_skip_padding(name):
    model = make(name).eval()
    src, tgt = batch()
    tgt[2, 4:] = PAD
    hp = SMALL[name]
    sizes = {
        "source": 9,
        "target": 7,
        "layer": hp.get("layers"),
        "head": hp.get("heads"),
        "component": hp.get("components", 0) + 1,
    }
    real = {"source": src != PAD, "target": tgt != PAD}
    with torch.no_grad():
        weights = model.analyse(src, tgt)
    assert set(weights) == set(model.analysis_axes)
    assert bool(weights) == (name != "rnn")  # every model but the plain RNN has some
    for key, axes in model.analysis_axes.items():
        w = weights[key]
        assert w.shape == (3, *(sizes[a] for a in axes)), key
        live = torch.ones(w.shape, dtype=torch.bool)  # entries at real positions
        for dim, axis in enumerate(axes, start=1):
            if axis in real:
                shape = [3 if i == 0 else w.size(dim) if i == dim else 1 for i in range(w.dim())]
                live &= real[axis].view(shape)
        rows = live.any(-1)  # rows whose time step is real
        assert torch.allclose(w.sum(-1)[rows], torch.ones(int(rows.sum()))), key
        assert (w[~live] == 0).all(), key
        assert (w >= 0).all(), key


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_parameter_gets_a_gradient(name):
    model = make(name, shared=False).train()
    src, tgt = batch()
    model(src, tgt).logsumexp(-1).mean().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert missing == []


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_learns_a_copy_task(name):
    """300 steps on copying 2-6 of 12 symbols: the loss must fall below what any model
    blind to the source can reach (ln 12 per token), so the source is being read."""
    symbols = 12
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(2, 7, (256,), generator=g).tolist()
    seqs = [torch.randint(4, 4 + symbols, (n,), generator=g).tolist() for n in lengths]
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
    assert last < 0.75 * math.log(symbols) < first, (first, last)


def test_build_rejects_unknown_models_and_hyperparameters():
    with pytest.raises(MixnmtError, match="models.lstm: unknown model"):
        build("lstm", {}, VOCAB, VOCAB, True)
    with pytest.raises(MixnmtError, match="models.transformer.d_modle: unknown hyperparameter"):
        build("transformer", {"d_modle": 32}, VOCAB, VOCAB, True)
    with pytest.raises(MixnmtError, match="models.transformer: d_model=30 is not divisible by heads=4"):
        build("transformer", {"d_model": 30, "heads": 4}, VOCAB, VOCAB, True)


def test_schema_lists_every_model_and_its_hyperparameters():
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert set(schema["properties"]["models"]["properties"]) == set(REGISTRY)
    for name in REGISTRY:
        assert set(schema["definitions"][name]["properties"]) == set(resolve(name, {})), name


def test_default_models_have_comparable_sizes():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    vocab = config["spm"]["vocab_size"]
    sizes = {
        name: sum(p.numel() for p in build(name, hparams, vocab, vocab, shared_vocab=True).parameters())
        for name, hparams in config["models"].items()
    }
    assert set(sizes) == set(REGISTRY)
    assert max(sizes.values()) <= 1.5 * min(sizes.values()), sizes
