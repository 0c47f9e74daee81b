"""sacreBLEU evaluation of detokenised, cased output against the raw references: scores,
sacreBLEU's paired bootstrap against a baseline, BLEU by source length, the score table."""

from __future__ import annotations

import bisect
import logging
import math
from pathlib import Path

import pandas as pd
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.significance import PairedTest

from mixnmt import MixnmtError
from mixnmt.files import read_json, read_lines, write_json, write_table, write_text
from mixnmt.report import markdown_scores

log = logging.getLogger(__name__)

METRICS = {"bleu": BLEU, "chrf": CHRF, "ter": TER}  # sacreBLEU defaults: 13a, chrF2, tercom


def read_aligned(hypotheses: Path, references: Path) -> tuple[list[str], list[str]]:
    """Lines of a system output and of its references; their counts must agree."""
    hyps, refs = read_lines(hypotheses), read_lines(references)
    if len(hyps) != len(refs):
        raise MixnmtError(f"{hypotheses} has {len(hyps)} lines but {references} has {len(refs)}")
    return hyps, refs


def score(hypotheses: Path, references: Path, output: Path, model: str, testset: str) -> dict:
    """BLEU and chrF of one system on one test set, with the metric signatures, as JSON."""
    hyps, refs = read_aligned(hypotheses, references)
    result = {"model": model, "testset": testset, "sentences": len(hyps)}
    for name, metric in (("bleu", BLEU()), ("chrf", CHRF())):
        result[name] = round(metric.corpus_score(hyps, [refs]).score, 2)
        result[f"{name}_signature"] = str(metric.get_signature())
    write_json(output, result)
    log.info("%s %s: BLEU %.2f chrF %.2f", model, testset, result["bleu"], result["chrf"])
    return result


def significance(
    references: Path, systems: dict[str, Path], baseline: str, resamples: int, testset: str, output: Path
) -> dict:
    """BLEU, chrF and TER of every system with 95% confidence intervals, and the p-value
    of its difference from `baseline`: sacreBLEU's paired bootstrap resampling."""
    if baseline not in systems:
        raise MixnmtError(f"analysis.baseline: {baseline!r} is not one of the systems ({', '.join(systems)})")
    order = [baseline, *(name for name in systems if name != baseline)]
    named = [(name, read_aligned(systems[name], references)[0]) for name in order]
    metrics = {key: make() for key, make in METRICS.items()}
    test = PairedTest(named, metrics, [read_lines(references)], test_type="bs", n_samples=resamples)
    signatures, results = test()  # keyed by sacreBLEU's metric names, in the order of `metrics`
    rows = []
    for i, model in enumerate(results["System"]):
        row = {"model": model, "testset": testset}
        for key, name in zip(metrics, signatures):
            result = results[name][i]
            p = None if result.p_value is None else float(result.p_value)  # sacreBLEU gives numpy floats
            row |= {
                key: round(float(result.score), 2),
                f"{key}_ci": round(float(result.ci), 2),
                f"{key}_p": p,
            }
        rows.append(row)
    payload = {
        "testset": testset,
        "baseline": baseline,
        "signatures": {key: str(sig) for key, sig in zip(metrics, signatures.values())},
        "systems": rows,
    }
    write_json(output, payload)
    return payload


def bucket_labels(edges: list[int]) -> list[str]:
    """Names of the source-length buckets that `edges` (words, increasing) delimit."""
    labels = [f"<={edges[0]}"] + [f"{a + 1}-{b}" for a, b in zip(edges, edges[1:])]
    return labels + [f">{edges[-1]}"]


def bleu_by_length(
    sources: Path, references: Path, systems: dict[str, Path], edges: list[int], testset: str, output: Path
) -> pd.DataFrame:
    """BLEU of every system on the sentences of each source-length bucket (in words)."""
    if sorted(set(edges)) != list(edges) or not edges:
        raise MixnmtError(f"analysis.length_buckets: expected increasing word counts, got {edges}")
    srcs, refs = read_aligned(sources, references)
    buckets = [bisect.bisect_left(edges, len(line.split())) for line in srcs]
    rows = []
    for model, path in systems.items():
        hyps, _ = read_aligned(path, references)
        for b, label in enumerate(bucket_labels(edges)):
            chosen = [i for i, bucket in enumerate(buckets) if bucket == b]
            bleu = BLEU().corpus_score([hyps[i] for i in chosen], [[refs[i] for i in chosen]]).score
            rows.append(
                {
                    "testset": testset,
                    "model": model,
                    "bucket": label,
                    "sentences": len(chosen),
                    "bleu": round(bleu, 2) if chosen else math.nan,
                }
            )
    table = pd.DataFrame(rows)
    write_table(output, table)
    return table


def aggregate(
    scores: list[Path],
    significances: list[Path],
    manifests: list[Path],
    output: Path,
    markdown: Path,
    metrics: Path,
) -> pd.DataFrame:
    """One row per model x test set: BLEU, chrF, TER with 95% intervals and p-values
    against the baseline, the metric signatures, and each model's training run
    (parameters, steps, git commit) from its manifest. Also as a Markdown table, and as
    JSON metrics {testset: {model: {metric: value}}} for `dvc metrics`."""
    runs = pd.DataFrame(
        [
            {"model": m["model"], "params": m["params"], "steps": m["steps"], "commit": m["git"]["commit"]}
            for m in map(read_json, manifests)
        ],
        columns=["model", "params", "steps", "commit"],
    )
    tests = [read_json(path) for path in significances]
    bootstrap = pd.DataFrame(
        [{k: v for k, v in row.items() if k not in ("bleu", "chrf")} for t in tests for row in t["systems"]],
        columns=["model", "testset", "bleu_ci", "bleu_p", "chrf_ci", "chrf_p", "ter", "ter_ci", "ter_p"],
    )
    table = (
        pd.DataFrame([read_json(path) for path in scores])
        .merge(bootstrap, on=["model", "testset"], how="left")
        .merge(runs, on="model", how="left")
        .sort_values(["testset", "model"])
        .reset_index(drop=True)
    )
    write_table(output, table)
    write_text(markdown, markdown_scores(table, tests))
    numbers = ["bleu", "bleu_ci", "chrf", "chrf_ci", "ter", "ter_ci"]
    nested: dict[str, dict] = {}
    for row in table.itertuples():
        nested.setdefault(row.testset, {})[row.model] = {
            k: float(getattr(row, k)) for k in numbers if not pd.isna(getattr(row, k))
        }
    write_json(metrics, nested)
    return table
