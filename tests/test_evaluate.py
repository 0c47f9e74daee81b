import json
import re

import pandas as pd
import pytest
import sacrebleu

from mixnmt import MixnmtError
from mixnmt.cli import main
from mixnmt.evaluate import aggregate, bleu_by_length, contrasts, holm, loops, score, significance
from mixnmt.files import sha256sum
from mixnmt.provenance import code_version
from mixnmt.report import markdown_scores
from mixnmt.runs import identity

HYPS = ["Ein Hund rennt im Park .", "Zwei Männer sitzen .", ""]
REFS = ["Ein Hund rennt durch den Park .", "Zwei Männer sitzen auf einer Bank .", "Ein Kind ."]


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def translated(path, lines, model, seed=1, fingerprint="f00d"):
    """A translation with its record (<name>.json), as `mixnmt translate --manifest` writes them."""
    write(path, lines)
    record = {"run": identity(model, seed, fingerprint, "c0ffee"), "output": {"sha256": sha256sum(path)}}
    path.with_suffix(".json").write_text(json.dumps(record))
    return path


def test_score_matches_sacrebleu_and_records_signatures(tmp_path):
    out = tmp_path / "scores" / "m" / "t.json"
    score(write(tmp_path / "h", HYPS), write(tmp_path / "r", REFS), out, "m", "t", 1)
    result = json.loads(out.read_text())
    assert result["bleu"] == round(sacrebleu.corpus_bleu(HYPS, [REFS]).score, 2)
    assert result["bleu_lc"] == round(sacrebleu.corpus_bleu(HYPS, [REFS], lowercase=True).score, 2)
    assert "case:lc" in result["bleu_lc_signature"]
    assert result["chrf"] == round(sacrebleu.corpus_chrf(HYPS, [REFS]).score, 2)
    assert result["bleu"] > 0
    assert "case:mixed" in result["bleu_signature"] and "tok:13a" in result["bleu_signature"]
    assert result["chrf_signature"].startswith("nrefs:1|case:mixed")
    assert (result["model"], result["seed"], result["testset"], result["sentences"]) == ("m", 1, "t", 3)
    bleu = sacrebleu.corpus_bleu(HYPS, [REFS])
    assert result["length_ratio"] == round(bleu.sys_len / bleu.ref_len, 3) < 1 and result["looping"] == 0


@pytest.mark.parametrize(
    ("hypothesis", "looping"),
    [
        ("Ein Mann in einem Hemd in einem Hemd in einem Hemd .", True),  # a 3-gram thrice
        ("Ein Mann in einem Hemd in einem Hemd .", False),  # twice is German
        ("a a a a a", True),  # "a a a" at three places
        ("a a a a", False),
        ("", False),
    ],
)
def test_a_hypothesis_loops_when_a_word_trigram_comes_three_times(hypothesis, looping):
    assert loops(hypothesis) is looping


def test_score_counts_the_looping_share(tmp_path):
    hyps = ["Ein Hund in einem Park in einem Park in einem Park", "Ein Hund .", "", "Zwei Männer ."]
    score(
        write(tmp_path / "h", hyps),
        write(tmp_path / "r", [*REFS, "Ein Mann ."]),
        tmp_path / "o.json",
        "m",
        "t",
        1,
    )
    assert json.loads((tmp_path / "o.json").read_text())["looping"] == 0.25


def test_score_refuses_misaligned_files(tmp_path):
    with pytest.raises(MixnmtError, match=r"h has 2 lines but .*r has 3"):
        score(write(tmp_path / "h", HYPS[:2]), write(tmp_path / "r", REFS), tmp_path / "o.json", "m", "t", 1)
    assert not (tmp_path / "o.json").exists()


