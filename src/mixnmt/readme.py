"""The published results, generated: every number a reader finds in docs/results.md comes
from a published experiment's tables through `results_block`, and every number of the
README's claims from them through `claims_block`; `mixnmt readme` writes each between its
markers, and `mixnmt readme --check` (and the tests) compare."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from mixnmt import MixnmtError
from mixnmt.compare import statistic_of
from mixnmt.config import OWN, decoding_settings, own_settings, primary, selected, train_settings
from mixnmt.files import read_json, read_table, write_text
from mixnmt.paths import Layout
from mixnmt.provenance import drawn_from
from mixnmt.report import METRIC_NAMES, answer, count, markdown_table, p_text, primary_cell, verdict_kind
from mixnmt.verify import configuration
from mixnmt.withdrawn import WITHDRAWN, Contrast, withdrawals

BEGIN = "<!-- results of {experiment}: written by `mixnmt readme` from its tables; do not edit -->"
END = "<!-- end of the results of {experiment} -->"
CLAIMS = (
    "<!-- the claims: written by `mixnmt readme` from the published tables; do not edit -->",
    "<!-- end of the claims -->",
)


def short(testset: str) -> str:
    """A test set's name as a column header: its year, if it has one (test_2016_flickr: 2016)."""
    found = re.search(r"\d{4}", testset)
    return found[0] if found else testset


def plus_minus(mean: float, sd: float, digits: int = 2) -> str:
    """A mean over seeds with its sd ("0.62 ± 0.03"); the mean alone without an sd (one seed)."""
    return f"{mean:.{digits}f}" if pd.isna(sd) else f"{mean:.{digits}f} ± {sd:.{digits}f}"


def spread(values: pd.Series) -> str:
    """Mean ± sd over seeds (the mean alone for one seed)."""
    return plus_minus(values.mean(), values.std())


def differences(config: dict[str, Any], a: str, b: str) -> str:
    """Every hyperparameter two models' config entries resolve to differently ("key A → B";
    "-" where an architecture has no such key or the entry's others make it inert), and
    every training and decoding setting ("train.key A → B", "decode.key A → B"): what a
    contrast changes."""
    from mixnmt.models import REGISTRY, resolve  # imports torch: only here

    (arch_a, ha), (arch_b, hb) = resolve(a, config["models"][a]), resolve(b, config["models"][b])
    ha, hb = (
        {k: v for k, v in h.items() if k not in REGISTRY[arch].unused(h)}
        for arch, h in ((arch_a, ha), (arch_b, hb))
    )
    changes = [f"arch {arch_a} → {arch_b}"] if arch_a != arch_b else []
    for key in dict.fromkeys([*ha, *hb]):
        if ha.get(key, "-") != hb.get(key, "-"):
            changes.append(f"{key} {ha.get(key, '-')} → {hb.get(key, '-')}")
    for section, settings in (("train", train_settings), ("decode", decoding_settings)):
        sa, sb = settings(config, a), settings(config, b)
        changes += [f"{section}.{key} {sa[key]} → {sb[key]}" for key in sa if sa[key] != sb[key]]
    return "; ".join(changes)


