"""`mixnmt verify`: the chain from every published number back to the run that made it,
walked and checked. It needs the experiment's folder and configuration, and for the full
check the dataset's test files (to score every translation again with sacreBLEU); never
the checkpoints or a GPU.

The checks run in the order the pipeline made the files: each run's manifest against the
configuration's fingerprint, then every file made from the run, then the files gathered
from several runs, rebuilt from their inputs and compared. A file that fails is one
break, one line; a check whose inputs include a broken file is skipped (it could not pass
and would only repeat the break).
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import pandas as pd

from mixnmt import MixnmtError
from mixnmt.compare import bleu_by_length
from mixnmt.config import fingerprints, load, primary, read, selected, trained_twin
from mixnmt.data import read_parallel
from mixnmt.evaluate import measured
from mixnmt.figures import FIGURES
from mixnmt.files import read_json, read_lines, read_table, sha256sum, write_lines, write_table, write_text
from mixnmt.inputs import INPUTS, input_files
from mixnmt.lineage import records
from mixnmt.paths import Layout, run
from mixnmt.provenance import committed_sha256, drawn_from
from mixnmt.report import CONFIG_INPUT, ReportInputs, config_digest, markdown_scores, read_inputs, reported
from mixnmt.runs import ANALYSIS_ADDED, IDENTITY, fingerprint
from mixnmt.scoretable import aggregate, headline_numbers
from mixnmt.tables import TABLES

LEGACY = "an old format that records no run fingerprint; remake it with the current code"
MEASURED = ("sentences", "bleu", "chrf", "bleu_lc", "length_ratio", "looping")
"""What a score file says of its translation, each recomputed by the full check."""


def configuration(folder: Path, overlays: list[Path]) -> dict[str, Any]:
    """The configuration of the experiment in `folder`: config.yaml with `overlays`, or by
    default with the one overlay of experiments/ that names the folder's experiment."""
    name = folder.resolve().name
    if not overlays:
        overlays = [
            p for p in sorted(Path("experiments").glob("*.yaml")) if read(p).get("experiment") == name
        ]
        if len(overlays) > 1 or (not overlays and read("config.yaml").get("experiment") != name):
            found = ", ".join(map(str, overlays)) or "none"
            raise MixnmtError(
                f"{folder}: which configuration made it? experiments/ overlays naming experiment "
                f"{name!r}: {found}; give them with --configfile"
            )
    config = load(*overlays)
    if config["experiment"] != name:
        raise MixnmtError(
            f"{folder}: the configuration's experiment is {config['experiment']!r}, not {name!r}"
        )
    return config


@dataclass
class Chain:
    """Checks in the order files were made: one line per broken file, and a check with a
    broken (or skipped) input skipped."""

    folder: Path
    breaks: list[str] = field(default_factory=list)
    tainted: set[str] = field(default_factory=set)
    passed: int = 0
    skipped: int = 0

    def check(self, target: str, inputs: Iterable[str], test: Callable[[], str | None]) -> None:
        if any(str(path) in self.tainted for path in inputs):
            self.skipped += 1
            self.tainted.add(target)
            return
        try:
            problem = test() if Path(target).exists() else "missing"
        except MixnmtError as e:
            problem = str(e).removeprefix(f"{target}: ")
        except OSError as e:
            problem = f"cannot read {e.filename or ''} ({e.strerror})"
        if problem is None:
            self.passed += 1
            return
        self.breaks.append(f"{target}: {problem}")
        self.tainted.add(target)


def same_run(
    found: dict | None, model: str, seed: int, want: str, checkpoint: str | None = None
) -> str | None:
    """What is wrong with a file's record of its run, if it is not run (`model`, `seed`)
    of fingerprint `want` (and, if given, of that checkpoint's sha256)."""
    if not isinstance(found, dict) or not set(IDENTITY) <= found.keys():
        return LEGACY
    key, got = run(model, seed), run(found["model"], found["seed"])
    if got != key:
        return f"belongs to run {got} (fingerprint {found['fingerprint']}), not to {key}"
    if found["fingerprint"] != want:
        return f"run {key} has fingerprint {found['fingerprint']}, but the configuration's is {want}"
    if checkpoint and found.get("checkpoint") not in (None, checkpoint):
        return (
            f"made from checkpoint {found['checkpoint'][:16]}, not the run's {checkpoint[:16]} (its manifest)"
        )
    return None


