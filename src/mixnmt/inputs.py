"""The kinds of files the study's figures and tables are made from, and how each is read.

A figure or table names the kinds it needs; `mixnmt plot` and `mixnmt table` take one
option per kind (`--<kind>`), and the workflow maps each kind to its files.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mixnmt.files import read_json, read_table
from mixnmt.paths import METRICS, Layout, run


@dataclass(frozen=True)
class Input:
    help: str
    load: Callable[[Any], Any]  # the paths (or {model: path}) -> what a drawing or table takes
    per_model: bool = False  # given as MODEL=PATH, one per model
    single: bool = False  # exactly one file
    runs: bool = False  # its files record the runs they come from (mixnmt.runs)
    one_per: str | None = None  # "run" or "testset": no run (test set) in two of its files


def _tables(paths: list[Path]) -> pd.DataFrame:
    return pd.concat(map(read_table, paths), ignore_index=True)


def _benchmarks(paths: list[Path]) -> pd.DataFrame:
    """Snakemake benchmark files .../benchmarks/<rule>/<job>.tsv, with the job (`<rule>/<job>`)
    as the first column."""
    jobs = {Path(p).with_suffix("").as_posix().rsplit("/benchmarks/", 1)[1]: p for p in paths}
    return pd.concat([read_table(p).assign(job=job) for job, p in jobs.items()], ignore_index=True)


def _json(paths: dict[str, Path] | list[Path]) -> list[Any]:
    return [read_json(p) for p in (paths.values() if isinstance(paths, dict) else paths)]


INPUTS: dict[str, Input] = {
    "metrics": Input(
        "per-epoch training metrics, MODEL=metrics.tsv",
        lambda paths: {model: read_table(p, METRICS) for model, p in paths.items()},
        per_model=True,
        runs=True,
    ),
    "manifests": Input("training manifests, MODEL=manifest.json", _json, per_model=True, runs=True),
    "speeds": Input("decoding speeds, MODEL=speed.json", _json, per_model=True, runs=True),
    "analyses": Input("analysis weights, MODEL=analysis.json", _json, per_model=True, runs=True),
    "lengths": Input("BLEU-by-length tables, one per test set", _tables, runs=True, one_per="testset"),
    "scores": Input("the score table (scores.tsv)", read_table, single=True, runs=True),
    "benchmarks": Input("Snakemake benchmark files, benchmarks/<rule>/<job>.tsv", _benchmarks),
    "reliance_runs": Input(
        "`mixnmt reliance` tables, one per model and seed", _tables, runs=True, one_per="run"
    ),
    "use_runs": Input(
        "`mixnmt reliance --use` tables (knock-outs), one per model and seed",
        _tables,
        runs=True,
        one_per="run",
    ),
    "contrast_runs": Input("`mixnmt contrasts` files, one per test set", _json, runs=True, one_per="testset"),
    "alignment_runs": Input("`mixnmt align` files, one per model and seed", _json, runs=True, one_per="run"),
    "silver": Input("silver word alignments (mixnmt silver)", read_json, single=True),
    "cost": Input("the cost table (tables/cost.tsv)", read_table, single=True),
    "components": Input("the component table (tables/components.tsv)", read_table, single=True),
    "reliance": Input("the source-reliance table (tables/reliance.tsv)", read_table, single=True),
    "alignment_errors": Input(
        "the alignment error table (tables/alignment_errors.tsv)", read_table, single=True
    ),
    "use": Input("the mass-against-use table (tables/use.tsv)", read_table, single=True),
}


BENCHMARKED = {
    "train": run(),
    "translate": f"{run()}/{{testset}}",
    "speed": "{model}",
    "reliance": run(),
    "analyse": "{model}",
    "align": run(),
}
"""The jobs that run a model keep Snakemake benchmark files (wall time, memory, CPU time):
rule -> the job's part of results/<experiment>/benchmarks/<rule>/<job>.tsv."""


def input_files(
    layout: Layout,
    models: list[str],
    seeds: list,
    testsets: list[str],
    tables: Iterable[str],
    shared: Collection[str] = (),
) -> dict[str, list[str]]:
    """The files of each input kind of an experiment's figures and tables (those named
    `tables` among them): per-model kinds at the first seed, in the order of `models`; no
    training job's benchmark for the `shared` models, whose runs another model's train
    (mixnmt.share)."""
    first = seeds[0]
    every = [(model, seed) for model in models for seed in seeds]
    benchmarks = [
        layout.benchmark(rule, job.format(model=model, seed=seed, testset=testset))
        for rule, job in BENCHMARKED.items()
        for model, seed in every
        for testset in testsets
        if not (rule == "train" and model in shared)
    ]
    return {
        "metrics": [layout.train("metrics.tsv", model, first) for model in models],
        "manifests": [layout.train("manifest.json", model, first) for model in models],
        "speeds": [layout.per_model("speed", model) for model in models],
        "analyses": [layout.per_model("analysis", model) for model in models],
        "lengths": [layout.table(f"lengths/{testset}") for testset in testsets],
        "scores": [layout.summary()],
        "significance": [layout.significance(seed, testset) for seed in seeds for testset in testsets],
        "benchmarks": list(dict.fromkeys(benchmarks)),  # a job without {seed} repeats per seed
        "reliance_runs": [layout.reliance(model, seed) for model, seed in every],
        "use_runs": [layout.reliance(model, seed, "use") for model, seed in every],
        "contrast_runs": [layout.contrasts(testset) for testset in testsets],
        "alignment_runs": [layout.word_alignments(model, seed) for model, seed in every],
        "silver": [layout.silver],
        **{name: [layout.table(name)] for name in tables},
    }
