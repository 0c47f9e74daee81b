"""The lock-in diagnosis (benchmarks/lockin.py): its scores are the Mix's own."""

import sys

import pytest
import torch

from conftest import ROOT, TINY_MODELS
from mixnmt.models import REGISTRY, build, resolve
from mixnmt.symbols import BOS, PAD

sys.path.insert(0, str(ROOT / "benchmarks"))
import lockin  # noqa: E402

MIXTURE = next(arch for arch in REGISTRY if "qk_norm" in resolve(arch, None)[1])


@pytest.mark.parametrize("knobs", [{}, {"qk_norm": True, "temperature": "learned"}])
def test_the_diagnosis_rebuilds_the_decoders_responsibilities(knobs):
    torch.manual_seed(0)
    entry = {**TINY_MODELS[MIXTURE], "arch": MIXTURE, "source": "summary", **knobs}
    model = build(*resolve("x", entry), 30, 30, shared_vocab=True).eval()
    if "temperature" in knobs:
        torch.nn.init.normal_(model.decoder.mixes[0].tau)
    scores = lockin.Scores(model.decoder.mixes[0])
    src, tgt = torch.randint(4, 30, (3, 6)), torch.randint(4, 30, (3, 5))
    tgt[:, 0], tgt[2, 3:] = BOS, PAD
    with torch.no_grad():
        pi = model.analyse(src, tgt)["decoder_responsibilities"]  # (B, T, H, 1+K)
    real = (tgt != PAD).t().flatten()
    rebuilt = torch.cat(scores.scores)[real].softmax(-1)  # steps in time-major order
    assert torch.allclose(rebuilt, pi.transpose(0, 1)[(tgt != PAD).t()], atol=1e-6)
    rows = scores.table(real)
    assert len(rows) == model.decoder.mixes[0].heads
    assert all(0 <= row["query"] <= 1 and 0 < row["lead"] <= 1 and row["mi"] >= 0 for row in rows)