def table_differs(committed: pd.DataFrame, rebuilt: pd.DataFrame, keys: int = 3) -> str | None:
    """Where two tables (read from TSV, `commit` columns aside) first differ, in words."""
    committed, rebuilt = (t.drop(columns="commit", errors="ignore") for t in (committed, rebuilt))
    if list(committed.columns) != list(rebuilt.columns):
        here, there = (", ".join(map(str, t.columns)) for t in (committed, rebuilt))
        return f"columns {here}; its inputs give {there}"
    if len(committed) != len(rebuilt):
        return f"{len(committed)} rows; its inputs give {len(rebuilt)}"
    for i in range(len(committed)):
        for column in committed.columns:
            a, b = committed[column].iloc[i], rebuilt[column].iloc[i]
            same = (pd.isna(a) and pd.isna(b)) or a == b
            if not same and isinstance(a, float) and isinstance(b, float):
                same = abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))
            if not same:
                where = ", ".join(str(v) for v in committed.iloc[i, :keys])
                return f"row {i + 1} ({where}), {column}: {a} here, {b} from its inputs"
    return None


def within(path: str, name: str) -> str:
    """A recorded path relative to experiment folder results/<name>/, or to the project
    (workflow/...: the report's captions)."""
    parts = PurePath(os.path.normpath(path)).parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] == name and parts[i - 1] == "results":
            return PurePath(*parts[i + 1 :]).as_posix()
    if "workflow" in parts:
        return PurePath(*parts[len(parts) - 1 - parts[::-1].index("workflow") :]).as_posix()
    return path


def text_sha256(lines: list[str]) -> str:
    """sha256 of lines as `files.write_lines` writes them."""
    return hashlib.sha256("".join(f"{line}\n" for line in lines).encode()).hexdigest()


def _rescored(translations: list[str], references: list[str]) -> list[dict]:
    return measured([read_lines(path) for path in translations], references)


