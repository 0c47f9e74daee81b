"""What people read: the score table formatted (for report.html and scores.md), and the
report a reader opens first, one self-contained HTML file (figures embedded) with the
scores, every figure and its caption, the tables, the run manifests and the config."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mixnmt.compare import ALPHA, Statistic, statistic_of
from mixnmt.figures import FIGURES
from mixnmt.files import read_json, read_table, write_text
from mixnmt.inputs import INPUTS
from mixnmt.lineage import refuse_foreign
from mixnmt.provenance import EMPTY_KEY, INPUTS_KEY, code_version, made_from, png_text, version
from mixnmt.runs import ADDED, ANALYSIS_ADDED
from mixnmt.tables import TABLES, table_html

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
nav a { margin-right: 1em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; display: block; overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
.caption { color: #444; } .note { color: #666; font-size: 0.85em; }
.warning { background: #fff3cd; border: 1px solid #e0c36c; padding: 0.5em 0.8em; }
.glance { font-size: 1.15em; font-weight: 600; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
"""


def count(n: float) -> str:
    """A parameter count for people: 7.6M, 54k."""
    if pd.isna(n):
        return ""
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k"


def p_text(p: float, digits: int = 3) -> str:
    """A p-value as "p=0.020", or as "p<0.001" where it would round to zero at `digits`."""
    floor = 10.0**-digits
    return f"p<{floor:.{digits}f}" if p < floor / 2 else f"p={p:.{digits}f}"


def format_score(row: pd.Series, key: str) -> str:
    """A metric as "score ± 95% interval (p=...)"; no p for the baseline itself."""
    if pd.isna(row.get(f"{key}_ci")):
        return f"{row[key]:.2f}"
    p = row[f"{key}_p"]
    return f"{row[key]:.2f} ± {row[f'{key}_ci']:.2f}" + ("" if pd.isna(p) else f" ({p_text(p)})")


def display_scores(table: pd.DataFrame) -> pd.DataFrame:
    """The score table as people read it, one row per test set and model: with one seed
    "score ± 95% interval (p against the baseline)", with several "mean ± sd over seeds";
    lowercased BLEU, length ratio and looping share (means), source reliance (nats/token)
    and sizes beside."""
    rows = []
    for (testset, model), runs in table.groupby(["testset", "model"], sort=False):
        first = runs.iloc[0]
        row = {"test set": testset, "model": model, "seeds": len(runs)}
        for key, name in (("bleu", "BLEU"), ("chrf", "chrF"), ("ter", "TER"), ("bleu_lc", "BLEU (lc)")):
            if len(runs) == 1:
                row[name] = format_score(first, key) if key != "bleu_lc" else f"{first[key]:.2f}"
            else:
                row[name] = f"{runs[key].mean():.2f} ± {runs[key].std():.2f}"
        for key, name, shown in (("length_ratio", "length", "{:.2f}"), ("looping", "looping", "{:.0%}")):
            value = runs[key].mean() if key in runs else float("nan")  # scored before they were
            row[name] = "" if pd.isna(value) else shown.format(value)
        reliance = runs["reliance"].mean() if "reliance" in runs else float("nan")
        row["reliance"] = "" if pd.isna(reliance) else f"{reliance:.3f}"
        row["parameters"] = count(first["params"])
        row["without embeddings"] = count(first.get("params_no_embeddings", float("nan")))
        rows.append(row)
    return pd.DataFrame(rows)


def signature_notes(tests: list[dict]) -> list[str]:
    """One note per test set (the signatures are the same for every seed)."""
    first = {t["testset"]: t for t in reversed(tests)}
    return [
        f"Paired bootstrap against {t['baseline']} on {testset}; signatures: "
        + "; ".join(f"{k.upper()} {sig}" for k, sig in t["signatures"].items())
        for testset, t in reversed(first.items())
    ]


def markdown_table(table: pd.DataFrame) -> str:
    """A table as Markdown, every cell as it is."""
    lines = ["| " + " | ".join(map(str, table.columns)) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(map(str, row)) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)


def markdown_scores(table: pd.DataFrame, tests: list[dict]) -> str:
    """The score table as Markdown, followed by the sacreBLEU signatures."""
    return markdown_table(display_scores(table)) + "\n\n" + "\n\n".join(signature_notes(tests)) + "\n"


METRIC_NAMES = {"chrf": "chrF", "bleu": "BLEU"}


def primary_cell(rows: pd.DataFrame) -> tuple[pd.Series, str] | None:
    """Of one contrast's rows (one per test set), the pre-declared one and its metric:
    the cell with a verdict (every other is "descriptive"); None if it has none."""
    for metric in METRIC_NAMES:
        chosen = rows[rows[f"{metric}_verdict"] != "descriptive"]
        if len(chosen):
            return chosen.iloc[0], metric
    return None


