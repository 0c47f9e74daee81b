"""The `mixnmt` command: one subcommand per pipeline stage, each a thin call into the package."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from mixnmt import MixnmtError, config_section


def _json(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def _set_threads(threads: int | None) -> None:
    if threads:
        import torch

        torch.set_num_threads(threads)


def cmd_download(a: argparse.Namespace) -> None:
    from mixnmt.download import download, source_url

    download(source_url(a.base, a.output.name), a.output, a.sha256, retries=a.retries)


def cmd_prepare(a: argparse.Namespace) -> None:
    from mixnmt.data import prepare

    prepare(a.src, a.tgt, a.src_out, a.tgt_out, max_words=a.max_words)


def cmd_spm_train(a: argparse.Namespace) -> None:
    from mixnmt import tokenize

    tokenize.train(a.input, a.model, a.vocab_size, a.model_type, a.character_coverage, a.seed)


def cmd_spm_encode(a: argparse.Namespace) -> None:
    from mixnmt.tokenize import encode_file

    encode_file(a.model, a.input, a.output)


def cmd_train(a: argparse.Namespace) -> None:
    from mixnmt.train import TrainConfig, TrainFiles, train

    _set_threads(a.threads)
    files = TrainFiles(
        tuple(a.train), tuple(a.valid), tuple(a.spm), a.checkpoint, a.metrics, a.manifest, a.state
    )
    train(a.model, a.hparams, config_section(TrainConfig, "train", a.config), files)


def cmd_translate(a: argparse.Namespace) -> None:
    from mixnmt.decode import DecodeConfig, translate

    _set_threads(a.threads)
    config = config_section(DecodeConfig, "decode", a.config)
    translate(a.checkpoint, a.input, tuple(a.spm), a.output, config, a.model, a.hparams)


def cmd_score(a: argparse.Namespace) -> None:
    from mixnmt.evaluate import score

    score(a.hypotheses, a.references, a.output, a.model, a.testset)


def cmd_aggregate(a: argparse.Namespace) -> None:
    from mixnmt.evaluate import aggregate

    aggregate(a.scores, a.manifests, a.output)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mixnmt", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, func, help: str) -> argparse.ArgumentParser:
        s = sub.add_parser(name, help=help, description=help)
        s.set_defaults(func=func)
        return s

    s = command("download", cmd_download, "fetch one dataset file and verify its sha256")
    s.add_argument("base", help="base address: http(s):// or file:// URL, or a local folder")
    s.add_argument("output", type=Path, help="destination; its name is the file fetched from BASE")
    s.add_argument("--sha256", required=True, help="expected sha256 of the file")
    s.add_argument("--retries", type=int, default=4, help="retries after transient failures")

    s = command("prepare", cmd_prepare, "decode, normalise and check a parallel corpus")
    s.add_argument("src", type=Path)
    s.add_argument("tgt", type=Path)
    s.add_argument("src_out", type=Path)
    s.add_argument("tgt_out", type=Path)
    s.add_argument(
        "--max-words", type=int, help="drop empty pairs and pairs longer than this (training data)"
    )

    s = command("spm-train", cmd_spm_train, "train a SentencePiece model")
    s.add_argument("--input", type=Path, nargs="+", required=True, help="training text file(s)")
    s.add_argument("--model", type=Path, required=True, help="output .model file")
    s.add_argument("--vocab-size", type=int, required=True)
    s.add_argument("--model-type", default="unigram", choices=["unigram", "bpe", "char", "word"])
    s.add_argument("--character-coverage", type=float, default=1.0)
    s.add_argument("--seed", type=int, default=1)

    s = command("spm-encode", cmd_spm_encode, "encode a text file into lines of token ids")
    s.add_argument("--model", type=Path, required=True)
    s.add_argument("input", type=Path)
    s.add_argument("output", type=Path)

    s = command("train", cmd_train, "train one model and keep its best checkpoint")
    s.add_argument("--model", required=True, help="registry name of the model")
    s.add_argument("--hparams", type=_json, default={}, help="JSON: the model's hyperparameters")
    s.add_argument("--config", type=_json, default={}, help="JSON: the training settings")
    s.add_argument("--train", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="id files")
    s.add_argument("--valid", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="id files")
    s.add_argument(
        "--spm", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="SentencePiece models"
    )
    s.add_argument("--checkpoint", type=Path, required=True)
    s.add_argument("--metrics", type=Path, required=True, help="per-epoch metrics (TSV)")
    s.add_argument("--manifest", type=Path, required=True, help="what the run was (JSON)")
    s.add_argument("--state", type=Path, required=True, help="resumable state, kept only while training")
    s.add_argument("--threads", type=int)

    s = command("translate", cmd_translate, "translate a file of source ids into text")
    s.add_argument("--checkpoint", type=Path, required=True)
    s.add_argument("--spm", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"))
    s.add_argument("--config", type=_json, default={}, help="JSON: the decoding settings")
    s.add_argument("--model", help="refuse a checkpoint of another model")
    s.add_argument("--hparams", type=_json, help="JSON: refuse a checkpoint with other hyperparameters")
    s.add_argument("--threads", type=int)
    s.add_argument("input", type=Path)
    s.add_argument("output", type=Path)

    s = command("score", cmd_score, "BLEU and chrF of a translation against its references")
    s.add_argument("--model", required=True)
    s.add_argument("--testset", required=True)
    s.add_argument("hypotheses", type=Path)
    s.add_argument("references", type=Path)
    s.add_argument("output", type=Path)

    s = command("aggregate", cmd_aggregate, "gather score files into one table")
    s.add_argument("--output", type=Path, required=True)
    s.add_argument("--scores", type=Path, nargs="+", required=True, help="JSON files of `mixnmt score`")
    s.add_argument("--manifests", type=Path, nargs="+", required=True, help="training manifests to cite")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        args.func(args)
    except MixnmtError as e:
        print(f"mixnmt {args.command}: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
