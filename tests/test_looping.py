"""The looping diagnosis (benchmarks/looping.py): its read positions are the model's own
weights over the source."""

import sys

import torch

from conftest import ROOT, TINY_MODELS
from mixnmt.models import REGISTRY, build, resolve
from mixnmt.symbols import BOS, PAD

sys.path.insert(0, str(ROOT / "benchmarks"))
import looping  # noqa: E402

MIXTURE = next(
    arch for arch in REGISTRY if "source" in resolve(arch, None)[1] and "gate" in resolve(arch, None)[1]
)
ALIGNED = [arch for arch in REGISTRY if "alignment" in REGISTRY[arch].analysis_axes]


def weights(arch: str, **knobs) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    entry = {**TINY_MODELS[arch], "arch": arch, **knobs}
    model = build(*resolve("x", entry), 30, 30, shared_vocab=True).eval()
    src, tgt = torch.randint(4, 30, (3, 6)), torch.randint(4, 30, (3, 5))
    tgt[:, 0], src[2, 4:] = BOS, PAD
    with torch.no_grad():
        return model.analyse(src, tgt), src, tgt


def test_a_mixture_reads_where_its_heads_put_their_source_mass():
    found, src, tgt = weights(MIXTURE, source="states")
    mass, position, stay = looping.reads(found, src.size(1))
    pi = found["decoder_responsibilities"]  # (B, T, H, 1+K+S)
    source = pi[..., -src.size(1) :].mean(2)
    assert mass.shape == position.shape == stay.shape == tgt.shape
    assert torch.equal(position, source.argmax(-1)) and torch.allclose(stay, pi[..., 0].mean(2))
    assert torch.allclose(mass + stay + pi[..., 1 : -src.size(1)].sum(-1).mean(2), torch.ones_like(mass))
    assert (position[2] < 4).all(), "a padded source position is read"


def test_attention_reads_its_alignment():
    assert ALIGNED
    found, src, tgt = weights(ALIGNED[0])
    mass, position, stay = looping.reads(found, src.size(1))
    assert torch.allclose(mass, torch.ones_like(mass)) and stay.isnan().all()
    assert torch.equal(position, found["alignment"].argmax(-1)) and (position[2] < 4).all()
