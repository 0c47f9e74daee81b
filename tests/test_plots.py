import xml.etree.ElementTree as ET

import matplotlib.colors
import numpy as np
import pandas as pd
import pytest

from mixnmt import plots, tables
from mixnmt.figures import FIGURES
from mixnmt.inputs import INPUTS
from mixnmt.provenance import drawn_from
from mixnmt.tables import TABLES


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


MULTIHEAD = analysis(
    "multihead",
    {"cross_attention": ["layer", "head", "target", "source"]},
    {"cross_attention": (2, 4, 3, 3)},
)
SINGLE = analysis("single", {"alignment": ["target", "source"]}, {"alignment": (3, 3)})
MIX = analysis(
    "mix",
    {"encoder_responsibilities": ["source", "head", "component"]},
    {"encoder_responsibilities": (3, 2, 5)},
    {
        "encoder_responsibilities": {
            "usage": [0.6, 0.1, 0.1, 0.1, 0.1],
            "components": 4,
            "entropy": 1.1,
            "mi": 0.3,
            "heads": {"entropy": [1.0, 1.2], "mi": [0.1, 0.5], "leading": [2, 5], "source_entropy": [0, 0]},
            "steps": 9,
            "led": {"0": 9},
            "top_tokens": {"0": [["▁A", 3]]},
        }
    },
)
PLAIN = analysis("plain", {}, {})
METRICS = pd.DataFrame(
    {"epoch": [1, 2], "valid_loss": [3.0, 2.0], "valid_bleu": [1.0, 5.0], "seconds": [10.0, 20.0]}
)
LENGTHS = pd.DataFrame(
    {
        "testset": ["t"] * 4,
        "model": ["plain", "plain", "x", "x"],
        "bucket": ["<=10", ">10"] * 2,
        "sentences": [3, 2, 3, 2],
        "bleu": [20.0, 10.0, 25.0, float("nan")],
        "bleu_ci": [2.0, 3.0, 2.5, float("nan")],
    }
)
USAGE = {f"decoder_responsibilities.{stat}": [0.9, 0.5] for stat in plots.USAGE}
RELIANCE = pd.DataFrame(
    {
        "model": ["plain"] * 3 + ["single"] * 3,
        "position": [0, 1, 2] * 2,
        "tokens": [200, 100, 100] * 2,
        "difference": [0.5, 0.8, 0.3, 1.0, 1.2, 1.1],
    }
)
USE = pd.DataFrame(
    {
        "model": ["mix"] * 3,
        "weights": ["decoder_responsibilities"] * 3,
        "group": ["stay", "learned", "source"],
        "seeds": 1,
        "mass": [0.1, 0.9, 0.0],
        "change": [0.5, 0.02, 0.0],
        "change_sd": float("nan"),
    }
)
COST = pd.DataFrame(
    {
        "model": ["plain", "single"],
        "params": [7e6, 8e6],
        "train_seconds": [600.0, 900.0],
        "bleu": [20.0, 30.0],
        "testset": ["t", "t"],
    }
)

TOKENS = {"prior_entropy": [1.0, 0.5, 2.0], "posterior_entropy": [0.1, 0.5, 1.0], "kl": [0.9, 0.0, 1.2]}
LATENT = {"model": "outputs", "run": {"seed": 1}, "tokens": TOKENS}
NO_POSTERIOR = {"model": "plain", "run": {"seed": 1}}
ERRORS = pd.DataFrame(
    {
        "model": ["outputs", "outputs"],
        "weights": ["prior", "posterior"],
        "seeds": [2, 2],
        "sentences": [10, 10],
        "aer": [0.4, 0.3],
        "precision": [0.6, 0.7],
        "recall": [0.6, 0.7],
        "aer_sd": [0.02, 0.05],
    }
)


