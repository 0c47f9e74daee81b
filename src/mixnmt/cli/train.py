"""Training one model, or keeping the training of the model a decoding variant decodes
differently as its own (workflow/rules/train.smk)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mixnmt.cli.options import ENTRY, count, json_object, set_threads, settings_help
from mixnmt.files import Output


def run_arguments(s: argparse.ArgumentParser) -> None:
    """What defines a training run (mixnmt.runs)."""
    settings_help(s, "train")
    s.add_argument("--model", required=True, metavar="NAME", help="the model's name in the config")
    s.add_argument("--entry", "--hparams", type=json_object, default={}, help=ENTRY)
    s.add_argument("--config", type=json_object, default={}, help="JSON: the training settings")
    s.add_argument(
        "--data",
        type=json_object,
        help="JSON: what defines the data (part of the run's fingerprint; mixnmt.runs)",
    )


def kept_arguments(s: argparse.ArgumentParser) -> None:
    """What a training run keeps."""
    s.add_argument(
        "--checkpoint", type=Output, required=True, help="where the best (or averaged) weights go (.pt)"
    )
    s.add_argument("--metrics", type=Output, required=True, help="per-epoch metrics (TSV)")
    s.add_argument("--manifest", type=Output, required=True, help="what the run was (JSON)")


def train_arguments(s: argparse.ArgumentParser) -> None:
    run_arguments(s)
    s.add_argument("--train", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="id files")
    s.add_argument("--valid", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="id files")
    s.add_argument(
        "--spm", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="SentencePiece models"
    )
    kept_arguments(s)
    s.add_argument("--state", type=Output, required=True, help="resumable state, kept only while training")
    s.add_argument("--threads", type=count, help="CPU threads for PyTorch (default: its own choice)")


def cmd_train(a: argparse.Namespace) -> None:
    from mixnmt.config import config_section
    from mixnmt.stopping import record_stop_signals
    from mixnmt.train import TrainConfig, TrainFiles, train

    stop_requested = record_stop_signals()  # until the process exits

    set_threads(a.threads)
    files = TrainFiles(
        tuple(a.train), tuple(a.valid), tuple(a.spm), a.checkpoint, a.metrics, a.manifest, a.state
    )
    train(a.model, a.entry, config_section(TrainConfig, "train", a.config), files, stop_requested, a.data)


def share_arguments(s: argparse.ArgumentParser) -> None:
    run_arguments(s)
    s.add_argument(
        "--twin",
        type=Path,
        nargs=3,
        required=True,
        metavar=("CHECKPOINT", "METRICS", "MANIFEST"),
        help="what the run of the model this one decodes differently kept (its trained twin)",
    )
    kept_arguments(s)


def cmd_share(a: argparse.Namespace) -> None:
    from mixnmt.config import TrainConfig, config_section
    from mixnmt.share import RunFiles, share

    files = RunFiles(a.checkpoint, a.metrics, a.manifest)
    share(RunFiles(*a.twin), a.model, a.entry, config_section(TrainConfig, "train", a.config), a.data, files)
