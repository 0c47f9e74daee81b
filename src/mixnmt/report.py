"""The report a reader opens first: one self-contained HTML file (figures embedded) with
the scores, every figure and its caption, the tables, the run manifests and the config."""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mixnmt.evaluate import display_scores, read_json, signature_notes
from mixnmt.files import write_text

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
.caption { color: #444; } .note { color: #666; font-size: 0.85em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
"""


@dataclass(frozen=True)
class ReportInputs:
    scores: Path  # scores.tsv
    significance: list[Path]
    lengths: list[Path]
    cost: Path
    components: Path
    manifests: list[Path]
    figures: dict[str, Path]  # name -> PNG (an SVG lies next to each)
    captions: Path  # folder of <name>.rst captions (plain paragraphs)


def table_html(table: pd.DataFrame) -> str:
    return table.to_html(index=False, border=0, float_format=lambda x: f"{x:.2f}", na_rep="")


def caption(folder: Path, name: str) -> str:
    """The caption file's paragraphs as HTML."""
    text = (folder / f"{name}.rst").read_text(encoding="utf-8").strip()
    return "".join(f'<p class="caption">{html.escape(p)}</p>' for p in text.split("\n\n"))


def figure(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    svg = path.with_suffix(".svg").name
    return (
        f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'
        f'<figcaption class="note">Vector version: figures/{html.escape(svg)}</figcaption></figure>'
    )


def components_html(table: pd.DataFrame, per_mixture: int = 12) -> str:
    """The components that led most often, per mixture; the full table is in the TSV."""
    parts = []
    for (model, mixture), rows in table.groupby(["model", "mixture"], sort=False):
        top = rows[rows.led > 0].sort_values("led", ascending=False).head(per_mixture)
        parts.append(
            f"<h3>{html.escape(model)}: {html.escape(mixture.replace('_', ' '))} "
            f"(mean entropy {rows.entropy.iloc[0]:.2f} nats)</h3>"
            + table_html(top[["component", "usage", "led", "top_tokens"]])
        )
    return "".join(parts) or "<p>No mixture model in this experiment.</p>"


def write_report(output: Path, experiment: str, config: dict, inputs: ReportInputs) -> None:
    scores = pd.read_csv(inputs.scores, sep="\t")
    tests = [read_json(p) for p in inputs.significance]
    lengths = pd.concat([pd.read_csv(p, sep="\t") for p in inputs.lengths])
    cost = pd.read_csv(inputs.cost, sep="\t")
    components = pd.read_csv(inputs.components, sep="\t")
    manifests = [read_json(p) for p in inputs.manifests]
    commits = sorted(
        {str(m["git"]["commit"])[:10] + ("+dirty" if m["git"]["dirty"] else "") for m in manifests}
    )
    fig = {name: figure(path, name.replace("_", " ")) for name, path in inputs.figures.items()}
    cap = {name: caption(inputs.captions, name) for name in [*inputs.figures, "scores"]}

    sections = [
        (
            "scores",
            "Scores",
            cap["scores"]
            + table_html(display_scores(scores))
            + "".join(f'<p class="note">{html.escape(n)}</p>' for n in signature_notes(tests)),
        ),
        (
            "length",
            "BLEU by source length",
            fig["bleu_by_length"]
            + cap["bleu_by_length"]
            + table_html(
                lengths.pivot_table(
                    index=["testset", "bucket", "sentences"], columns="model", values="bleu", sort=False
                )
                .rename_axis(columns=None)
                .reset_index()
            ),
        ),
        ("curves", "Learning curves", fig["learning_curves"] + cap["learning_curves"]),
        ("alignments", "Alignments", fig["alignments"] + cap["alignments"]),
        (
            "mixtures",
            "Mixture components",
            fig["responsibilities"]
            + cap["responsibilities"]
            + fig["component_usage"]
            + cap["component_usage"]
            + components_html(components),
        ),
        ("cost", "Size and cost", fig["cost"] + cap["cost"] + table_html(cost)),
        (
            "runs",
            "Runs",
            "".join(
                f"<details><summary>{html.escape(m['model'])}: manifest</summary>"
                f"<pre>{html.escape(json.dumps(m, indent=2))}</pre></details>"
                for m in manifests
            ),
        ),
        ("config", "Configuration", f"<pre>{html.escape(json.dumps(config, indent=2))}</pre>"),
    ]
    nav = "".join(f'<a href="#{anchor}">{title}</a>' for anchor, title, _ in sections)
    body = "".join(f'<h2 id="{anchor}">{title}</h2>{content}' for anchor, title, content in sections)
    page = (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>mixnmt: {html.escape(experiment)}</title><style>{STYLE}</style></head><body>"
        f"<h1>mixnmt: {html.escape(experiment)}</h1>"
        f'<p class="note">Attention as a mixture model: where should its components come from? '
        f"Models: {html.escape(', '.join(scores.model.unique()))}. "
        f"Code: {html.escape(', '.join(commits))}.</p><nav>{nav}</nav>{body}</body></html>\n"
    )
    write_text(output, page)