@pytest.mark.parametrize(
    ("name", "inputs"),
    [
        ("learning_curves", {"metrics": {"plain": METRICS, "single": METRICS.assign(valid_loss=[2.5, 1.5])}}),
        ("bleu_by_length", {"lengths": LENGTHS}),
        ("alignments", {"analyses": [MULTIHEAD, SINGLE, MIX, PLAIN]}),
        ("responsibilities", {"analyses": [MULTIHEAD, MIX]}),
        ("component_usage", {"analyses": [MIX, PLAIN]}),
        ("mixing", {"analyses": [MIX, PLAIN]}),
        ("mixing", {"analyses": [PLAIN]}),  # nothing to draw: says so
        ("use", {"use": USE}),
        ("use", {"use": USE.iloc[:0]}),  # nothing to draw: says so
        ("cost", {"cost": COST}),
        ("reliance", {"reliance": RELIANCE}),
        ("mixture_usage", {"metrics": {"plain": METRICS, "mix": METRICS.assign(**USAGE)}}),
        ("mixture_usage", {"metrics": {"plain": METRICS}}),  # nothing to draw: says so
        ("alignments", {"analyses": [PLAIN, MIX]}),  # nothing to draw: says so
        ("responsibilities", {"analyses": [PLAIN]}),
        ("alignment_errors", {"alignment_errors": ERRORS}),
        ("posteriors", {"alignment_runs": [LATENT, NO_POSTERIOR]}),
        ("posteriors", {"alignment_runs": [NO_POSTERIOR]}),  # nothing to draw: says so
    ],
)
def test_figures_are_written_as_png_and_svg(name, inputs, tmp_path):
    png = tmp_path / "figure.png"
    plots.save(FIGURES[name](**inputs), png)
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and png.stat().st_size > 2000
    assert ET.parse(png.with_suffix(".svg")).getroot().tag.endswith("svg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["figure.png", "figure.svg"]
    assert drawn_from(png) == drawn_from(png.with_suffix(".svg")) == {}  # the PNG holds it before its pixels
    drawn = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    plots.save(FIGURES[name](**inputs), png)  # a redraw changes no byte (SVG ids were random)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == drawn


def test_alignment_panels_show_mean_and_most_peaked_head_per_layer():
    panels = plots.alignment_panels(MULTIHEAD, MULTIHEAD["sentences"][0])
    assert [row for row, _, _ in panels] == [
        "multihead 1 mean",
        "multihead 1 peaked",
        "multihead 2 mean",
        "multihead 2 peaked",
    ]
    heads = np.asarray(MULTIHEAD["sentences"][0]["weights"]["cross_attention"])[0]
    assert np.allclose(panels[0][2], heads.mean(0))
    peaked = min(range(4), key=lambda h: plots.entropy_rows(heads[h]))
    assert np.array_equal(panels[1][2], heads[peaked]) and f"head {peaked + 1}" in panels[1][1]


# K = 0 without the source: "stay" is its one candidate, so there is nothing to mix or show
STAY_ONLY = analysis(
    "k0",
    {"decoder_responsibilities": ["target", "head", "component"]},
    {"decoder_responsibilities": (3, 2, 1)},
    {
        "decoder_responsibilities": {
            **MIX["components"]["encoder_responsibilities"],
            "usage": [1.0],
            "components": 0,
            "heads": {"entropy": [0, 0], "mi": [0, 0], "leading": [1, 1], "source_entropy": [0, 0]},
        }
    },
)


@pytest.mark.parametrize("figure", ["mixing", "component_usage", "responsibilities"])
def test_a_mixture_of_one_candidate_gets_no_panel(figure):
    assert [(a["model"], name) for a, name, _ in plots.mixtures([MIX, STAY_ONLY, PLAIN])] == [
        ("mix", "encoder_responsibilities")
    ]
    drawn = FIGURES[figure](analyses=[MIX, STAY_ONLY])
    assert all("k0" not in ax.get_title() for ax in drawn.axes)
    alone = FIGURES[figure](analyses=[STAY_ONLY])
    assert [t.get_text() for t in alone.axes[0].texts] == ["No mixture model in this experiment."]


def test_a_model_keeps_its_colour_in_a_figure_drawn_from_a_few_models(tmp_path, monkeypatch):
    """The alignment figure lacks the study's first model (an rnn: no source weights):
    drawn by `mixnmt plot` with the study's models, the latent model's bars take its colour
    in the figures that show every model, not the first colour (part two's report showed
    it green there and red in the posteriors figure)."""
    from mixnmt.cli import main

    errors = tmp_path / "alignment_errors.tsv"
    ERRORS.assign(commit="x").to_csv(errors, sep="\t", index=False)
    png = tmp_path / "figure.png"
    argv = [
        "plot",
        "alignment_errors",
        "--alignment_errors",
        str(errors),
        "--runs",
        "{}",
        "--output",
        str(png),
    ]
    drawn, save = [], plots.save
    monkeypatch.setattr(plots, "save", lambda fig, *args: drawn.append(fig) or save(fig, *args))
    assert main([*argv, "--models", "first", "outputs"]) == 0
    bars = drawn[0].axes[0].patches
    assert matplotlib.colors.to_hex(bars[0].get_facecolor()) == plots.OKABE_ITO[1].lower()
    with plots.roster(["first", "outputs"]):
        assert plots.palette(["outputs"]) == plots.palette(["first", "outputs"])
    assert plots.palette(["outputs"])["outputs"] == plots.OKABE_ITO[0]  # outside a roster


def test_a_figure_with_nothing_to_show_is_one_line_in_the_report(tmp_path):
    """A study without mixtures showed five placeholder images, each under its caption, and
    two tables of headers alone: the report now says why once, in a line."""
    from mixnmt.report import shown

    captions = tmp_path / "captions"
    captions.mkdir()
    (captions / "mixing.rst").write_text("What mixing means.\n")
    plots.save(FIGURES["mixing"](analyses=[STAY_ONLY]), tmp_path / "empty.png")
    plots.save(FIGURES["mixing"](analyses=[MIX]), tmp_path / "drawn.png")
    assert shown(tmp_path / "empty.png", "mixing", captions) == (
        '<p class="note">No mixture model in this experiment.</p>'
    )
    drawn = shown(tmp_path / "drawn.png", "mixing", captions)
    assert drawn.startswith("<figure><img") and drawn.endswith('<p class="caption">What mixing means.</p>')
    assert tables.table_html(pd.DataFrame(columns=["model", "mi"])) == ""


def test_a_long_table_is_folded_under_a_line_naming_it():
    from mixnmt.report import LONG_TABLE, folded

    long = tables.table_html(pd.DataFrame({"job": [f"train/m/seed{i}" for i in range(LONG_TABLE + 1)]}))
    assert folded("jobs", long, LONG_TABLE + 1) == (
        f"<details><summary>jobs table: {LONG_TABLE + 1} rows (tables/jobs.tsv)</summary>{long}</details>"
    )
    assert folded("jobs", "<table></table>", LONG_TABLE) == "<table></table>"
    assert folded("jobs", "", 100) == ""


def test_mass_against_use_draws_each_group_with_mass_once_per_side():
    both = pd.concat([USE, USE.assign(weights="encoder_responsibilities")])
    fig = plots.use(both)
    assert [ax.get_title() for ax in fig.axes] == ["decoder responsibilities", "encoder responsibilities"]
    assert [len(ax.containers) for ax in fig.axes] == [2, 2]  # the source group has no mass


def test_mass_against_use_keeps_its_points_off_the_panels_edges():
    """The loss rises span decades, drawn on a symlog axis: padded linearly, the largest
    sat on the top edge, half its marker cut off, and a decade below zero stood empty."""
    fig = plots.use(USE.assign(change=[1.1, 3.04, 0.0], change_sd=[0.3, 0.1, float("nan")]))
    ax = fig.axes[0]
    to_axes = ax.transScale + ax.transLimits  # data to the panel's 0..1
    top = to_axes.transform((0.9, 3.04 + 0.1))[1]  # the top of the largest rise's error bar
    assert 0.9 < top < 0.97  # padded by the axis's margin in the scale's space
    assert -0.01 < ax.get_ylim()[0] < 0  # zero shown, and no empty decade below it


def test_mass_against_use_wraps_its_panels_and_names_only_the_models_drawn():
    """Part one's six sides in one row drew panels too small to read in the report; and
    a study's model without a mixture has no place in this figure's legend."""
    sides = pd.concat([USE.assign(weights=f"side {i}") for i in range(6)])
    with plots.roster(["first", *USE.model]):
        fig = plots.use(sides)
    fig.canvas.draw()
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == 6 and len({round(ax.get_position().y0, 3) for ax in shown}) == 2
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == [*dict.fromkeys(USE.model), "stay", "learned", "source"]


@pytest.mark.parametrize("n", [1, 5, 8, 9, 30])
def test_every_model_gets_its_own_colour(n):
    models = [f"model{i}" for i in range(n)]
    colors = plots.palette(models)
    assert list(colors) == models and len(set(colors.values())) == n
    if n <= len(plots.OKABE_ITO):  # within the palette, a model keeps its colour as models are added
        assert plots.palette(models[:-1]) == {m: colors[m] for m in models[:-1]}


def test_the_cost_figures_names_never_overlap_where_points_crowd():
    """Two models of about the same size and BLEU (the published study's states models):
    their names are set apart, not drawn over each other."""
    cost = pd.DataFrame(
        {"model": ["mixture-states-gated", "mixture-states-gated-k0", "attention-small"],
         "params": [2.89e6, 2.84e6, 2.95e6], "train_seconds": [228.0, 233.0, 236.0],
         "bleu": [5.55, 5.46, 9.82], "testset": "t0"}
    )  # fmt: skip
    figure = plots.cost(cost)
    figure.canvas.draw()
    for ax in figure.axes:
        boxes = [text.get_window_extent() for text in ax.texts]
        assert len(boxes) == 3
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :]), ax.get_xlabel()


