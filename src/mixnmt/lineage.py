"""Which runs made a result file, as the file records them (mixnmt.runs), and the checks
that every command gathering results makes of its inputs: `refuse_foreign` (each a run of
this configuration), a translation made by the run it is given as and of the test set it
is given as, and no run (or test set) in two files of an input that holds one file each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mixnmt import MixnmtError
from mixnmt.files import read_json, read_table, sha256sum
from mixnmt.paths import parse_run, run, split_of
from mixnmt.runs import IDENTITY


def translation_record(path: str | Path) -> tuple[dict[str, Any] | None, dict[str, str] | None]:
    """The run that made translation `path` (its record `<name>.json`, written by
    `mixnmt translate --manifest`), with the translation's sha256 as `translation`, and the
    source it translated as the record names it ({path, sha256}); Nones for a translation
    without a record (made by hand), a None source for a record that names none. A
    translation changed since its record was written is an error."""
    path = Path(path)
    record_path = path.with_suffix(".json")
    if not record_path.is_file():
        return None, None
    record = read_json(record_path)
    made = record.get("output", {}).get("sha256") if isinstance(record, dict) else None
    if not made or not isinstance(record.get("run"), dict):
        raise MixnmtError(f"{record_path}: an old format that records no run or output; translate again")
    digest = sha256sum(path)
    if digest != made:
        raise MixnmtError(
            f"{path}: changed since {record_path} was written (sha256 {digest[:16]}, recorded {made[:16]})"
        )
    source = record.get("source")
    named = isinstance(source, dict) and all(isinstance(source.get(k), str) for k in ("path", "sha256"))
    return record["run"] | {"translation": digest}, source if named else None


def check_maker(path: str | Path, record: dict[str, Any], model: str, seed: int | None = None) -> None:
    """Raise MixnmtError, naming both runs, unless translation `path` (its run: `record`)
    was made by `model` (of `seed`, if given): a translation given under another run's
    name would be scored, tested and tabled as that run's."""
    if record["model"] != model or seed is not None and record["seed"] != seed:
        said = run(model, seed) if seed is not None else model
        raise MixnmtError(f"{path}: translated by {run(record['model'], record['seed'])}, not {said}")


def check_testset(testset: str, files: dict[str | Path, str | Path]) -> None:
    """Raise MixnmtError unless each file given (a key) is of `testset` where the name of an
    experiment's file says its split (`paths.split_of` of the value: the file itself, or
    the source its translation's record names). Multi30k's 2016 and 2017 test sets both
    have 1000 lines: one's translation or references lined up with the other's."""
    for given, named in files.items():
        split = split_of(named)
        if split is not None and split != testset:
            translates = f" (a translation of {named})" if Path(named) != Path(given) else ""
            raise MixnmtError(f"{given}: of {split}{translates}, given as {testset}'s")


def translation_runs(
    paths: dict[str, Path],
    expected: dict[str, str] | None,
    seed: int | None = None,
    testset: str | None = None,
) -> dict[str, dict | None]:
    """The run of each translation (`translation_record`), by the same keys: a run's label
    (`paths.run`) or a model's name (of `seed`, if given), which must be what made it
    (`check_maker`); with `expected`, each must be a run of that configuration (see
    `check_run`). All must translate one source, as their records name it (of `testset`,
    if given: `check_testset`): translations of two test sets of the same length would be
    compared sentence by sentence."""
    found, first = {}, None
    for key, path in paths.items():
        record, source = translation_record(path)
        found[key] = record
        if record is not None:
            check_maker(path, record, *(parse_run(key) or (key, seed)))
        if source is not None:
            if testset is not None:
                check_testset(testset, {path: source["path"]})
            first = first or (path, source)
            if source["sha256"] != first[1]["sha256"]:
                raise MixnmtError(
                    f"{path}: a translation of {source['path']} (sha256 {source['sha256'][:16]}), but "
                    f"{first[0]} is of {first[1]['path']} ({first[1]['sha256'][:16]}); the translations "
                    "compared must be of one source"
                )
        if expected is None:
            continue
        if record is None:
            raise MixnmtError(
                f"{path}: no record of the run that made it ({Path(path).with_suffix('.json')})"
            )
        check_run(path, record, expected)
    return found


