"""sacreBLEU scores of one run's detokenised, cased translation against the raw
references, and what every comparison of translations checks first."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

from sacrebleu.metrics import BLEU, CHRF

from mixnmt import MixnmtError
from mixnmt.files import read_lines, sha256sum, write_json
from mixnmt.lineage import check_testset, translation_runs
from mixnmt.paths import run
from mixnmt.provenance import code_version
from mixnmt.runs import RECORD

log = logging.getLogger(__name__)


def read_aligned(hypotheses: Path, references: Path) -> tuple[list[str], list[str]]:
    """Lines of a system output and of its references; their counts must agree."""
    hyps, refs = read_lines(hypotheses), read_lines(references)
    if not refs:
        raise MixnmtError(f"{references}: no reference sentences to score against")
    if len(hyps) != len(refs):
        raise MixnmtError(f"{hypotheses} has {len(hyps)} lines but {references} has {len(refs)}")
    return hyps, refs


LOOP = 3
"""A hypothesis loops when one of its word 3-grams occurs 3 times or more."""


def loops(hypothesis: str, n: int = LOOP) -> bool:
    """Whether a word n-gram occurs at least n times: the repetition loop of a decoder that
    has lost its source ("in einem Hemd in einem Hemd in einem Hemd")."""
    words = hypothesis.split()
    return max(Counter(zip(*(words[i:] for i in range(n)))).values(), default=0) >= n


def measured(systems: list[list[str]], refs: list[str]) -> list[dict]:
    """What `score` measures of each translation in `systems` against the same references:
    the sentences, BLEU, chrF and lowercased BLEU with their signatures, length ratio and
    looping share. The references' n-grams are extracted once for all (sacreBLEU's cache)."""
    metrics = {
        "bleu": BLEU(references=[refs]),
        "chrf": CHRF(references=[refs]),
        "bleu_lc": BLEU(lowercase=True, references=[refs]),
    }
    results = []
    for hyps in systems:
        result: dict = {"sentences": len(hyps)}
        for name, metric in metrics.items():
            corpus = metric.corpus_score(hyps, None)
            result[name] = round(corpus.score, 2)
            result[f"{name}_signature"] = str(metric.get_signature())
            if name == "bleu":
                result["length_ratio"] = round(corpus.sys_len / corpus.ref_len, 3)
        result["looping"] = round(sum(map(loops, hyps)) / len(hyps), 3)
        results.append(result)
    return results


def compared(
    systems: dict[str, Path], expected: dict[str, str] | None, seed: int | None, testset: str, *texts: Path
) -> dict[str, dict | None]:
    """`translation_runs` of `systems` (of `seed`), each a translation of `testset`, and the
    `texts` (references, sources) of it too: `check_testset`."""
    check_testset(testset, {text: text for text in texts})
    return translation_runs(systems, expected, seed, testset)


def score(hypotheses: Path, references: Path, output: Path, model: str, testset: str, seed: int) -> dict:
    """BLEU, chrF and lowercased BLEU (`bleu_lc`, the case published Multi30k numbers use)
    of one system on one test set, with the metric signatures, as JSON; beside them two
    signs of a degenerate decoder: the output's length over the references' (BLEU's
    tokens) and the share of hypotheses that loop; and what was scored: the run that made
    the translation (from its record, if it has one), and the sha256 of the translation
    and of the references."""
    label = run(model, seed)
    made = compared({label: hypotheses}, None, None, testset, references)[label]
    hyps, refs = read_aligned(hypotheses, references)
    (measures,) = measured([hyps], refs)
    result = {"model": model, "seed": seed, "testset": testset, **measures}
    result["run"] = made and {k: made[k] for k in RECORD}
    result["translation"] = {"sha256": sha256sum(hypotheses)}
    result["references"] = {"sha256": sha256sum(references)}
    result["commit"] = code_version()
    write_json(output, result)
    log.info("%s %s: BLEU %.2f chrF %.2f", model, testset, result["bleu"], result["chrf"])
    return result
