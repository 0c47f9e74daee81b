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
from mixnmt.files import read_json, read_lines, read_table, write_json, write_table
from mixnmt.provenance import code_version, stamped, version

log = logging.getLogger(__name__)

METRICS = {"bleu": BLEU, "chrf": CHRF, "ter": TER}  # sacreBLEU defaults: 13a, chrF2, tercom


def read_aligned(hypotheses: Path, references: Path) -> tuple[list[str], list[str]]:
    """Lines of a system output and of its references; their counts must agree."""
    hyps, refs = read_lines(hypotheses), read_lines(references)
    if not refs:
        raise MixnmtError(f"{references}: no reference sentences to score against")
    if len(hyps) != len(refs):
        raise MixnmtError(f"{hypotheses} has {len(hyps)} lines but {references} has {len(refs)}")
    return hyps, refs


def score(hypotheses: Path, references: Path, output: Path, model: str, testset: str, seed: int) -> dict:
    """BLEU, chrF and lowercased BLEU (`bleu_lc`, the case published Multi30k numbers use)
    of one system on one test set, with the metric signatures, as JSON."""
    hyps, refs = read_aligned(hypotheses, references)
    result = {"model": model, "seed": seed, "testset": testset, "sentences": len(hyps)}
    for name, metric in (("bleu", BLEU()), ("chrf", CHRF()), ("bleu_lc", BLEU(lowercase=True))):
        result[name] = round(metric.corpus_score(hyps, [refs]).score, 2)
        result[f"{name}_signature"] = str(metric.get_signature())
    result["commit"] = code_version()
    write_json(output, result)
    log.info("%s %s: BLEU %.2f chrF %.2f", model, testset, result["bleu"], result["chrf"])
    return result


def significance(
    references: Path,
    systems: dict[str, Path],
    baseline: str,
    resamples: int,
    testset: str,
    seed: int,
    output: Path,
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
        "seed": seed,
        "baseline": baseline,
        "signatures": {key: str(sig) for key, sig in zip(metrics, signatures.values())},
        "systems": rows,
        "commit": code_version(),
    }
    write_json(output, payload)
    return payload


def contrasts(
    references: Path,
    systems: dict[str, Path],
    pairs: list[tuple[str, str]],
    resamples: int,
    testset: str,
    seed: int,
    output: Path,
) -> dict:
    """Each contrast (A, B) of the study: B's BLEU and chrF minus A's, and the p-value of
    sacreBLEU's paired bootstrap with A as the baseline."""
    refs = [read_lines(references)]
    rows = []
    for a, b in pairs:
        for name in (a, b):
            if name not in systems:
                raise MixnmtError(
                    f"analysis.contrasts: {name!r} is not one of the systems ({', '.join(systems)})"
                )
        named = [(name, read_aligned(systems[name], references)[0]) for name in (a, b)]
        _, results = PairedTest(
            named, {"bleu": BLEU(), "chrf": CHRF()}, refs, test_type="bs", n_samples=resamples
        )()
        row = {"testset": testset, "seed": seed, "a": a, "b": b}
        for key, name in (("bleu", "BLEU"), ("chrf", "chrF2")):
            score_a, score_b = (float(r.score) for r in results[name])
            row |= {f"{key}_a": round(score_a, 2), f"{key}_b": round(score_b, 2)}
            row |= {f"{key}_delta": round(score_b - score_a, 2), f"{key}_p": float(results[name][1].p_value)}
        rows.append(row)
    payload = {"testset": testset, "seed": seed, "contrasts": rows, "commit": code_version()}
    write_json(output, payload)
    return payload


def bucket_labels(edges: list[int]) -> list[str]:
    """Names of the source-length buckets that `edges` (words, increasing) delimit."""
    labels = [f"<={edges[0]}"] + [f"{a + 1}-{b}" for a, b in zip(edges, edges[1:])]
    return labels + [f">{edges[-1]}"]


