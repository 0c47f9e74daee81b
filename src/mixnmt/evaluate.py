"""sacreBLEU scores of detokenised, cased output against the raw references, and the table."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
from sacrebleu.metrics import BLEU, CHRF

from mixnmt import MixnmtError
from mixnmt.files import atomic_path, read_lines, write_text

log = logging.getLogger(__name__)


def score(hypotheses: Path, references: Path, output: Path, model: str, testset: str) -> dict:
    """BLEU and chrF of one system on one test set, with the metric signatures, as JSON."""
    hyps, refs = read_lines(hypotheses), read_lines(references)
    if len(hyps) != len(refs):
        raise MixnmtError(f"{hypotheses} has {len(hyps)} lines but {references} has {len(refs)}")
    result = {"model": model, "testset": testset, "sentences": len(hyps)}
    for name, metric in (("bleu", BLEU()), ("chrf", CHRF())):
        result[name] = round(metric.corpus_score(hyps, [refs]).score, 2)
        result[f"{name}_signature"] = str(metric.get_signature())
    write_text(output, json.dumps(result, indent=2) + "\n")
    log.info("%s %s: BLEU %.2f chrF %.2f", model, testset, result["bleu"], result["chrf"])
    return result


def read_json(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise MixnmtError(f"{path}: not a readable JSON file ({e})") from None


def aggregate(scores: list[Path], manifests: list[Path], output: Path) -> pd.DataFrame:
    """One row per model x test set from the JSON files `score` wrote, citing each
    model's training run (parameters, steps, git commit) from its manifest."""
    runs = pd.DataFrame(
        [
            {"model": m["model"], "params": m["params"], "steps": m["steps"], "commit": m["git"]["commit"]}
            for m in map(read_json, manifests)
        ],
        columns=["model", "params", "steps", "commit"],
    )
    table = pd.DataFrame([read_json(path) for path in scores]).merge(runs, on="model", how="left")
    table = table.sort_values(["testset", "model"]).reset_index(drop=True)
    with atomic_path(output) as tmp:
        table.to_csv(tmp, sep="\t", index=False)
    return table
