"""The study's figures, each declared once: what it is drawn from (kinds of
mixnmt.inputs.INPUTS), by which function of mixnmt.plots, and which section of the report
shows it; its caption is workflow/report/<name>.rst. The CLI (`mixnmt plot <name>`), the
workflow's rules and both reports follow this table. It imports no plotting library, so
that reading it costs nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Figure:
    """figures/<name>.png and .svg."""

    help: str
    draw: str  # the function of mixnmt.plots, called with the loaded inputs as keywords
    inputs: tuple[str, ...]
    section: str  # of mixnmt.report.SECTIONS

    def __call__(self, **inputs: Any):
        from mixnmt import plots

        return getattr(plots, self.draw)(**inputs)


FIGURES: dict[str, Figure] = {
    "learning_curves": Figure(
        "validation loss and BLEU per epoch and per second", "learning_curves", ("metrics",), "curves"
    ),
    "bleu_by_length": Figure("BLEU per source-length bucket", "bleu_by_length", ("lengths",), "length"),
    "alignments": Figure(
        "source x target attention on fixed sentences", "alignments", ("analyses",), "alignments"
    ),
    "alignment_errors": Figure(
        "alignment error rate of each model's source weights against silver word alignments",
        "alignment_errors",
        ("alignment_errors",),
        "alignments",
    ),
    "posteriors": Figure(
        "per target token: entropy of the prior and the posterior over source positions, and their KL",
        "posteriors",
        ("alignment_runs",),
        "alignments",
    ),
    "responsibilities": Figure(
        "step x component responsibilities on fixed sentences", "responsibilities", ("analyses",), "mixtures"
    ),
    "component_usage": Figure(
        "mean responsibility of every mixture component", "component_usage", ("analyses",), "mixtures"
    ),
    "reliance": Figure(
        "how much the true source raises each token's probability over other sources, by position",
        "reliance",
        ("reliance",),
        "reliance",
    ),
    "mixing": Figure(
        "per head: mutual information between step and candidate, and per-step entropy",
        "mixing",
        ("analyses",),
        "mixtures",
    ),
    "use": Figure(
        "mass against use: each candidate group's mass against the loss rise without it",
        "use",
        ("use",),
        "mixtures",
    ),
    "mixture_usage": Figure(
        "mass on stay, learned components and source, and how much the heads mix, per epoch",
        "mixture_usage",
        ("metrics",),
        "mixtures",
    ),
    "cost": Figure("BLEU against parameters and training time", "cost", ("cost",), "cost"),
}
