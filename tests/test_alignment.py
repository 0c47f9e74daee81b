"""Word alignments: alignment error rate on hand-made sure and possible links, subwords to
words, the silver aligner (run where eflomal is installed, its absence always), and the
table and figure that compare the models' alignments with the silver ones."""

import importlib.metadata
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mixnmt import MixnmtError
from mixnmt.alignment import error_rate, parse, pharaoh, silver, word_links, words
from mixnmt.plots import alignment_errors as draw_alignment_errors
from mixnmt.tables import alignment_errors


def test_alignment_error_rate_of_hand_made_sure_and_possible_links():
    # sentence 1: A = {0-0, 2-1, 2-2}, S = {0-0, 1-1}, P = S + {2-1}: |A&S| = 1, |A&P| = 2
    # sentence 2: A = {}, S = {0-0}: it adds one sure link that nothing found
    alignments = [parse("0-0 2-1 2-2"), parse("")]
    sure = [parse("0-0 1-1"), parse("0-0")]
    possible = [parse("2-1"), set()]  # a sure link is possible without being listed
    scores = error_rate(alignments, sure, possible)
    assert scores["aer"] == pytest.approx(1 - (1 + 2) / (3 + 3))
    assert scores["precision"] == pytest.approx(2 / 3) and scores["recall"] == pytest.approx(1 / 3)
    assert error_rate(sure, sure, possible)["aer"] == 0  # the sure links themselves
    only_possible = error_rate([parse("2-1")], [parse("0-0 1-1")], [parse("2-1")])
    assert only_possible["aer"] == pytest.approx(1 - 1 / 3) and only_possible["recall"] == 0
    with pytest.raises(MixnmtError, match="alignments of 1, 2 and 2 sentences"):
        error_rate(alignments[:1], sure, sure)


def test_pharaoh_format_round_trips_and_refuses_garbage():
    assert pharaoh(parse("3-1 0-0  1-2\n")) == "0-0 1-2 3-1"
    with pytest.raises(MixnmtError, match=r"not an alignment in Pharaoh format \(i-j \.\.\.\): '0-0 x'"):
        parse("0-0 x")


def test_subwords_belong_to_the_word_their_marker_opened():
    assert words(["▁A", "▁man", "▁sleep", "s", ".", "</s>"]) == [0, 1, 2, 2, 2, None]
    assert words(["ein", "▁Mann", "▁", ",", "</s>"]) == [0, 1, 2, 2, None]  # no marker first
    source, target = [0, 1, 1, None], [0, 0, 1, None]  # subwords -> words; EOS last
    weights = np.array(
        [
            [0.7, 0.1, 0.1, 0.1],  # target word 0 <- source word 0
            [0.1, 0.1, 0.6, 0.2],  # target word 0 <- source word 1 (its second subword)
            [0.1, 0.1, 0.1, 0.7],  # target word 1 <- the source's EOS: no link
            [0.9, 0.0, 0.0, 0.1],  # EOS <- anything: no link
        ]
    )
    assert word_links(weights, source, target) == {(0, 0), (1, 0)}


@pytest.fixture
def corpus(tmp_path):
    """A small parallel corpus whose words translate one to one, in order."""
    lexicon = {"the": "die", "cat": "katze", "dog": "hund", "sleeps": "schläft", "runs": "läuft"}
    pairs = [f"{a} {b} {c}" for a in ["the"] for b in ["cat", "dog"] for c in ["sleeps", "runs"]] * 40
    paths = {}
    for split, lines in {"train": pairs, "test": ["the dog runs", "the cat sleeps"]}.items():
        for side, text in (("en", lines), ("de", [" ".join(lexicon[w] for w in s.split()) for s in lines])):
            paths[split, side] = tmp_path / f"{split}.{side}"
            paths[split, side].write_text("\n".join(text) + "\n")
    return (paths["train", "en"], paths["train", "de"]), (paths["test", "en"], paths["test", "de"])


SETTINGS = {"model": 3, "n_samplers": 3, "null_prior": 0.2, "rel_iterations": 1.0}


def test_silver_alignments_by_eflomal_are_sure_where_both_directions_agree(corpus, tmp_path):
    pytest.importorskip("eflomal")
    train, test = corpus
    result = silver(train, test, SETTINGS, tmp_path / "silver.json")
    assert json.loads((tmp_path / "silver.json").read_text()) == result
    assert result["aligner"] == "eflomal==2.0.0" and result["settings"] == SETTINGS
    assert result["trained_on"] == 162 and result["words"] == [[3, 3], [3, 3]]
    assert result["sure"] == ["0-0 1-1 2-2"] * 2  # word for word, in order
    assert all(parse(s) <= parse(p) for s, p in zip(result["sure"], result["possible"]))


def test_without_eflomal_the_alignment_errors_say_they_were_skipped(corpus, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "eflomal", None)  # import eflomal fails
    result = silver(*corpus, SETTINGS, tmp_path / "silver.json")
    assert result["skipped"].startswith("eflomal is not installed (pip install eflomal==2.0.0")
    assert "sure" not in json.loads((tmp_path / "silver.json").read_text())
    table = alignment_errors([], result)
    assert table.weights.tolist() == [f"skipped: {result['skipped']}"] and table.aer.isna().all()
    fig = draw_alignment_errors(table)
    assert fig.axes[0].texts[0].get_text() == table.weights[0]


