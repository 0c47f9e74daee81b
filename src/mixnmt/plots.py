"""The study's figures. One colour per model everywhere; axes labelled with units; every
figure written as PNG (for the report) and SVG (for papers). mixnmt.figures declares
which figures the study has."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.colors import LogNorm  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from matplotlib.transforms import Affine2D  # noqa: E402

from mixnmt.files import atomic_path  # noqa: E402
from mixnmt.provenance import EMPTY_KEY, INPUTS_KEY  # noqa: E402

# Okabe-Ito without its yellow, safe for colour-blind readers; more models than colours
# get evenly spaced colours of a perceptual map instead.
OKABE_ITO = ["#E69F00", "#56B4E9", "#0072B2", "#009E73", "#D55E00", "#CC79A7", "#000000", "#999999"]

plt.rcParams.update(
    {
        "figure.dpi": 110,
        "font.size": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "svg.hashsalt": "mixnmt",  # the SVG's element ids, random otherwise: a redraw is byte-identical
    }
)


ROSTER: ContextVar[tuple[str, ...]] = ContextVar("roster", default=())
"""The study's models in the config's order, while `roster` holds them."""


@contextmanager
def roster(models: Iterable[str]) -> Iterator[None]:
    """Within it, `palette` places models by their position in `models`, the study's: a
    figure drawn from a few of them (those with source weights, say) keeps their colours."""
    token = ROSTER.set(tuple(models))
    try:
        yield
    finally:
        ROSTER.reset(token)


def palette(models: Iterable[str]) -> dict[str, str]:
    """A distinct colour for each model, by its position in the study's `roster`, then in
    `models` (the inputs list models in the config's order), so a model has one colour
    throughout."""
    models = list(dict.fromkeys([*ROSTER.get(), *models]))
    if len(models) <= len(OKABE_ITO):
        return dict(zip(models, OKABE_ITO))
    cmap = matplotlib.colormaps["turbo"]
    return {
        m: matplotlib.colors.to_hex(cmap(0.05 + 0.9 * i / (len(models) - 1))) for i, m in enumerate(models)
    }


def save(fig: Figure, png: Path, inputs: dict[str, str] | None = None) -> None:
    """Write `fig` to `png` and to the same name with .svg, atomically, each recording
    `inputs` ({path: sha256} of what it was drawn from) as JSON: the PNG in a text chunk
    named INPUTS_KEY, the SVG in its description; an `empty` figure's reason in the PNG's
    EMPTY_KEY."""
    record = json.dumps(inputs or {}, sort_keys=True)
    why = getattr(fig, "mixnmt_empty", None)
    for path, fmt in ((Path(png), "png"), (Path(png).with_suffix(".svg"), "svg")):
        metadata = {INPUTS_KEY: record} if fmt == "png" else {"Description": record, "Date": None}
        if why is not None and fmt == "png":
            metadata[EMPTY_KEY] = why
        with atomic_path(path) as tmp:
            fig.savefig(
                tmp, format=fmt, bbox_inches="tight", dpi=150 if fmt == "png" else None, metadata=metadata
            )
    plt.close(fig)


def empty(message: str) -> Figure:
    """A figure that says why there is nothing to show (and `save` records it)."""
    fig, ax = plt.subplots(figsize=(6, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    fig.mixnmt_empty = message
    return fig


def legend_below(fig: Figure, ax) -> None:
    """One legend for the whole figure, under the panels, at most four entries a row."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 4), frameon=False)


def mixtures(analyses: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, dict[str, Any]]]:
    """(analysis, weights, statistics) of every mixture with a choice to make: one of a
    single candidate (K = 0 without the source: "stay" alone) has nothing to mix or show."""
    rows = [(a, name, stats) for a in analyses for name, stats in a["components"].items()]
    return [row for row in rows if len(row[2]["usage"]) > 1]


