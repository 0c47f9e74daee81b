"""Scores and their statistics (workflow/rules/evaluate.smk; BLEU by length): sacreBLEU
per run, the paired bootstrap, contrasts over seeds, the score table."""

from __future__ import annotations

import argparse
from pathlib import Path

from mixnmt.cli.options import (
    FILES,
    MODEL_PATHS,
    Distinct,
    Named,
    Pairs,
    add_runs,
    count,
    index,
    pair,
    positive_number,
    run_path,
)
from mixnmt.files import Output


def _add_resamples(s: argparse.ArgumentParser) -> None:
    s.add_argument("--resamples", type=count, required=True, help="bootstrap resamples (analysis.bootstrap)")


def _add_bootstrap(s: argparse.ArgumentParser) -> None:
    """The arguments a paired bootstrap over one seed's systems shares."""
    _add_resamples(s)
    s.add_argument("--seed", type=index, required=True, help="the training seed of the systems")
    s.add_argument("--output", type=Output, required=True, help="JSON")
    s.add_argument("systems", nargs="+", help="translations of each system", **MODEL_PATHS)


def score_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--model", required=True, help="the model's name in the config")
    s.add_argument("--testset", required=True, help="the test set's name in the config")
    s.add_argument("--seed", type=index, required=True, help="the training seed of the model")
    s.add_argument("hypotheses", type=Path, help="the translation, one sentence a line")
    s.add_argument("references", type=Path, help="the reference translation, line-aligned")
    s.add_argument("output", type=Output, help="where the scores go (JSON)")


def cmd_score(a: argparse.Namespace) -> None:
    from mixnmt.evaluate import score

    score(a.hypotheses, a.references, a.output, a.model, a.testset, a.seed)


def significance_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--testset", required=True, help="the test set's name in the config")
    s.add_argument("--references", type=Path, required=True, help="the reference translation")
    s.add_argument("--baseline", required=True, help="name of the baseline system")
    _add_bootstrap(s)
    add_runs(s)


def cmd_significance(a: argparse.Namespace) -> None:
    from mixnmt.compare import significance

    significance(a.references, a.systems, a.baseline, a.resamples, a.testset, a.seed, a.output, a.runs)


def contrasts_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--testset", required=True, help="the test set's name in the config")
    s.add_argument("--references", type=Path, required=True, help="the reference translation")
    s.add_argument(
        "--pairs",
        type=pair,
        nargs="*",
        action=Pairs,
        required=True,
        metavar="A:B",
        help="the contrasts (none: no rows)",
    )
    _add_resamples(s)
    s.add_argument(
        "--margin",
        type=positive_number,
        required=True,
        help="the equivalence margin (points of the primary metric)",
    )
    s.add_argument(
        "--primary",
        metavar="METRIC",
        help="the pre-declared metric (bleu or chrf) where this is the pre-declared test set",
    )
    s.add_argument(
        "--statistic",
        required=True,
        help="the test over runs (analysis.statistic; mixnmt.compare.STATISTICS)",
    )
    s.add_argument("--output", type=Output, required=True, help="JSON")
    add_runs(s)
    s.add_argument(
        "translations",
        type=run_path,
        action=Named,
        nargs="*",
        metavar="MODEL/seedN=PATH",
        help="every contrasted run's translation",
    )


def cmd_contrasts(a: argparse.Namespace) -> None:
    from mixnmt.compare import contrasts

    runs: dict[str, dict[int, Path]] = {}
    for (model, seed), path in a.translations.items():
        runs.setdefault(model, {})[seed] = path
    contrasts(
        a.references,
        runs,
        a.pairs,
        a.resamples,
        a.margin,
        a.testset,
        a.output,
        a.primary,
        a.runs,
        statistic=a.statistic,
    )


def lengths_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--testset", required=True, help="the test set's name in the config")
    s.add_argument("--sources", type=Path, required=True, help="source text")
    s.add_argument("--references", type=Path, required=True, help="the reference translation")
    s.add_argument("--edges", type=count, nargs="+", required=True, help="bucket edges in words")
    _add_resamples(s)
    s.add_argument("--output", type=Output, required=True, help="TSV")
    add_runs(s)
    s.add_argument("systems", nargs="+", help="translations of each system", **MODEL_PATHS)


def cmd_lengths(a: argparse.Namespace) -> None:
    from mixnmt.compare import bleu_by_length

    bleu_by_length(a.sources, a.references, a.systems, a.edges, a.resamples, a.testset, a.output, a.runs)


def aggregate_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--scores", help="JSON files of `mixnmt score`", **FILES)
    s.add_argument("--significance", help="`mixnmt significance` files", **FILES)
    s.add_argument("--manifests", help="training manifests to cite", **FILES)
    s.add_argument(
        "--reliance", type=Path, nargs="*", action=Distinct, default=[], help="`mixnmt reliance` tables"
    )
    s.add_argument("--output", type=Output, required=True, help="TSV")
    s.add_argument("--markdown", type=Output, required=True, help="the same table as Markdown")
    s.add_argument("--metrics", type=Output, required=True, help="the numbers as JSON, for `dvc metrics`")
    add_runs(s)


def cmd_aggregate(a: argparse.Namespace) -> None:
    from mixnmt.files import write_text
    from mixnmt.report import markdown_scores
    from mixnmt.scoretable import aggregate

    table, tests = aggregate(a.scores, a.significance, a.manifests, a.reliance, a.output, a.metrics, a.runs)
    write_text(a.markdown, markdown_scores(table, tests))


def headline_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("scores", type=Path, help="the score table (scores.tsv of `mixnmt aggregate`)")
    s.add_argument(
        "--output", type=Output, nargs="+", required=True, help="files named .../<model>/<testset>.json"
    )


def cmd_headline(a: argparse.Namespace) -> None:
    from mixnmt.scoretable import headline

    headline(a.scores, a.output)
