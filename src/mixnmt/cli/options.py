"""Argument types and option groups that several commands share; each refuses what the
config's schema refuses."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from mixnmt import MixnmtError, paths

if TYPE_CHECKING:
    from mixnmt.checkpoint import Inference


def count(text: str) -> int:
    """A positive integer argument."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer")
    return int(text)


def index(text: str) -> int:
    """A non-negative integer argument: a seed, a number of retries."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected a non-negative integer")
    return int(text)


def positive_number(text: str) -> float:
    """A positive, finite number argument: a margin."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive number")
    return value


class Named(argparse.Action):
    """NAME=PATH arguments (parsed by `type`) as {NAME: PATH}, in the order given; a name
    given twice is refused, since one of its files would be silently dropped."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: list[tuple[str | tuple[str, int], Path]],
        option_string: str | None = None,
    ) -> None:
        named: dict = {}
        for name, path in values:
            if name in named:
                label = paths.run(*name) if isinstance(name, tuple) else name  # a run: (model, seed)
                parser.error(
                    f"argument {option_string or self.metavar}: {label} given twice ({named[name]}, {path})"
                )
            named[name] = path
        setattr(namespace, self.dest, named)


class Distinct(argparse.Action):
    """PATH arguments as a list, in the order given; a file given twice is refused, since
    its rows would count twice."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: list[Path],
        option_string: str | None = None,
    ) -> None:
        seen: dict[Path, Path] = {}
        for path in values:
            if (same := seen.get(path.resolve())) is not None:
                also = "" if same == path else f", also as {path}"
                parser.error(f"argument {option_string}: {same} given twice{also}")
            seen[path.resolve()] = path
        setattr(namespace, self.dest, values)


FILES = {"type": Path, "nargs": "+", "action": Distinct, "required": True}  # [PATH, ...], each once


def json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def named_path(value: str) -> tuple[str, Path]:
    """A MODEL=PATH argument."""
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{value!r}: expected MODEL=PATH")
    return name, Path(path)


MODEL_PATHS = {"type": named_path, "action": Named, "metavar": "MODEL=PATH"}  # {MODEL: PATH}


def run_path(value: str) -> tuple[tuple[str, int], Path]:
    """A MODEL/seedN=PATH argument: one training run's translation."""
    label, path = named_path(value)
    if (run := paths.parse_run(label)) is None:
        raise argparse.ArgumentTypeError(f"{value!r}: expected MODEL/seedN=PATH")
    return run, path


class Pairs(argparse.Action):
    """A:B contrasts (parsed by `pair`), each of two models and each pair once, in either
    order: a repeated contrast would count one test twice in Holm's family."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: list[tuple[str, str]],
        option_string: str | None = None,
    ) -> None:
        for i, (a, b) in enumerate(values):
            if a == b:
                parser.error(f"argument {option_string}: {a}:{b} compares {a!r} with itself")
            if {a, b} in [{*before} for before in values[:i]]:
                parser.error(f"argument {option_string}: {a}:{b} compares the models of a contrast before it")
        setattr(namespace, self.dest, values)


def pair(value: str) -> tuple[str, str]:
    """An A:B contrast argument."""
    a, sep, b = value.partition(":")
    if not sep or not a or not b:
        raise argparse.ArgumentTypeError(f"{value!r}: expected A:B (two model names)")
    return a, b


def add_configfiles(s: argparse.ArgumentParser, help: str) -> None:
    """--configfile FILE, once per overlay (so that it never takes the positional arguments
    after it), in the order they are merged."""
    s.add_argument(
        "--configfile",
        type=Path,
        action="append",
        default=None,
        metavar="FILE",
        help=f"{help}; repeat for more",
    )


def set_threads(threads: int | None) -> None:
    """Ready this process to run a model: `threads` CPU threads (None: PyTorch's choice),
    freed memory kept for reuse and oneDNN's kernel caches bounded (`device.ready_memory`)."""
    from mixnmt.device import ready_memory

    ready_memory()
    if threads:
        import torch

        torch.set_num_threads(threads)


ENTRY = "JSON: the model's config entry `models.<NAME>` (hyperparameters, and `arch` unless NAME is one)"


def settings_help(s: argparse.ArgumentParser, section: str) -> None:
    """List the settings of config section `section` that `--config` takes, each with its
    help, below the options (declared once, in mixnmt.config.SETTINGS)."""
    from mixnmt.config import SETTINGS
    from mixnmt.schema import help_lines

    s.formatter_class = argparse.RawDescriptionHelpFormatter
    s.epilog = f"settings (--config JSON keys):\n{help_lines(SETTINGS[section][0])}"


def setting_options(s: argparse.ArgumentParser, section: str) -> None:
    """One option per setting of config section `section` (`--beam`, ...), each overriding
    the config's value, with the setting's help (declared once, in mixnmt.config.SETTINGS)."""
    import typing

    from mixnmt.config import SETTINGS
    from mixnmt.schema import settings_schema

    cls, exclude = SETTINGS[section]
    hints = typing.get_type_hints(cls)  # int or float: what the option parses
    group = s.add_argument_group(f"{section} settings (each overrides the config's)")
    for name, schema in settings_schema(cls, exclude)["properties"].items():
        group.add_argument(f"--{name.replace('_', '-')}", type=hints[name], help=schema["description"])


def add_trained_model(s: argparse.ArgumentParser, name_required: bool) -> None:
    """The options that name a trained model (see `loaded`): checkpoint, SentencePiece
    models, its config name and entry (a checkpoint of another is refused), threads."""
    s.add_argument("--checkpoint", type=Path, required=True, help="the trained checkpoint (.pt)")
    s.add_argument(
        "--spm",
        type=Path,
        action="append",
        required=True,
        metavar="MODEL",
        help="the SentencePiece model: once for a joint one, or twice, the source's then the target's",
    )
    s.add_argument(
        "--model", required=name_required, metavar="NAME", help="refuse a checkpoint of another model"
    )
    s.add_argument("--entry", "--hparams", type=json_object, help=f"{ENTRY}: refuse a checkpoint with others")
    s.add_argument("--threads", type=count, help="CPU threads")


def loaded(a: argparse.Namespace) -> Inference:
    """The trained model that `add_trained_model`'s options name, checked and loaded."""
    from mixnmt.checkpoint import load_for_inference

    set_threads(a.threads)
    if len(a.spm) > 2:
        raise MixnmtError(
            f"--spm: given {len(a.spm)} times; give one joint model, or the source's and the target's"
        )
    return load_for_inference(a.checkpoint, (a.spm[0], a.spm[-1]), a.model, a.entry)


def add_runs(s: argparse.ArgumentParser) -> None:
    """The fingerprints a job that gathers per-run files holds its inputs to."""
    s.add_argument(
        "--runs",
        type=json_object,
        metavar="JSON",
        help="the configuration's fingerprint of every run, {MODEL/seedN: FINGERPRINT}: an input "
        "of any other run, or that records none, is refused",
    )