def time_axis(seconds: pd.Series) -> tuple[pd.Series, str]:
    """Seconds in the unit that reads best: s, min or h."""
    top = float(seconds.max()) if len(seconds) else 0.0
    if top > 3 * 3600:
        return seconds / 3600, "h"
    if top > 300:
        return seconds / 60, "min"
    return seconds, "s"


def learning_curves(metrics: dict[str, pd.DataFrame]) -> Figure:
    """Validation loss and BLEU against epoch and against wall-clock time."""
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5), sharey="row", layout="constrained")
    unit = time_axis(pd.concat([m.seconds for m in metrics.values()]))[1]
    scale = {"s": 1, "min": 60, "h": 3600}[unit]
    colors = palette(metrics)
    for model, m in metrics.items():
        for row, column in enumerate(("valid_loss", "valid_bleu")):
            for col, x in enumerate((m.epoch, m.seconds / scale)):
                axes[row, col].plot(x, m[column], marker="o", ms=3, color=colors[model], label=model)
    axes[0, 0].set_ylabel("validation loss (nats/token)")
    axes[1, 0].set_ylabel("validation BLEU (greedy)")
    for row in range(2):
        axes[row, 0].set_xlabel("epoch")
        axes[row, 0].xaxis.set_major_locator(MaxNLocator(integer=True))
        axes[row, 1].set_xlabel(f"wall-clock time ({unit})")
    legend_below(fig, axes[0, 0])
    return fig


def bleu_by_length(lengths: pd.DataFrame) -> Figure:
    """BLEU per source-length bucket with sacreBLEU's 95% bootstrap interval, one line per
    model (offset a little sideways, so intervals do not hide each other), one panel per test set."""
    colors = palette(lengths.model)
    testsets = list(dict.fromkeys(lengths.testset))
    fig, axes = plt.subplots(
        1, len(testsets), figsize=(5 * len(testsets), 4.5), squeeze=False, layout="constrained"
    )
    for ax, testset in zip(axes[0], testsets):
        t = lengths[lengths.testset == testset]
        buckets = list(dict.fromkeys(t.bucket))
        counts = t.groupby("bucket", sort=False).sentences.first()
        models = list(dict.fromkeys(t.model))
        for i, model in enumerate(models):
            rows = t[t.model == model].set_index("bucket").reindex(buckets)
            x = np.arange(len(buckets)) + 0.25 * (i / max(len(models) - 1, 1) - 0.5)
            ax.errorbar(
                x, rows.bleu, yerr=rows.bleu_ci, marker="o", ms=4, capsize=2, color=colors[model], label=model
            )
        ax.set_xticks(range(len(buckets)), [f"{b}\n(n={counts[b]})" for b in buckets])
        ax.set_xlabel("source length (words)")
        ax.set_ylabel("BLEU")
        ax.set_title(testset)
    legend_below(fig, axes[0, 0])
    return fig


def entropy_rows(weights: np.ndarray) -> float:
    """Mean entropy (nats) of the non-empty rows of a (T, S) weight matrix."""
    rows = weights[weights.sum(-1) > 0]
    return float(-(rows * np.log(np.clip(rows, 1e-12, None))).sum(-1).mean()) if len(rows) else math.inf


def alignment_panels(analysis: dict[str, Any], sentence: dict[str, Any]) -> list[tuple[str, str, np.ndarray]]:
    """(row, title, target x source matrix) for every source alignment of a model on a
    sentence: per layer the mean over heads and the most peaked head, if it has several;
    each named after its weights where a model has several (a prior and a posterior)."""
    model, panels = analysis["model"], []
    plain = [name for name, axes in analysis["axes"].items() if axes == ["target", "source"]]
    for name, axes in analysis["axes"].items():
        if axes[-2:] != ["target", "source"]:
            continue
        w = np.asarray(sentence["weights"][name])
        if axes == ["target", "source"]:
            label = model if len(plain) == 1 else f"{model} {name.replace('_', ' ')}"
            panels.append((label, label, w))
            continue
        for layer, heads in enumerate(w, start=1):  # (layer, head, target, source)
            peaked = min(range(len(heads)), key=lambda h: entropy_rows(heads[h]))
            panels.append(
                (f"{model} {layer} mean", f"{model} layer {layer}, mean of {len(heads)} heads", heads.mean(0))
            )
            panels.append(
                (
                    f"{model} {layer} peaked",
                    f"{model} layer {layer}, head {peaked + 1} (most peaked)",
                    heads[peaked],
                )
            )
    return panels


