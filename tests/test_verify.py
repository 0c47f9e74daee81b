"""`mixnmt verify` on the published study: it passes as published, and each kind of mix-up
planted in a copy is one line naming the file. The aggregating jobs refuse per-run files
of another configuration."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import CONFIG, ROOT, published
from mixnmt import plots
from mixnmt.config import fingerprints, load
from mixnmt.provenance import drawn_from
from mixnmt.readme import publishes
from mixnmt.verify import verify

MIRROR = ROOT.parent / "shared" / "data" / "multi30k"
PUBLISHED = ROOT / "results" / "multi30k-cpu"
OVERLAY = ROOT / "experiments" / "cpu.yaml"
MODEL = yaml.safe_load(OVERLAY.read_text())["only"][0]  # a model of the published study
RUN, OTHER_SEED = (MODEL, 1), 2
TESTSET = next(iter(CONFIG["datasets"][CONFIG["dataset"]]["test"]))


@pytest.fixture
def study(tmp_path, monkeypatch) -> Path:
    """A copy of the published study to plant breaks in; the checks run from the project root."""
    monkeypatch.chdir(ROOT)
    return Path(shutil.copytree(PUBLISHED, tmp_path / PUBLISHED.name))


def breaks(folder: Path, quick: bool = True) -> list[str]:
    return verify(folder, [OVERLAY], quick, MIRROR).breaks


FULL = {PUBLISHED.name, publishes((ROOT / "docs/results.md").read_text())[-1]}
"""The studies whose full check runs in every test run: the study the others build on and
the one published last. The full check of every study (15 s each on 2 cores: 43% of the
suite's time at 51 studies, and growing with each) is the integration tier's, as it is
each study's at its publication; the scoring code is the same for all."""


def fully(folder: Path) -> bool:
    """Whether the default tier checks `folder` in full: one of FULL, with a copy of Multi30k."""
    return MIRROR.is_dir() and folder.name in FULL


@pytest.mark.parametrize(
    "folder",
    [pytest.param(p, marks=[pytest.mark.slow(seconds=60)] if fully(p) else []) for p in published()],
    ids=lambda p: p.name,
)
def test_every_published_study_verifies(folder, monkeypatch):
    """The quick check of every study (links, tables, runs and the files they were made
    from); where a copy of Multi30k is at hand, the full one of FULL: every score
    recomputed with sacreBLEU besides."""
    monkeypatch.chdir(ROOT)
    chain = verify(folder, [], quick=not fully(folder), data=MIRROR)
    assert chain.breaks == [] and chain.passed > 0


@pytest.mark.integration
@pytest.mark.parametrize("folder", [p for p in published() if p.name not in FULL], ids=lambda p: p.name)
def test_every_other_published_study_verifies_in_full(folder, monkeypatch):
    """The full check of the studies the default tier checks quickly."""
    if not MIRROR.is_dir():
        pytest.skip(f"no local copy of Multi30k at {MIRROR}")
    monkeypatch.chdir(ROOT)
    chain = verify(folder, [], quick=False, data=MIRROR)
    assert chain.breaks == [] and chain.passed > 0


def score(folder: Path, model: str, seed: int, testset: str = TESTSET) -> Path:
    return folder / "scores" / model / f"seed{seed}" / f"{testset}.json"


def test_a_score_file_of_another_run(study):
    shutil.copy(score(study, RUN[0], OTHER_SEED), score(study, *RUN))
    assert breaks(study) == [f"{score(study, *RUN)}: the score of {MODEL}/seed{OTHER_SEED} on {TESTSET}"]


def test_a_score_edited_by_a_tenth(study):
    path = score(study, *RUN)
    edited = json.loads(path.read_text())
    edited["bleu"] = round(edited["bleu"] + 0.1, 2)
    path.write_text(json.dumps(edited))
    (line,) = breaks(study)  # without the test sets: the score table no longer follows from it
    assert line.startswith(f"{study / 'scores.tsv'}: row ") and "bleu: " in line
    if MIRROR.is_dir():  # with them: sacreBLEU says otherwise
        (line,) = breaks(study, quick=False)
        assert line.startswith(f"{path}: bleu {edited['bleu']} (sacreBLEU gives ")


def test_a_manifest_of_another_seed(study):
    manifest = study / "train" / RUN[0] / "seed{}" / "manifest.json"
    shutil.copy(str(manifest).format(OTHER_SEED), str(manifest).format(RUN[1]))
    (line,) = breaks(study)
    assert line.startswith(f"{str(manifest).format(RUN[1])}: belongs to run {MODEL}/seed{OTHER_SEED}")


def test_a_word_alignment_file_of_another_seed(study):
    """Each run's alignments are tied to the run; the tables they feed are then not checked."""
    path = str(study / "word_alignments" / RUN[0] / "seed{}.json")
    shutil.copy(path.format(OTHER_SEED), path.format(RUN[1]))
    (line,) = breaks(study)
    assert line.startswith(f"{path.format(RUN[1])}: belongs to run {MODEL}/seed{OTHER_SEED}")


def test_a_reliance_file_in_the_old_format(study):
    path = study / "reliance" / RUN[0] / f"seed{RUN[1]}.tsv"
    table = pd.read_csv(path, sep="\t")
    table.drop(columns=["fingerprint", "checkpoint"]).to_csv(path, sep="\t", index=False)
    assert breaks(study) == [
        f"{path}: an old format that records no run fingerprint; remake it with the current code"
    ]


def test_a_translation_one_line_short(study):
    path = study / "translations" / RUN[0] / f"seed{RUN[1]}" / f"{TESTSET}.txt"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]), encoding="utf-8")
    assert breaks(study) == [
        f"{path}: changed since its record was made ({len(lines) - 1} lines, sha256 differs)"
    ]


