import json

import pandas as pd
import pytest
import sacrebleu

from mixnmt import MixnmtError
from mixnmt.evaluate import aggregate, score

HYPS = ["Ein Hund rennt im Park .", "Zwei Männer sitzen .", ""]
REFS = ["Ein Hund rennt durch den Park .", "Zwei Männer sitzen auf einer Bank .", "Ein Kind ."]


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_score_matches_sacrebleu_and_records_signatures(tmp_path):
    out = tmp_path / "scores" / "m" / "t.json"
    score(write(tmp_path / "h", HYPS), write(tmp_path / "r", REFS), out, "m", "t")
    result = json.loads(out.read_text())
    assert result["bleu"] == round(sacrebleu.corpus_bleu(HYPS, [REFS]).score, 2)
    assert result["chrf"] == round(sacrebleu.corpus_chrf(HYPS, [REFS]).score, 2)
    assert result["bleu"] > 0
    assert "case:mixed" in result["bleu_signature"] and "tok:13a" in result["bleu_signature"]
    assert result["chrf_signature"].startswith("nrefs:1|case:mixed")
    assert (result["model"], result["testset"], result["sentences"]) == ("m", "t", 3)


def test_score_refuses_misaligned_files(tmp_path):
    with pytest.raises(MixnmtError, match=r"h has 2 lines but .*r has 3"):
        score(write(tmp_path / "h", HYPS[:2]), write(tmp_path / "r", REFS), tmp_path / "o.json", "m", "t")
    assert not (tmp_path / "o.json").exists()


def test_aggregate_one_row_per_model_and_testset_citing_the_runs(tmp_path):
    files, manifests = [], []
    for model in ("transformer", "rnn"):
        for testset in ("b", "a"):
            out = tmp_path / model / f"{testset}.json"
            score(write(tmp_path / "h", HYPS), write(tmp_path / "r", REFS), out, model, testset)
            files.append(out)
        manifest = {
            "model": model,
            "params": len(model),
            "steps": 7,
            "git": {"commit": "abc", "dirty": False},
        }
        manifests.append(tmp_path / model / "manifest.json")
        manifests[-1].write_text(json.dumps(manifest))
    aggregate(files, manifests, tmp_path / "scores.tsv")
    table = pd.read_csv(tmp_path / "scores.tsv", sep="\t")
    assert list(zip(table.testset, table.model)) == [
        ("a", "rnn"),
        ("a", "transformer"),
        ("b", "rnn"),
        ("b", "transformer"),
    ]
    assert {"bleu", "chrf", "bleu_signature", "chrf_signature", "sentences"} <= set(table.columns)
    assert list(table.params) == [3, 11, 3, 11] and set(table.commit) == {"abc"}


def test_aggregate_names_an_unreadable_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(MixnmtError, match="bad.json: not a readable JSON file"):
        aggregate([bad], [], tmp_path / "scores.tsv")
    assert not (tmp_path / "scores.tsv").exists()