LOG_FLOOR = 1e-4  # the smallest responsibility the log-scale heatmaps tell apart


def heatmap(ax, matrix: np.ndarray, rows: list[str], columns: list[str], log: bool = False):
    """A weight matrix in grey: linear from 0 to 1, or on a log scale from LOG_FLOOR to 1."""
    if log:
        image = ax.imshow(
            np.clip(matrix, LOG_FLOOR, 1),
            cmap="magma_r",
            norm=LogNorm(LOG_FLOOR, 1),
            aspect="auto",
            interpolation="nearest",
        )
    else:
        image = ax.imshow(matrix, cmap="Greys", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    width, height = ax.get_window_extent().size * 72 / ax.figure.dpi  # points
    ax.set_xticks(range(len(columns)), thinned(columns, width), rotation=90, fontsize=7)
    ax.set_yticks(range(len(rows)), thinned(rows, height), fontsize=7)
    return image


def thinned(labels: list[str], length: float, size: float = 7) -> list[str]:
    """Tick labels along an axis `length` points long, a label dropped (left blank) where
    it would overlap the last one kept, at `size` points: a looping translation has many rows."""
    gap = len(labels) * (size + 1) / length  # positions between two labels that do not overlap
    kept, last = [], -math.inf
    for i, label in enumerate(labels):
        keep = bool(label) and i - last >= gap
        kept.append(label if keep else "")
        last = i if keep else last
    return kept


def heatmap_grid(
    panels: dict[str, list], xlabel: str, ylabel: str, colorbar: str, width: float, log: bool = False
) -> Figure:
    """Rows of heatmaps, one row per kind of panel, one column per sentence. `panels`
    maps each row's title to (sentence, title, matrix, row labels, column labels)."""
    ncols = max(map(len, panels.values()))
    fig, axes = plt.subplots(
        len(panels), ncols, figsize=(width * ncols, 3.4 * len(panels)), squeeze=False, layout="constrained"
    )
    for r, row in enumerate(panels.values()):
        for c, (sentence, title, matrix, rows, columns) in enumerate(row):
            ax = axes[r, c]
            image = heatmap(ax, matrix, rows, columns, log)
            ax.set_title(title if r else f"test sentence {sentence['index']}\n{title}", fontsize=9)
            if c == 0:
                ax.set_ylabel(ylabel)
            ax.set_xlabel(xlabel, fontsize=8)
        for c in range(len(row), ncols):
            axes[r, c].axis("off")
    fig.colorbar(image, ax=axes, shrink=min(0.6, 2 / len(panels)), label=colorbar)
    return fig


def alignments(analyses: list[dict[str, Any]]) -> Figure:
    """Source x target attention of every attending model on the fixed sentences:
    one row per model (and layer view), one column per sentence."""
    panels: dict[str, list] = {}
    for a in analyses:
        for sentence in a["sentences"]:
            for row, title, matrix in alignment_panels(a, sentence):
                panels.setdefault(row, []).append(
                    (sentence, title, matrix, sentence["target"], sentence["source"])
                )
    if not panels:
        return empty("No model in this experiment attends to source positions.")
    return heatmap_grid(panels, "source subword", "output subword", "attention weight", width=3.8)


def responsibilities(analyses: list[dict[str, Any]]) -> Figure:
    """Step x candidate responsibilities (mean over heads) on the fixed sentences, on a log
    scale so that small masses show: "stay", the learned components, then the source
    subwords if the mixture reads them."""
    panels: dict[str, list] = {}
    for a, name, stats in mixtures(analyses):
        title = f"{a['model']} {name.replace('_', ' ')}"
        for sentence in a["sentences"]:
            pi = np.asarray(sentence["weights"][name]).mean(1)  # (steps, 1+K[+S])
            read = sentence["source"] if a["axes"][name][0] == "source" else ["<s>", *sentence["target"][:-1]]
            k = stats["components"]
            columns = ["stay"] + [str(j) if j % 8 == 0 else "" for j in range(1, k + 1)]
            columns += sentence["source"][: pi.shape[1] - 1 - k]
            panels.setdefault(title, []).append((sentence, title, pi, read, columns))
    if not panels:
        return empty("No mixture model in this experiment.")
    return heatmap_grid(
        panels,
        "candidate: stay, components, source",
        "subword read",
        "responsibility (mean over heads)",
        4.2,
        log=True,
    )


def component_usage(analyses: list[dict[str, Any]]) -> Figure:
    """How much of the responsibility each component takes over the test set."""
    rows = mixtures(analyses)
    if not rows:
        return empty("No mixture model in this experiment.")
    colors = palette(a["model"] for a in analyses)
    fig, axes = plt.subplots(len(rows), 1, figsize=(9, 2.2 * len(rows)), squeeze=False, layout="constrained")
    for ax, (a, name, stats) in zip(axes[:, 0], rows):
        usage = np.asarray(stats["usage"])
        bars = ax.bar(range(len(usage)), usage, color=colors[a["model"]], width=0.8)
        bars[0].set_color("#444444")  # "stay"
        if len(usage) > 1 + stats["components"]:
            bars[-1].set_color("#999999")  # the source positions, together
        ax.set_yscale("log")
        ax.set_ylabel("mean\nresponsibility")
        ax.set_title(
            f"{a['model']} {name.replace('_', ' ')}: entropy {stats['entropy']:.2f} nats "
            f"(uniform would be {math.log(len(usage)):.2f})",
            fontsize=9,
        )
    axes[-1, 0].set_xlabel("candidate (0, dark: stay; last, light: the source positions if read)")
    return fig


def mixing(analyses: list[dict[str, Any]]) -> Figure:
    """Per head of every mixture, over the test set: the mutual information between the
    step and the candidate (a head that mixes by input) beside the mean per-step entropy
    (a head that spreads its mass), against log of the candidates, their ceiling."""
    rows = [(a, name, stats) for a, name, stats in mixtures(analyses) if stats["heads"]]
    if not rows:
        return empty("No mixture model in this experiment.")
    colors = palette(a["model"] for a in analyses)
    fig, axes = plt.subplots(len(rows), 1, figsize=(8, 1.9 * len(rows)), squeeze=False, layout="constrained")
    for ax, (a, name, stats) in zip(axes[:, 0], rows):
        heads = np.arange(len(stats["heads"]["mi"]))
        ax.bar(heads - 0.2, stats["heads"]["mi"], 0.4, color=colors[a["model"]], label="I(step; candidate)")
        ax.bar(heads + 0.2, stats["heads"]["entropy"], 0.4, color="#bbbbbb", label="per-step entropy")
        ax.axhline(math.log(len(stats["usage"])), color="#444444", lw=0.8, ls="--", label="log(candidates)")
        ax.set_xticks(heads)
        ax.set_ylabel("nats")
        ax.set_title(f"{a['model']} {name.replace('_', ' ')}", fontsize=9)
    axes[-1, 0].set_xlabel("head")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False, fontsize=8)
    return fig


