"""The report's tables that are not scores: cost per model, and what each mixture
component does. `TABLES` declares each table once: what it is built from and where the
report shows it."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd


def table_html(table: pd.DataFrame) -> str:
    """A table as an HTML <table>, two decimals."""
    return table.to_html(index=False, border=0, float_format=lambda x: f"{x:.2f}", na_rep="")


def cost(manifests: list[dict[str, Any]], speeds: list[dict[str, Any]], scores: pd.DataFrame) -> pd.DataFrame:
    """Per model: size, training speed and time, decoding speed, peak memory, and its
    BLEU on the first test set (so the cost scatter needs nothing else)."""
    rows = []
    for manifest, speed in zip(manifests, speeds):
        rows.append(
            {
                "model": manifest["model"],
                "params": manifest["params"],
                "steps": manifest["steps"],
                "train_tokens_per_s": round(manifest["tokens_per_s"], 1),
                "train_seconds": round(manifest["seconds"], 1),
                "greedy_sentences_per_s": round(speed["greedy_sentences_per_s"], 1),
                "beam_sentences_per_s": round(speed["beam_sentences_per_s"], 1),
                "train_peak_rss_mb": round(manifest["peak_memory"]["rss_mb"], 1),
                "decode_peak_rss_mb": round(speed["peak_memory"]["rss_mb"], 1),
                "device": manifest["device"],
            }
        )
    first = scores[scores.testset == scores.testset.iloc[0]]
    return pd.DataFrame(rows).merge(first[["model", "testset", "bleu"]], on="model", how="left")


def components(analyses: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per mixture component: its mean responsibility and the tokens read while
    it led, for every mixture of every model that has one."""
    rows = []
    for analysis in analyses:
        for mixture, stats in analysis["components"].items():
            for component, usage in enumerate(stats["usage"]):
                top = stats["top_tokens"].get(str(component), [])
                rows.append(
                    {
                        "model": analysis["model"],
                        "weights": mixture,
                        "entropy": round(stats["entropy"], 3),
                        "component": "stay" if component == 0 else component,
                        "usage": usage,
                        "led": stats["led"].get(str(component), 0),
                        "top_tokens": " ".join(f"{piece}({n})" for piece, n in top),
                    }
                )
    return pd.DataFrame(
        rows, columns=["model", "weights", "entropy", "component", "usage", "led", "top_tokens"]
    )


def components_html(table: pd.DataFrame, per_mixture: int = 12) -> str:
    """The components that led most often, per mixture; the full table is in the TSV."""
    parts = []
    for (model, mixture), rows in table.groupby(["model", "weights"], sort=False):
        top = rows[rows.led > 0].sort_values("led", ascending=False).head(per_mixture)
        parts.append(
            f"<h3>{html.escape(model)}: {html.escape(mixture.replace('_', ' '))} "
            f"(mean entropy {rows.entropy.iloc[0]:.2f} nats)</h3>"
            + table_html(top[["component", "usage", "led", "top_tokens"]])
        )
    return "".join(parts) or "<p>No mixture model in this experiment.</p>"


@dataclass(frozen=True)
class Table:
    """A table of the study: tables/<name>.tsv, built by `mixnmt table <name>`."""

    build: Callable[..., pd.DataFrame]  # keyword arguments: the loaded inputs
    inputs: tuple[str, ...]  # kinds of mixnmt.inputs.INPUTS
    section: str  # the report section that shows it (mixnmt.report.SECTIONS)
    html: Callable[[pd.DataFrame], str] = table_html  # how report.html shows it

    @property
    def help(self) -> str:
        return (self.build.__doc__ or "").strip().splitlines()[0]


TABLES: dict[str, Table] = {
    "cost": Table(cost, ("manifests", "speeds", "scores"), "cost"),
    "components": Table(components, ("analyses",), "mixtures", components_html),
}