def verdict_kind(row: pd.Series, metric: str) -> str | None:
    """What a contrast's `metric` cell finds: "difference" (A or B better), "small
    difference" (better, and the two one-sided tests put the difference inside the margin
    too), "equivalent" (within the margin) or "undecided"; None where it is descriptive."""
    verdict = row[f"{metric}_verdict"]
    if verdict in ("A better", "B better"):
        return "small difference" if row[f"{metric}_tost_p_holm"] < ALPHA else "difference"
    if verdict.startswith("equivalent"):
        return "equivalent"
    return "undecided" if verdict == "undecided" else None


def finding(row: pd.Series, metric: str, statistic: Statistic) -> str:
    """What a contrast's primary cell says by its verdict: a difference with the p of the
    contrasts' `statistic` and Holm's (where the two one-sided tests put it inside the
    margin too, a small one, with their Holm p), equivalence within the margin with the
    two one-sided tests' Holm p, or undecided with what these runs could detect at Holm's
    strictest level."""
    name, a, b, delta = METRIC_NAMES[metric], row.a, row.b, row[f"{metric}_delta"]
    where, ci = f"{name} on {row.testset}", row[f"{metric}_ci"]
    verdict, kind = row[f"{metric}_verdict"], verdict_kind(row, metric)
    if min(row.seeds_a, row.seeds_b) < 2:
        return f"{where}: B - A {delta:+.2f} from one run of a model, no claim"
    if kind in ("difference", "small difference"):
        winner, loser = (b, a) if verdict == "B better" else (a, b)
        tost = row[f"{metric}_tost_p_holm"]
        small = f", by less than the margin (TOST Holm {p_text(tost)})" if kind == "small difference" else ""
        return (
            f"{winner} beats {loser} in {where} by {abs(delta):.2f} points (B - A {delta:+.2f}, "
            f"95% [{ci}]; {statistic.label} {p_text(row[f'{metric}_p'], 4)}, "
            f"Holm {p_text(row[f'{metric}_p_holm'])}){small}"
        )
    if kind == "equivalent":
        return (
            f"{a} and {b} are {verdict} in {where} (B - A {delta:+.2f}, 95% [{ci}]; "
            f"TOST Holm {p_text(row[f'{metric}_tost_p_holm'])})"
        )
    return (
        f"{where} cannot tell {a} and {b} apart (B - A {delta:+.2f}, 95% [{ci}], Holm "
        f"{p_text(row[f'{metric}_p_holm'])}); these runs would detect {row[f'{metric}_mde_holm']:.2f} "
        "points at 80% power, whatever the other contrasts show"
    )


def answer(contrasts: pd.DataFrame, statistic: Statistic) -> list[str]:
    """The study's answer, one sentence per contrast (B against A), generated from the
    contrast table's primary cells, tested by `statistic` (nothing in it is written by
    hand); the other test sets and metrics are descriptive and make no claim."""
    sentences, pairs = [], contrasts.groupby(["a", "b"], sort=False)
    for (a, b), rows in pairs:
        found = primary_cell(rows)
        runs = f"{int(rows.seeds_a.iloc[0])} and {int(rows.seeds_b.iloc[0])} runs"
        if found:
            said = finding(*found, statistic)
        else:
            said = "no pre-declared test set among its rows, no claim"
        sentences.append(f"{b} against {a} ({runs}): {said}.")
    return sentences


def abbreviated(commit: str) -> str:
    """A commit as people read it: its first 12 hex digits, `+dirty` kept."""
    sha, dirty, _ = commit.partition("+dirty")
    return sha[:12] + dirty


def glance(contrasts: pd.DataFrame) -> str:
    """The answer in one line, from the same primary cells as `answer`: how many contrasts
    find a difference (and which way), an equivalence, or neither, and how many make no
    claim (one run of a model)."""
    said = {  # kind -> what one contrast, and several, do
        "difference": ("finds a difference", "find a difference"),
        "equivalent": ("finds an equivalence", "find an equivalence"),
        "undecided": ("finds neither", "find neither"),
        "no claim": ("makes no claim (one run of a model)", "make no claim (one run of a model)"),
    }
    found: dict[str, list[str]] = {kind: [] for kind in said}
    cells, pairs = [], contrasts.groupby(["a", "b"], sort=False)
    for (a, b), rows in pairs:
        primary = primary_cell(rows)
        if primary is None or min(rows.seeds_a.iloc[0], rows.seeds_b.iloc[0]) < 2:
            found["no claim"].append(f"{b} against {a}")
            continue
        row, metric = primary
        cells.append(f"{METRIC_NAMES[metric]} on {row.testset}")
        verdict = row[f"{metric}_verdict"]
        if verdict in ("A better", "B better"):
            found["difference"].append(f"{b} over {a}" if verdict == "B better" else f"{a} over {b}")
        elif verdict.startswith("equivalent"):
            found["equivalent"].append(f"{a} and {b}")
        else:
            found["undecided"].append(f"{b} against {a}")
    parts = [f"{len(p)} {said[kind][len(p) > 1]} ({'; '.join(p)})" for kind, p in found.items() if p]
    where = " and ".join(dict.fromkeys(cells)) or "no pre-declared cell"
    return f"At a glance ({where}): of {pairs.ngroups} contrasts, {'; '.join(parts)}."