def use(use: pd.DataFrame) -> Figure:
    """Mass against use: each candidate group of each mixture, its mass (x) against the
    rise of the validation loss when it is knocked out (y, mean and sd over seeds), the
    encoder's and the decoder's side by side. Groups without mass are left out: removing
    them changes nothing (the use table keeps them)."""
    use = use[use.mass > 0]
    if use.empty:
        return empty("No mixture model in this experiment.")
    colors = palette(use.model)
    markers = {"stay": "o", "learned": "s", "source": "^"}
    sides = list(dict.fromkeys(use.weights))
    cols = min(len(sides), 3)  # wider rows shrink every panel below legibility in the report
    rows = math.ceil(len(sides) / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(4.5 * cols, 3.8 * rows), sharey=True, squeeze=False, layout="constrained"
    )
    # before the points, so that autoscaling pads them in the scale's space, not linearly
    # (which left the largest rise on the top edge and a decade below zero empty)
    axes[0, 0].set_yscale("symlog", linthresh=0.01)
    for ax, side in zip(axes.flat, sides):
        for row in use[use.weights == side].itertuples():
            sd = np.nan_to_num(row.change_sd)  # one seed: no spread
            style = {"marker": markers[row.group], "ms": 6, "lw": 0.8, "capsize": 2, "zorder": 3}
            ax.errorbar(row.mass, row.change, yerr=sd, color=colors[row.model], **style)
        ax.axhline(0, color="#888888", lw=0.8)
        ax.set_xlim(-0.03, 1.03)
        ax.set_title(side.replace("_", " "), fontsize=9)
        ax.set_xlabel("mass (mean responsibility, validation set)")
    for ax in axes.flat[len(sides) :]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("validation loss rise when knocked out\n(nats/token)")
    handles = [Line2D([], [], color=colors[m], marker="o", ls="", label=m) for m in dict.fromkeys(use.model)]
    handles += [Line2D([], [], color="#444444", marker=k, ls="", label=g) for g, k in markers.items()]
    fig.legend(handles=handles, loc="outside lower center", ncols=4, frameon=False, fontsize=8)
    return fig


