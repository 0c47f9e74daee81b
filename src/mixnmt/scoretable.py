"""The score table: every run's scores on every test set, with its bootstrap intervals
and p-values, its training run and its reliance on the source; and the headline numbers
per model and test set that `dvc metrics` shows."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mixnmt import MixnmtError
from mixnmt.files import read_json, read_table, write_json, write_table
from mixnmt.lineage import refuse_foreign
from mixnmt.paths import run
from mixnmt.provenance import version

FILE = "file"
"""The column that names the file a row of the score table's inputs came from, while it
is built."""


def _score_row(path: Path) -> dict:
    """A score file as a row of the score table: its numbers and signatures, and of what
    it scored the run's fingerprint."""
    score = read_json(path)
    made = score.pop("run", None) or {}
    score.pop("translation", None), score.pop("references", None)
    commit = score.pop("commit")
    return score | {"fingerprint": made.get("fingerprint"), "commit": commit}


def _runs(manifests: list[Path]) -> pd.DataFrame:
    """Per model and seed: its size, steps and the commit that trained it."""
    columns = ["model", "seed", "params", "params_no_embeddings", "steps", "train_commit", FILE]
    rows = [
        [m["model"], m["train"]["seed"], *(m[k] for k in columns[2:5]), version(m["git"]), str(path)]
        for path, m in zip(manifests, map(read_json, manifests))
    ]
    return pd.DataFrame(rows, columns=columns)


def _bootstrap(tests: list[dict], paths: list[Path]) -> pd.DataFrame:
    """Per model, seed and test set: the intervals and p-values of sacreBLEU's paired bootstrap."""
    rows = [
        {"seed": t["seed"], **{k: v for k, v in row.items() if k not in ("bleu", "chrf")}, FILE: str(path)}
        for path, t in zip(paths, tests)
        for row in t["systems"]
    ]
    stats = ["bleu_ci", "bleu_p", "chrf_ci", "chrf_p", "ter", "ter_ci", "ter_p"]
    return pd.DataFrame(rows, columns=["model", "seed", "testset", *stats, FILE])


def _overall_reliance(reliances: list[Path]) -> pd.DataFrame:
    """Per model and seed: source reliance over all validation tokens (position 0)."""
    keys = ["model", "seed"]
    empty = pd.DataFrame(columns=[*keys, "position", "difference", FILE])
    table = pd.concat(read_table(p).assign(**{FILE: str(p)}) for p in reliances) if reliances else empty
    return table[table.position == 0][[*keys, "difference", FILE]].rename(columns={"difference": "reliance"})


def _once(rows: pd.DataFrame, keys: list[str], what: str) -> pd.DataFrame:
    """`rows` of `what` files, unless a run (on a test set: `keys`) is in two of them: an
    error naming both (a file given twice would count its run twice)."""
    twice = rows[rows.duplicated(keys, keep=False)]
    if not twice.empty:
        first = twice.iloc[0]
        files = twice[(twice[keys] == first[keys]).all(axis=1)][FILE]
        raise MixnmtError(f"{what}: {_named(first, keys)} in two files ({', '.join(files)})")
    return rows


def _joined(
    table: pd.DataFrame, other: pd.DataFrame, keys: list[str], what: str, needed: bool
) -> pd.DataFrame:
    """`table` (rows of score files) with the columns of `other` (rows of `what` files, each
    run once) by `keys`; if `needed`, a row of `table` that none of them has is an error
    naming its score file."""
    joined = table.merge(_once(other, keys, what).drop(columns=FILE), on=keys, how="left", indicator=True)
    missing = joined[joined["_merge"] == "left_only"]
    if needed and not missing.empty:
        first = missing.iloc[0]
        raise MixnmtError(f"{first[FILE]}: no {what} file has {_named(first, keys)}")
    return joined.drop(columns="_merge")


def _named(row: pd.Series, keys: list[str]) -> str:
    """The run (and test set) of a row: model/seedN (on TESTSET)."""
    return run(row["model"], row["seed"]) + (f" on {row['testset']}" if "testset" in keys else "")


HEADLINE = ("bleu", "chrf")
"""The metrics of the headline files: what a reader compares first."""


def headline_numbers(runs: pd.DataFrame) -> dict[str, float | int]:
    """BLEU and chrF of one model on one test set over its `runs` (rows of scores.tsv): the
    mean and, with two runs or more, the standard deviation (ddof 1), and how many runs."""
    numbers: dict[str, float | int] = {}
    for metric in HEADLINE:
        numbers[metric] = round(float(runs[metric].mean()), 2)
        if len(runs) > 1:
            numbers[f"{metric}_sd"] = round(float(runs[metric].std(ddof=1)), 2)
    return numbers | {"runs": len(runs)}


def headline(scores: Path, outputs: list[Path]) -> None:
    """The headline scores for `dvc metrics show` and `dvc metrics diff`, one flat file per
    model and test set (`<model>/<testset>.json`, as `Layout.headline` names them, so that
    DVC prints a short row for each) from the score table `scores`."""
    table = read_table(scores, ["model", "testset", *HEADLINE])
    numbers = {}
    for path in map(Path, outputs):
        model, testset = path.absolute().parent.name, path.stem
        runs = table[(table["model"] == model) & (table["testset"] == testset)]
        if runs.empty:
            raise MixnmtError(f"{scores}: no run of {model} on {testset}, which {path} would report")
        numbers[path] = headline_numbers(runs)
    for path, shown in numbers.items():  # none written unless every one has its runs
        write_json(path, shown)


def aggregate(
    scores: list[Path],
    significances: list[Path],
    manifests: list[Path],
    reliances: list[Path],
    output: Path,
    metrics: Path,
    expected: dict[str, str] | None = None,
) -> tuple[pd.DataFrame, list[dict]]:
    """One row per test set x model x seed: BLEU, chrF, TER with 95% intervals and
    p-values against the baseline, lowercased BLEU, length ratio and looping share,
    source reliance (nats/token), the metric signatures, the run's fingerprint, the code
    version that scored it (`commit`), and the training run (parameters, steps,
    `train_commit`) from its manifest; also as JSON metrics {testset: {model: {metric:
    mean over seeds}}} for `dvc metrics`. Every input must be a run of `expected`, if
    given; no run (on a test set) may be in two files of a kind, and every score needs its
    significance test and manifest. Returns the table and the significance tests it read."""
    refuse_foreign([*scores, *significances, *manifests, *reliances], expected)
    keys = ["model", "seed"]
    tests = [read_json(path) for path in significances]
    rows = pd.DataFrame([_score_row(path) | {FILE: str(path)} for path in scores])
    table = _once(rows, [*keys, "testset"], "score")
    table = _joined(table, _bootstrap(tests, significances), [*keys, "testset"], "significance", needed=True)
    table = _joined(table, _overall_reliance(reliances), keys, "reliance", needed=False)
    table = _joined(table, _runs(manifests), keys, "training manifest", needed=True)
    table = table.drop(columns=FILE).sort_values(["testset", "model", "seed"]).reset_index(drop=True)
    write_table(output, table)
    numbers = ["bleu", "bleu_lc", "chrf", "ter", "reliance", "length_ratio", "looping"]
    means = table.groupby(["testset", "model"], sort=False)[[n for n in numbers if n in table]].mean()
    nested: dict[str, dict] = {}
    for (testset, model), row in means.iterrows():
        nested.setdefault(testset, {})[model] = {
            k: round(float(v), 4) for k, v in row.items() if not pd.isna(v)
        }
    write_json(metrics, nested)
    return table, tests