def test_a_heatmaps_tick_labels_never_overlap_however_many_rows():
    """A looping translation of 80 subwords in a panel 3.4 inches tall: every other label
    (or fewer) is shown, and no two that are shown overlap."""
    rows = [f"_word{i}" for i in range(80)]
    figure = plots.heatmap_grid(
        {"model": [({"index": 1}, "model", np.full((80, 12), 0.5), rows, [str(j) for j in range(12)])]},
        "candidate", "subword read", "weight", 4.2,
    )  # fmt: skip
    figure.canvas.draw()
    ax = figure.axes[0]
    shown = [t for t in ax.get_yticklabels() if t.get_text()]
    boxes = [t.get_window_extent() for t in shown]
    assert 5 < len(shown) < len(rows) and not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:]))
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(j) for j in range(12)]  # room for all


def test_the_cli_has_one_plot_command_per_figure_with_its_own_inputs(capsys):
    from mixnmt.cli import parser

    for name, spec in FIGURES.items():
        with pytest.raises(SystemExit):
            parser().parse_args(["plot", name, "--output", "x.png"])
        err = capsys.readouterr().err
        assert all(f"--{kind}" in err for kind in spec.inputs), err


def test_curves_table_stacks_every_models_epochs_and_the_report_folds_them_by_model():
    metrics = {
        "plain": METRICS.assign(step=[5, 10], train_loss=[4.0, 3.0]),
        "single": METRICS.assign(step=[5, 10], train_loss=[4.5, 3.5], valid_bleu=[2.0, 7.0]),
    }
    table = TABLES["curves"].build(metrics=metrics)
    columns = ["model", "epoch", "step", "train_loss", "valid_loss", "valid_bleu", "seconds"]
    assert list(table.columns) == columns
    assert table.model.tolist() == ["plain", "plain", "single", "single"]
    assert table.valid_bleu.tolist() == [1.0, 5.0, 2.0, 7.0]
    shown = TABLES["curves"].html(table)
    assert shown.count("<details>") == 2 and "<th>plain</th>" in shown and "<td>7.00</td>" in shown