def records(path: str | Path) -> list[dict[str, Any]] | None:
    """The runs a per-run file records (JSON: `run`, or the values of `runs`; a table: its
    distinct `model`, `seed`, `fingerprint` rows); None if it records none (an old format)."""
    path = Path(path)
    if path.suffix == ".json":
        payload = read_json(path)
        if not isinstance(payload, dict):
            return None
        if isinstance(payload.get("run"), dict):
            return [payload["run"]]
        runs = payload.get("runs")
        if isinstance(runs, dict) and all(isinstance(r, dict) for r in runs.values()):
            return list(runs.values())  # none: a file of no runs (an experiment without contrasts)
        return None
    import pandas as pd  # here, not at the top: the jobs that read no table skip its import

    table = read_table(path)
    if not set(IDENTITY) <= set(table.columns):
        return None
    rows = table[list(IDENTITY)].drop_duplicates()
    return [{k: (None if pd.isna(v) else v) for k, v in row.items()} for row in rows.to_dict("records")]


def check_run(path: str | Path, record: dict[str, Any], expected: dict[str, str]) -> None:
    """Raise MixnmtError, naming `path` and both fingerprints, unless `record` is a run of
    the configuration whose fingerprints are `expected`."""
    key = run(record.get("model"), record.get("seed"))
    want = expected.get(key)
    if want is None:
        raise MixnmtError(f"{path}: holds run {key}, which this configuration does not train")
    if record.get("fingerprint") != want:
        raise MixnmtError(
            f"{path}: run {key} has fingerprint {record.get('fingerprint')}, but this configuration's is "
            f"{want} (its model entry, training settings or data differ); remake it"
        )


def refuse_foreign(paths: list[Path] | list[str], expected: dict[str, str] | None) -> None:
    """Raise MixnmtError, naming the file, if any of `paths` (per-run files) records no run
    or a run that is not one of `expected` (None: check nothing)."""
    if expected is None:
        return
    for path in paths:
        found = records(path)
        if found is None:
            raise MixnmtError(
                f"{path}: an old format that records no run fingerprint; remake it with this code"
            )
        for record in found:
            check_run(path, record, expected)


def refuse_misnamed(named: dict[str, Path]) -> None:
    """Raise MixnmtError, naming the file, if one given as a model's (`named`: model ->
    path) records a run of another model: it would be drawn or tabled under that name."""
    for model, path in named.items():
        for record in records(path) or []:
            if record.get("model") != model:
                raise MixnmtError(
                    f"{path}: holds run {run(record.get('model'), record.get('seed'))}, given as {model}'s"
                )


def refuse_twice(paths: list[Path], what: str, one_per: str = "run") -> None:
    """Raise MixnmtError, naming both files, if two of `paths` (`what`: one file per run, or
    per test set) hold the same run (test set): its rows would count twice."""
    seen: dict[str, Path] = {}
    for path in paths:
        held = (
            held_testsets(path)
            if one_per == "testset"
            else [run(r.get("model"), r.get("seed")) for r in records(path) or []]
        )
        for key in held:
            if key in seen:
                raise MixnmtError(f"{what}: {key} in two files ({seen[key]}, {path})")
            seen[key] = path


def held_testsets(path: str | Path) -> list[str]:
    """The test sets a file holds (JSON: its `testset`; a table: its distinct `testset`
    values); none where it names none."""
    path = Path(path)
    if path.suffix == ".json":
        payload = read_json(path)
        named = isinstance(payload, dict) and isinstance(payload.get("testset"), str)
        return [payload["testset"]] if named else []
    table = read_table(path)
    return list(dict.fromkeys(table["testset"])) if "testset" in table.columns else []