def alignment_errors(alignment_errors: pd.DataFrame) -> Figure:
    """Alignment error rate of each model's source weights against the silver word
    alignments (lower is better; mean over seeds, a bar its standard deviation), precision
    and recall beside it."""
    table = alignment_errors.dropna(subset=["aer"])
    if table.empty:
        return empty(
            alignment_errors.weights.iloc[0] if len(alignment_errors) else "No source weights to align."
        )
    colors = palette(table.model)
    labels = [f"{row.model}: {row.weights.replace('_', ' ')}" for row in table.itertuples()]
    fig, axes = plt.subplots(
        1, 3, figsize=(10, 0.8 + 0.35 * len(table)), sharey=True, squeeze=False, layout="constrained"
    )
    for ax, column in zip(axes[0], ("aer", "precision", "recall")):
        spread = table.aer_sd.fillna(0) if column == "aer" else None
        ax.barh(labels, table[column], xerr=spread, color=[colors[m] for m in table.model])
        ax.set_xlim(0, 1)
        ax.set_xlabel(column if column != "aer" else "alignment error rate (lower is better)")
    axes[0, 0].invert_yaxis()
    return fig


def posteriors(alignment_runs: list[dict[str, Any]]) -> Figure:
    """Per target token of the references, for each model with a prior and a posterior
    over source positions (its first seed, the first of its runs listed): the entropy of
    each (nats) and KL(posterior || prior)."""
    first: dict[str, dict[str, Any]] = {}
    for aligned in alignment_runs:
        first.setdefault(aligned["model"], aligned)
    found = [(model, tokens) for model, aligned in first.items() if (tokens := aligned.get("tokens"))]
    if not found:
        return empty("No model with a prior and a posterior over source positions.")
    colors = palette(a["model"] for a in alignment_runs)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), squeeze=False, layout="constrained")
    for model, tokens in found:
        prior, posterior = np.array(tokens["prior_entropy"]), np.array(tokens["posterior_entropy"])
        top = max(prior.max(), posterior.max(), 1e-3)
        axes[0, 0].hist(
            prior, bins=40, range=(0, top), histtype="step", color=colors[model], label=f"{model} prior"
        )
        axes[0, 0].hist(
            posterior,
            bins=40,
            range=(0, top),
            histtype="step",
            ls="--",
            color=colors[model],
            label=f"{model} posterior",
        )
        kl = np.array(tokens["kl"])
        axes[0, 1].hist(
            kl, bins=40, histtype="step", color=colors[model], label=f"{model}: mean {kl.mean():.2f}"
        )
    axes[0, 0].set_xlabel("entropy over source positions (nats)")
    axes[0, 0].set_ylabel("target tokens")
    axes[0, 1].set_xlabel("KL(posterior || prior) (nats)")
    for ax in axes[0]:
        ax.legend(frameon=False, fontsize=8)
    return fig


