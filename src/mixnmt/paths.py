"""The layout of an experiment's folder, results/<experiment>/: one home for the paths
that the workflow (workflow/rules/common.smk) and the scripts beside it (benchmarks/,
benchmarks/gpu_session.py) share. Arguments default to Snakemake wildcards."""

from __future__ import annotations

from dataclasses import dataclass

CHECKPOINTS = "checkpoints"
"""The folder of trained weights: what a results tarball leaves out."""

STATE = "resume.pt"
"""A training run's resumable state, beside its metrics: also left out of tarballs."""


def run(model: str = "{model}", seed: str | int = "{seed}") -> str:
    """The folder part of one training run's outputs: <model>/seed<seed>."""
    return f"{model}/seed{seed}"


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

    def train(self, file: str, model: str = "{model}", seed: str | int = "{seed}") -> str:
        """A file of one training run: metrics.tsv, manifest.json or the STATE."""
        return f"{self.root}/train/{run(model, seed)}/{file}"

    def translation(self, model: str, testset: str, seed: str | int = "{seed}", suffix: str = ".txt") -> str:
        """A translation (.txt), or with suffix=".json" the record of what made it."""
        return f"{self.root}/translations/{run(model, seed)}/{testset}{suffix}"