def test_a_table_row_edited(study):
    path = study / "tables" / "cost.tsv"
    table = pd.read_csv(path, sep="\t")
    table.loc[1, "bleu"] += 0.5
    table.to_csv(path, sep="\t", index=False)
    (line,) = breaks(study)
    assert line.startswith(f"{path}: row 2 ({table.model[1]}, ") and "bleu: " in line


def test_a_contrast_file_of_another_statistic(study):
    """A contrast file records the test it used; one made before analysis.statistic used
    Welch's t, as the published ones did."""
    path = study / "contrasts" / f"{TESTSET}.json"
    payload = json.loads(path.read_text())
    assert "statistic" not in payload and breaks(study) == []  # made before the setting: Welch's t
    path.write_text(json.dumps(payload | {"statistic": "paired"}))
    (line,) = breaks(study)
    assert line == (
        f"{path}: primary metric, margin, statistic: chrf, 1.0, paired; the configuration's "
        "(analysis.primary, analysis.equivalence, analysis.statistic): chrf, 1.0, welch"
    )


def test_an_analysis_setting_added_later_changes_no_report_at_the_value_reports_had():
    """analysis.statistic came after the published reports, which recorded their
    configuration: at welch, what they used, it stays out of the recorded configuration;
    any other value is recorded."""
    from mixnmt.report import reported

    config = load()
    assert config["analysis"]["statistic"] == "welch" and "statistic" not in reported(config)["analysis"]
    paired = config | {"analysis": config["analysis"] | {"statistic": "paired"}}
    assert reported(paired)["analysis"]["statistic"] == "paired"


def test_a_column_either_table_has_beyond_the_other_is_a_difference():
    """A column the inputs give that the committed table lacks, even an empty one, or one
    the committed table has beyond them, is a difference; the `commit` column is not."""
    from mixnmt.verify import table_differs

    committed = pd.DataFrame({"a": ["x", "y"], "p": [0.1, 0.2]})
    assert table_differs(committed, committed.assign(commit=["c", "d"])) is None
    assert (
        table_differs(committed, committed.assign(new=[None, None]))
        == "columns a, p; its inputs give a, p, new"
    )
    assert (
        table_differs(committed.assign(new=[None, None]), committed)
        == "columns a, p, new; its inputs give a, p"
    )


def test_a_headline_file_edited(study):
    path = study / "headline" / MODEL / f"{TESTSET}.json"
    edited = json.loads(path.read_text())
    edited["chrf"] += 0.01
    path.write_text(json.dumps(edited))
    assert breaks(study) == [f"{path}: differs from what scores.tsv gives"]