def test_aggregate_one_row_per_model_and_testset_citing_the_runs(tmp_path):
    files, manifests, tests = [], [], []
    for model in ("other", "base"):
        for testset in ("b", "a"):
            out = tmp_path / model / f"{testset}.json"
            hyps = translated(tmp_path / f"{model}.txt", HYPS, model)
            score(hyps, write(tmp_path / "r", REFS), out, model, testset, 1)
            files.append(out)
        manifest = {
            "model": model,
            "train": {"seed": 1},
            "params": len(model) * 10**6,
            "params_no_embeddings": len(model) * 10**5,
            "steps": 7,
            "git": {"commit": "abc", "dirty": model == "other"},
        }
        manifests.append(tmp_path / model / "manifest.json")
        manifests[-1].write_text(json.dumps(manifest))
    for testset in ("a", "b"):
        hyps = {m: write(tmp_path / f"{m}.txt", HYPS) for m in ("base", "other")}
        tests.append(tmp_path / f"sig-{testset}.json")
        significance(write(tmp_path / "r", REFS), hyps, "base", 50, testset, 1, tests[-1])
    reliance = tmp_path / "reliance.tsv"
    pd.DataFrame(
        {"model": ["base", "base", "other"], "seed": 1, "position": [0, 1, 0], "difference": [0.5, 0.7, 0.25]}
    ).to_csv(reliance, sep="\t", index=False)
    table, read = aggregate(files, tests, manifests, [reliance], tmp_path / "scores.tsv", tmp_path / "m.json")
    assert table.equals(pd.read_csv(tmp_path / "scores.tsv", sep="\t"))
    assert list(zip(table.testset, table.model)) == [
        ("a", "base"),
        ("a", "other"),
        ("b", "base"),
        ("b", "other"),
    ]
    assert {"bleu", "bleu_ci", "bleu_p", "chrf", "chrf_ci", "ter", "ter_p", "bleu_signature"} <= set(
        table.columns
    )
    assert list(table.params) == [4e6, 5e6, 4e6, 5e6]
    # each row cites the code that trained the model and the code that scored it
    assert list(table.train_commit) == ["abc", "abc+dirty"] * 2 and set(table.commit) == {code_version()}
    assert list(table.reliance) == [0.5, 0.25, 0.5, 0.25]  # position 0: all tokens
    assert set(table.fingerprint) == {"f00d"}  # of the run each translation's record names
    assert table.bleu_p.isna().tolist() == [True, False, True, False]  # the baseline has no p-value
    markdown = markdown_scores(table, read)
    header = "| test set | model | seeds | BLEU | chrF | TER | BLEU (lc) | length | looping | reliance |"
    assert markdown.startswith(header + " parameters | without embeddings |")
    assert "| a | other | 1 |" in markdown and "(p=" in markdown and "5.0M" in markdown and "500k" in markdown
    assert "Paired bootstrap against base on a" in markdown
    metrics = json.loads((tmp_path / "m.json").read_text())
    assert metrics["a"]["other"]["bleu"] == table.bleu[1]
    numbers = {"bleu", "bleu_lc", "chrf", "ter", "reliance", "length_ratio", "looping"}
    assert set(metrics["a"]["base"]) == numbers


def test_aggregate_names_an_unreadable_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(MixnmtError, match="bad.json: not a readable JSON file"):
        aggregate([bad], [], [], [], tmp_path / "scores.tsv", tmp_path / "m.json")
    assert not (tmp_path / "scores.tsv").exists()


def test_significance_is_sacrebleus_paired_bootstrap(tmp_path):
    refs = write(tmp_path / "ref", REFS * 10)
    systems = {
        "base": write(tmp_path / "base", HYPS * 10),
        "good": write(tmp_path / "good", [*REFS[:2], "Ein Kind ."] * 10),
        "close": write(tmp_path / "close", [REFS[0]] + (HYPS * 10)[1:]),  # one sentence better
    }
    out = tmp_path / "sig.json"
    result = significance(refs, systems, "base", 100, "t", 1, out)
    assert json.loads(out.read_text()) == result
    rows = {row["model"]: row for row in result["systems"]}
    assert [row["model"] for row in result["systems"]] == ["base", "good", "close"]  # baseline first
    assert rows["base"]["bleu_p"] is None and rows["base"]["bleu_ci"] > 0
    assert rows["good"]["bleu_p"] < 0.05 and rows["good"]["ter"] < rows["base"]["ter"]
    assert rows["close"]["bleu"] > rows["base"]["bleu"] and rows["close"]["bleu_p"] > 0.05
    assert rows["good"]["bleu"] == round(
        sacrebleu.corpus_bleu([*REFS[:2], "Ein Kind ."] * 10, [REFS * 10]).score, 2
    )
    assert all("bs:100|seed:12345" in sig for sig in result["signatures"].values())