class Verification:
    """One experiment's chain of files, checked (`run`)."""

    def __init__(self, folder: Path, config: dict[str, Any], data: Path | None):
        self.folder, self.config, self.data = folder, config, data
        self.layout = Layout(str(folder))
        self.models, self.seeds = selected(config), list(config["seeds"])
        self.testsets = list(config["datasets"][config["dataset"]]["test"])
        self.first = self.seeds[0]
        self.expected = fingerprints(config)
        self.chain = Chain(folder)
        self._manifests: dict[tuple[str, int], dict] = {}

    # --- what the files say -------------------------------------------------------------

    def manifest(self, model: str, seed: int) -> dict:
        if (model, seed) not in self._manifests:
            self._manifests[model, seed] = read_json(self.layout.train("manifest.json", model, seed))
        return self._manifests[model, seed]

    def checkpoint(self, model: str, seed: int) -> str | None:
        return (self.manifest(model, seed).get("run") or {}).get("checkpoint")

    def want(self, model: str, seed: int) -> str:
        return self.expected[run(model, seed)]

    def test_file(self, testset: str, lang: str) -> list[str]:
        """Lines of a test set as the workflow prepares it, from the dataset's pinned files."""
        entry = self.config["datasets"][self.config["dataset"]]["test"][testset]
        src, tgt = (self.data / entry[side]["file"] for side in (self.config["src"], self.config["tgt"]))
        for path, side in ((src, self.config["src"]), (tgt, self.config["tgt"])):
            if not path.is_file():
                raise MixnmtError(
                    f"{path}: not found; the full check reads the test sets (give --data, or --quick)"
                )
            if sha256sum(path) != entry[side]["sha256"]:
                raise MixnmtError(
                    f"{path}: not the pinned file (its sha256 differs from the configuration's)"
                )
        sources, references = read_parallel(src, tgt)
        return sources if lang == "src" else references

    # --- the checks ---------------------------------------------------------------------

    def run(self) -> Chain:
        references = {t: self.test_file(t, "tgt") for t in self.testsets} if self.data else {}
        for model in self.models:
            for seed in self.seeds:
                self.check_run(model, seed)
        self.check_scores(references)
        for seed in self.seeds:
            for testset in self.testsets:
                self.check_translations_of(
                    self.layout.significance(seed, testset), self.models, [seed], testset
                )
        contrasted = list(dict.fromkeys(m for pair in self.config["analysis"]["contrasts"] for m in pair))
        for testset in self.testsets:
            self.check_translations_of(self.layout.contrasts(testset), contrasted, self.seeds, testset)
            self.check_lengths(testset)
        self.check_summary()
        shared = [m for m in self.models if trained_twin(self.config, m) != m]
        files = input_files(self.layout, self.models, self.seeds, self.testsets, TABLES, shared)
        figures, tables = self.shown()
        for name in tables:
            self.check_table(name, TABLES[name].inputs, files)
        for name in figures:
            self.check_figure(name, [p for kind in FIGURES[name].inputs for p in files[kind]])
        self.check_report(files, figures, tables)
        return self.chain

    @functools.cached_property
    def report_record(self) -> dict[str, str] | None:
        """The report's record of its inputs, read once; None without a report or a record."""
        page = Path(self.layout.report)
        return read_inputs(page.read_text(encoding="utf-8")) if page.is_file() else None

    def shown(self) -> tuple[list[str], list[str]]:
        """The figures and tables the report shows: of those this code makes, the ones its
        record names (a study published before a figure or table was added has none of it),
        or all where it records nothing (which `check_report` reports)."""
        if self.report_record is None:
            return list(FIGURES), list(TABLES)
        named = {within(p, self.folder.resolve().name) for p in self.report_record}

        def recorded(paths: dict[str, str]) -> list[str]:
            return [name for name, path in paths.items() if self.relative(path) in named]

        return (
            recorded({name: self.layout.figure(name) for name in FIGURES}),
            recorded({name: self.layout.table(name) for name in TABLES}),
        )

    def check_run(self, model: str, seed: int) -> None:
        """The run's manifest against the configuration, then every file made from it."""
        layout, want = self.layout, self.want(model, seed)
        manifest = layout.train("manifest.json", model, seed)

        def definition() -> str | None:
            m = self.manifest(model, seed)
            if "definition" not in m:
                return LEGACY
            if fingerprint(m["definition"]) != (m.get("run") or {}).get("fingerprint"):
                return "its definition does not hash to its fingerprint (edited after training?)"
            return same_run(m.get("run"), model, seed, want)

        self.chain.check(manifest, [], definition)
        metrics = layout.train("metrics.tsv", model, seed)

        def metrics_file() -> str | None:
            found = records(metrics)
            if found is None:
                return LEGACY
            recorded = self.manifest(model, seed).get("metrics", {}).get("sha256")
            if sha256sum(metrics) != recorded:
                return "not the metrics its run's manifest records (sha256 differs)"
            return same_run(found[0], model, seed, want) if len(found) == 1 else "rows of several runs"

        self.chain.check(metrics, [manifest], metrics_file)
        for kind in ("reliance", "use"):
            path = layout.reliance(model, seed, kind)
            self.chain.check(path, [manifest], lambda path=path: self.per_run_table(path, model, seed))
        aligned = layout.word_alignments(model, seed)
        self.chain.check(aligned, [manifest], lambda: self.per_run_json(aligned, model, seed))
        if seed == self.first:
            for kind in ("speed", "analysis"):
                path = layout.per_model(kind, model)
                self.chain.check(path, [manifest], lambda path=path: self.per_run_json(path, model, seed))
        for testset in self.testsets:
            record, text = (layout.translation(model, testset, seed, suffix) for suffix in (".json", ".txt"))
            self.chain.check(record, [manifest], lambda record=record: self.per_run_json(record, model, seed))

            def translation(record: str = record, text: str = text) -> str | None:
                made = read_json(record)["output"]["sha256"]
                if sha256sum(text) != made:
                    return (
                        f"changed since its record was made ({len(read_lines(text))} lines, sha256 differs)"
                    )
                return None

            self.chain.check(text, [record], translation)

    def per_run_json(self, path: str, model: str, seed: int) -> str | None:
        payload = read_json(path)
        return same_run(payload.get("run"), model, seed, self.want(model, seed), self.checkpoint(model, seed))

    def per_run_table(self, path: str, model: str, seed: int) -> str | None:
        table = read_table(path)
        if not {*IDENTITY, "checkpoint"} <= set(table.columns):
            return LEGACY
        rows = table[[*IDENTITY, "checkpoint"]].drop_duplicates().to_dict("records")
        if not rows:
            return None  # a model without a mixture has no candidates to knock out: nothing to tie
        if len(rows) > 1:
            return "rows of several runs"
        return same_run(rows[0], model, seed, self.want(model, seed), self.checkpoint(model, seed))

    def check_scores(self, references: dict[str, list[str]]) -> None:
        """Every score against its translation and run; with the test sets at hand, every
        number recomputed with sacreBLEU (in parallel: the full check's cost)."""
        layout, scored = self.layout, {}
        for model in self.models:
            for seed in self.seeds:
                for testset in self.testsets:
                    path = layout.score(model, testset, seed)
                    inputs = [layout.translation(model, testset, seed, s) for s in (".json", ".txt")]
                    self.chain.check(path, inputs, lambda a=(path, model, seed, testset): self.score(*a))
                    if path not in self.chain.tainted:
                        scored[path] = (inputs[1], testset)
        if not references:
            self.references_agree(scored)
            return
        # Each test set's scores in as many parts as workers: a part extracts its references'
        # n-grams once.
        workers = min(len(scored), os.cpu_count() or 1) or 1
        by_testset = {t: [path for path, (_, s) in scored.items() if s == t] for t in self.testsets}
        parts = [(t, paths[i::workers]) for t, paths in by_testset.items() for i in range(workers)]
        parts = [(t, part) for t, part in parts if part]
        with ProcessPoolExecutor(workers) as pool:
            texts = [[scored[path][0] for path in part] for _, part in parts]
            rescored = pool.map(_rescored, texts, [references[t] for t, _ in parts])
            again = {path: a for (_, part), found in zip(parts, rescored) for path, a in zip(part, found)}
        for path, (_, testset) in scored.items():
            recorded = read_json(path)
            self.chain.check(
                path, [], lambda r=recorded, a=again[path], t=testset: self.rescored(r, a, references[t])
            )

    def score(self, path: str, model: str, seed: int, testset: str) -> str | None:
        score = read_json(path)
        if not isinstance(score.get("run"), dict) or "translation" not in score:
            return LEGACY
        if (score.get("model"), score.get("seed"), score.get("testset")) != (model, seed, testset):
            return f"the score of {run(score.get('model'), score.get('seed'))} on {score.get('testset')}"
        problem = same_run(score["run"], model, seed, self.want(model, seed), self.checkpoint(model, seed))
        if problem:
            return problem
        text = self.layout.translation(model, testset, seed)
        if score["translation"]["sha256"] != sha256sum(text):
            return f"scored another translation than {text} (sha256 differs)"
        return None

    def rescored(self, recorded: dict, again: dict, references: list[str]) -> str | None:
        if recorded["references"]["sha256"] != text_sha256(references):
            return "scored against other references than the test set's (sha256 differs)"
        wrong = [
            f"{k} {recorded.get(k)} (sacreBLEU gives {again[k]})"
            for k in MEASURED
            if recorded.get(k) != again[k]
        ]
        return ", ".join(wrong) or None

    def references_agree(self, scored: dict[str, tuple[str, str]]) -> None:
        """Without the test sets: every score of a test set names the same references."""
        digests = {path: read_json(path)["references"]["sha256"] for path in scored}
        for testset in self.testsets:
            paths = [path for path, (_, t) in scored.items() if t == testset]
            common = Counter(digests[p] for p in paths).most_common(1)
            for path in paths:
                odd = digests[path] != common[0][0]
                self.chain.check(
                    path, [], lambda odd=odd: "scored against other references than the rest" if odd else None
                )

    def check_translations_of(self, path: str, models: list[str], seeds: list[int], testset: str) -> None:
        """A file made from several runs' translations (significance, contrasts) names
        exactly those runs and translations."""
        texts = {run(m, s): self.layout.translation(m, testset, s) for m in models for s in seeds}

        def test() -> str | None:
            payload = read_json(path)
            found = payload.get("runs")
            if not isinstance(found, dict) or not all(isinstance(r, dict) for r in found.values()):
                return LEGACY
            found = {run(r["model"], r["seed"]): r for r in found.values()}
            if set(found) != set(texts):
                made, want = (", ".join(sorted(keys)) for keys in (found, texts))
                return f"made from runs {made}; the configuration's are {want}"
            for key, text in texts.items():
                model, seed = key.rsplit("/seed", 1)
                problem = same_run(
                    found[key], model, int(seed), self.expected[key], self.checkpoint(model, int(seed))
                )
                if problem:
                    return f"{key}: {problem}"
                if found[key]["translation"] != sha256sum(text):
                    return f"made from another translation than {text} (sha256 differs)"
            return self.settings_of(payload)

        self.chain.check(path, list(texts.values()), test)

    def settings_of(self, payload: dict) -> str | None:
        """A significance or contrast file's settings against the configuration's."""
        analysis = self.config["analysis"]
        if "baseline" in payload and payload["baseline"] != analysis["baseline"]:
            return f"baseline {payload['baseline']}; the configuration's is {analysis['baseline']}"
        if "contrasts" in payload:
            pairs = [[r["a"], r["b"]] for r in payload["contrasts"]]
            if pairs != [list(p) for p in analysis["contrasts"]]:
                return "its contrasts are not the configuration's analysis.contrasts"
            metric, testset = primary(self.config)
            wanted = metric if payload["testset"] == testset else None
            statistic = payload.get("statistic", ANALYSIS_ADDED["statistic"])  # made before the setting
            found = ", ".join(map(str, (payload.get("primary"), payload["margin"], statistic)))
            configured = ", ".join(map(str, (wanted, analysis["equivalence"], analysis["statistic"])))
            if found != configured:
                return (
                    f"primary metric, margin, statistic: {found}; the configuration's (analysis.primary, "
                    f"analysis.equivalence, analysis.statistic): {configured}"
                )
        return None

    def check_lengths(self, testset: str) -> None:
        path = self.layout.table(f"lengths/{testset}")
        texts = {m: self.layout.translation(m, testset, self.first) for m in self.models}

        def test() -> str | None:
            table = read_table(path)
            if not set(IDENTITY) <= set(table.columns):
                return LEGACY
            for row in table[list(IDENTITY)].drop_duplicates().to_dict("records"):
                problem = same_run(row, row["model"], self.first, self.want(row["model"], self.first))
                if problem:
                    return f"{row['model']}: {problem}"
            if not self.data:
                return None
            with tempfile.TemporaryDirectory() as tmp:
                sources, references = Path(tmp, "src"), Path(tmp, "tgt")
                write_lines(sources, self.test_file(testset, "src"))
                write_lines(references, self.test_file(testset, "tgt"))
                analysis = self.config["analysis"]
                edges, resamples = analysis["length_buckets"], analysis["bootstrap"]
                bleu_by_length(sources, references, texts, edges, resamples, testset, Path(tmp, "t.tsv"))
                return table_differs(table, read_table(Path(tmp, "t.tsv")))

        self.chain.check(path, list(texts.values()), test)

    def check_summary(self) -> None:
        """scores.tsv, .md and .json rebuilt from the per-run files; the headline files."""
        layout = self.layout
        scores = [layout.score(m, t, s) for m in self.models for s in self.seeds for t in self.testsets]
        tests = [layout.significance(s, t) for s in self.seeds for t in self.testsets]
        manifests = [layout.train("manifest.json", m, s) for m in self.models for s in self.seeds]
        reliance = [layout.reliance(m, s) for m in self.models for s in self.seeds]
        inputs = [*scores, *tests, *manifests, *reliance]
        with tempfile.TemporaryDirectory() as tmp:
            rebuilt = {ext: Path(tmp, f"scores.{ext}") for ext in ("tsv", "md", "json")}

            def build() -> str | None:
                table, read = aggregate(scores, tests, manifests, reliance, rebuilt["tsv"], rebuilt["json"])
                write_text(rebuilt["md"], markdown_scores(table, read))
                return table_differs(read_table(layout.summary()), read_table(rebuilt["tsv"]))

            self.chain.check(layout.summary(), inputs, build)
            for ext in ("md", "json"):
                path = layout.summary(ext)
                same = (
                    (lambda p=path, r=rebuilt[ext]: read_json(p) == read_json(r))
                    if ext == "json"
                    else (lambda p=path, r=rebuilt[ext]: Path(p).read_bytes() == r.read_bytes())
                )
                self.chain.check(
                    path,
                    [layout.summary()],
                    lambda same=same: None if same() else "differs from what the score files give",
                )
        self.check_headline()

    def check_headline(self) -> None:
        """Each headline file against the score table's runs of its model and test set."""
        table = functools.cache(lambda: read_table(self.layout.summary(), ["model", "testset"]))  # read once
        for model in self.models:
            for testset in self.testsets:

                def test(model: str = model, testset: str = testset) -> str | None:
                    runs = table()[(table()["model"] == model) & (table()["testset"] == testset)]
                    found = read_json(self.layout.headline(model, testset))
                    return None if found == headline_numbers(runs) else "differs from what scores.tsv gives"

                self.chain.check(self.layout.headline(model, testset), [self.layout.summary()], test)

    def check_table(self, name: str, kinds: tuple[str, ...], files: dict[str, list[str]]) -> None:
        path = self.layout.table(name)
        given = {kind: files[kind] for kind in kinds}

        def test() -> str | None:
            loaded = {
                kind: INPUTS[kind].load(
                    dict(zip(self.models, paths))
                    if INPUTS[kind].per_model
                    else paths[0]
                    if INPUTS[kind].single
                    else [Path(p) for p in paths]
                )
                for kind, paths in given.items()
            }
            with tempfile.TemporaryDirectory() as tmp:
                write_table(Path(tmp, "t.tsv"), TABLES[name].build(**loaded))
                return table_differs(read_table(path), read_table(Path(tmp, "t.tsv")))

        self.chain.check(path, [p for paths in given.values() for p in paths], test)

    def recorded_inputs(self, path: str, record: dict[str, str] | None, expected: list[str]) -> str | None:
        """A figure's or the report's record of its inputs against the files it should
        have been made from, and their contents now: the project's own files (the report's
        captions) as they are or as any commit of them was, so that a caption edited after
        a study was published leaves its report standing."""
        if record is None:
            return "an old format that records no inputs; remake it with the current code"
        name = self.folder.resolve().name
        found = {within(p, name): digest for p, digest in record.items()}
        want = {self.relative(p) for p in expected}
        if set(found) != want:
            odd = sorted(set(found) ^ want)[:3]
            return f"made from other files than the configuration's ({', '.join(odd)}, ...)"
        for relative, digest in found.items():
            path, ours = self.located(relative), relative.startswith("workflow/")
            if sha256sum(path) != digest and not (ours and digest in committed_sha256(path)):
                never = ", and no commit of it has the recorded one" if ours else ""
                return f"{relative} changed since it was made (sha256 differs{never})"
        return None

    def relative(self, path: str) -> str:
        return (
            Path(os.path.relpath(path, self.folder)).as_posix() if path.startswith(str(self.folder)) else path
        )

    def located(self, relative: str) -> Path:
        return Path(relative) if relative.startswith(("workflow/", "/")) else self.folder / relative

    def check_figure(self, name: str, inputs: list[str]) -> None:
        png, svg = self.layout.figure(name), self.layout.figure(name, "svg")

        def test() -> str | None:
            return self.recorded_inputs(png, drawn_from(png), inputs)

        def vector() -> str | None:
            drawn = drawn_from(svg)
            return (
                None
                if drawn is not None and drawn == drawn_from(png)
                else "not drawn from the inputs of its PNG"
            )

        self.chain.check(png, inputs, test)
        self.chain.check(svg, [png], vector)

    def check_report(self, files: dict[str, list[str]], figures: list[str], tables: list[str]) -> None:
        layout = self.layout
        captions = Path("workflow/report")
        inputs = ReportInputs(
            Path(layout.summary()),
            [Path(p) for p in files["significance"]],
            [Path(p) for p in files["lengths"]],
            [Path(p) for p in files["manifests"]],
            {name: Path(layout.figure(name)) for name in figures},
            {name: Path(layout.table(name)) for name in tables},
            captions,
        )
        expected = [str(p) for p in inputs.files()]

        def test() -> str | None:
            record = None if self.report_record is None else dict(self.report_record)
            if record is not None and record.pop(CONFIG_INPUT, None) != config_digest(reported(self.config)):
                return "made with another configuration than the experiment's"
            return self.recorded_inputs(layout.report, record, expected)

        self.chain.check(layout.report, expected, test)


def verify(folder: Path, overlays: list[Path], quick: bool, data: Path | None = None) -> Chain:
    """Check the experiment in `folder` (see the module's description): without `quick`
    every score is recomputed from the dataset's test files in `data` (default
    data/<dataset>/)."""
    if not folder.is_dir():
        raise MixnmtError(f"{folder}: not an experiment's folder")
    config = configuration(folder, overlays)
    data = None if quick else (data or Path("data") / config["dataset"])
    return Verification(folder, config, data).run()