def test_a_figure_or_table_added_after_a_study_was_published_is_not_asked_of_it(study, monkeypatch):
    """A study is checked against the figures and tables its report shows: one the code
    draws now that it does not show is no break, one it shows that is gone is."""
    from mixnmt import verify as checking

    figure, table = next(iter(checking.FIGURES)), next(iter(checking.TABLES))
    monkeypatch.setattr(checking, "FIGURES", {**checking.FIGURES, "added": checking.FIGURES[figure]})
    monkeypatch.setattr(checking, "TABLES", {**checking.TABLES, "added": checking.TABLES[table]})
    assert breaks(study) == []
    (study / "figures" / f"{figure}.png").unlink()
    assert breaks(study)[0] == f"{study / 'figures' / figure}.png: missing"


def test_a_figure_the_report_shows_and_the_code_draws_no_longer_is_a_break(study, monkeypatch):
    from mixnmt import verify as checking

    figure, *kept = checking.FIGURES
    monkeypatch.setattr(checking, "FIGURES", {name: checking.FIGURES[name] for name in kept})
    assert breaks(study) == [
        f"{study / 'report.html'}: made from other files than the configuration's "
        f"(figures/{figure}.png, workflow/report/{figure}.rst, ...)"
    ]


def test_a_caption_edited_after_the_report_was_made_stands_if_a_commit_had_its_text(study, monkeypatch):
    """The report records the sha256 of each caption it shows; a caption edited since is
    the project's text still when one of its commits had that text (its git history)."""
    from mixnmt import verify as checking
    from mixnmt.report import read_inputs

    report = study / "report.html"
    page = report.read_text(encoding="utf-8")
    caption = f"workflow/report/{next(iter(checking.FIGURES))}.rst"
    earlier = "0" * 64  # the sha256 of a text the caption had at an earlier commit
    record = read_inputs(page)
    report.write_text(page.replace(record[caption], earlier), encoding="utf-8")
    assert breaks(study) == [
        f"{report}: {caption} changed since it was made (sha256 differs, and no commit of it has the "
        "recorded one)"
    ]
    monkeypatch.setattr(checking, "committed_sha256", lambda path: frozenset({earlier}))
    assert breaks(study) == []


def test_an_aggregation_over_two_configurations_is_refused(study, tmp_path):
    """A model entry changed since the runs were made: `mixnmt aggregate` under the new
    configuration refuses the old runs' files, naming the first and both fingerprints."""
    overlay = tmp_path / "changed.yaml"
    entry = {**load(OVERLAY)["models"][MODEL], "dropout": 0.3}
    overlay.write_text(yaml.safe_dump({"models": {MODEL: entry}}))
    old, new = fingerprints(load(OVERLAY)), fingerprints(load(OVERLAY, overlay))
    key = f"{MODEL}/seed1"
    assert [k for k in old if old[k] != new[k]] == [f"{MODEL}/seed{s}" for s in load(OVERLAY)["seeds"]]
    scores = sorted(study.glob("scores/*/seed*/*.json"))
    done = subprocess.run(
        [Path(sys.executable).parent / "mixnmt", "aggregate", "--scores", *scores,
         "--significance", *sorted(study.glob("significance/*/*.json")),
         "--manifests", *sorted(study.glob("train/*/seed*/manifest.json")),
         "--output", tmp_path / "s.tsv", "--markdown", tmp_path / "s.md", "--metrics", tmp_path / "s.json",
         "--runs", json.dumps(new)],
        capture_output=True, text=True,
    )  # fmt: skip
    first = next(p for p in scores if f"/{MODEL}/" in str(p))
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr == (
        f"mixnmt aggregate: error: {first}: run {key} has fingerprint {old[key]}, but this "
        f"configuration's is {new[key]} (its model entry, training settings or data differ); "
        "remake it\n"
    )
    assert not (tmp_path / "s.tsv").exists()


@pytest.mark.parametrize("folder", published(), ids=lambda p: p.name)
def test_the_published_results_are_the_ones_their_tables_give(folder, monkeypatch):
    """Every number of docs/results.md comes from the tables through `mixnmt readme`."""
    from mixnmt.readme import rewrite
    from mixnmt.verify import configuration

    monkeypatch.chdir(ROOT)
    assert rewrite(ROOT / "docs/results.md", folder, configuration(folder, []), check=True)


