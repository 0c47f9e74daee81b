import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest

from mixnmt import plots


def analysis(model, axes, shapes, components=None):
    rng = np.random.default_rng(0)
    sentence = {
        "index": 3,
        "source": ["▁A", "▁dog", "</s>"],
        "target": ["▁Ein", "▁Hund", "</s>"],
        "weights": {},
    }
    for name, shape in shapes.items():
        w = rng.random(shape)
        sentence["weights"][name] = (w / w.sum(-1, keepdims=True)).tolist()
    return {"model": model, "axes": axes, "sentences": [sentence], "components": components or {}}


TRANSFORMER = analysis(
    "transformer",
    {"cross_attention": ["layer", "head", "target", "source"]},
    {"cross_attention": (2, 4, 3, 3)},
)
ATTENTION = analysis("attention", {"alignment": ["target", "source"]}, {"alignment": (3, 3)})
MIXTURE = analysis(
    "mixture",
    {"encoder_responsibilities": ["source", "head", "component"]},
    {"encoder_responsibilities": (3, 2, 5)},
    {
        "encoder_responsibilities": {
            "usage": [0.6, 0.1, 0.1, 0.1, 0.1],
            "entropy": 1.1,
            "steps": 9,
            "led": {"0": 9},
            "top_tokens": {"0": [["▁A", 3]]},
        }
    },
)
RNN = analysis("rnn", {}, {})
METRICS = pd.DataFrame(
    {"epoch": [1, 2], "valid_loss": [3.0, 2.0], "valid_bleu": [1.0, 5.0], "seconds": [10.0, 20.0]}
)
LENGTHS = pd.DataFrame(
    {
        "testset": ["t"] * 4,
        "model": ["rnn", "rnn", "x", "x"],
        "bucket": ["<=10", ">10"] * 2,
        "sentences": [3, 2, 3, 2],
        "bleu": [20.0, 10.0, 25.0, float("nan")],
    }
)
COST = pd.DataFrame(
    {
        "model": ["rnn", "attention"],
        "params": [7e6, 8e6],
        "train_seconds": [600.0, 900.0],
        "bleu": [20.0, 30.0],
        "testset": ["t", "t"],
    }
)


@pytest.mark.parametrize(
    "draw",
    [
        lambda: plots.learning_curves({"rnn": METRICS, "attention": METRICS.assign(valid_loss=[2.5, 1.5])}),
        lambda: plots.bleu_by_length(LENGTHS),
        lambda: plots.alignments([TRANSFORMER, ATTENTION, MIXTURE, RNN]),
        lambda: plots.responsibilities([TRANSFORMER, MIXTURE]),
        lambda: plots.component_usage([MIXTURE, RNN]),
        lambda: plots.cost(COST),
        lambda: plots.alignments([RNN, MIXTURE]),  # nothing to draw: says so
        lambda: plots.responsibilities([RNN]),
    ],
)
def test_figures_are_written_as_png_and_svg(draw, tmp_path):
    png = tmp_path / "figure.png"
    plots.save(draw(), png)
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and png.stat().st_size > 2000
    assert ET.parse(png.with_suffix(".svg")).getroot().tag.endswith("svg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png", "figure.svg"]


def test_alignment_panels_show_mean_and_most_peaked_head_per_layer():
    panels = plots.alignment_panels(TRANSFORMER, TRANSFORMER["sentences"][0])
    assert [row for row, _, _ in panels] == [
        "transformer 1 mean",
        "transformer 1 peaked",
        "transformer 2 mean",
        "transformer 2 peaked",
    ]
    heads = np.asarray(TRANSFORMER["sentences"][0]["weights"]["cross_attention"])[0]
    assert np.allclose(panels[0][2], heads.mean(0))
    peaked = min(range(4), key=lambda h: plots.entropy_rows(heads[h]))
    assert np.array_equal(panels[1][2], heads[peaked]) and f"head {peaked + 1}" in panels[1][1]


def test_every_model_keeps_its_colour():
    assert [plots.color(m) for m in ("rnn", "attention")] == [
        plots.PALETTE["rnn"],
        plots.PALETTE["attention"],
    ]
    assert plots.color("sixth") == plots.color("sixth") and plots.color("sixth") not in plots.PALETTE.values()
    assert plots.ordered(["x", "attention", "rnn"]) == ["rnn", "attention", "x"]