def scores_table(scores: pd.DataFrame, models: list[str], testsets: list[str]) -> pd.DataFrame:
    """Per model: BLEU and chrF per test set (mean ± sd over seeds); length and looping
    share (means over seeds and test sets, and their range over seeds); source reliance;
    parameters without embeddings."""
    rows = []
    for model in models:
        runs = scores[scores.model == model]
        row: dict[str, Any] = {"model": f"`{model}`", "seeds": runs.seed.nunique()}
        for metric, name in (("bleu", "BLEU"), ("chrf", "chrF")):
            for testset in testsets:
                row[f"{name} {short(testset)}"] = spread(runs[runs.testset == testset][metric])
        by_seed = runs.groupby("seed")[["length_ratio", "looping"]].mean()
        for column, name, shown in (("length_ratio", "length", "{:.2f}"), ("looping", "looping", "{:.0%}")):
            low, high = by_seed[column].min(), by_seed[column].max()
            extent = f" ({shown.format(low)} to {shown.format(high)})" if len(by_seed) > 1 else ""
            row[name] = shown.format(runs[column].mean()) + extent
        row["reliance"] = f"{runs.drop_duplicates('seed').reliance.mean():.3f}"
        row["parameters without embeddings"] = count(runs.params_no_embeddings.iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


def contrast_cell(row: pd.Series, metric: str) -> str:
    """B - A [its 95% interval, by the experiment's test]; in the primary cell, in bold,
    also the verdict: A or B better (with Holm's p; "and ≈" with the two one-sided tests'
    Holm p where the difference lies inside the margin too), ≈ equivalent (with the two
    one-sided tests' Holm p), or ? undecided (with the difference these runs would detect
    at Holm's strictest level, where each model has more than one)."""
    ci = row[f"{metric}_ci"]
    cell = f"{row[f'{metric}_delta']:+.2f}" + (f" [{ci.replace(' .. ', ', ')}]" if ci else "")
    verdict, kind = row[f"{metric}_verdict"], verdict_kind(row, metric)
    holm, tost = row[f"{metric}_p_holm"], row[f"{metric}_tost_p_holm"]
    if kind == "small difference":  # both hypotheses rejected
        return f"**{cell} {verdict[0]} and ≈, Holm {p_text(holm)}, TOST Holm {p_text(tost)}**"
    if kind == "difference":
        return f"**{cell} {verdict[0]}, Holm {p_text(holm)}**"
    if kind == "equivalent":
        return f"**{cell} ≈, TOST Holm {p_text(tost)}**"
    if kind == "undecided":
        detects = row[f"{metric}_mde_holm"]
        return f"**{cell} ?**" + ("" if pd.isna(detects) else f" (detects {detects:.1f})")
    return cell


def contrasts_table(contrasts: pd.DataFrame, config: dict[str, Any], testsets: list[str]) -> pd.DataFrame:
    """Per contrast: the two models, what their entries set differently, their sizes and
    runs, and B - A in chrF and BLEU on every test set (the primary cell in bold)."""
    rows, pairs = [], contrasts.groupby(["a", "b"], sort=False)
    for (a, b), pair in pairs:
        first = pair.iloc[0]
        row = {
            "A": f"`{a}`",
            "B": f"`{b}`",
            "what differs": differences(config, a, b),
            "parameters A / B": f"{first.params_a:.2f}M / {first.params_b:.2f}M",
            "runs A / B": f"{first.seeds_a} / {first.seeds_b}",
        }
        for metric, name in (("chrf", "ΔchrF"), ("bleu", "ΔBLEU")):
            for testset in testsets:
                found = pair[pair.testset == testset]
                cell = contrast_cell(found.iloc[0], metric) if len(found) else ""
                row[f"{name} {short(testset)}"] = cell
        rows.append(row)
    return pd.DataFrame(rows)


def mixing_table(mixing: pd.DataFrame, use: pd.DataFrame) -> pd.DataFrame:
    """Per mixture: its heads' mean per-step entropy, mutual information between step and
    candidate and candidates leading 1% of steps (first seed, test set), and per candidate
    group its mass and the validation loss's rise when it is knocked out (means over seeds)."""
    heads = mixing.groupby(["model", "weights"], sort=False)
    table = heads.agg(heads=("head", "nunique"), entropy=("entropy", "mean"), mi=("mi", "mean"))
    table = table.assign(leading=heads.leading.mean()).round(2).reset_index()
    groups = use.pivot_table(
        index=["model", "weights"], columns="group", values=["mass", "change"], sort=False
    )
    rows = []
    for _, row in table.iterrows():
        shown = {
            "model": f"`{row.model}`",
            "weights": row.weights.replace("_", " "),
            "heads": int(row.heads),
            "entropy (nats)": f"{row.entropy:.2f}",
            "MI (nats)": f"{row.mi:.2f}",
            "candidates leading": f"{row.leading:.1f}",
        }
        for group in ("stay", "learned", "source"):
            key = (row.model, row.weights)
            mass, change = (
                groups.get((value, group), pd.Series(dtype=float)).get(key) for value in ("mass", "change")
            )
            shown[f"{group}: mass / loss rise"] = (
                "" if mass is None or pd.isna(mass) else f"{mass:.2f} / {change:.2f}"
            )
        rows.append(shown)
    return pd.DataFrame(rows)


def alignment_table(errors: pd.DataFrame, posteriors: pd.DataFrame) -> pd.DataFrame | None:
    """AER (± its sd over seeds), precision and recall of each source weight against the
    silver alignments, a Transformer's best heads with their seeds, and for a latent model
    its prior's and posterior's entropy and their KL (± sd over seeds): means over seeds."""
    if errors.empty or errors.model.isna().all() or (errors.model == "").all():
        return None
    rows = [
        {
            "model": f"`{r.model}`",
            "weights": r.weights,
            "seeds": r.seeds,
            "AER": plus_minus(r.aer, r.aer_sd, 3),
            "precision": f"{r.precision:.2f}",
            "recall": f"{r.recall:.2f}",
            "best heads": "" if pd.isna(r.best_heads) else r.best_heads,
        }
        for r in errors.itertuples()
    ]
    table = pd.DataFrame(rows)
    if not table["best heads"].any():
        table = table.drop(columns="best heads")
    for r in posteriors.itertuples():
        note = (
            f"H(prior) {r.prior_entropy:.2f}, H(posterior) {r.posterior_entropy:.2f}, "
            f"KL {plus_minus(r.kl, r.kl_sd)} nats"
        )
        table.loc[table.model == f"`{r.model}`", "per target token"] = note
    return table.fillna("")


def cost_table(cost: pd.DataFrame, jobs: pd.DataFrame, epochs: dict[str, int]) -> tuple[pd.DataFrame, float]:
    """Per model (first seed): the epochs it trained, training time, tokens/s and peak
    memory, decoding speed; and the hours of every job that ran a model."""
    table = pd.DataFrame(
        {
            "model": [f"`{m}`" for m in cost.model],
            "epochs": [epochs[m] for m in cost.model],
            "training (min)": (cost.train_seconds / 60).round(1),
            "tokens/s": cost.train_tokens_per_s.round(0).astype(int),
            "peak memory (GB)": (cost.train_peak_rss_mb / 1024).round(1),
            "beam sentences/s": cost.beam_sentences_per_s.round(1),
        }
    )
    return table, jobs.seconds.sum() / 3600


def primary_name(config: dict[str, Any]) -> str:
    """The primary metric and test set in words ("chrF on test_2016_flickr")."""
    metric, testset = primary(config)
    return f"{METRIC_NAMES[metric]} on {testset}"


METRICS = {"bleu": "BLEU (cased sacreBLEU)", "bleu_lc": "BLEU (lowercased)"}


def references_table(scores: pd.DataFrame, config: dict[str, Any], models: list[str]) -> pd.DataFrame:
    """`analysis.references` beside this experiment's models, per metric they report: the
    models' mean over seeds and each reference's published score, per test set."""
    references = config["analysis"]["references"]
    testsets = list(config["datasets"][config["dataset"]]["test"])
    rows = []
    for metric in dict.fromkeys(r["metric"] for r in references):
        means = scores.groupby(["model", "testset"])[metric].mean()
        for model in models:
            cells = {short(t): f"{means[model, t]:.2f}" for t in testsets}
            rows.append(
                {"system": f"`{model}`", "setting": "this experiment", "metric": METRICS[metric]} | cells
            )
        for reference in (r for r in references if r["metric"] == metric):
            published = reference["scores"]
            cells = {short(t): f"{published[t]:.2f}" if t in published else "–" for t in testsets}
            rows.append(
                {"system": reference["name"], "setting": reference["setting"], "metric": METRICS[metric]}
                | cells
            )
    return pd.DataFrame(rows)


def how_trained(config: dict[str, Any], epochs: dict[str, int], steps: int) -> str:
    """How long and how the models trained, in words: a fixed number of epochs (and `steps`,
    the first model's updates), or until validation stopped improving when a run stopped
    early (`epochs`: each model's, first seed), with the settings they share (`trained_with`)
    and those an entry overrides."""
    train = config["train"]
    batches = f"batches of at most {train['max_tokens']} tokens"
    overrides = own(config, epochs, "train") + ","  # the sentence goes on
    if ran_their_epochs(config, epochs):
        return (
            f"each trained for {train['epochs']} epochs ({steps} updates of {batches}) "
            f"{trained_with(train)}{overrides}"
        )
    return (
        f"each trained on {batches} {trained_with(train)} until its validation loss had not "
        f"improved for {train['patience']} epochs, or for at most {train['epochs']} (the epochs "
        f"each ran: the cost table){overrides}"
    )


def trained_with(train: dict[str, Any]) -> str:
    """The training settings every run shares unless its entry says otherwise, in words:
    the precision, the peak learning rate and the weight decay and what it shrinks."""
    precision = {"auto": "bf16 where native, else fp32 (auto: each run's manifest says which)"}
    shrinks = {"all": "every parameter", "matrices": "the weight matrices only"}
    return (
        f"in {precision.get(train['precision'], train['precision'])}, at a peak learning rate of "
        f"{train['lr']:g} and a weight decay of {train['weight_decay']:g} on {shrinks[train['decay']]}"
    )


def ran_their_epochs(config: dict[str, Any], epochs: dict[str, int]) -> bool:
    """Whether every model trained for its epochs (`epochs`: each model's, first seed)."""
    return all(n == train_settings(config, m)["epochs"] for m, n in epochs.items())


def own(config: dict[str, Any], models: Iterable[str], section: str) -> str:
    """The settings of section `section` that the entries of `models` override, in words
    (", `m` with decay matrices"), or ""."""
    overrides = [
        f"`{m}` with " + ", ".join(f"{k} {v}" for k, v in own_settings(config, m, section).items())
        for m in models
        if own_settings(config, m, section)
    ]
    return f", {', '.join(overrides)}" if overrides else ""


def how_summarised(seeds: list[int]) -> str:
    """What a number of the scores table is: a mean over seeds, or one run's."""
    if len(seeds) == 1:
        return (
            f"One seed ({seeds[0]}): every number is one run's, a description, not a claim; length "
            "(output tokens over the references') and looping (the share of translations in which a "
            "word 3-gram comes three times) are means over test sets"
        )
    return (
        "Means ± sd over seeds; length (output tokens over the references') and looping (the share "
        "of translations in which a word 3-gram comes three times) are means over seeds and test "
        "sets, with their range over seeds"
    )


def what_ran(
    layout: Layout, config: dict[str, Any], models: list[str], epochs: dict[str, int], first: pd.Series
) -> str:
    """The sentence before the score table: the models and seeds, how they trained and
    decoded, how they were scored (from `first`, a row of scores.tsv), what a number is."""
    seeds = config["seeds"]
    steps = read_json(layout.train("manifest.json", models[0], seeds[0]))["steps"]
    return (
        f"{len(models)} models, {'seed' if len(seeds) == 1 else 'seeds'} {', '.join(map(str, seeds))}, "
        f"{how_trained(config, epochs, steps)} and decoded with beam {config['decode']['beam']}"
        f"{own(config, models, 'decode')}; "
        f"sacreBLEU on detokenised, cased output (BLEU {first.bleu_signature}; chrF {first.chrf_signature}). "
        f"{how_summarised(seeds)}; reliance is the bounded source-reliance estimate on validation, "
        "nats/token."
    )


def contrasts_legend(config: dict[str, Any]) -> str:
    """How to read the contrast table: what is claimed, and by which statistic."""
    statistic = statistic_of(config)
    return (
        "The contrasts, B against A with the training run as the unit: the difference of the "
        f"models' mean scores over their runs and its 95% interval ({statistic.name}). Claims rest "
        f"on the pre-declared primary cell only, {primary_name(config)}, in bold: A or B better "
        f"({statistic.p} adjusted by Holm's method over the contrasts, together with the "
        'equivalences\' p; "and ≈" where the two one-sided tests put the difference inside '
        "the margin too: a difference, and a small one), ≈ equivalent within the margin (the "
        "two one-sided tests' p, adjusted with them), or ? undecided, with the difference "
        "these runs would detect at 80% power at Holm's strictest level, whatever the other "
        "contrasts show (simulated from the runs' spread). Every other cell describes. "
        '"What differs" lists every hyperparameter the two entries resolve to differently'
        + settings_differing(config)
        + "."
    )


def settings_differing(config: dict[str, Any]) -> str:
    """What else "what differs" lists, in words: the training and decoding settings, where
    a model of the experiment has its own (its entry's `train`, `decode`), or ""."""
    sections = [s for s in OWN if any(own_settings(config, m, s) for m in selected(config))]
    if not sections:
        return ""
    words = " and ".join(OWN[s] for s in sections)
    keys = ", ".join(f"{s}.<key>" for s in sections)
    return f", and every {words} setting ({keys}) their runs differ in"


def results_block(folder: Path, config: dict[str, Any]) -> str:
    """The results of the published experiment in `folder`, as Markdown (its block in
    docs/results.md)."""
    layout = Layout(str(folder))
    models, testsets = selected(config), list(config["datasets"][config["dataset"]]["test"])
    scores, contrasts = read_table(layout.summary()), read_table(layout.table("contrasts"))
    epochs = epochs_run(layout, config, models)
    parts = [
        what_ran(layout, config, models, epochs, scores.iloc[0]),
        markdown_table(scores_table(scores, models, testsets)),
    ]
    if config["analysis"]["references"]:
        parts += [
            "Beside published numbers, as their papers report them (sizes, tokenisation and "
            "training differ as each setting says; published Multi30k numbers are mostly "
            "lowercased BLEU):",
            markdown_table(references_table(scores, config, models)),
        ]
    if not contrasts.empty:
        parts += [
            contrasts_legend(config),
            markdown_table(contrasts_table(contrasts, config, testsets)),
            "What the contrast table's verdicts say, one sentence per contrast:",
            "\n".join(f"- {sentence}" for sentence in answer(contrasts, statistic_of(config))),
        ]
    mixing, use = read_table(layout.table("mixing")), read_table(layout.table("use"))
    if not mixing.empty:
        parts += [
            "How the mixtures mix (a description, not a claim): per mixture, its heads' mean "
            "per-step entropy, mutual information between step and candidate, and candidates "
            "leading at least 1% of a head's steps (first seed, first test set); per candidate "
            "group its mass and the rise of the validation loss when it is knocked out (means over seeds).",
            markdown_table(mixing_table(mixing, use)),
        ]
    alignment = alignment_table(
        read_table(layout.table("alignment_errors")), read_table(layout.table("posteriors"))
    )
    if alignment is not None:
        over = "one seed" if (alignment.seeds == 1).all() else "means over seeds ± their sd"
        parts += [
            f"Word alignments against eflomal's silver alignments of the first test set ({over}: a "
            "description, not a claim; a posterior reads the reference word, so its alignment is "
            "expected to be better than a prior's):",
            markdown_table(alignment),
        ]
    cost, hours = cost_table(read_table(layout.table("cost")), read_table(layout.table("jobs")), epochs)
    parts += [
        f"What it cost (first seed; tables/jobs.tsv: {hours:.1f} hours of jobs that ran a model in all):",
        markdown_table(cost),
    ]
    return "\n\n".join(parts)


def epochs_run(layout: Layout, config: dict[str, Any], models: list[str]) -> dict[str, int]:
    """The epochs each model's first seed trained for."""
    seed = config["seeds"][0]
    return {m: len(read_table(layout.train("metrics.tsv", m, seed), ["epoch"])) for m in models}


def publishes(results: str) -> list[str]:
    """The experiments whose results `results` (docs/results.md's text) holds, in its order."""
    return re.findall(re.escape(BEGIN).replace(re.escape("{experiment}"), r"(\S+)"), results)


def anchors(results: str) -> dict[str, str]:
    """Each experiment `results` (docs/results.md's text) publishes, in its order, with the
    anchor of the section that holds it: its last "## " heading before its results, as
    GitHub makes one (lower case, punctuation dropped, spaces as hyphens)."""
    heading, found = "", {}
    for line in results.splitlines():
        if line.startswith("## "):
            heading = line[3:]
        elif names := publishes(line):
            found[names[0]] = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
    return found


def in_short(differences: str) -> str:
    """`differences` in a table's cell: the first two, and how many more ("arch attention →
    transformer; hidden 256 → -; and 4 more")."""
    items = differences.split("; ")
    return "; ".join(items[:2]) + (f"; and {len(items) - 2} more" if len(items) > 2 else "")


def claimed(studies: dict[Path, dict[str, Any]]) -> Iterator[tuple[dict[str, Any], str, pd.Series, str]]:
    """Every contrast of the published experiments (their folders and configurations) that
    makes a claim, in order: the experiment's configuration, how long and in what
    precision it trained, and the pre-declared cell's row of its table and metric."""
    for folder, config in studies.items():
        layout = Layout(str(folder))
        budget = "" if ran_their_epochs(config, epochs_run(layout, config, selected(config))) else "at most "
        contrasts = read_table(layout.table("contrasts"))
        for pair, cells in contrasts.groupby(["a", "b"], sort=False):
            found = primary_cell(cells)
            if found is not None:  # else every cell descriptive: no claim
                settings = (train_settings(config, m) for m in pair)
                trained = " / ".join(
                    dict.fromkeys(f"{budget}{t['epochs']} epochs, {t['precision']}" for t in settings)
                )
                yield config, trained, *found


def withdrawn_verdicts(studies: dict[Path, dict[str, Any]], path: Path = WITHDRAWN) -> dict[Contrast, str]:
    """Why each verdict of the published experiments that `path` withdraws was withdrawn,
    by experiment and contrast (mixnmt.withdrawn)."""
    return withdrawals(path, {(c["experiment"], row.a, row.b) for c, _, row, _ in claimed(studies)})


def claims_table(
    studies: dict[Path, dict[str, Any]],
    sections: dict[str, str] | None = None,
    withdrawn: dict[Contrast, str] | None = None,
) -> pd.DataFrame:
    """One row per contrast of `claimed`: the experiment (a link to its section of
    docs/results.md where `sections` gives its anchor, `anchors`), how long and in what
    precision it trained, the two models, what differs, the runs, the pre-declared cell as
    the experiment's table gives it (and, where `withdrawn` gives why its verdict was
    withdrawn, that), and its test (analysis.statistic)."""
    rows, withdrawn = [], withdrawn or {}
    for config, trained, row, metric in claimed(studies):
        why = withdrawn.get((config["experiment"], row.a, row.b))
        name = f"`{config['experiment']}`"
        if sections:
            name = f"[{name}](docs/results.md#{sections[config['experiment']]})"
        rows.append(
            {
                "experiment": name,
                "trained": trained,
                "A": f"`{row.a}`",
                "B": f"`{row.b}`",
                "what differs": in_short(differences(config, row.a, row.b)),
                "runs A / B": f"{row.seeds_a} / {row.seeds_b}",
                "cell": f"{METRIC_NAMES[metric]} {short(row.testset)}",
                "B - A": contrast_cell(row, metric) + (f", withdrawn: {why}" if why else ""),
                "test": statistic_of(config).label,
            }
        )
    return pd.DataFrame(rows)


def claim_points(
    studies: dict[Path, dict[str, Any]], withdrawn: dict[Contrast, str] | None = None
) -> pd.DataFrame:
    """The numbers of `claimed`, one row per contrast, as plots.claims draws them: the two
    models, the experiment and how it trained, B - A and its 95% interval, the
    equivalence margin, the verdict's kind (report.verdict_kind), whether `withdrawn`
    withdraws it, and the cell."""
    rows = []
    for config, trained, row, metric in claimed(studies):
        delta, ci = row[f"{metric}_delta"], row[f"{metric}_ci"]
        lo, hi = (float(end) for end in ci.split(" .. ")) if ci else (delta, delta)
        rows.append(
            {
                "label": f"{row.a} → {row.b}",
                "experiment": f"{config['experiment']} ({trained})",
                "delta": delta,
                "lo": lo,
                "hi": hi,
                "margin": config["analysis"]["equivalence"],
                "kind": verdict_kind(row, metric),
                "withdrawn": (config["experiment"], row.a, row.b) in (withdrawn or {}),
                "cell": f"{METRIC_NAMES[metric]} {short(row.testset)}",
            }
        )
    return pd.DataFrame(rows)


def published_studies(results: Path, root: Path) -> tuple[dict[Path, dict[str, Any]], dict[str, str]]:
    """The experiments that `results` (docs/results.md) publishes, in its order, each in
    its folder under `root` with its configuration, and their sections' anchors."""
    sections = anchors(results.read_text(encoding="utf-8"))
    return {root / name: configuration(root / name, []) for name in sections}, sections


def claims_block(
    studies: dict[Path, dict[str, Any]], sections: dict[str, str], figure: str, withdrawn: dict[Contrast, str]
) -> str:
    """The README's claims: `claims_table` over the published experiments and their
    sections (`published_studies`) and the verdicts `withdrawn` since, below their figure
    (`figure`: its SVG, relative to the README)."""
    return (
        "Every contrast of the published experiments, in the order of their sections in "
        "[docs/results.md](docs/results.md) (each experiment links to its own), with the "
        "training run as the unit: B - A and its 95% interval in the pre-declared cell, in "
        "bold, by the experiment's test (Welch: Welch's t over each model's runs; paired: the "
        "paired t over the seeds, a seed's two runs a pair), with its verdict: A or B better "
        "(the test's p adjusted by Holm's method over the experiment's contrasts, together with "
        'the equivalences\' p; "and ≈" where the difference lies inside the margin too), ≈ '
        "equivalent within the margin, or ? undecided, with the difference these runs would "
        'detect at 80% power at Holm\'s strictest level. "What differs" begins the list of '
        "every hyperparameter the two entries resolve to differently, which each experiment's "
        "section gives whole. A verdict withdrawn since it was published keeps its row, "
        "marked withdrawn with why in a few words (docs/results.md says it whole). The "
        "figure draws the same cells, the margin shaded, a withdrawn verdict "
        "crossed out and its interval dashed.\n\n"
        f"![Each contrast's B - A and its 95% interval in its pre-declared cell, marked by "
        f"its verdict or crossed out where withdrawn, the equivalence margin shaded]({figure})\n\n"
    ) + markdown_table(claims_table(studies, sections, withdrawn))


def replace_block(path: Path, markers: tuple[str, str], block: str, check: bool) -> bool:
    """Write `block` between the two `markers` lines of `path` (with `check`, only
    compare); whether it was already there."""
    begin, end = markers
    text = path.read_text(encoding="utf-8")
    if text.count(begin) != 1 or text.count(end) != 1:
        raise MixnmtError(f"{path}: expected one block between the lines {begin!r} and {end!r}")
    head, rest = text.split(begin)
    current, tail = rest.split(end)
    if current == f"\n{block}\n":
        return True
    if not check:
        write_text(path, f"{head}{begin}\n{block}\n{end}{tail}")
    return False


def rewrite(results: Path, folder: Path, config: dict[str, Any], check: bool = False) -> bool:
    """Write `results_block` between the markers of `folder`'s experiment in `results`
    (with `check`, only compare); whether the block was already up to date."""
    markers = tuple(marker.format(experiment=config["experiment"]) for marker in (BEGIN, END))
    return replace_block(results, markers, results_block(folder, config), check)


def rewrite_claims(
    readme: Path,
    studies: dict[Path, dict[str, Any]],
    sections: dict[str, str],
    figure: Path,
    withdrawn: dict[Contrast, str],
    check: bool = False,
) -> bool:
    """Write `claims_block` of the published experiments and their sections
    (`published_studies`), with the verdicts `withdrawn` since, between the claims'
    markers in `readme`, showing `figure`; whether it was already up to date."""
    svg = os.path.relpath(figure.with_suffix(".svg"), readme.parent)
    return replace_block(readme, CLAIMS, claims_block(studies, sections, svg, withdrawn), check)


def redraw_claims(
    figure: Path, studies: dict[Path, dict[str, Any]], withdrawn: dict[Contrast, str], check: bool = False
) -> bool:
    """Draw `claim_points` of the published experiments (`published_studies`) and the
    verdicts `withdrawn` since into `figure` (PNG, and SVG beside it), recording the
    points' digest as what it was drawn from (with `check`, only compare); whether it was
    drawn from them already."""
    points = claim_points(studies, withdrawn)
    record = {"claims": hashlib.sha256(points.to_csv(index=False).encode()).hexdigest()}
    current = drawn_from(figure) == record == drawn_from(figure.with_suffix(".svg"))
    if not check:  # drawn again either way, so a change of the drawing shows too
        from mixnmt import plots  # imports matplotlib: only here

        plots.save(plots.claims(points), figure, record)
    return current