def test_the_readmes_claims_are_every_published_contrast_as_its_table_gives_it(monkeypatch):
    """The README's Results is the claims table, one row per contrast of every experiment
    docs/results.md publishes (every results folder in git, none else), each with the bold
    cell of that experiment's own table, and their figure is drawn from those cells; the
    experiments' full results stay out of it."""
    from mixnmt.files import read_table
    from mixnmt.readme import (
        BEGIN,
        claims_table,
        contrasts_table,
        published_studies,
        publishes,
        redraw_claims,
        rewrite_claims,
        withdrawn_verdicts,
    )
    from mixnmt.verify import configuration

    monkeypatch.chdir(ROOT)
    results, readme = ROOT / "docs/results.md", (ROOT / "README.md").read_text()
    assert sorted(publishes(results.read_text())) == [folder.name for folder in published()]
    figure, (found, sections) = ROOT / "docs/claims.png", published_studies(results, ROOT / "results")
    withdrawn = withdrawn_verdicts(found)
    assert rewrite_claims(ROOT / "README.md", found, sections, figure, withdrawn, check=True)
    assert redraw_claims(figure, found, withdrawn, check=True)
    assert BEGIN.split("{")[0] not in readme
    studies = {folder: configuration(folder, []) for folder in published()}
    claims = claims_table(studies)
    for folder, config in studies.items():
        testsets = list(config["datasets"][config["dataset"]]["test"])
        table = contrasts_table(read_table(folder / "tables/contrasts.tsv"), config, testsets)
        bold = [(row.A, row.B, c) for row in table.itertuples() for c in row if str(c).startswith("**")]
        mine = claims[claims.experiment == f"`{config['experiment']}`"]
        assert list(zip(mine.A, mine.B, mine["B - A"])) == bold


def test_a_claim_row_says_how_long_its_runs_trained_and_a_contrast_without_a_verdict_has_none(
    tmp_path, monkeypatch
):
    """A run that patience stopped makes its experiment "at most N epochs"; a contrast whose
    cells all describe (no pre-declared cell) is no claim, so it has no row; a long "what
    differs" keeps its first two differences and counts the rest."""
    from mixnmt.files import read_table, write_table
    from mixnmt.readme import claims_table, in_short
    from mixnmt.verify import configuration

    monkeypatch.chdir(ROOT)
    published_folder = ROOT / "results/multi30k-cpu-states"
    config = configuration(published_folder, [])
    folder = tmp_path / published_folder.name
    shutil.copytree(published_folder / "train", folder / "train")
    contrasts = read_table(published_folder / "tables/contrasts.tsv")
    described = contrasts.assign(a="mixture-states-gated", b="mixture-summary-gated")
    described[[c for c in contrasts if c.endswith("_verdict")]] = "descriptive"
    write_table(folder / "tables/contrasts.tsv", pd.concat([contrasts, described]))
    assert claims_table({folder: config}).trained.tolist() == ["10 epochs, fp32"]
    assert claims_table({folder: config}).test.tolist() == ["Welch"]
    paired = config | {"analysis": config["analysis"] | {"statistic": "paired"}}
    assert claims_table({folder: paired}).test.tolist() == ["paired"]
    metrics = folder / "train/mixture-states-gated/seed1/metrics.tsv"
    write_table(metrics, read_table(metrics).head(7))  # stopped by patience after 7 epochs
    claims = claims_table({folder: config})
    assert claims.trained.tolist() == ["at most 10 epochs, fp32"]
    assert (claims.A + claims.B).tolist() == ["`mixture-summary-gated``mixture-states-gated`"]
    assert in_short("arch a → b; hidden 1 → -; heads - → 4; layers - → 2") == (
        "arch a → b; hidden 1 → -; and 2 more"
    )
    assert in_short("source summary → states") == "source summary → states"