def test_significance_needs_its_baseline(tmp_path):
    with pytest.raises(MixnmtError, match="analysis.baseline: 'base' is not one of the systems"):
        significance(
            write(tmp_path / "r", REFS),
            {"x": write(tmp_path / "x", HYPS)},
            "base",
            10,
            "t",
            1,
            tmp_path / "o",
        )


def test_bleu_by_length_buckets(tmp_path):
    sources = ["one two", "one two three four", "a b c d e f g", "x " * 30, ""]
    refs = ["Eins zwei", "Eins zwei drei vier", "A B C D E F G", "y " * 30, ""]
    hyps = ["Eins zwei", "Eins drei vier", "A B C D E F G", "y " * 29, ""]
    src, ref, hyp = write(tmp_path / "s", sources), write(tmp_path / "r", refs), write(tmp_path / "h", hyps)
    table = bleu_by_length(src, ref, {"m": hyp}, [2, 4, 10], 100, "t", tmp_path / "lengths.tsv")
    assert list(table.bucket) == ["<=2", "3-4", "5-10", ">10"]
    assert list(table.sentences) == [2, 1, 1, 1]  # the empty line counts as length 0
    expected = sacrebleu.corpus_bleu([hyps[1]], [[refs[1]]]).score
    assert table.bleu[1] == pytest.approx(expected, abs=0.01)
    assert table.bleu_ci[2] == 0 and table.bleu_ci[0] >= 0  # sacreBLEU's bootstrap interval
    # and the run (none: a translation without a record) and the commit
    assert pd.read_csv(tmp_path / "lengths.tsv", sep="\t").shape == (4, 9)
    with pytest.raises(MixnmtError, match="analysis.length_buckets: expected increasing"):
        bleu_by_length(src, ref, {"m": hyp}, [4, 2], 100, "t", tmp_path / "x.tsv")


GOOD = [*REFS[:2], "Ein Kind ."]  # the references themselves
WORSE = ["Ein Hund .", "Zwei Männer .", "Kind ."]


def runs_of(tmp_path, **seeds_of: list[list[str]]) -> dict:
    """model -> seed -> a translation file (10 copies of the lines given per seed)."""
    return {
        model: {seed: write(tmp_path / f"{model}-{seed}", lines * 10) for seed, lines in enumerate(texts, 1)}
        for model, texts in seeds_of.items()
    }


