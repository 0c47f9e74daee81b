"""What the diagnoses of a trained study (looping.py, lockin.py) share: their command line,
an experiment's folder (with the configuration that made it, found as `mixnmt verify`
finds it) and the models to diagnose (the study's first seed of each), and their output, a
tab-separated row of numbers per model and group; bad input is one line, not a traceback."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mixnmt import MixnmtError, checkpoint
from mixnmt.models import Seq2Seq
from mixnmt.paths import Layout
from mixnmt.tokenize import Tokenizer
from mixnmt.verify import configuration

Diagnose = Callable[[Path, str, dict[str, Any]], list[dict]]


def first_run(
    root: Path, name: str, config: dict[str, Any]
) -> tuple[Layout, int, Seq2Seq, Tokenizer, Tokenizer]:
    """The study's first seed of `name` in its folder `root`: the layout, the seed, the
    checked model (in eval mode, see `checkpoint.load_model`) and its source and target
    tokenizers."""
    layout, seed = Layout(str(root)), config["seeds"][0]
    return layout, seed, *checkpoint.load_run(layout, name, seed)


def main(doc: str, diagnose: Diagnose, reads: str, argv: list[str] | None) -> None:
    """Parse `argv` (an experiment's folder, which must hold `reads`, and model names), run
    `diagnose(folder, model, configuration)` for each model and print its rows."""
    parser = argparse.ArgumentParser(
        Path(inspect.getfile(inspect.unwrap(diagnose))).name, description=doc.splitlines()[0]
    )
    parser.add_argument("experiment", type=Path, help=f"results/<experiment>, with {reads}")
    parser.add_argument("models", nargs="+", help="the models to diagnose (the study's first seed of each)")
    parser.add_argument(
        "--configfile",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="an overlay on config.yaml that made it (default: the one in experiments/ naming it); "
        "repeat for more",
    )
    args = parser.parse_args(argv)
    try:
        config = configuration(args.experiment, args.configfile)
        rows = [row for name in args.models for row in diagnose(args.experiment, name, config)]
    except MixnmtError as e:
        parser.exit(1, f"{parser.prog}: error: {e}\n")
    except OSError as e:  # a file of the experiment missing or unreadable
        parser.exit(1, f"{parser.prog}: error: {e.filename}: {e.strerror}\n")
    columns = list(rows[0])
    print("\t".join(columns))
    for row in rows:
        print("\t".join(f"{row[c]:.3f}" if isinstance(row[c], float) else str(row[c]) for c in columns))
