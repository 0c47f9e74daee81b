"""The data (workflow/rules/data.smk, tokenize.smk): download, prepare, SentencePiece."""

from __future__ import annotations

import argparse
from pathlib import Path

from mixnmt.cli.options import count, index
from mixnmt.files import Output


def download_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("base", help="base address: http(s):// or file:// URL, or a local folder")
    s.add_argument("output", type=Output, help="destination; its name is the file fetched from BASE")
    s.add_argument("--sha256", required=True, help="expected sha256 of the file")
    s.add_argument("--size", type=count, required=True, help="expected size in bytes: never more is written")
    s.add_argument("--retries", type=index, default=4, help="retries after transient failures")


def cmd_download(a: argparse.Namespace) -> None:
    from mixnmt.download import download, source_url

    download(source_url(a.base, a.output.name), a.output, a.sha256, a.size, retries=a.retries)


def prepare_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("src", type=Path, help="source side (plain or gzipped text)")
    s.add_argument("tgt", type=Path, help="target side, line-aligned with SRC")
    s.add_argument("src_out", type=Output, help="where the prepared source goes")
    s.add_argument("tgt_out", type=Output, help="where the prepared target goes")
    s.add_argument(
        "--max-words", type=count, help="drop empty pairs and pairs longer than this (training data)"
    )
    s.add_argument(
        "--shown",
        type=int,
        nargs="+",
        default=[],
        help="indices the analysis shows (each a non-empty line)",
    )


def cmd_prepare(a: argparse.Namespace) -> None:
    from mixnmt.data import prepare

    prepare(a.src, a.tgt, a.src_out, a.tgt_out, max_words=a.max_words, shown=a.shown)


def spm_train_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--input", type=Path, nargs="+", required=True, help="training text file(s)")
    s.add_argument("--model", type=Output, required=True, help="output .model file")
    s.add_argument(
        "--vocab-size", type=count, required=True, help="pieces in the vocabulary, the special ids included"
    )
    s.add_argument(
        "--model-type",
        required=True,
        choices=["unigram", "bpe", "char", "word"],
        help="SentencePiece's segmentation algorithm (spm.model_type)",
    )
    s.add_argument(
        "--character-coverage",
        type=float,
        required=True,
        help="share of characters covered by the vocabulary, the rest <unk> (spm.character_coverage)",
    )
    s.add_argument("--seed", type=index, required=True, help="SentencePiece's random seed (spm.seed)")


def cmd_spm_train(a: argparse.Namespace) -> None:
    from mixnmt import tokenize

    tokenize.train(a.input, a.model, a.vocab_size, a.model_type, a.character_coverage, a.seed)


def spm_encode_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--model", type=Path, required=True, help="the SentencePiece model (.model)")
    s.add_argument("input", type=Path, help="text, one sentence a line")
    s.add_argument("output", type=Output, help="token ids, one sentence a line")


def cmd_spm_encode(a: argparse.Namespace) -> None:
    from mixnmt.tokenize import encode_file

    encode_file(a.model, a.input, a.output)