def bleu_by_length(
    sources: Path,
    references: Path,
    systems: dict[str, Path],
    edges: list[int],
    resamples: int,
    testset: str,
    output: Path,
) -> pd.DataFrame:
    """BLEU of every system on the sentences of each source-length bucket (in words),
    with sacreBLEU's 95% bootstrap interval."""
    if sorted(set(edges)) != list(edges) or not edges:
        raise MixnmtError(f"analysis.length_buckets: expected increasing word counts, got {edges}")
    srcs, refs = read_aligned(sources, references)
    buckets = [bisect.bisect_left(edges, len(line.split())) for line in srcs]
    rows = []
    for model, path in systems.items():
        hyps, _ = read_aligned(path, references)
        for b, label in enumerate(bucket_labels(edges)):
            chosen = [i for i, bucket in enumerate(buckets) if bucket == b]
            bleu = BLEU().corpus_score(
                [hyps[i] for i in chosen], [[refs[i] for i in chosen]], n_bootstrap=resamples
            )
            rows.append(
                {
                    "testset": testset,
                    "model": model,
                    "bucket": label,
                    "sentences": len(chosen),
                    "bleu": round(bleu.score, 2) if chosen else math.nan,
                    "bleu_ci": round(bleu._ci, 2) if chosen else math.nan,  # sacreBLEU's bootstrap
                }
            )
    table = stamped(pd.DataFrame(rows))
    write_table(output, table)
    return table


def aggregate(
    scores: list[Path],
    significances: list[Path],
    manifests: list[Path],
    reliances: list[Path],
    output: Path,
    metrics: Path,
) -> tuple[pd.DataFrame, list[dict]]:
    """One row per test set x model x seed: BLEU, chrF, TER with 95% intervals and
    p-values against the baseline, lowercased BLEU, source reliance (nats/token), the
    metric signatures, the code version that scored it (`commit`), and the training run
    (parameters, steps, `train_commit`) from its manifest. Also as JSON metrics
    {testset: {model: {metric: mean over seeds}}} for `dvc metrics`. Returns the table and
    the significance tests it read."""
    keys = ["model", "seed"]
    runs = pd.DataFrame(
        [
            {
                "model": m["model"],
                "seed": m["train"]["seed"],
                "params": m["params"],
                "params_no_embeddings": m["params_no_embeddings"],
                "steps": m["steps"],
                "train_commit": version(m["git"]),
            }
            for m in map(read_json, manifests)
        ],
        columns=[*keys, "params", "params_no_embeddings", "steps", "train_commit"],
    )
    tests = [read_json(path) for path in significances]
    bootstrap = pd.DataFrame(
        [
            {"seed": t["seed"], **{k: v for k, v in row.items() if k not in ("bleu", "chrf")}}
            for t in tests
            for row in t["systems"]
        ],
        columns=[*keys, "testset", "bleu_ci", "bleu_p", "chrf_ci", "chrf_p", "ter", "ter_ci", "ter_p"],
    )
    reliance = (
        pd.concat(map(read_table, reliances))
        if reliances
        else pd.DataFrame(columns=[*keys, "position", "difference"])
    )
    overall = reliance[reliance.position == 0][[*keys, "difference"]].rename(
        columns={"difference": "reliance"}
    )
    table = (
        pd.DataFrame([read_json(path) for path in scores])
        .merge(bootstrap, on=[*keys, "testset"], how="left")
        .merge(overall, on=keys, how="left")
        .merge(runs, on=keys, how="left")
        .sort_values(["testset", "model", "seed"])
        .reset_index(drop=True)
    )
    write_table(output, table)
    numbers = ["bleu", "bleu_lc", "chrf", "ter", "reliance"]
    means = table.groupby(["testset", "model"], sort=False)[numbers].mean()
    nested: dict[str, dict] = {}
    for (testset, model), row in means.iterrows():
        nested.setdefault(testset, {})[model] = {
            k: round(float(v), 4) for k, v in row.items() if not pd.isna(v)
        }
    write_json(metrics, nested)
    return table, tests