def test_jobs_table_names_each_benchmarked_job_by_its_rule_and_run(tmp_path):
    header = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    paths = []
    for job, seconds in [("translate/plain/seed1/test_a", 2.04), ("train/plain/seed1", 61.26)]:
        path = tmp_path / "results" / "x" / "benchmarks" / f"{job}.tsv"
        path.parent.mkdir(parents=True)
        path.write_text(header + f"{seconds}\t0:01:01\t812.34\t1700\t700\t750\t1\t2\t95.0\t58.1\n")
        paths.append(path)
    table = TABLES["jobs"].build(benchmarks=INPUTS["benchmarks"].load(paths))
    assert table.to_dict("records") == [
        {
            "job": "train/plain/seed1",
            "seconds": 61.3,
            "cpu_seconds": 58.1,
            "mean_load_percent": 95.0,
            "peak_rss_mb": 812.3,
        },
        {
            "job": "translate/plain/seed1/test_a",
            "seconds": 2.0,
            "cpu_seconds": 58.1,
            "mean_load_percent": 95.0,
            "peak_rss_mb": 812.3,
        },
    ]


def test_mixing_table_has_a_row_per_head_of_every_mixture():
    table = TABLES["mixing"].build(analyses=[MIX, PLAIN])
    assert table[["head", "mi", "leading"]].values.tolist() == [[0, 0.1, 2], [1, 0.5, 5]]
    assert (table.candidates == 5).all() and set(table.model) == {"mix"}