def answer_html(contrasts: pd.DataFrame, config: dict) -> str:
    """The first section: the answer, and a warning on top where the run was capped."""
    capped = config.get("max_steps")
    warning = (
        f'<p class="warning">A capped run (max_steps: {capped}): a smoke test of the pipeline, '
        "not a result.</p>"
        if capped
        else ""
    )
    if contrasts.empty:
        return warning + "<p>No contrasts in this experiment (analysis.contrasts).</p>"
    statistic = statistic_of(config)
    items = "".join(f"<li>{html.escape(s)}</li>" for s in answer(contrasts, statistic))
    glanced = f'<p class="glance">{html.escape(glance(contrasts))}</p>'
    source = f"From the Contrasts table below (its intervals and p: {statistic.name})."
    return warning + glanced + f"<ul>{items}</ul>" + f'<p class="note">{html.escape(source)}</p>'


SECTIONS = {  # anchor -> title, in the order of the report; figures and tables name theirs
    "answer": "The answer",
    "scores": "Scores",
    "contrasts": "Contrasts",
    "reliance": "Source reliance",
    "samples": "Sample translations",
    "length": "BLEU by source length",
    "curves": "Learning curves",
    "alignments": "Alignments",
    "mixtures": "Mixture components",
    "cost": "Size and cost",
    "runs": "Runs",
    "config": "Configuration",
}


@dataclass(frozen=True)
class ReportInputs:
    scores: Path  # scores.tsv
    significance: list[Path]
    lengths: list[Path]
    manifests: list[Path]
    figures: dict[str, Path]  # name -> PNG (an SVG next to each) of each figure shown: all of FIGURES
    tables: dict[str, Path]  # name -> TSV of each table shown: all of TABLES
    captions: Path  # folder of <name>.rst captions (plain paragraphs)

    def files(self) -> list[Path]:
        """Every file the report is made from: its inputs and the captions it shows."""
        captions = [self.captions / f"{name}.rst" for name in [*self.figures, "scores"]]
        return [
            self.scores,
            *self.significance,
            *self.lengths,
            *self.manifests,
            *self.figures.values(),
            *self.tables.values(),
            *captions,
        ]

    def record(self) -> dict[str, str]:
        """sha256 of `files`, the captions named where the project keeps them
        (workflow/report/<name>.rst), not where Snakemake's source cache copied them for
        this run: a report remade from the same inputs is the same, byte for byte."""
        return {
            f"workflow/report/{Path(p).name}" if Path(p).parent == self.captions else p: digest
            for p, digest in made_from(self.files()).items()
        }


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


def shown(path: Path, name: str, captions: Path) -> str:
    """Figure `name` with its caption; for one with nothing to show, the line saying why."""
    why = png_text(path, EMPTY_KEY)
    if why is not None:
        return f'<p class="note">{html.escape(why)}</p>'
    return figure(path, name.replace("_", " ")) + caption(captions, name)


LONG_TABLE = 20
"""Rows beyond which the report folds a table under a line naming it."""


def folded(name: str, part: str, rows: int) -> str:
    """Table `name`'s HTML, folded under one line when it has more than LONG_TABLE rows:
    part one's mixing and job tables ran to 200 rows each between the figures."""
    if rows <= LONG_TABLE or not part:
        return part
    line = f"{name.replace('_', ' ')} table: {rows} rows (tables/{name}.tsv)"
    return f"<details><summary>{html.escape(line)}</summary>{part}</details>"


RUN_ONLY = ("mirror", "container", "allow_cpu", "torch_build")
"""Keys that say where and how a run runs (where the checksum-pinned files came from, the
image, whether a CPU may train it, the PyTorch build of its environments): no result
depends on them."""


README_ONLY = ("references",)
"""Analysis settings that only the published results read (`mixnmt readme`): nothing in the
report depends on them."""