def reliance(reliance: pd.DataFrame) -> Figure:
    """The source-reliance estimate by target position (the reliance table's means over
    seeds): how much each model still reads its source as the sentence goes on."""
    colors = palette(reliance.model)
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    shown = reliance[(reliance.position > 0) & (reliance.tokens >= 20)]  # positions enough sentences reach
    for model in dict.fromkeys(reliance.model):
        rows = shown[shown.model == model]
        ax.plot(rows.position, rows.difference, marker="o", ms=3, color=colors[model], label=model)
    ax.axhline(0, color="#888888", lw=0.8)
    ax.set_xlabel("target position (validation set; positions with at least 20 tokens)")
    ax.set_ylabel("log p(y | x) - log mean p(y | x') (nats/token)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    legend_below(fig, ax)
    return fig


USAGE = {
    "stay": "mass on stay",
    "learned": "mass on learned components",
    "source": "mass on the source",
    "mi": "mixing: I(step; candidate) per head (nats)",
}


def mixture_usage(metrics: dict[str, pd.DataFrame]) -> Figure:
    """Per epoch, on validation: the mass each mixture model puts on stay, on its learned
    components and on the source, and how much its heads mix: the mutual information
    between the step and the candidate, averaged over heads."""
    series = [
        (model, column.removesuffix(".stay"), m)
        for model, m in metrics.items()
        for column in m.columns
        if column.endswith(".stay")
    ]
    if not series:
        return empty("No mixture model in this experiment.")
    colors = palette(metrics)
    fig, axes = plt.subplots(1, len(USAGE), figsize=(4 * len(USAGE), 4), layout="constrained")
    styles = ["-", "--", ":", "-."]
    for model, name, m in series:
        names = [n for mm, n, _ in series if mm == model]
        style = styles[names.index(name) % len(styles)]
        for ax, stat in zip(axes, USAGE):
            label = f"{model} {name.replace('_', ' ')}"
            ax.plot(m.epoch, m[f"{name}.{stat}"], style, marker="o", ms=3, color=colors[model], label=label)
    for ax, title in zip(axes, USAGE.values()):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_ylabel("validation mean")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False, fontsize=8)
    return fig


def label_points(ax: Axes, labels: list[str], xs: list[float], ys: list[float], gap: float = 13) -> None:
    """Name each point beside it, raising a label (by `gap` points at least above the one
    below it) where two points lie close enough for their names to overlap."""
    ax.figure.canvas.draw()  # the axes' final size and limits, for data -> points
    to_points = ax.transData + Affine2D().scale(72 / ax.figure.dpi)
    placed: list[tuple[float, float]] = []  # (x, label y) in points, of the labels so far
    for i in sorted(range(len(labels)), key=lambda i: ys[i]):
        x, y = to_points.transform((xs[i], ys[i]))
        near = [ly for lx, ly in placed if abs(lx - x) < 12 * len(labels[i])]  # ~ a label's width
        label_y = max([y + 5, *(ly + gap for ly in near)])
        placed.append((x, label_y))
        ax.annotate(labels[i], (xs[i], ys[i]), xytext=(5, label_y - y), textcoords="offset points")


