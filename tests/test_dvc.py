"""The DVC project: `dvc repro` drives the Snakemake workflow, `dvc push/pull` carry the
checkpoints, and data.dvc pins the published Multi30k files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import tinydata
from conftest import CONFIG, FAST, ROOT, TINY, command_modules, module_file, published, rules
from mixnmt.files import sha256sum
from mixnmt.paths import Layout

MIRROR = ROOT.parent / "shared" / "data" / "multi30k"
# the baseline and one more: two tiny models show every stage and keep the test short
MODELS = [TINY.get("analysis", {}).get("baseline") or CONFIG["analysis"]["baseline"], FAST]


def run(*command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.org",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.org",
    }
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    assert result.returncode == 0, f"{' '.join(command)}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def project(folder: Path, *overlays: Path) -> Path:
    """A git + DVC working copy of the project whose config.yaml has `overlays` merged on
    it by `mixnmt config`, as README says to run an overlay with DVC."""
    for name in ("Snakefile", "dvc.yaml", ".dvcignore", ".gitignore", "config.yaml"):
        shutil.copy(ROOT / name, folder / name)
    for name in ("workflow", "profiles", "envs"):
        shutil.copytree(ROOT / name, folder / name)
    shutil.copytree(ROOT / "src", folder / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    if overlays:
        merge = [sys.executable, "-m", "mixnmt", "config", *map(str, overlays), "--output", "config.yaml"]
        run(*merge, cwd=folder)
    run("git", "init", "-q", cwd=folder)
    run("dvc", "init", "-q", cwd=folder)
    shutil.copy(ROOT / ".dvc" / "config", folder / ".dvc" / "config")  # the project's, as in a clone
    return folder


def two_models(folder: Path) -> Path:
    """An overlay on the tiny experiment that keeps MODELS: they show every stage, quickly
    (4 epochs: what DVC reruns and restores is under test here, not what the models learn)."""
    path = folder / "two-models.yaml"
    overlay = {"only": MODELS, "analysis": {"contrasts": [MODELS]}, "train": {"epochs": 4}}
    path.write_text(yaml.safe_dump(overlay))
    return path


def snakemake(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return run(sys.executable, "-m", "snakemake", "--cores", "2", *args, cwd=folder)


def stages_run(output: str) -> set[str]:
    return {line.split("'")[1] for line in output.splitlines() if line.startswith("Running stage")}


def stale(work: Path) -> set[str]:
    """The stages `dvc status` says must run again."""
    return set(json.loads(run("dvc", "status", "--json", cwd=work).stdout))


@pytest.mark.integration
@pytest.mark.slow(seconds=190)
def test_dvc_repro_push_and_pull(tmp_path):
    (tmp_path / "project").mkdir()
    work = project(tmp_path / "project", ROOT / "tests" / "tiny.yaml", two_models(tmp_path))
    tinydata.write_corpus(work / "data" / "tiny-source")
    snakemake(work, "--until", "download")
    run("dvc", "add", "data", cwd=work)
    run("git", "add", "-A", cwd=work)
    run("git", "commit", "-qm", "tiny project", cwd=work)

    first = run("dvc", "repro", cwd=work)
    train = {f"train@{m}" for m in MODELS}
    evaluate = {f"evaluate@{m}" for m in MODELS}
    assert stages_run(first.stdout) == {"prepare", "decoding", "report"} | train | evaluate
    out = work / "results" / "tiny"
    assert (out / "report.html").exists() and (out / "scores.json").exists()
    # `dvc metrics show`: a short row per model and test set (the published studies' folders,
    # not copied here, are named as missing)
    tiny = Layout(str(out.relative_to(work)))
    testsets = json.loads((out / "scores.json").read_text())
    headline = {tiny.headline(m, t) for m in MODELS for t in testsets}
    shown = json.loads(run("dvc", "metrics", "show", "--json", cwd=work).stdout)[""]["data"]
    shown = {path: file["data"] for path, file in shown.items() if path in headline or "/tiny/" in path}
    assert set(shown) == headline and all({"bleu", "chrf", "runs"} <= set(n) for n in shown.values())
    rows = [line for line in run("dvc", "metrics", "show", cwd=work).stdout.splitlines() if "/tiny/" in line]
    assert len(rows) == len(headline) and max(map(len, rows)) < 120, rows

    again = run("dvc", "repro", cwd=work)
    assert stages_run(again.stdout) == set() and "Data and pipelines are up to date" in again.stdout
    run("git", "add", "-A", cwd=work)
    run("git", "commit", "-qm", "baseline", cwd=work)

    # Narrow dependencies: a figure's code, the report's options, the contrasts' statistics,
    # the figures' inputs or the report's rules change the report only; the checks of
    # gathered results, what evaluates and the report; one model's hyperparameter, that
    # model's stages and the report.
    report_only = ["plots.py", "cli/report.py", "compare.py", "inputs.py"]
    edits = {f"src/mixnmt/{m}": {"report"} for m in report_only} | {"workflow/rules/report.smk": {"report"}}
    for edited, expected in (edits | {"src/mixnmt/lineage.py": {"report", *evaluate}}).items():
        with open(work / edited, "a") as f:
            f.write("# a comment\n")
        assert stale(work) == expected, edited
        run("git", "checkout", "-q", ".", cwd=work)
    config = yaml.safe_load((work / "config.yaml").read_text())
    config["models"][FAST]["dropout"] = 0.2
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert stale(work) == {f"train@{FAST}", f"evaluate@{FAST}", "report"}
    run("git", "checkout", "-q", ".", cwd=work)
    # A decoding setting: the settings beside the checkpoints, then what decodes; no training.
    config = yaml.safe_load((work / "config.yaml").read_text())
    config["decode"]["beam"] = 2
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert stale(work) == {"decoding"}
    run("git", "checkout", "-q", ".", cwd=work)

    # The same change as an experiment (`-S` names config.yaml's keys with its prefix):
    # it runs that model's stages and the report, and records its scores beside the
    # committed baseline's, for every model.
    key = f"config.yaml:models.{FAST}.dropout=0.2"
    changed = run("dvc", "exp", "run", "-n", "variant", "-S", key, cwd=work)
    assert stages_run(changed.stdout) == {f"train@{FAST}", f"evaluate@{FAST}", "report"}
    shown = experiment_scores(json.loads(run("dvc", "exp", "show", "--json", cwd=work).stdout))
    for name in ("HEAD", "variant"):
        assert all(shown[name][m]["test_a"]["bleu"] >= 0 for m in MODELS), (name, shown)
    # The plots overlay every model's learning curve.
    plots = json.loads(run("dvc", "plots", "show", "--json", cwd=work).stdout)["data"]
    for name in ("validation loss", "validation BLEU"):
        values = plots[name][0]["content"]["data"]["values"]
        assert {v["model"] for v in values} == set(MODELS) and all(v["epoch"] for v in values), name

    # `dvc plots diff` sets the committed run and the experiment apart (their tables are
    # cached), on a page with Vega inlined: nothing to fetch, so it renders offline.
    diffed = json.loads(run("dvc", "plots", "diff", "HEAD", "variant", "--json", cwd=work).stdout)["data"]
    for name in ("validation loss", "validation BLEU"):
        drawn = {(v["rev"], v["model"]) for entry in diffed[name] for v in entry["content"]["data"]["values"]}
        assert drawn == {(rev, m) for rev in ("HEAD", "variant") for m in MODELS}, (name, drawn)
    run("dvc", "plots", "diff", "HEAD", "variant", "-o", str(tmp_path / "plots"), cwd=work)
    page = (tmp_path / "plots" / "index.html").read_text()
    assert "<script src" not in page and "https://cdn" not in page
    assert "vegaEmbed" in page and '"rev": "variant"' in page and '"rev": "HEAD"' in page

    # The remote recipe: push the committed baseline from this clone; a fresh clone's `dvc
    # pull` restores every output, the checkpoints byte for byte, and `dvc repro` runs nothing.
    run("git", "checkout", "-q", ".", cwd=work)
    run("dvc", "checkout", "--force", cwd=work)  # the baseline's outputs, not the variant's
    made = {path: sha256sum(work / path) for path in outputs_of(work)}
    run("dvc", "remote", "add", "-d", "store", str(tmp_path / "remote"), cwd=work)
    run("git", "commit", "-qam", "the shared store", cwd=work)
    run("dvc", "push", cwd=work)
    fresh = tmp_path / "fresh"
    run("git", "clone", "-q", str(work), str(fresh), cwd=tmp_path)
    run("dvc", "pull", cwd=fresh)
    assert {path: sha256sum(fresh / path) for path in outputs_of(fresh)} == made
    assert any(path.suffix == ".pt" for path in made) and any(path.name == "decode.json" for path in made)
    repro = run("dvc", "repro", cwd=fresh)
    assert stages_run(repro.stdout) == set() and "Data and pipelines are up to date" in repro.stdout


def outputs_of(work: Path) -> list[Path]:
    """Every file of the stages' outputs that dvc.lock records in `work`."""
    lock = yaml.safe_load((work / "dvc.lock").read_text())["stages"]
    found = []
    for out in (out for stage in lock.values() for out in stage.get("outs", [])):
        path = work / out["path"]
        found += (
            [p.relative_to(work) for p in sorted(path.rglob("*")) if p.is_file()]
            if path.is_dir()
            else [path.relative_to(work)]
        )
    return found