def test_use_table_averages_each_groups_mass_and_loss_rise_over_seeds():
    runs = pd.concat([USE.drop(columns=["seeds", "change_sd"]).assign(seed=seed) for seed in (1, 2)])
    runs.loc[runs.seed == 2, "change"] += 0.1
    table = TABLES["use"].build(use_runs=runs)
    assert table.group.tolist() == ["stay", "learned", "source"] and (table.seeds == 2).all()
    assert table.change.tolist() == pytest.approx([0.55, 0.07, 0.05])
    assert table.change_sd.tolist() == pytest.approx([0.0707] * 3, abs=1e-4)


def test_contrast_table_shows_each_models_size_beside_the_run_level_statistics():
    level = {"low": -0.5, "high": 1.5, "p": 0.04, "p_holm": 0.2, "tost_p_holm": 0.9, "hypotheses": 2,
             "mde": 1.8, "mde_holm": 2.4, "verdict": "undecided", "boot_low": -0.1, "boot_high": 1.1,
             "boot_p": 0.09, "p_seeds": [0.01, 0.3]}  # fmt: skip
    row = {"testset": "t", "a": "plain", "b": "single", "seeds_a": 2, "seeds_b": 3}
    for key in ("bleu", "chrf"):
        row |= {
            f"{key}_a": 20.0,
            f"{key}_b": 20.5,
            f"{key}_delta": 0.5,
            **{f"{key}_{k}": v for k, v in level.items()},
        }
    row["chrf_low"] = row["chrf_high"] = None  # undefined: one run
    manifests = [
        {"model": "plain", "params_no_embeddings": 5187328},
        {"model": "single", "params_no_embeddings": 4959632},
    ]
    table = TABLES["contrasts"].build(contrast_runs=[{"contrasts": [row]}], manifests=manifests)
    columns = [
        "seeds_a",
        "seeds_b",
        "params_a",
        "params_b",
        "bleu_delta",
        "bleu_p",
        "bleu_p_holm",
        "bleu_mde",
    ]
    assert table[[*columns, "bleu_verdict"]].values.tolist() == [
        [2, 3, 5.19, 4.96, 0.5, 0.04, 0.2, 1.8, "undecided"]
    ]
    assert table.bleu_ci.iloc[0] == "-0.50 .. +1.50" and table.bleu_p_seeds.iloc[0] == "0.010 0.300"
    assert table.bleu_boot_ci.iloc[0] == "-0.10 .. +1.10" and table.bleu_boot_p.iloc[0] == 0.09
    assert table.chrf_ci.iloc[0] == ""
    # the equivalence's adjusted p, the hypotheses adjusted together and the difference
    # detectable at Holm's strictest level, beside the difference's
    assert table[["chrf_tost_p_holm", "chrf_hypotheses", "chrf_mde_holm"]].values.tolist() == [[0.9, 2, 2.4]]
    assert list(table.columns[table.columns.str.startswith("chrf_")][5:11]) == [
        "chrf_p_holm",
        "chrf_tost_p_holm",
        "chrf_hypotheses",
        "chrf_mde",
        "chrf_mde_holm",
        "chrf_verdict",
    ]


def test_a_model_with_several_alignments_gets_a_row_for_each():
    """A prior and a posterior over the source are two rows named after them; a model
    with one alignment keeps its name alone."""
    from mixnmt.plots import alignment_panels

    w = [[1.0, 0.0], [0.0, 1.0]]
    sentence = {"weights": {"prior": w, "posterior": w, "alignment": w}}
    two = {"model": "m", "axes": {"prior": ["target", "source"], "posterior": ["target", "source"]}}
    one = {"model": "a", "axes": {"alignment": ["target", "source"]}}
    assert [row for row, _, _ in alignment_panels(two, sentence)] == ["m prior", "m posterior"]
    assert [(row, title) for row, title, _ in alignment_panels(one, sentence)] == [("a", "a")]


