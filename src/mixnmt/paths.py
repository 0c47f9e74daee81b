"""The layout of an experiment's folder, results/<experiment>/: one home for the paths
that the workflow (workflow/rules/common.smk) and the scripts beside it (benchmarks/,
benchmarks/gpu_session.py) share. Arguments default to Snakemake wildcards."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CHECKPOINTS = "checkpoints"
"""The folder of trained weights: what a results tarball leaves out."""

DECODING = "decode.json"
"""The decoding settings that travel with an experiment's checkpoints, in their folder
(`decoding_of`): `mixnmt translate` reads them unless told otherwise."""

STATES = "states"
"""The folder of training runs' resumable states: outside every output of the run (DVC
deletes a stage's outputs before it reruns it, and an interrupted run must resume);
also left out of tarballs."""

METRICS = ("epoch", "step", "train_loss", "valid_loss", "valid_ppl", "valid_bleu", "tokens_per_s", "seconds")
"""The columns of a training run's metrics.tsv (`Layout.train`), one row per epoch, before
any mixture's: what training writes and the figures and tables read."""


def run(model: str = "{model}", seed: str | int = "{seed}") -> str:
    """The folder part of one training run's outputs: <model>/seed<seed>."""
    return f"{model}/seed{seed}"


def parse_run(label: str) -> tuple[str, int] | None:
    """The (model, seed) of a run's label `run(model, seed)`; None if `label` is not one."""
    model, sep, seed = label.rpartition("/seed")
    return (model, int(seed)) if sep and model and seed.isdigit() else None


def split_of(path: str | Path) -> str | None:
    """The split a file of an experiment's ids/ or corpus/ folder holds, by its name
    (`Layout.ids`, `Layout.corpus`); None for any other file."""
    path = Path(path)
    return path.stem if path.parent.name in ("ids", "corpus") and path.suffix else None


def decoding_of(checkpoint: Path) -> Path:
    """Where the decoding settings of a checkpoint at `Layout.checkpoint` are: its
    experiment's `Layout.decoding`, two folders up."""
    return checkpoint.parent.parent / DECODING


@dataclass(frozen=True)
class Layout:
    root: str  # results/<experiment>

    def ids(self, split: str, lang: str) -> str:
        """Token ids of one split and language."""
        return f"{self.root}/ids/{split}.{lang}"

    def spm(self, name: str = "{name}") -> str:
        """SentencePiece model `name` ("joint", or a language)."""
        return f"{self.root}/spm/{name}.model"

    def checkpoint(self, model: str = "{model}", seed: str | int = "{seed}") -> str:
        return f"{self.root}/{CHECKPOINTS}/{run(model, seed)}.pt"

    def decoding(self) -> str:
        """The decoding settings of the experiment, beside its checkpoints (JSON)."""
        return f"{self.root}/{CHECKPOINTS}/{DECODING}"

    def train(self, file: str, model: str = "{model}", seed: str | int = "{seed}") -> str:
        """A file of one training run: metrics.tsv or manifest.json."""
        return f"{self.root}/train/{run(model, seed)}/{file}"

    def state(self, model: str = "{model}", seed: str | int = "{seed}") -> str:
        """One training run's resumable state, kept only while it trains."""
        return f"{self.root}/{STATES}/{run(model, seed)}.pt"

    def saved_runs(self) -> list[str]:
        """The runs (<model>/seed<seed>) whose training stopped with its state saved: the
        same command resumes them."""
        states = Path(self.root) / STATES
        return sorted(p.relative_to(states).with_suffix("").as_posix() for p in states.glob("*/seed*.pt"))

    def translation(self, model: str, testset: str, seed: str | int = "{seed}", suffix: str = ".txt") -> str:
        """A translation (.txt), or with suffix=".json" the record of what made it."""
        return f"{self.root}/translations/{run(model, seed)}/{testset}{suffix}"

    def corpus(self, split: str = "{split}", lang: str = "{lang}") -> str:
        """Prepared text of one split and language."""
        return f"{self.root}/corpus/{split}.{lang}"

    def score(self, model: str = "{model}", testset: str = "{testset}", seed: str | int = "{seed}") -> str:
        """One run's scores on one test set (JSON)."""
        return f"{self.root}/scores/{run(model, seed)}/{testset}.json"

    def reliance(self, model: str = "{model}", seed: str | int = "{seed}", kind: str = "reliance") -> str:
        """One run's source reliance, or with kind="use" its knock-outs (TSV)."""
        return f"{self.root}/{kind}/{run(model, seed)}.tsv"

    def word_alignments(self, model: str = "{model}", seed: str | int = "{seed}") -> str:
        """One run's word alignments (and prior and posterior) while it reads the first
        test set's references (JSON, mixnmt align)."""
        return f"{self.root}/word_alignments/{run(model, seed)}.json"

    def per_model(self, kind: str, model: str = "{model}") -> str:
        """A model's file of its first seed's run: kind "speed" or "analysis" (JSON)."""
        return f"{self.root}/{kind}/{model}.json"

    def significance(self, seed: str | int = "{seed}", testset: str = "{testset}") -> str:
        """The paired bootstrap of one seed's systems on one test set (JSON)."""
        return f"{self.root}/significance/seed{seed}/{testset}.json"

    def contrasts(self, testset: str = "{testset}") -> str:
        """The contrasts over seeds on one test set (JSON)."""
        return f"{self.root}/contrasts/{testset}.json"

    def table(self, name: str) -> str:
        """A study table (TSV); "lengths/<testset>" for BLEU by length."""
        return f"{self.root}/tables/{name}.tsv"

    def figure(self, name: str, ext: str = "png") -> str:
        return f"{self.root}/figures/{name}.{ext}"

    def summary(self, ext: str = "tsv") -> str:
        """The score table: scores.tsv, .md or .json."""
        return f"{self.root}/scores.{ext}"

    def headline(self, model: str = "{model}", testset: str = "{testset}") -> str:
        """A model's headline scores on a test set, for `dvc metrics show` (mixnmt headline)."""
        return f"{self.root}/headline/{model}/{testset}.json"

    @property
    def report(self) -> str:
        return f"{self.root}/report.html"

    @property
    def silver(self) -> str:
        """Silver word alignments of the first test set (mixnmt silver)."""
        return f"{self.root}/alignments/silver.json"

    def benchmark(self, rule: str, job: str) -> str:
        """Snakemake's benchmark file of one job of `rule`."""
        return f"{self.root}/benchmarks/{rule}/{job}.tsv"