def test_each_claims_experiment_links_to_the_section_that_publishes_it():
    """The README's claims table links each experiment to its section of docs/results.md,
    by the anchor GitHub gives the last heading above the experiment's results."""
    from mixnmt.readme import BEGIN, anchors

    results = "\n".join(
        [
            "## The CPU study, part one (`experiments/cpu.yaml`)",
            "Text that names no experiment.",
            BEGIN.format(experiment="multi30k-cpu"),
            "### A subsection",
            "## Part one's source contrast, trained longer in bf16 (`experiments/cpu-states-bf16.yaml`)",
            BEGIN.format(experiment="multi30k-cpu-states-bf16"),
        ]
    )
    assert anchors(results) == {
        "multi30k-cpu": "the-cpu-study-part-one-experimentscpuyaml",
        "multi30k-cpu-states-bf16": "part-ones-source-contrast-trained-longer-in-bf16-"
        "experimentscpu-states-bf16yaml",
    }
    readme = (ROOT / "README.md").read_text()
    assert "| [`multi30k-cpu`](docs/results.md#the-cpu-study-part-one-experimentscpuyaml) |" in readme


def test_readme_check_names_the_stale_file_in_one_line_and_rewriting_mends_it(tmp_path):
    """`mixnmt readme --check` refuses claims that are not the tables' (one line naming the
    README, nothing rewritten); without --check it writes them and draws their figure, and
    the check then passes, until the figure, or its SVG alone, is drawn from anything else
    (one line naming it)."""
    readme, results, figure = tmp_path / "README.md", tmp_path / "results.md", tmp_path / "docs/claims.png"
    results.write_text((ROOT / "docs/results.md").read_text())
    stale = (ROOT / "README.md").read_text().replace("chrF 2016 | **", "chrF 2016 | **+9.99 ", 1)
    readme.write_text(stale)
    command = [
        Path(sys.executable).parent / "mixnmt", "readme", "results/multi30k-cpu",
        "--results", results, "--readme", readme, "--figure", figure,
    ]  # fmt: skip
    checked = subprocess.run([*command, "--check"], cwd=ROOT, capture_output=True, text=True)
    assert checked.returncode == 1 and checked.stderr == (
        f"mixnmt readme: error: {readme}: the claims are not the ones the tables of {results}'s "
        "experiments give; run mixnmt readme\n"
    )
    assert readme.read_text() == stale and not figure.exists()
    subprocess.run(command, cwd=ROOT, check=True)
    assert readme.read_text() == (ROOT / "README.md").read_text()
    assert drawn_from(figure) == drawn_from(ROOT / "docs/claims.png")
    assert subprocess.run([*command, "--check"], cwd=ROOT).returncode == 0
    refused = (
        f"mixnmt readme: error: {figure}: not drawn from the claims of {results}'s experiments; "
        "run mixnmt readme\n"
    )
    svg = figure.with_suffix(".svg")  # the one the README shows
    svg.write_text(svg.read_text().replace(drawn_from(figure)["claims"], "0" * 64))
    assert subprocess.run([*command, "--check"], cwd=ROOT, capture_output=True, text=True).stderr == refused
    subprocess.run(command, cwd=ROOT, check=True)
    plots.save(plots.empty("drawn from something else"), figure, {"claims": "0" * 64})
    checked = subprocess.run([*command, "--check"], cwd=ROOT, capture_output=True, text=True)
    assert checked.returncode == 1 and checked.stderr == refused