def test_posterior_table_averages_each_latent_models_tokens_then_its_seeds():
    table = tables.posteriors([NO_POSTERIOR, LATENT])
    assert table.model.tolist() == ["outputs"] and table.tokens.tolist() == [3]
    assert table.prior_entropy[0] == pytest.approx(3.5 / 3, abs=1e-3)
    assert table.posterior_entropy[0] == pytest.approx(1.6 / 3, abs=1e-3)
    assert table.kl[0] == pytest.approx(0.7) and table.kl_median[0] == 0.9
    assert table.seeds[0] == 1 and pd.isna(table.kl_sd[0])
    other = {"model": "outputs", "run": {"seed": 2}, "tokens": {key: [0.0, 0.5] for key in TOKENS}}
    two = tables.posteriors([LATENT, NO_POSTERIOR, other])
    assert two.seeds.tolist() == [2] and two.kl[0] == pytest.approx((0.7 + 0.25) / 2)
    assert two.kl_sd[0] == pytest.approx(np.std([0.7, 0.25], ddof=1), abs=1e-3)
    assert two.tokens[0] == 3  # the most of any run (every run reads the same references)


def test_the_claims_figure_marks_each_verdict_shades_each_margin_and_rules_off_each_experiment():
    """One row per claim, top to bottom as listed, its interval and point in its verdict's
    colour (undecided hollow), a withdrawn verdict's crossed out and dashed whatever its kind,
    the margin shaded per row, a rule where the experiment changes, and a legend of the
    verdicts drawn, in VERDICTS' order, then the withdrawn mark; nothing to claim, one line
    saying so."""
    kinds = ["undecided", "difference", "equivalent", "undecided", "small difference"]
    points = pd.DataFrame(
        {
            "label": [f"m{i} → n{i}" for i in range(5)],
            "experiment": ["first", "first", "second", "third", "third"],
            "delta": [0.3, -4.0, 0.1, 0.9, 0.6],
            "lo": [-1.0, -5.0, -0.2, -1.9, 0.3],
            "hi": [1.6, -3.0, 0.4, 3.7, 0.9],
            "margin": [1.0, 1.0, 1.0, 0.5, 1.0],
            "kind": kinds,
            "withdrawn": [False, False, False, False, True],
            "cell": "chrF 2016",
        }
    )
    fig = plots.claims(points)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == points.label.tolist()
    markers = [line for line in ax.get_lines() if line.get_marker() in ("o", "X")]
    assert [(m.get_xdata()[0], m.get_ydata()[0]) for m in markers] == list(zip(points.delta, range(5)))
    assert [m.get_marker() for m in markers] == ["o"] * 4 + ["X"]
    intervals = [line for line in ax.get_lines() if line.get_marker() == "None" and line.get_linewidth() == 2]
    assert [list(line.get_xdata()) for line in intervals] == list(map(list, zip(points.lo, points.hi)))
    assert [line.get_linestyle() for line in intervals] == ["-"] * 4 + ["--"]
    grey = plots.WITHDRAWN_MARK[1]
    for marker, kind, withdrawn in zip(markers, kinds, points.withdrawn):
        _, color, filled = (None, grey, True) if withdrawn else plots.VERDICTS[kind]
        assert matplotlib.colors.same_color(marker.get_color(), color)
        assert matplotlib.colors.same_color(marker.get_markerfacecolor(), color if filled else "white")
    shaded = [c.get_paths()[0].get_extents() for c in ax.collections]
    assert [(b.x0, b.x1) for b in shaded] == [(-1.0, 1.0)] * 3 + [(-0.5, 0.5), (-1.0, 1.0)]
    rules = [line.get_ydata()[0] for line in ax.get_lines() if list(line.get_xdata()) == [0, 1]]  # axhline
    assert rules == [1.5, 2.5]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        *(plots.VERDICTS[kind][0] for kind in ("difference", "equivalent", "undecided")),
        plots.WITHDRAWN_MARK[0],
    ]
    assert "B - A, chrF 2016" in ax.get_xlabel()
    assert plots.claims(points.iloc[:0]).mixnmt_empty == "No published experiment makes a claim yet."