def cost(cost: pd.DataFrame) -> Figure:
    """BLEU against parameters and against training time, one point per model."""
    colors = palette(cost.model)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True, layout="constrained")
    hours, unit = time_axis(cost.train_seconds)
    for ax, x, label in (
        (axes[0], cost.params / 1e6, "parameters (millions)"),
        (axes[1], hours, f"training time ({unit})"),
    ):
        for i, model in enumerate(cost.model):
            ax.scatter(x.iloc[i], cost.bleu.iloc[i], s=60, color=colors[model], label=model, zorder=3)
        label_points(ax, list(cost.model), list(x), list(cost.bleu))
        ax.set_xlabel(label)
    axes[0].set_ylabel(f"BLEU ({cost.testset.iloc[0]})" if len(cost) else "BLEU")
    return fig


VERDICTS = {  # how the claims figure marks each kind of verdict: (label, colour, filled)
    "difference": ("a difference (A or B better)", OKABE_ITO[4], True),
    "small difference": ("a difference inside the margin (and ≈)", OKABE_ITO[5], True),
    "equivalent": ("equivalent within the margin (≈)", OKABE_ITO[3], True),
    "undecided": ("undecided (?)", OKABE_ITO[7], False),
}
WITHDRAWN_MARK = ("withdrawn since (the table says why)", "black")
"""How the claims figure marks a withdrawn verdict, whatever its kind: (label, colour), its
point crossed out and its interval dashed."""


def claims(points: pd.DataFrame) -> Figure:
    """The README's claims at a glance: per contrast (a row of `points`: label,
    experiment, delta, lo, hi, margin, kind, the key of VERDICTS, withdrawn), B - A with
    its 95% interval in its pre-declared cell, the equivalence margin shaded, marked by
    verdict, or crossed out and dashed where withdrawn (WITHDRAWN_MARK); a rule between
    experiments; `empty` without a claim."""
    if points.empty:
        return empty("No published experiment makes a claim yet.")
    n = len(points)
    fig, ax = plt.subplots(figsize=(12, 1.4 + 0.34 * n), layout="constrained")
    ys = np.arange(n)
    for y, row in zip(ys, points.itertuples()):
        ax.fill_betweenx([y - 0.5, y + 0.5], -row.margin, row.margin, color="#e8e8e8", lw=0)
        _, color, filled = VERDICTS[row.kind]
        marker, line = "o", "-"
        if row.withdrawn:
            (_, color), filled, marker, line = WITHDRAWN_MARK, True, "X", "--"
        ax.plot([row.lo, row.hi], [y, y], color=color, lw=2, ls=line)
        ax.plot(row.delta, y, marker, ms=7, color=color, mfc=color if filled else "white")
    for y in ys[1:][points.experiment.values[1:] != points.experiment.values[:-1]]:
        ax.axhline(y - 0.5, color="#bbbbbb", lw=0.6)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(ys, points.label)
    ax.set_ylim(n - 0.5, -0.5)
    right = ax.secondary_yaxis("right")
    right.set_yticks(ys, points.experiment, fontsize=8, color="#555555")
    right.spines["right"].set_visible(False)
    right.tick_params(length=0)
    cells = points.cell.unique()
    cell = cells[0] if len(cells) == 1 else "each row's pre-declared cell"
    ax.set_xlabel(f"B - A, {cell} (points); shaded: the equivalence margin")
    standing = set(points.kind[~points.withdrawn])
    shown = [(*VERDICTS[kind], "o", "-") for kind in VERDICTS if kind in standing]
    if points.withdrawn.any():
        shown.append((*WITHDRAWN_MARK, True, "X", "--"))
    handles = [
        Line2D([], [], color=c, marker=marker, ls=line, mfc=c if filled else "white")
        for _, c, filled, marker, line in shown
    ]
    fig.legend(handles, [label for label, *_ in shown], loc="outside lower center", ncols=5, frameon=False)
    return fig