def experiment_scores(shown: list[dict]) -> dict[str, dict]:
    """Experiment name (HEAD for the baseline commit) -> {model: {test set: its headline
    scores}}, from `dvc exp show --json`."""
    found: dict[str, dict] = {}
    folder = Path("results", TINY["experiment"], "headline")

    def visit(node: dict, name: str) -> None:
        metrics = (node.get("data") or {}).get("metrics") or {}
        for path, file in metrics.items():
            if Path(path).parent.parent == folder and file.get("data"):
                found.setdefault(name, {}).setdefault(Path(path).parent.name, {})[Path(path).stem] = file[
                    "data"
                ]
        for group in node.get("experiments") or []:
            for child in group.get("revs", []):
                visit(child, child.get("name") or child["rev"])

    for node in shown:
        visit(node, "HEAD" if node["rev"] != "workspace" else "workspace")
    return found


def test_data_dvc_pins_the_published_files():
    record = yaml.safe_load((ROOT / "data.dvc").read_text())["outs"][0]
    files = config_files()
    assert (record["path"], record["nfiles"]) == ("data/multi30k", len(files))


def config_files() -> dict[str, str]:
    """File name -> sha256 of every file the default dataset lists."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    dataset = config["datasets"][config["dataset"]]
    splits = [dataset["train"], dataset["valid"], *dataset["test"].values()]
    return {entry["file"]: entry["sha256"] for split in splits for entry in split.values()}


@pytest.mark.skipif(not MIRROR.is_dir(), reason=f"no local copy of Multi30k at {MIRROR}")
def test_dvc_status_is_clean_after_downloading_from_the_mirror(tmp_path):
    """data.dvc pins Multi30k's folder alone: the tiny experiment's data beside it leaves
    the pin as it is (it re-pinned 26 files, 10 of them Multi30k's, when it pinned data/)."""
    work = project(tmp_path)
    shutil.copy(ROOT / "data.dvc", work / "data.dvc")
    snakemake(work, "--until", "download", "--config", f"mirror={MIRROR}")
    assert {p.name: sha256sum(p) for p in (work / "data" / "multi30k").iterdir()} == config_files()
    tinydata.write_corpus(work / "data" / "tiny-source")  # another dataset's files: not Multi30k's pin
    assert "modified" not in run("dvc", "status", "data.dvc", cwd=work).stdout  # only: not in the cache yet
    run("dvc", "commit", "--force", "data.dvc", cwd=work)  # cache the download, as `dvc pull` would
    assert (work / "data.dvc").read_text() == (ROOT / "data.dvc").read_text()  # the recorded hash held
    assert "Data and pipelines are up to date" in run("dvc", "status", "data.dvc", cwd=work).stdout


# The mixnmt commands each stage's Snakemake target runs (workflow/rules/*.smk).
STAGE_COMMANDS = {
    "prepare": ["download", "prepare", "spm_train", "spm_encode"],
    "train": ["train", "share"],
    "decoding": ["decoding"],
    "evaluate": ["translate", "score", "speed", "analyse", "align", "reliance"],
    "report": [
        "significance",
        "contrasts",
        "lengths",
        "aggregate",
        "headline",
        "silver",
        "table",
        "plot",
        "report",
    ],
}


# The code every stage depends on: the entry point and what the workflow's common part
# checks the config with.
COMMON = {
    "src/mixnmt/__init__.py",
    "src/mixnmt/cli/__init__.py",
    "src/mixnmt/config.py",
    "src/mixnmt/schema.py",
}
COMMON |= {"src/mixnmt/files.py", "src/mixnmt/machine.py"}


def test_each_stage_depends_on_exactly_the_code_its_commands_run():
    """dvc.yaml's code dependencies of a stage are the modules its `mixnmt` commands import
    (the command's functions in mixnmt.cli and what they use there; the models package counts
    as one, since its registry imports every model) and the common part: none missing, so
    that no change that alters a result is hidden, and none extra, so that no unrelated edit
    reruns the stage. Every command a rule runs is in a stage."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    assert set(stages) == set(STAGE_COMMANDS)
    assert {command.replace("-", "_") for _, _, command in rules()} == set().union(*STAGE_COMMANDS.values())
    for stage, commands in STAGE_COMMANDS.items():
        deps = {d for d in (stages[stage].get("deps") or stages[stage]["do"]["deps"]) if d.startswith("src/")}
        code = set(COMMON)
        for module in set().union(*(command_modules(command) for command in commands)):
            path = module_file(module).relative_to(ROOT)
            code.add("src/mixnmt/models" if path.parent.name == "models" else path.as_posix())
        assert deps == code, (stage, sorted(deps - code), sorted(code - deps))
    assert "src/mixnmt/plots.py" not in stages["train"]["do"]["deps"]


def test_an_edit_to_a_later_stages_code_reruns_no_earlier_stage():
    """A stage depends on the command modules of its own commands (mixnmt.cli.<module>) and
    on the shared options, no other, and the modules of a later stage's work are not in an
    earlier stage's deps. Before, each of these sat in a module an earlier stage imports,
    so that under `dvc repro` an edit to it reran that stage: every command in cli.py
    (every stage), the contrasts' statistics and the score table beside `score` in
    evaluate.py (every translation), the figures' input registry where training read the
    columns of metrics.tsv (every training run), and the checks of gathered results in
    runs.py, which the config's check imports (every stage)."""
    from mixnmt.cli import COMMANDS

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    deps = {stage: set(stages[stage].get("deps") or stages[stage]["do"]["deps"]) for stage in stages}
    for stage, commands in STAGE_COMMANDS.items():
        own = {f"src/mixnmt/cli/{COMMANDS[c.replace('_', '-')].module}.py" for c in commands}
        shared = {"src/mixnmt/cli/__init__.py", "src/mixnmt/cli/options.py"}
        assert {d for d in deps[stage] if d.startswith("src/mixnmt/cli")} == own | shared, stage
    later = {
        "train": {"src/mixnmt/cli/report.py", "src/mixnmt/inputs.py", "src/mixnmt/lineage.py"},
        "prepare": {"src/mixnmt/lineage.py"},
        "evaluate": {"src/mixnmt/compare.py", "src/mixnmt/scoretable.py"},
    }
    assert {stage: modules & deps[stage] for stage, modules in later.items()} == dict.fromkeys(later, set())


def test_metrics_and_plots_show_the_committed_cpu_run(tmp_path):
    """On a fresh clone, `dvc metrics show` and `dvc plots show` read the published run."""
    work = project(tmp_path)
    published = Path("results") / "multi30k-cpu"
    shutil.copytree(ROOT / published / "headline", work / published / "headline")
    (work / published / "tables").mkdir()
    shutil.copy(ROOT / published / "tables" / "curves.tsv", work / published / "tables" / "curves.tsv")
    run("git", "add", "-A", cwd=work)
    run("git", "commit", "-qm", "published", cwd=work)
    metrics = json.loads(run("dvc", "metrics", "show", "--json", cwd=work).stdout)
    headline = {
        str(p.relative_to(ROOT)): json.loads(p.read_text()) for p in (ROOT / published).glob("headline/*/*")
    }
    shown = {path: file["data"] for path, file in metrics[""]["data"].items() if "data" in file}
    assert shown == headline and all("chrf_sd" in numbers for numbers in shown.values())
    scores = json.loads((ROOT / published / "scores.json").read_text())
    plots = json.loads(run("dvc", "plots", "show", "--json", cwd=work).stdout)["data"]
    curves = [name for name in plots if name.startswith("published CPU run")]
    assert len(curves) == 2, list(plots)  # (the experiment's own curves are not made yet)
    models = {row["model"] for name in curves for row in plots[name][0]["content"]["data"]["values"]}
    assert models == set(scores[next(iter(scores))]), models


def test_dvc_metrics_name_every_published_study():
    """`dvc metrics show` on a fresh clone lists the headline of every results folder in git
    (and nothing else among the published)."""
    listed = yaml.safe_load((ROOT / "dvc.yaml").read_text())["metrics"]
    fixed = {Path(path) for path in listed if "${" not in path}
    assert fixed == {folder.relative_to(ROOT) / "headline" for folder in published()}


def test_a_training_state_lies_outside_every_dvc_output():
    """DVC deletes a stage's outputs before it runs the stage again: a state among them
    would be lost, and an interrupted `dvc repro` would retrain from step 0."""

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    outs = [
        Path(next(iter(out)) if isinstance(out, dict) else out)
        for stage in stages.values()
        for out in (stage.get("outs") or stage.get("do", {}).get("outs") or [])
    ]
    state = Path(Layout("results/${experiment}").state("${key}", 1))
    assert outs and not any(out == state or out in state.parents for out in outs), state
