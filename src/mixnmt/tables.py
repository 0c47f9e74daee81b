"""The report's tables that are not scores: the contrasts of the grid, source reliance,
sample translations, learning curves, cost per model and per job, and what each mixture
component does. `TABLES` declares each table once: what it is built from and where the
report shows it."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mixnmt import MixnmtError
from mixnmt.alignment import error_rate, parse


def table_html(table: pd.DataFrame) -> str:
    """A table as an HTML <table>, two decimals; p-values (`*_p`) three, so that the
    bootstrap's floor of 0.001 does not read as 0.00; nothing for a table without rows."""
    if table.empty:
        return ""
    three = {c: (lambda x: "" if pd.isna(x) else f"{x:.3f}") for c in table.columns if str(c).endswith("_p")}
    return table.to_html(
        index=False, border=0, float_format=lambda x: f"{x:.2f}", na_rep="", formatters=three
    )


def cost(manifests: list[dict[str, Any]], speeds: list[dict[str, Any]], scores: pd.DataFrame) -> pd.DataFrame:
    """Per model: size, training speed and time, decoding speed, peak memory, and its
    BLEU on the first test set (so the cost scatter needs nothing else)."""
    rows = []
    for manifest, speed in zip(manifests, speeds):
        rows.append(
            {
                "model": manifest["model"],
                "params": manifest["params"],
                "params_no_embeddings": manifest["params_no_embeddings"],
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
    bleu = first.groupby(["model", "testset"], sort=False, as_index=False).bleu.mean()  # over seeds
    return pd.DataFrame(rows).merge(bleu, on="model", how="left")


def jobs(benchmarks: pd.DataFrame) -> pd.DataFrame:
    """Per job that runs a model (Snakemake's benchmark files): wall time, CPU time, mean
    CPU load and peak memory."""
    table = benchmarks.rename(
        columns={
            "s": "seconds",
            "cpu_time": "cpu_seconds",
            "mean_load": "mean_load_percent",
            "max_rss": "peak_rss_mb",
        }
    )
    columns = ["job", "seconds", "cpu_seconds", "mean_load_percent", "peak_rss_mb"]
    return table[columns].sort_values("job", ignore_index=True).round(1)


def contrasts(contrast_runs: list[dict[str, Any]], manifests: list[dict[str, Any]]) -> pd.DataFrame:
    """Per contrast (B against A) and test set, with the training run as the unit: each
    model's runs and parameters without embeddings (millions: a contrast should change one
    thing, at about equal size), and per metric both models' mean score, B minus A with
    its 95% interval and p (by analysis.statistic), its Holm-adjusted p and that of the two
    one-sided tests of equivalence (adjusted together: `compare.holm`) with the number of
    hypotheses adjusted over, the minimum detectable effect of the test alone and at
    Holm's strictest level, and the verdict (the Holm columns in primary cells only; the
    rest say "descriptive"), the secondary bootstrap of runs and sentences, and last
    sacreBLEU's paired-bootstrap p of each seed (the test sentences' sampling only)."""
    params = {m["model"]: round(m["params_no_embeddings"] / 1e6, 2) for m in manifests}
    rows = []
    for c in contrast_runs:
        for r in c["contrasts"]:
            row = {key: r[key] for key in ("testset", "a", "b", "seeds_a", "seeds_b")}
            row |= {"params_a": params.get(r["a"]), "params_b": params.get(r["b"])}
            for key in ("bleu", "chrf"):
                row |= {f"{key}_{k}": r[f"{key}_{k}"] for k in ("a", "b", "delta")}
                row[f"{key}_ci"] = interval(r[f"{key}_low"], r[f"{key}_high"])
                judged = ("p", "p_holm", "tost_p_holm", "hypotheses", "mde", "mde_holm", "verdict")
                row |= {f"{key}_{k}": r[f"{key}_{k}"] for k in judged}
                row[f"{key}_boot_ci"] = interval(r[f"{key}_boot_low"], r[f"{key}_boot_high"])
                row[f"{key}_boot_p"] = r[f"{key}_boot_p"]
                row[f"{key}_p_seeds"] = " ".join(f"{p:.3f}" for p in r[f"{key}_p_seeds"])
            rows.append(row)
    if not rows:
        return pd.DataFrame(columns=["testset", "a", "b", "seeds_a", "seeds_b"])
    return pd.DataFrame(rows).astype({f"{key}_hypotheses": "Int64" for key in ("bleu", "chrf")})


def interval(low: float | None, high: float | None) -> str:
    """An interval as the tables write it ("-0.50 .. +1.20"); empty where undefined."""
    return "" if low is None else f"{low:+.2f} .. {high:+.2f}"


CONTRAST_HEADERS = {"testset": "test set", "a": "A", "b": "B", "seeds_a": "runs A", "seeds_b": "runs B"} | {
    "params_a": "params A (M)",
    "params_b": "params B (M)",
}
METRIC_HEADERS = {  # per metric, under its name
    "a": "A",
    "b": "B",
    "delta": "B - A",
    "ci": "95% interval",
    "p": "p",
    "p_holm": "Holm p",
    "tost_p_holm": "equivalence Holm p",
    "hypotheses": "Holm over (hypotheses)",
    "mde": "detectable",
    "mde_holm": "detectable (Holm)",
    "verdict": "verdict",
    "boot_ci": "bootstrap 95%",
    "boot_p": "bootstrap p",
    "p_seeds": "p per seed (its sentences only)",
}


def contrasts_html(table: pd.DataFrame) -> str:
    """The contrast table under readable headers, each metric's columns under its name,
    the metric claims rest on first (in view without scrolling); differences signed,
    p-values with three decimals."""
    if table.empty:
        return table_html(table)
    names = {"bleu": "BLEU", "chrf": "chrF"}
    claimed = [m for m in names if (table[f"{m}_verdict"] != "descriptive").any()]  # the primary metric
    metrics = {m: names[m] for m in [*claimed, *(m for m in names if m not in claimed)]}
    shown = table[[*CONTRAST_HEADERS, *(f"{m}_{c}" for m in metrics for c in METRIC_HEADERS)]].copy()
    for m in metrics:
        for column in ("p", "p_holm", "tost_p_holm", "boot_p"):
            shown[f"{m}_{column}"] = shown[f"{m}_{column}"].map(lambda x: "" if pd.isna(x) else f"{x:.3f}")
        for column in ("mde", "mde_holm"):
            shown[f"{m}_{column}"] = shown[f"{m}_{column}"].map(lambda x: "" if pd.isna(x) else f"{x:.2f}")
        shown[f"{m}_hypotheses"] = shown[f"{m}_hypotheses"].map(lambda x: "" if pd.isna(x) else f"{x:.0f}")
        shown[f"{m}_delta"] = shown[f"{m}_delta"].map(lambda x: "" if pd.isna(x) else f"{x:+.2f}")
    shown.columns = pd.MultiIndex.from_tuples(
        [("", h) for h in CONTRAST_HEADERS.values()]
        + [(name, h) for name in metrics.values() for h in METRIC_HEADERS.values()]
    )
    return shown.to_html(index=False, border=0, float_format=lambda x: f"{x:.2f}", na_rep="")


def over_seeds(runs: pd.DataFrame, keys: list[str], means: list[str], spread: str) -> pd.DataFrame:
    """Per `keys`: how many seeds, the mean over seeds of each column of `means`, and the
    standard deviation over seeds of `spread` (`<spread>_sd`)."""
    columns = {column: (column, "mean") for column in means}
    return (
        runs.groupby(keys, sort=False)
        .agg(seeds=("seed", "nunique"), **columns, **{f"{spread}_sd": (spread, "std")})
        .round(4)
        .reset_index()
    )


def reliance(reliance_runs: pd.DataFrame) -> pd.DataFrame:
    """Per model and target position (0: all tokens), the tokens there, the validation
    loss with the true source and the source-reliance estimate (mixnmt.reliance), as means
    over seeds with the estimate's standard deviation over seeds (each run's interval over
    sentences is in its own reliance/<model>/seed<n>.tsv)."""
    table = over_seeds(
        reliance_runs, ["model", "position"], ["tokens", "loss_true", "difference"], "difference"
    )
    return table.astype({"tokens": int})


def use(use_runs: pd.DataFrame) -> pd.DataFrame:
    """Mass against use: per mixture and candidate group, its mean responsibility on the
    validation set and the rise of the validation loss when it is knocked out, as means
    over seeds (with the standard deviation of the rise over seeds)."""
    return over_seeds(use_runs, ["model", "weights", "group"], ["mass", "change"], "change")


def reliance_html(table: pd.DataFrame, positions: int = 12) -> str:
    """Overall and the first target positions, one column per model."""
    shown = table[table.position <= positions].pivot_table(
        index="position", columns="model", values="difference", sort=False
    )
    return table_html(shown.rename_axis(columns=None).reset_index().replace({"position": {0: "all"}}))


def curves(metrics: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per model and epoch (first seed): training and validation loss, validation BLEU and
    the time so far; one long table, which DVC's plots overlay by model."""
    columns = ["epoch", "step", "train_loss", "valid_loss", "valid_bleu", "seconds"]
    return pd.concat([m[columns].assign(model=model) for model, m in metrics.items()], ignore_index=True)[
        ["model", *columns]
    ]


def curves_html(table: pd.DataFrame) -> str:
    """Validation loss and BLEU, one row per epoch and a column per model, folded away."""
    parts = []
    for column, title in (("valid_loss", "validation loss"), ("valid_bleu", "validation BLEU")):
        shown = table.pivot_table(index="epoch", columns="model", values=column, sort=False)
        parts.append(
            f"<details><summary>{title} per epoch</summary>"
            + table_html(shown.rename_axis(columns=None).reset_index())
            + "</details>"
        )
    return "".join(parts)


def samples(analyses: list[dict[str, Any]]) -> pd.DataFrame:
    """The fixed test sentences: source, reference, and every model's translation."""
    rows = []
    for analysis in analyses:
        for sentence in analysis["sentences"]:
            text = sentence["text"]
            rows.append({"sentence": sentence["index"], "model": "source", "text": text["source"]})
            rows.append({"sentence": sentence["index"], "model": "reference", "text": text["reference"]})
            rows.append(
                {"sentence": sentence["index"], "model": analysis["model"], "text": text["translation"]}
            )
    return pd.DataFrame(rows, columns=["sentence", "model", "text"]).drop_duplicates(ignore_index=True)


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


def mixing(analyses: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per head of every mixture, over the test set: its mean per-step entropy,
    the mutual information between step and candidate, how many candidates lead at least
    1% of the steps, and its mean entropy over source positions (where it reads them)."""
    columns = ["model", "weights", "head", "candidates", "entropy", "mi", "leading", "source_entropy"]
    rows = [
        {
            "model": analysis["model"],
            "weights": mixture,
            "head": head,
            "candidates": len(stats["usage"]),
            **{stat: values[head] for stat, values in stats["heads"].items()},
        }
        for analysis in analyses
        for mixture, stats in analysis["components"].items()
        for head in range(len(stats["heads"].get("mi", [])))
    ]
    return pd.DataFrame(rows, columns=columns)


def alignment_errors(alignment_runs: list[dict[str, Any]], silver: dict[str, Any]) -> pd.DataFrame:
    """Per model and source weight: the alignment error rate, precision and recall of its
    word alignments (read on the references) against the silver ones, over the sentences
    whose word counts agree, as means over seeds with the rate's standard deviation over
    seeds; of a Transformer's heads the mean and each run's best (`best_heads` names them
    with their seeds). One row saying why when the silver alignments were skipped."""
    columns = ["model", "weights", "seeds", "sentences", "aer", "precision", "recall", "aer_sd", "best_heads"]
    if "skipped" in silver:
        return pd.DataFrame([{"model": "", "weights": f"skipped: {silver['skipped']}"}], columns=columns)
    missing = [key for key in ("words", "sure", "possible") if key not in silver]
    if missing:
        raise MixnmtError(
            f"silver alignments: no {', '.join(missing)} (not made by mixnmt silver?); remake them"
        )
    rows = []
    for aligned in alignment_runs:
        name, seed = aligned["model"], aligned["run"]["seed"]
        if len(aligned["words"]) != len(silver["words"]):
            n, m = len(aligned["words"]), len(silver["words"])
            raise MixnmtError(f"{name} seed {seed}: alignments of {n} sentences, the silver ones of {m}")
        same = [i for i, words in enumerate(aligned["words"]) if words == silver["words"][i] and words[0]]
        sure, possible = ([parse(links[i]) for i in same] for links in (silver["sure"], silver["possible"]))
        best: dict[str, dict[str, Any]] = {}  # per layer x head weight, its best head
        for weights, links in aligned["links"].items():
            try:
                scores = error_rate([parse(links[i]) for i in same], sure, possible)
            except MixnmtError as e:
                raise MixnmtError(f"{name} seed {seed}, {weights}: {e}") from None
            row = {"model": name, "seed": seed, "weights": weights, "sentences": len(same), **scores}
            head = re.fullmatch(r"(.+) layer (\d+) head (\d+)", weights)
            if head is None:
                rows.append(row)
            elif head[1] not in best or scores["aer"] < best[head[1]]["aer"]:
                where = f"layer {head[2]}, head {head[3]}"
                best[head[1]] = row | {"weights": f"{head[1]} best head", "head": where}
        rows += best.values()
    if not rows:
        return pd.DataFrame(columns=columns)
    runs = pd.DataFrame(rows)
    table = over_seeds(runs, ["model", "weights"], ["aer", "precision", "recall"], "aer")
    table["sentences"] = runs.groupby(["model", "weights"], sort=False).sentences.max().to_numpy()
    heads = runs.dropna(subset=["head"]) if "head" in runs else runs.iloc[:0]
    named = {key: _seeds_of(group) for key, group in heads.groupby(["model", "weights"], sort=False)}
    table["best_heads"] = [named.get(key, "") for key in zip(table.model, table.weights)]
    return table.reindex(columns=columns).round(3)


def _seeds_of(runs: pd.DataFrame) -> str:
    """Each head of `runs` (its `head` column) with the seeds it was best in."""
    return "; ".join(
        f"{head} ({'seed' if len(seeds) == 1 else 'seeds'} {', '.join(map(str, seeds))})"
        for head, seeds in runs.groupby("head", sort=False).seed.agg(list).items()
    )


def posteriors(alignment_runs: list[dict[str, Any]]) -> pd.DataFrame:
    """Per model with a prior and a posterior over source positions, over the references'
    target tokens: the mean entropy of each and the mean and median KL(posterior ||
    prior), in nats (how much knowing the target word moves the alignment), as means over
    seeds with the mean KL's standard deviation over seeds."""
    rows = [
        {
            "model": aligned["model"],
            "seed": aligned["run"]["seed"],
            "tokens": len(tokens["kl"]),
            "prior_entropy": np.mean(tokens["prior_entropy"]),
            "posterior_entropy": np.mean(tokens["posterior_entropy"]),
            "kl": np.mean(tokens["kl"]),
            "kl_median": np.median(tokens["kl"]),
        }
        for aligned in alignment_runs
        if (tokens := aligned.get("tokens"))
    ]
    columns = ["model", "seeds", "tokens", "prior_entropy", "posterior_entropy", "kl", "kl_median", "kl_sd"]
    if not rows:
        return pd.DataFrame(columns=columns)
    runs = pd.DataFrame(rows)
    table = over_seeds(runs, ["model"], ["prior_entropy", "posterior_entropy", "kl", "kl_median"], "kl")
    table["tokens"] = runs.groupby("model", sort=False).tokens.max().to_numpy()
    return table.reindex(columns=columns).round(3)


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
    return "".join(parts)  # none: the section's figures say why


@dataclass(frozen=True)
class Table:
    """A table of the study: tables/<name>.tsv, built by `mixnmt table <name>`."""

    help: str  # one line, for `mixnmt table --help`
    build: Callable[..., pd.DataFrame]  # keyword arguments: the loaded inputs
    inputs: tuple[str, ...]  # kinds of mixnmt.inputs.INPUTS
    section: str  # the report section that shows it (mixnmt.report.SECTIONS)
    html: Callable[[pd.DataFrame], str] = table_html  # how report.html shows it


TABLES: dict[str, Table] = {
    "contrasts": Table(
        "each contrast B against A over runs: differences, intervals (analysis.statistic), Holm's verdicts",
        contrasts,
        ("contrast_runs", "manifests"),
        "contrasts",
        contrasts_html,
    ),
    "reliance": Table(
        "source reliance per model and target position, over seeds",
        reliance,
        ("reliance_runs",),
        "reliance",
        reliance_html,
    ),
    "samples": Table(
        "the fixed test sentences and every model's translation", samples, ("analyses",), "samples"
    ),
    "curves": Table(
        "losses, validation BLEU and time per epoch (first seed)", curves, ("metrics",), "curves", curves_html
    ),
    "cost": Table(
        "per model: size, training and decoding speed, peak memory and BLEU",
        cost,
        ("manifests", "speeds", "scores"),
        "cost",
    ),
    "jobs": Table(
        "wall and CPU time and peak memory of each job that runs a model", jobs, ("benchmarks",), "cost"
    ),
    "components": Table(
        "each mixture component's mean responsibility and the tokens read while it led",
        components,
        ("analyses",),
        "mixtures",
        components_html,
    ),
    "mixing": Table(
        "per mixture head: per-step entropy, mutual information between step and candidate",
        mixing,
        ("analyses",),
        "mixtures",
    ),
    "use": Table(
        "mass against use: each candidate group's responsibility and the loss rise without it",
        use,
        ("use_runs",),
        "mixtures",
    ),
    "alignment_errors": Table(
        "alignment error rate, precision and recall against silver word alignments",
        alignment_errors,
        ("alignment_runs", "silver"),
        "alignments",
    ),
    "posteriors": Table(
        "entropy of the prior and the posterior over source positions, and their KL",
        posteriors,
        ("alignment_runs",),
        "alignments",
    ),
}