def test_a_contrast_that_every_seed_shows_is_a_difference(tmp_path):
    refs = write(tmp_path / "ref", REFS * 10)
    runs = runs_of(tmp_path, base=[HYPS, WORSE, HYPS], good=[GOOD, GOOD, GOOD])
    result = contrasts(refs, runs, [("base", "good")], 200, 0.5, "t", tmp_path / "c.json")
    (row,) = result["contrasts"]
    assert (row["a"], row["b"], row["seeds"]) == ("base", "good", 3)
    assert (
        row["bleu_delta"] == pytest.approx(row["bleu_b"] - row["bleu_a"], abs=0.02) and row["bleu_delta"] > 0
    )
    assert row["bleu_low"] > 0 and row["bleu_p_holm"] < 0.05 and row["bleu_verdict"] == "B better"
    assert len(row["bleu_p_seeds"]) == 3 and all(p < 0.05 for p in row["bleu_p_seeds"])
    with pytest.raises(MixnmtError, match="analysis.contrasts: 'nope' is not one of the systems"):
        contrasts(refs, runs, [("base", "nope")], 10, 0.5, "t", tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


def test_seeds_that_disagree_leave_a_contrast_undecided_however_small_each_seeds_p(tmp_path):
    """The unit is the training run: one seed's sentence-level p-values can all be tiny
    while the runs disagree on the sign."""
    refs = write(tmp_path / "ref", REFS * 10)
    runs = runs_of(tmp_path, a=[GOOD, WORSE, GOOD, WORSE], b=[WORSE, GOOD, WORSE, GOOD])
    (row,) = contrasts(refs, runs, [("a", "b")], 300, 0.5, "t", tmp_path / "c.json")["contrasts"]
    assert row["bleu_low"] < 0 < row["bleu_high"] and row["bleu_verdict"] == "undecided"
    assert all(p < 0.05 for p in row["bleu_p_seeds"])


def test_identical_systems_are_equivalent_within_the_margin(tmp_path):
    refs = write(tmp_path / "ref", REFS * 10)
    runs = runs_of(tmp_path, a=[HYPS, WORSE], b=[HYPS, WORSE])
    (row,) = contrasts(refs, runs, [("a", "b")], 100, 0.5, "t", tmp_path / "c.json")["contrasts"]
    assert row["bleu_delta"] == 0 and row["chrf_p_holm"] == 1
    assert row["bleu_verdict"] == row["chrf_verdict"] == "equivalent (within 0.5)"


def test_holm_adjusts_p_values_step_down():
    assert holm([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert holm([0.2, 0.2]) == [0.4, 0.4] and holm([]) == []


def contrast_rows(chrf: list[tuple[float, str, float]], seeds: int = 3) -> pd.DataFrame:
    """A contrast table of one pair, a -> b, one row per (chrF delta, verdict, Holm p)."""
    rows = []
    for i, (delta, verdict, p) in enumerate(chrf):
        rows.append(
            {"testset": f"t{i}", "a": "small", "b": "big", "seeds": seeds, "chrf_delta": delta,
             "chrf_ci": f"{delta - 1:+.2f} .. {delta + 1:+.2f}", "chrf_verdict": verdict, "chrf_p": p,
             "bleu_delta": 0.1, "bleu_ci": "-0.90 .. +1.10", "bleu_verdict": "undecided", "bleu_p": 1.0}
        )  # fmt: skip
    return pd.DataFrame(rows)


def test_the_reports_answer_is_generated_from_the_contrast_table():
    from mixnmt.report import answer, answer_html

    (agreed,) = answer(contrast_rows([(1.5, "B better", 0.007), (2.0, "B better", 0.02)]))
    assert agreed == (
        "big against small (3 seeds): big beats small in chrF on every test set (+1.50 to +2.00 points, "
        "B - A; Holm p <= 0.020); BLEU cannot tell small and big apart on any test set "
        "(+0.10 points, undecided)."
    )
    (flipped,) = answer(contrast_rows([(-1.5, "A better", 0.007), (-2.0, "A better", 0.007)]))
    assert "small beats big in chrF on every test set (-2.00 to -1.50 points" in flipped
    (mixed,) = answer(contrast_rows([(1.5, "B better", 0.007), (0.3, "undecided", 0.4)], seeds=1))
    assert mixed.startswith("big against small (1 seed: no seed-level claim): chrF, B - A: t0: +1.50")
    assert "t1: +0.30 [-0.70 .. +1.30], undecided" in mixed
    page = answer_html(contrast_rows([(1.5, "B better", 0.007)]), {"max_steps": 5})
    assert (
        page.startswith('<p class="warning">A capped run (max_steps: 5)') and "<li>big against small" in page
    )


def test_the_report_shows_the_contrast_table_under_readable_headers():
    from mixnmt.tables import contrasts_html

    rows = contrast_rows([(1.5, "B better", 0.007)]).assign(
        params_a=0.8, params_b=0.9, bleu_a=6.0, bleu_b=6.1, chrf_a=20.0, chrf_b=21.5,
        bleu_p_seeds="0.001 0.140", chrf_p_seeds="0.001 0.001",
    )  # fmt: skip
    page = contrasts_html(rows)
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", page)
    assert headers[:3] == ["", "BLEU", "chrF"] and "Holm p" in headers and "95% interval" in headers
    assert not any("_" in h for h in headers)  # no raw column names
    cells = re.findall(r"<td>([^<]*)</td>", page)
    assert cells[:6] == ["t0", "small", "big", "3", "0.80", "0.90"]
    assert cells[6:13] == ["6.00", "6.10", "+0.10", "-0.90 .. +1.10", "1.000", "undecided", "0.001 0.140"]
    assert cells[13:] == ["20.00", "21.50", "+1.50", "+0.50 .. +2.50", "0.007", "B better", "0.001 0.001"]


def test_an_experiment_without_contrasts_gets_an_empty_contrast_file(tmp_path):
    """analysis.contrasts: [] is a valid study: its rule passes --pairs and no translation
    (the CLI refused both, so the run failed at its contrasts)."""
    refs = write(tmp_path / "ref", REFS * 10)
    output = tmp_path / "c.json"
    argv = ["contrasts", "--testset", "t", "--references", str(refs), "--pairs", "--resamples", "10"]
    assert main([*argv, "--margin", "0.5", "--runs", "{}", "--output", str(output)]) == 0
    assert json.loads(output.read_text())["contrasts"] == []