def reported(config: dict) -> dict:
    """The configuration as the report shows and records it: without RUN_ONLY's keys and
    README_ONLY's analysis settings, and without a training setting added later at the
    value runs had before it (`runs.ADDED`), as a run's definition leaves it out, nor an
    analysis setting added later at the value reports had (ANALYSIS_ADDED): adding a
    setting changes no published report."""
    train = {k: v for k, v in config.get("train", {}).items() if k not in ADDED or v != ADDED[k]}
    analysis = {
        k: v
        for k, v in config.get("analysis", {}).items()
        if k not in README_ONLY and (k not in ANALYSIS_ADDED or v != ANALYSIS_ADDED[k])
    }
    return (
        {key: value for key, value in config.items() if key not in RUN_ONLY}
        | ({"train": train} if "train" in config else {})
        | ({"analysis": analysis} if "analysis" in config else {})
    )


CONFIG_INPUT = "config"
"""The report's record of its inputs names the configuration under this key (`config_digest`)."""


def config_digest(config: dict) -> str:
    """sha256 of a configuration's canonical JSON (key order never counts)."""
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def inputs_record(record: dict[str, str]) -> str:
    """The report's record of what it was made from, as an HTML element (`read_inputs`)."""
    text = json.dumps(record, sort_keys=True).replace("</", "<\\/")
    return f'<script type="application/json" id="{INPUTS_KEY}">{text}</script>'


def read_inputs(page: str) -> dict[str, str] | None:
    """The record `inputs_record` left in a report page; None if it has none."""
    found = re.search(f'<script type="application/json" id="{INPUTS_KEY}">(.*?)</script>', page, re.S)
    return json.loads(found[1]) if found else None


def write_report(
    output: Path, experiment: str, config: dict, inputs: ReportInputs, expected: dict[str, str] | None = None
) -> None:
    """The report, recording the sha256 of every file it shows and of `config`; its
    per-run inputs must be runs of `expected`, if given."""
    refuse_foreign([inputs.scores, *inputs.significance, *inputs.lengths, *inputs.manifests], expected)
    scores = read_table(inputs.scores)
    tests = [read_json(p) for p in inputs.significance]
    lengths = INPUTS["lengths"].load(inputs.lengths)
    manifests = [read_json(p) for p in inputs.manifests]
    trained = sorted({str(version(m["git"])) for m in manifests})
    content = {section: "" for section in SECTIONS}
    content["answer"] = answer_html(read_table(inputs.tables["contrasts"]), config)
    content["scores"] = (
        caption(inputs.captions, "scores")
        + table_html(display_scores(scores))
        + "".join(f'<p class="note">{html.escape(n)}</p>' for n in signature_notes(tests))
    )
    for name, spec in FIGURES.items():
        part = shown(inputs.figures[name], name, inputs.captions)
        if part not in content[spec.section]:  # a section with nothing to show says why once
            content[spec.section] += part
    content["length"] += table_html(
        lengths.pivot_table(
            index=["testset", "bucket", "sentences"], columns="model", values="bleu", sort=False
        )
        .rename_axis(columns=None)
        .reset_index()
    )
    for name, spec in TABLES.items():
        table = read_table(inputs.tables[name]).drop(columns="commit")  # the page names it once
        content[spec.section] += folded(name, spec.html(table), len(table))
    content["runs"] = "".join(
        f"<details><summary>{html.escape(m['model'])}: manifest</summary>"
        f"<pre>{html.escape(json.dumps(m, indent=2))}</pre></details>"
        for m in manifests
    )
    content["config"] = f"<pre>{html.escape(json.dumps(config, indent=2))}</pre>"

    nav = "".join(f'<a href="#{anchor}">{title}</a>' for anchor, title in SECTIONS.items())
    body = "".join(f'<h2 id="{anchor}">{title}</h2>{content[anchor]}' for anchor, title in SECTIONS.items())
    page = (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>mixnmt: {html.escape(experiment)}</title><style>{STYLE}</style></head><body>"
        f"<h1>mixnmt: {html.escape(experiment)}</h1>"
        f'<p class="note">Attention as a mixture model: where should its components come from? '
        f"Models: {html.escape(', '.join(scores.model.unique()))}. "
        f"Trained with code {html.escape(', '.join(map(abbreviated, trained)))}; "
        f"scored and reported with {html.escape(abbreviated(str(code_version())))} "
        "(the full commits are in the runs' manifests).</p>"
        f"<nav>{nav}</nav>{body}"
        + inputs_record(inputs.record() | {CONFIG_INPUT: config_digest(config)})
        + "</body></html>\n"
    )
    write_text(output, page)
