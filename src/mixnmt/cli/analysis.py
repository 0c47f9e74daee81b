"""What the models do (workflow/rules/analysis.smk): decoding speed, reliance on the
source, weights and alignments, and the silver alignments they are held to."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mixnmt.cli.options import add_trained_model, count, index, json_object, loaded, settings_help
from mixnmt.files import Output


def speed_arguments(s: argparse.ArgumentParser) -> None:
    settings_help(s, "decode")
    add_trained_model(s, name_required=True)
    s.add_argument(
        "--config", type=json_object, help="JSON: the decoding settings (default: the checkpoint's)"
    )
    s.add_argument("--sentences", type=count, help="time the first N sentences only (default: all)")
    s.add_argument("input", type=Path, help="source ids")
    s.add_argument("output", type=Output, help="where the timings go (JSON)")


def cmd_speed(a: argparse.Namespace) -> None:
    from mixnmt.speed import measure_speed
    from mixnmt.translator import decoding

    measure_speed(loaded(a), a.input, a.output, decoding(a.checkpoint, a.config, [], {}), a.sentences)


def reliance_arguments(s: argparse.ArgumentParser) -> None:
    add_trained_model(s, name_required=True)
    s.add_argument("--valid", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="id files")
    s.add_argument("--seed", type=index, required=True, help="the training seed of the model")
    s.add_argument(
        "--max-tokens", type=count, required=True, help="padded tokens per batch (train.max_tokens)"
    )
    s.add_argument(
        "--use", type=Output, help="also write here (TSV) the loss with each candidate group knocked out"
    )
    s.add_argument("output", type=Output, help="TSV")


def cmd_reliance(a: argparse.Namespace) -> None:
    from mixnmt.reliance import source_reliance

    source_reliance(loaded(a), tuple(a.valid), a.seed, a.max_tokens, a.output, a.use)


def analyse_arguments(s: argparse.ArgumentParser) -> None:
    add_trained_model(s, name_required=True)
    s.add_argument("--translation", type=Path, required=True, help="the model's translation of INPUT")
    s.add_argument("--references", type=Path, required=True, help="the reference text of INPUT")
    s.add_argument("--sentences", type=int, nargs="+", required=True, help="indices of sentences to show")
    s.add_argument("input", type=Path, help="source ids")
    s.add_argument("output", type=Output, help="where the weights go (JSON)")


def cmd_analyse(a: argparse.Namespace) -> None:
    from mixnmt.analysis import analyse

    analyse(loaded(a), a.input, a.translation, a.references, a.sentences, a.output)


def align_arguments(s: argparse.ArgumentParser) -> None:
    add_trained_model(s, name_required=True)
    s.add_argument("--references", type=Path, required=True, help="the reference text of INPUT")
    s.add_argument("input", type=Path, help="source ids")
    s.add_argument("output", type=Output, help="where the alignments go (JSON)")


def cmd_align(a: argparse.Namespace) -> None:
    from mixnmt.analysis import align

    align(loaded(a), a.input, a.references, a.output)


def silver_arguments(s: argparse.ArgumentParser) -> None:
    pair = {"type": Path, "nargs": 2, "required": True, "metavar": ("SRC", "TGT")}
    s.add_argument("--train", **pair, help="the training corpus (text), also aligned by the aligner")
    s.add_argument("--test", **pair, help="the test set (text) whose alignments are written")
    s.add_argument("--settings", type=json.loads, required=True, help="eflomal.Aligner's arguments (JSON)")
    s.add_argument("output", type=Output, help="JSON: settings, sure and possible links (Pharaoh)")


def cmd_silver(a: argparse.Namespace) -> None:
    from mixnmt.alignment import silver

    silver(a.train, a.test, a.settings, a.output)
