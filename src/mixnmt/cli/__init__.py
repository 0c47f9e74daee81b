"""The `mixnmt` command: one subcommand per pipeline stage, each a thin call into the package.

COMMANDS is the table of contents: each command's module, imported only when the command
runs, so that a job builds its own command's arguments only, and each DVC stage depends
on the modules of its own commands (dvc.yaml): an edit to the report's options retrains
nothing."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Iterable
from importlib import import_module
from pathlib import Path
from typing import NamedTuple

from mixnmt import MixnmtError
from mixnmt.files import Output, distinct


class Command(NamedTuple):
    """A `mixnmt` subcommand: the module of mixnmt.cli that holds it, and its one-line help."""

    module: str
    help: str

    def functions(
        self, name: str
    ) -> tuple[Callable[[argparse.Namespace], None], Callable[[argparse.ArgumentParser], None]]:
        """What command `name` runs and the function that declares its arguments:
        `cmd_<name>` and `<name>_arguments` of its module, imported now."""
        module, stem = import_module(f"{__name__}.{self.module}"), name.replace("-", "_")
        return getattr(module, f"cmd_{stem}"), getattr(module, f"{stem}_arguments")


COMMANDS: dict[str, Command] = {
    "config": Command("study", "config.yaml with overlays merged, checked, as DVC runs it (YAML)"),
    "download": Command("data", "fetch one dataset file and verify its size and sha256"),
    "prepare": Command("data", "decode, normalise and check a parallel corpus"),
    "spm-train": Command("data", "train a SentencePiece model"),
    "spm-encode": Command("data", "encode a text file into lines of token ids"),
    "train": Command("train", "train one model and keep its best checkpoint"),
    "share": Command(
        "train", "keep the run of the model a decoding variant decodes differently as the variant's own"
    ),
    "decoding": Command("translate", "the decoding settings that travel with an experiment's checkpoints"),
    "translate": Command("translate", "translate source ids, or raw text with --text"),
    "score": Command("evaluate", "BLEU, chrF and lowercased BLEU of a translation against its references"),
    "aggregate": Command("evaluate", "the score table: scores, intervals, p-values, runs"),
    "headline": Command("evaluate", "BLEU and chrF per model and test set, flat, for `dvc metrics`"),
    "significance": Command("evaluate", "paired bootstrap of every system against a baseline"),
    "contrasts": Command("evaluate", "each contrast A:B (B against A) over seeds, with Holm's correction"),
    "lengths": Command("evaluate", "BLEU per source-length bucket"),
    "speed": Command("analysis", "decoding speed, greedy and beam, and peak memory"),
    "reliance": Command(
        "analysis", "how much the true source raises validation tokens' probability over others"
    ),
    "analyse": Command("analysis", "weights and mixture responsibilities of a model on fixed sentences"),
    "align": Command(
        "analysis", "a run's word alignments (and prior and posterior) while it reads a test set's references"
    ),
    "silver": Command(
        "analysis", "silver word alignments of the test set by a statistical aligner (eflomal)"
    ),
    "table": Command("report", "build one of the study's tables"),
    "plot": Command("report", "draw one of the study's figures"),
    "report": Command("report", "the self-contained HTML report"),
    "readme": Command(
        "study",
        "write an experiment's results into docs/results.md, the claims and their figure into the README",
    ),
    "verify": Command(
        "study", "check that every published number comes from the runs the configuration defines"
    ),
    "plan": Command(
        "study", "what an experiment's runs would detect, and find equivalent, at the spreads given"
    ),
}


class Version(argparse.Action):
    """--version: the package's version and the code version that every output it writes
    records (the commit, `+dirty` for edited code), then exit."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings, dest, nargs=0, help="show the version and the code's commit, and exit"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import version

        from mixnmt.provenance import code_version

        print(f"mixnmt {version('mixnmt')} (code {code_version() or 'outside a git checkout'})")
        parser.exit()


def parser(arguments_of: Iterable[str] = COMMANDS) -> argparse.ArgumentParser:
    """The command line: every command, with the arguments of those in `arguments_of` (a
    command's arguments import what their choices come from: the tables' import pandas, half
    a second that a job reading no table need not spend)."""
    p = argparse.ArgumentParser(prog="mixnmt", description=__doc__.partition("\n\n")[0])
    p.add_argument("--version", action=Version)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        s = sub.add_parser(name, help=command.help, description=command.help)
        if name in arguments_of:
            run, arguments = command.functions(name)
            s.set_defaults(func=run)
            arguments(s)
    return p


def _paths(value: object) -> list[Path]:
    """The paths in a parsed argument (a path, MODEL=PATH pairs, lists of them); not "-"."""
    if isinstance(value, Path):
        return [] if str(value) == "-" else [value]
    if isinstance(value, dict):
        return _paths(list(value.values()))
    if isinstance(value, list | tuple):
        return [p for item in value for p in _paths(item)]
    return []


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser(argv[:1]).parse_args(argv)  # the command comes first
    given = [p for value in vars(args).values() for p in _paths(value)]
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        distinct([p for p in given if not isinstance(p, Output)], [p for p in given if isinstance(p, Output)])
        args.func(args)
    except MixnmtError as e:
        print(f"mixnmt {args.command}: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # a missing or unreadable input, a full disk
        where = f"{e.filename}: " if e.filename else ""
        print(f"mixnmt {args.command}: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    return 0