def test_the_readme_says_how_long_each_model_trained_and_what_one_seed_is():
    """A run stopped by patience is described as such (its epochs are in the cost table);
    one seed's numbers are labelled one run's, a description."""
    from mixnmt.readme import how_summarised, how_trained

    train = {"max_tokens": 4096, "epochs": 40, "patience": 5, "precision": "bf16", "lr": 0.0007}
    train |= {"weight_decay": 0.0001, "decay": "all"}
    config = {"train": train, "models": {"a": {}, "b": None}}
    shared = "in bf16, at a peak learning rate of 0.0007 and a weight decay of 0.0001 on every parameter"
    assert how_trained(config, {"a": 40, "b": 40}, 4920) == (
        f"each trained for 40 epochs (4920 updates of batches of at most 4096 tokens) {shared},"
    )
    assert how_trained(config, {"a": 23, "b": 40}, 2829) == (
        f"each trained on batches of at most 4096 tokens {shared} until its validation loss had not "
        "improved for 5 epochs, or for at most 40 (the epochs each ran: the cost table),"
    )
    # a model whose entry trains it differently: said, and its own epochs are its budget
    config["models"]["a"] = {"train": {"epochs": 20, "decay": "matrices"}}
    assert how_trained(config, {"a": 20, "b": 40}, 4920) == (
        f"each trained for 40 epochs (4920 updates of batches of at most 4096 tokens) {shared}, "
        "`a` with epochs 20, decay matrices,"
    )
    # the shared settings as the section sets them; auto names where the resolved one is
    train |= {"precision": "auto", "lr": 0.001, "weight_decay": 0.1, "decay": "matrices"}
    assert how_trained(config, {"a": 20, "b": 40}, 4920).startswith(
        "each trained for 40 epochs (4920 updates of batches of at most 4096 tokens) in bf16 where "
        "native, else fp32 (auto: each run's manifest says which), at a peak learning rate of 0.001 "
        "and a weight decay of 0.1 on the weight matrices only, `a` with"
    )
    assert how_summarised([1]).startswith("One seed (1): every number is one run's, a description")
    assert how_summarised([1, 2]).startswith("Means ± sd over seeds")


def test_published_references_stand_beside_the_models_in_their_metric(monkeypatch):
    """`analysis.references`: each reference's row under its metric, beside every model's
    mean over seeds of that metric, per test set ("–" where it published none)."""
    import pandas as pd

    from mixnmt.readme import results_block
    from mixnmt.verify import configuration

    monkeypatch.chdir(ROOT)
    folder = published()[-1]
    config = configuration(folder, [])
    testsets = list(config["datasets"][config["dataset"]]["test"])
    reference = {"name": "A et al.", "setting": "2 layers", "metric": "bleu_lc"}
    config["analysis"]["references"] = [reference | {"scores": {testsets[0]: 41.5}}]
    block = results_block(folder, config)
    scores = pd.read_csv(folder / "scores.tsv", sep="\t")
    model = config["analysis"]["baseline"]
    mean = scores[(scores.model == model) & (scores.testset == testsets[0])].bleu_lc.mean()
    assert f"| `{model}` | this experiment | BLEU (lowercased) | {mean:.2f} |" in block
    assert "| A et al. | 2 layers | BLEU (lowercased) | 41.50 | – |" in block
    assert "BLEU (cased sacreBLEU)" not in block  # no reference reports it


def test_the_readmes_alignment_table_gives_the_spread_over_seeds_and_the_best_heads():
    """AER as mean ± sd over seeds (the mean alone for one seed), a Transformer's best
    heads with their seeds, and a latent model's KL ± sd beside its rows."""
    import pandas as pd

    from mixnmt.readme import alignment_table

    errors = pd.DataFrame(
        {
            "model": ["t", "t", "a"],
            "weights": ["cross_attention mean", "cross_attention best head", "alignment"],
            "seeds": [5, 5, 1],
            "aer": [0.4871, 0.5, 0.626],
            "precision": [0.47, 0.45, 0.35],
            "recall": [0.57, 0.59, 0.41],
            "aer_sd": [0.0123, 0.02, float("nan")],
            "best_heads": [float("nan"), "layer 1, head 2 (seeds 1, 2)", float("nan")],
        }
    )
    posteriors = pd.DataFrame(
        {"model": ["a"], "prior_entropy": [2.14], "posterior_entropy": [1.08], "kl": [0.571], "kl_sd": [0.03]}
    )
    table = alignment_table(errors, posteriors)
    assert table.AER.tolist() == ["0.487 ± 0.012", "0.500 ± 0.020", "0.626"]
    assert table["best heads"].tolist() == ["", "layer 1, head 2 (seeds 1, 2)", ""]
    assert table["per target token"].tolist() == [
        "",
        "",
        "H(prior) 2.14, H(posterior) 1.08, KL 0.57 ± 0.03 nats",
    ]
    assert "best heads" not in alignment_table(errors.iloc[2:], posteriors.iloc[:0])
    skipped = pd.DataFrame({"model": [float("nan")], "weights": ["skipped: eflomal is not installed"]})
    assert alignment_table(skipped, posteriors) is None