def aligned(seed: int, links: dict[str, list[str]], words: list[list[int]], model: str = "m") -> dict:
    """A `mixnmt align` file of run `model` seed `seed`."""
    return {"model": model, "run": {"model": model, "seed": seed}, "words": words, "links": links}


def test_the_table_scores_each_weight_and_a_transformers_best_head_over_seeds():
    silver_links = {
        "words": [[2, 2], [1, 1], [3, 2]],
        "sure": ["0-0 1-1", "0-0", "0-0"],
        "possible": [""] * 3,
    }
    words = [[2, 2], [1, 1], [3, 3]]  # sentence 3's word counts differ from the silver ones: not scored
    seed1 = {
        "alignment": ["0-0 1-1", "0-0", "2-1"],  # AER 0
        "cross_attention mean": ["0-1 1-0", "0-0", ""],  # 1 - 2/6
        "cross_attention layer 1 head 1": ["0-1 1-0", "", ""],  # 1
        "cross_attention layer 2 head 1": ["0-0 1-0", "0-0", ""],  # best: 1 - 4/6
    }
    seed2 = {
        "alignment": ["0-1 1-0", "0-0", ""],  # 1 - 2/6
        "cross_attention mean": ["0-1 1-0", "0-0", ""],  # 1 - 2/6
        "cross_attention layer 1 head 1": ["0-0 1-1", "0-0", ""],  # best: 0
        "cross_attention layer 2 head 1": ["0-1 1-0", "", ""],  # 1
    }
    runs = [aligned(1, seed1, words), aligned(2, seed2, words), aligned(1, {}, words, model="plain")]
    table = alignment_errors(runs, silver_links).set_index("weights")
    assert table.model.tolist() == ["m"] * 3  # a run without source weights has no row
    assert table.seeds.tolist() == [2, 2, 2] and table.sentences.tolist() == [2, 2, 2]
    assert table.aer["alignment"] == pytest.approx((0 + 1 - 2 / 6) / 2, abs=1e-3)
    assert table.aer_sd["alignment"] == pytest.approx(np.std([0, 1 - 2 / 6], ddof=1), abs=1e-3)
    assert table.aer["cross_attention mean"] == pytest.approx(1 - 2 / 6, abs=1e-3)
    assert table.aer_sd["cross_attention mean"] == 0
    best = table.loc["cross_attention best head"]
    assert best.aer == pytest.approx((1 - 4 / 6 + 0) / 2, abs=1e-3)
    assert best.precision == pytest.approx((2 / 3 + 1) / 2, abs=1e-3)
    assert best.best_heads == "layer 2, head 1 (seed 1); layer 1, head 1 (seed 2)"
    assert pd.isna(table.best_heads["alignment"]) or table.best_heads["alignment"] == ""
    one = alignment_errors(runs[:1], silver_links).set_index("weights")
    assert one.seeds.tolist() == [1, 1, 1] and one.aer_sd.isna().all()  # one seed: no spread
    with pytest.raises(MixnmtError, match="m seed 1: alignments of 3 sentences, the silver ones of 2"):
        alignment_errors(runs, {k: v[:2] for k, v in silver_links.items()})


class StandIn:
    """A stand-in for eflomal: writes the links it is told to, or raises."""

    def __init__(self, forward: int, reverse: int, error: Exception | None = None):
        self.counts, self.error = (forward, reverse), error

    def Aligner(self, **settings):  # noqa: N802 (eflomal's name)
        return self

    def align(self, src, tgt, links_filename_fwd, links_filename_rev):
        if self.error:
            raise self.error
        for path, n in zip((links_filename_fwd, links_filename_rev), self.counts):
            Path(path).write_text("0-0\n" * n)


@pytest.mark.parametrize(
    "aligner, message",
    [
        (StandIn(161, 162), "eflomal wrote 161 forward alignments for 162 sentence pairs"),  # shifted
        (StandIn(162, 162, ValueError("n_samplers must be positive")),
         "analysis.aligner: eflomal failed (ValueError: n_samplers must be positive)"),
    ],
)  # fmt: skip
def test_an_aligner_that_fails_or_writes_too_few_links_is_refused(
    corpus, tmp_path, monkeypatch, aligner, message
):
    """A short links file would silently shift every silver alignment by a sentence."""
    monkeypatch.setitem(sys.modules, "eflomal", aligner)
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "2.0.0")
    with pytest.raises(MixnmtError) as error:
        silver(*corpus, SETTINGS, tmp_path / "silver.json")
    assert str(error.value) == message and not (tmp_path / "silver.json").exists()


def test_silver_alignments_without_words_or_links_are_refused_naming_what_is_missing():
    with pytest.raises(MixnmtError, match="^silver alignments: no words, sure, possible"):
        alignment_errors([], {"aligner": "eflomal==2.0.0"})


def test_an_alignment_error_rate_of_no_links_names_the_run_and_weights():
    silver_links = {"words": [[1, 1]], "sure": [""], "possible": [""]}
    with pytest.raises(MixnmtError, match="^m seed 3, alignment: no alignment error rate: none of the 1 sen"):
        alignment_errors([aligned(3, {"alignment": [""]}, [[1, 1]])], silver_links)
