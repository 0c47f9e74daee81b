"""The `mixnmt` command: one subcommand per pipeline stage, each a thin call into the package."""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from mixnmt import MixnmtError, paths
from mixnmt.files import Output, distinct

if TYPE_CHECKING:
    from mixnmt.checkpoint import Inference
    from mixnmt.config import DecodeConfig


def _count(text: str) -> int:
    """A positive integer argument."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer")
    return int(text)


def _index(text: str) -> int:
    """A non-negative integer argument: a seed, a number of retries."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected a non-negative integer")
    return int(text)


def _positive_number(text: str) -> float:
    """A positive, finite number argument: a margin."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive number")
    return value


class _Named(argparse.Action):
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


class _Distinct(argparse.Action):
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


FILES = {"type": Path, "nargs": "+", "action": _Distinct, "required": True}  # [PATH, ...], each once


def _json(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def _named_path(value: str) -> tuple[str, Path]:
    """A MODEL=PATH argument."""
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"{value!r}: expected MODEL=PATH")
    return name, Path(path)


MODEL_PATHS = {"type": _named_path, "action": _Named, "metavar": "MODEL=PATH"}  # {MODEL: PATH}


def _run_path(value: str) -> tuple[tuple[str, int], Path]:
    """A MODEL/seedN=PATH argument: one training run's translation."""
    label, path = _named_path(value)
    if (run := paths.parse_run(label)) is None:
        raise argparse.ArgumentTypeError(f"{value!r}: expected MODEL/seedN=PATH")
    return run, path


class _Pairs(argparse.Action):
    """A:B contrasts (parsed by `_pair`), each of two models and each pair once, in either
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
            if {a, b} in [{*pair} for pair in values[:i]]:
                parser.error(f"argument {option_string}: {a}:{b} compares the models of a contrast before it")
        setattr(namespace, self.dest, values)


def _pair(value: str) -> tuple[str, str]:
    """An A:B contrast argument."""
    a, sep, b = value.partition(":")
    if not sep or not a or not b:
        raise argparse.ArgumentTypeError(f"{value!r}: expected A:B (two model names)")
    return a, b


def _add_configfiles(s: argparse.ArgumentParser, help: str) -> None:
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


def _set_threads(threads: int | None) -> None:
    """Ready this process to run a model: `threads` CPU threads (None: PyTorch's choice),
    and freed memory kept for reuse (`device.keep_freed_memory`)."""
    from mixnmt.device import keep_freed_memory

    keep_freed_memory()
    if threads:
        import torch

        torch.set_num_threads(threads)


def _add_inputs(s: argparse.ArgumentParser, kinds: tuple[str, ...]) -> None:
    """One required option per input kind of a figure or table."""
    from mixnmt.inputs import INPUTS

    for kind in kinds:
        spec = INPUTS[kind]
        if spec.single:
            s.add_argument(f"--{kind}", type=Path, required=True, help=spec.help)
        elif spec.per_model:
            s.add_argument(f"--{kind}", nargs="+", required=True, help=spec.help, **MODEL_PATHS)
        else:
            s.add_argument(f"--{kind}", help=spec.help, **FILES)


ENTRY = "JSON: the model's config entry `models.<NAME>` (hyperparameters, and `arch` unless NAME is one)"


def _settings_help(s: argparse.ArgumentParser, section: str) -> None:
    """List the settings of config section `section` that `--config` takes, each with its
    help, below the options (declared once, in mixnmt.config.SETTINGS)."""
    from mixnmt.config import SETTINGS
    from mixnmt.schema import help_lines

    s.formatter_class = argparse.RawDescriptionHelpFormatter
    s.epilog = f"settings (--config JSON keys):\n{help_lines(SETTINGS[section][0])}"


def _setting_options(s: argparse.ArgumentParser, section: str) -> None:
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


def _add_trained_model(s: argparse.ArgumentParser, name_required: bool) -> None:
    """The options that name a trained model (see `_loaded`): checkpoint, SentencePiece
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
    s.add_argument("--entry", "--hparams", type=_json, help=f"{ENTRY}: refuse a checkpoint with others")
    s.add_argument("--threads", type=_count, help="CPU threads")


def _add_resamples(s: argparse.ArgumentParser) -> None:
    s.add_argument("--resamples", type=_count, required=True, help="bootstrap resamples (analysis.bootstrap)")


def _add_bootstrap(s: argparse.ArgumentParser) -> None:
    """The arguments a paired bootstrap over one seed's systems shares."""
    _add_resamples(s)
    s.add_argument("--seed", type=_index, required=True, help="the training seed of the systems")
    s.add_argument("--output", type=Output, required=True, help="JSON")
    s.add_argument("systems", nargs="+", help="translations of each system", **MODEL_PATHS)


def config_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "overlays",
        type=Path,
        nargs="*",
        help="config files merged onto config.yaml in order, as --configfile",
    )
    s.add_argument(
        "--output",
        type=Output,
        help="write it to this file (config.yaml: what DVC runs); default: standard output",
    )


def cmd_config(a: argparse.Namespace) -> None:
    import yaml

    from mixnmt.config import for_dvc, load
    from mixnmt.files import write_text

    merged = for_dvc(load(*a.overlays))
    names = " ".join(map(str, a.overlays)) or "nothing"
    text = (
        f"# config.yaml with {names} merged on it by `mixnmt config`, and `only`'s models as the\n"
        "# entries of `models` (dvc.yaml has a stage pair per entry). `git checkout config.yaml` undoes it.\n"
        + yaml.safe_dump(merged, sort_keys=False, allow_unicode=True)
    )
    if a.output is None:
        sys.stdout.write(text)
    else:
        write_text(a.output, text)


def download_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("base", help="base address: http(s):// or file:// URL, or a local folder")
    s.add_argument("output", type=Output, help="destination; its name is the file fetched from BASE")
    s.add_argument("--sha256", required=True, help="expected sha256 of the file")
    s.add_argument("--size", type=_count, required=True, help="expected size in bytes: never more is written")
    s.add_argument("--retries", type=_index, default=4, help="retries after transient failures")


def cmd_download(a: argparse.Namespace) -> None:
    from mixnmt.download import download, source_url

    download(source_url(a.base, a.output.name), a.output, a.sha256, a.size, retries=a.retries)


def prepare_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("src", type=Path, help="source side (plain or gzipped text)")
    s.add_argument("tgt", type=Path, help="target side, line-aligned with SRC")
    s.add_argument("src_out", type=Output, help="where the prepared source goes")
    s.add_argument("tgt_out", type=Output, help="where the prepared target goes")
    s.add_argument(
        "--max-words", type=_count, help="drop empty pairs and pairs longer than this (training data)"
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
        "--vocab-size", type=_count, required=True, help="pieces in the vocabulary, the special ids included"
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
    s.add_argument("--seed", type=_index, required=True, help="SentencePiece's random seed (spm.seed)")


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


def _add_runs(s: argparse.ArgumentParser) -> None:
    """The fingerprints a job that gathers per-run files holds its inputs to."""
    s.add_argument(
        "--runs",
        type=_json,
        metavar="JSON",
        help="the configuration's fingerprint of every run, {MODEL/seedN: FINGERPRINT}: an input "
        "of any other run, or that records none, is refused",
    )


def _input_paths(a: argparse.Namespace, kind: str) -> list[Path]:
    """The files given for input kind `kind` (`_add_inputs`)."""
    from mixnmt.inputs import INPUTS

    value, spec = getattr(a, kind), INPUTS[kind]
    return [value] if spec.single else list(value.values()) if spec.per_model else value


def _load_inputs(a: argparse.Namespace, kinds: tuple[str, ...]) -> dict:
    """The inputs of a figure or table, read from their `--<kind>` options, those that
    record their runs checked against `--runs`."""
    from mixnmt.inputs import INPUTS
    from mixnmt.runs import refuse_foreign, refuse_misnamed, refuse_twice

    recording = [kind for kind in kinds if INPUTS[kind].runs]
    refuse_foreign([p for kind in recording for p in _input_paths(a, kind)], a.runs)
    for kind in recording:
        if INPUTS[kind].per_model:
            refuse_misnamed(getattr(a, kind))
        if INPUTS[kind].one_per:
            refuse_twice(getattr(a, kind), f"--{kind}", INPUTS[kind].one_per)
    values = {kind: getattr(a, kind) for kind in kinds}
    return {kind: INPUTS[kind].load(v) for kind, v in values.items()}


def train_arguments(s: argparse.ArgumentParser) -> None:
    _settings_help(s, "train")
    s.add_argument("--model", required=True, metavar="NAME", help="the model's name in the config")
    s.add_argument("--entry", "--hparams", type=_json, default={}, help=ENTRY)
    s.add_argument("--config", type=_json, default={}, help="JSON: the training settings")
    s.add_argument(
        "--data", type=_json, help="JSON: what defines the data (part of the run's fingerprint; mixnmt.runs)"
    )
    s.add_argument("--train", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="id files")
    s.add_argument("--valid", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="id files")
    s.add_argument(
        "--spm", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="SentencePiece models"
    )
    s.add_argument(
        "--checkpoint", type=Output, required=True, help="where the best (or averaged) weights go (.pt)"
    )
    s.add_argument("--metrics", type=Output, required=True, help="per-epoch metrics (TSV)")
    s.add_argument("--manifest", type=Output, required=True, help="what the run was (JSON)")
    s.add_argument("--state", type=Output, required=True, help="resumable state, kept only while training")
    s.add_argument("--threads", type=_count, help="CPU threads for PyTorch (default: its own choice)")


def cmd_train(a: argparse.Namespace) -> None:
    from mixnmt.config import config_section
    from mixnmt.stopping import record_stop_signals
    from mixnmt.train import TrainConfig, TrainFiles, train

    stop_requested = record_stop_signals()  # until the process exits

    _set_threads(a.threads)
    files = TrainFiles(
        tuple(a.train), tuple(a.valid), tuple(a.spm), a.checkpoint, a.metrics, a.manifest, a.state
    )
    train(a.model, a.entry, config_section(TrainConfig, "train", a.config), files, stop_requested, a.data)


def _loaded(a: argparse.Namespace) -> Inference:
    """The trained model that `_add_trained_model`'s options name, checked and loaded."""
    from mixnmt.checkpoint import load_for_inference

    _set_threads(a.threads)
    if len(a.spm) > 2:
        raise MixnmtError(
            f"--spm: given {len(a.spm)} times; give one joint model, or the source's and the target's"
        )
    return load_for_inference(a.checkpoint, (a.spm[0], a.spm[-1]), a.model, a.entry)


def translate_arguments(s: argparse.ArgumentParser) -> None:
    _setting_options(s, "decode")
    _add_trained_model(s, name_required=False)
    s.add_argument("--config", type=_json, help="JSON: the decoding settings (default: the checkpoint's)")
    _add_configfiles(s, "or take `decode:` from config.yaml with this overlay merged on it")
    s.add_argument("--text", action="store_true", help="INPUT is raw text (default: standard input)")
    s.add_argument(
        "--nbest",
        type=_count,
        metavar="N",
        help="write the N best translations of each line (N at most --beam), each as "
        "INDEX<TAB>SCORE<TAB>TRANSLATION: INDEX counts input lines from 0, SCORE is the "
        "log-probability divided by length ** length_penalty that beam search ranks by",
    )
    s.add_argument(
        "--alignments",
        type=Output,
        metavar="FILE",
        help="write the best translation's attention weights or mixture responsibilities, one JSON "
        "record per input line: index, score, source and target subwords, axes, weights",
    )
    s.add_argument(
        "--pharaoh",
        type=Output,
        metavar="FILE",
        help="write the best translation's word alignment, one line per input line of i-j pairs "
        "(source word i, target word j, from 0, as whitespace splits them), as fast_align writes "
        "them: each target subword linked to the source subword of most attention weight",
    )
    s.add_argument(
        "--manifest", type=Output, help="what made the translation: code version, inputs, settings (JSON)"
    )
    s.add_argument("input", type=Path, nargs="?", help="source ids, or text with --text (- or none: stdin)")
    s.add_argument("output", type=Output, nargs="?", help="translations (with --text, - or none: stdout)")


def _decoding(a: argparse.Namespace) -> DecodeConfig:
    """The decoding settings that translate's options name (`translator.decoding`)."""
    import dataclasses

    from mixnmt.config import DecodeConfig
    from mixnmt.translator import decoding

    options = {f.name: getattr(a, f.name) for f in dataclasses.fields(DecodeConfig)}
    given = {k: v for k, v in options.items() if v is not None}
    return decoding(a.checkpoint, a.config, a.configfile or [], given)


def cmd_translate(a: argparse.Namespace) -> None:
    start = time.perf_counter()
    log = logging.getLogger("mixnmt.translate")
    log.info("loading %s ...", a.checkpoint)  # before torch's import: the first seconds
    from mixnmt.translator import Output, Translator, translate_file, translate_text

    config = _decoding(a)
    stdio = {None, Path("-")}
    if a.text and a.manifest:
        raise MixnmtError("--manifest records a translated file of source ids; not with --text")
    if not a.text and (a.input in stdio or a.output in stdio):
        raise MixnmtError(
            "source ids come from a file and go to a file (INPUT and OUTPUT); "
            "for text on standard input or output, add --text"
        )
    if a.nbest is not None and a.nbest > config.beam:
        raise MixnmtError(
            f"--nbest {a.nbest}: beam search keeps {config.beam}; give --beam {a.nbest} or more"
        )
    translator = Translator(_loaded(a), config)
    name, device = translator.inference.name or a.checkpoint, translator.inference.device
    log.info("%s on %s, beam %d, loaded in %.1f s", name, device, config.beam, time.perf_counter() - start)
    written = Output(a.nbest, a.alignments, a.pharaoh)
    if a.text:
        source, output = (None if path in stdio else path for path in (a.input, a.output))
        translate_text(translator, source, output, written)
    else:
        translate_file(translator, a.input, a.output, a.manifest, written)


def decoding_arguments(s: argparse.ArgumentParser) -> None:
    _settings_help(s, "decode")
    s.add_argument("--config", type=_json, required=True, help="JSON: the decoding settings")
    s.add_argument("output", type=Output, help="where they go, beside the checkpoints (JSON)")


def cmd_decoding(a: argparse.Namespace) -> None:
    import dataclasses

    from mixnmt.config import DecodeConfig, config_section
    from mixnmt.files import write_json

    write_json(a.output, dataclasses.asdict(config_section(DecodeConfig, "decode", a.config)))


def score_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--model", required=True, help="the model's name in the config")
    s.add_argument("--testset", required=True, help="the test set's name in the config")
    s.add_argument("--seed", type=_index, required=True, help="the training seed of the model")
    s.add_argument("hypotheses", type=Path, help="the translation, one sentence a line")
    s.add_argument("references", type=Path, help="the reference translation, line-aligned")
    s.add_argument("output", type=Output, help="where the scores go (JSON)")


def cmd_score(a: argparse.Namespace) -> None:
    from mixnmt.evaluate import score

    score(a.hypotheses, a.references, a.output, a.model, a.testset, a.seed)


def aggregate_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--scores", help="JSON files of `mixnmt score`", **FILES)
    s.add_argument("--significance", help="`mixnmt significance` files", **FILES)
    s.add_argument("--manifests", help="training manifests to cite", **FILES)
    s.add_argument(
        "--reliance", type=Path, nargs="*", action=_Distinct, default=[], help="`mixnmt reliance` tables"
    )
    s.add_argument("--output", type=Output, required=True, help="TSV")
    s.add_argument("--markdown", type=Output, required=True, help="the same table as Markdown")
    s.add_argument("--metrics", type=Output, required=True, help="the numbers as JSON, for `dvc metrics`")
    _add_runs(s)


def cmd_aggregate(a: argparse.Namespace) -> None:
    from mixnmt.evaluate import aggregate
    from mixnmt.files import write_text
    from mixnmt.report import markdown_scores

    table, tests = aggregate(a.scores, a.significance, a.manifests, a.reliance, a.output, a.metrics, a.runs)
    write_text(a.markdown, markdown_scores(table, tests))


def headline_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("scores", type=Path, help="the score table (scores.tsv of `mixnmt aggregate`)")
    s.add_argument(
        "--output", type=Output, nargs="+", required=True, help="files named .../<model>/<testset>.json"
    )


def cmd_headline(a: argparse.Namespace) -> None:
    from mixnmt.evaluate import headline

    headline(a.scores, a.output)


def significance_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--testset", required=True, help="the test set's name in the config")
    s.add_argument("--references", type=Path, required=True, help="the reference translation")
    s.add_argument("--baseline", required=True, help="name of the baseline system")
    _add_bootstrap(s)
    _add_runs(s)


def cmd_significance(a: argparse.Namespace) -> None:
    from mixnmt.evaluate import significance

    significance(a.references, a.systems, a.baseline, a.resamples, a.testset, a.seed, a.output, a.runs)


def contrasts_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--testset", required=True, help="the test set's name in the config")
    s.add_argument("--references", type=Path, required=True, help="the reference translation")
    s.add_argument(
        "--pairs",
        type=_pair,
        nargs="*",
        action=_Pairs,
        required=True,
        metavar="A:B",
        help="the contrasts (none: no rows)",
    )
    _add_resamples(s)
    s.add_argument(
        "--margin",
        type=_positive_number,
        required=True,
        help="the equivalence margin (points of the primary metric)",
    )
    s.add_argument(
        "--primary",
        metavar="METRIC",
        help="the pre-declared metric (bleu or chrf) where this is the pre-declared test set",
    )
    s.add_argument("--output", type=Output, required=True, help="JSON")
    _add_runs(s)
    s.add_argument(
        "translations",
        type=_run_path,
        action=_Named,
        nargs="*",
        metavar="MODEL/seedN=PATH",
        help="every contrasted run's translation",
    )


def cmd_contrasts(a: argparse.Namespace) -> None:
    from mixnmt.evaluate import contrasts

    runs: dict[str, dict[int, Path]] = {}
    for (model, seed), path in a.translations.items():
        runs.setdefault(model, {})[seed] = path
    contrasts(a.references, runs, a.pairs, a.resamples, a.margin, a.testset, a.output, a.primary, a.runs)


def lengths_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--testset", required=True, help="the test set's name in the config")
    s.add_argument("--sources", type=Path, required=True, help="source text")
    s.add_argument("--references", type=Path, required=True, help="the reference translation")
    s.add_argument("--edges", type=_count, nargs="+", required=True, help="bucket edges in words")
    _add_resamples(s)
    s.add_argument("--output", type=Output, required=True, help="TSV")
    _add_runs(s)
    s.add_argument("systems", nargs="+", help="translations of each system", **MODEL_PATHS)


def cmd_lengths(a: argparse.Namespace) -> None:
    from mixnmt.evaluate import bleu_by_length

    bleu_by_length(a.sources, a.references, a.systems, a.edges, a.resamples, a.testset, a.output, a.runs)


def reliance_arguments(s: argparse.ArgumentParser) -> None:
    _add_trained_model(s, name_required=True)
    s.add_argument("--valid", type=Path, nargs=2, required=True, metavar=("SRC", "TGT"), help="id files")
    s.add_argument("--seed", type=_index, required=True, help="the training seed of the model")
    s.add_argument(
        "--max-tokens", type=_count, required=True, help="padded tokens per batch (train.max_tokens)"
    )
    s.add_argument(
        "--use", type=Output, help="also write here (TSV) the loss with each candidate group knocked out"
    )
    s.add_argument("output", type=Output, help="TSV")


def cmd_reliance(a: argparse.Namespace) -> None:
    from mixnmt.reliance import source_reliance

    source_reliance(_loaded(a), tuple(a.valid), a.seed, a.max_tokens, a.output, a.use)


def speed_arguments(s: argparse.ArgumentParser) -> None:
    _settings_help(s, "decode")
    _add_trained_model(s, name_required=True)
    s.add_argument("--config", type=_json, help="JSON: the decoding settings (default: the checkpoint's)")
    s.add_argument("--sentences", type=_count, help="time the first N sentences only (default: all)")
    s.add_argument("input", type=Path, help="source ids")
    s.add_argument("output", type=Output, help="where the timings go (JSON)")


def cmd_speed(a: argparse.Namespace) -> None:
    from mixnmt.speed import measure_speed
    from mixnmt.translator import decoding

    measure_speed(_loaded(a), a.input, a.output, decoding(a.checkpoint, a.config, [], {}), a.sentences)


def analyse_arguments(s: argparse.ArgumentParser) -> None:
    _add_trained_model(s, name_required=True)
    s.add_argument("--translation", type=Path, required=True, help="the model's translation of INPUT")
    s.add_argument("--references", type=Path, required=True, help="the reference text of INPUT")
    s.add_argument("--sentences", type=int, nargs="+", required=True, help="indices of sentences to show")
    s.add_argument("input", type=Path, help="source ids")
    s.add_argument("output", type=Output, help="where the weights go (JSON)")


def cmd_analyse(a: argparse.Namespace) -> None:
    from mixnmt.analysis import analyse

    analyse(_loaded(a), a.input, a.translation, a.references, a.sentences, a.output)


def align_arguments(s: argparse.ArgumentParser) -> None:
    _add_trained_model(s, name_required=True)
    s.add_argument("--references", type=Path, required=True, help="the reference text of INPUT")
    s.add_argument("input", type=Path, help="source ids")
    s.add_argument("output", type=Output, help="where the alignments go (JSON)")


def cmd_align(a: argparse.Namespace) -> None:
    from mixnmt.analysis import align

    align(_loaded(a), a.input, a.references, a.output)


def silver_arguments(s: argparse.ArgumentParser) -> None:
    pair = {"type": Path, "nargs": 2, "required": True, "metavar": ("SRC", "TGT")}
    s.add_argument("--train", **pair, help="the training corpus (text), also aligned by the aligner")
    s.add_argument("--test", **pair, help="the test set (text) whose alignments are written")
    s.add_argument("--settings", type=json.loads, required=True, help="eflomal.Aligner's arguments (JSON)")
    s.add_argument("output", type=Output, help="JSON: settings, sure and possible links (Pharaoh)")


def cmd_silver(a: argparse.Namespace) -> None:
    from mixnmt.alignment import silver

    silver(a.train, a.test, a.settings, a.output)


def _members(
    s: argparse.ArgumentParser, registry: dict, metavar: str, output: str
) -> list[argparse.ArgumentParser]:
    """One subcommand per member of a registry (TABLES, FIGURES), with the inputs it declares."""
    members = s.add_subparsers(dest="name", required=True, metavar=metavar)
    made = []
    for name, spec in registry.items():
        m = members.add_parser(name, help=spec.help, description=spec.help)
        _add_inputs(m, spec.inputs)
        _add_runs(m)
        m.add_argument("--output", type=Output, required=True, help=output)
        made.append(m)
    return made


def table_arguments(s: argparse.ArgumentParser) -> None:
    from mixnmt.tables import TABLES

    _members(s, TABLES, "TABLE", "TSV")


def cmd_table(a: argparse.Namespace) -> None:
    from mixnmt.files import write_table
    from mixnmt.provenance import stamped
    from mixnmt.tables import TABLES

    table = TABLES[a.name]
    write_table(a.output, stamped(table.build(**_load_inputs(a, table.inputs))))


def plot_arguments(s: argparse.ArgumentParser) -> None:
    from mixnmt.figures import FIGURES

    for m in _members(s, FIGURES, "PLOT", "PNG; the SVG goes next to it"):
        m.add_argument(
            "--models",
            nargs="+",
            default=[],
            help="the study's models in the config's order: each keeps its colour in every figure",
        )


def cmd_plot(a: argparse.Namespace) -> None:
    from mixnmt.figures import FIGURES
    from mixnmt.plots import roster, save
    from mixnmt.provenance import made_from

    figure = FIGURES[a.name]
    with roster(a.models):
        drawn = figure(**_load_inputs(a, figure.inputs))
    save(drawn, a.output, made_from([p for kind in figure.inputs for p in _input_paths(a, kind)]))


def report_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("--experiment", required=True, help="the experiment's name (results/<experiment>)")
    s.add_argument("--config", type=_json, required=True, help="JSON: the configuration used")
    s.add_argument("--scores", type=Path, required=True, help="the score table (TSV)")
    s.add_argument("--significance", help="`mixnmt significance` files, one per test set and seed", **FILES)
    s.add_argument("--lengths", help="BLEU-by-length tables, one per test set", **FILES)
    s.add_argument("--manifests", help="training manifests (JSON)", **FILES)
    s.add_argument("--figures", help="PNG files, named by figure", **FILES)
    s.add_argument("--tables", help="TSV files, named by table", **FILES)
    s.add_argument("--captions", type=Path, required=True, help="folder of <figure>.rst captions")
    s.add_argument("--output", type=Output, required=True, help="report.html")
    _add_runs(s)


def _by_name(paths: list[Path], option: str) -> dict[str, Path]:
    """Files named by their stems (figures, tables); two of one name are refused, since
    one would be dropped."""
    named: dict[str, Path] = {}
    for path in paths:
        if path.stem in named:
            raise MixnmtError(f"{option}: two files named {path.stem} ({named[path.stem]}, {path})")
        named[path.stem] = path
    return named


def cmd_report(a: argparse.Namespace) -> None:
    from mixnmt.report import ReportInputs, write_report

    figures, tables = _by_name(a.figures, "--figures"), _by_name(a.tables, "--tables")
    inputs = ReportInputs(a.scores, a.significance, a.lengths, a.manifests, figures, tables, a.captions)
    write_report(a.output, a.experiment, a.config, inputs, a.runs)


def verify_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("folder", type=Path, help="an experiment's folder, results/<experiment>")
    _add_configfiles(s, "an overlay on config.yaml that made it (default: the one in experiments/ naming it)")
    s.add_argument(
        "--quick", action="store_true", help="compare hashes only: no scoring again, no test files needed"
    )
    s.add_argument(
        "--data",
        type=Path,
        help="the folder of the dataset's files (default: data/<dataset>; a mirror will do)",
    )


def cmd_verify(a: argparse.Namespace) -> None:
    from mixnmt.verify import verify

    start = time.perf_counter()
    chain = verify(a.folder, a.configfile or [], a.quick, a.data)
    for line in chain.breaks:
        print(line)
    summary = (
        f"{a.folder}: {chain.passed} checks passed, {len(chain.breaks)} broken, {chain.skipped} skipped "
        f"downstream of a break ({'hashes only' if a.quick else 'every score recomputed'}; "
        f"{time.perf_counter() - start:.0f} s)"
    )
    if chain.breaks:
        raise MixnmtError(summary)
    print(summary, file=sys.stderr)


def readme_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument("folder", type=Path, help="a published experiment's folder, results/<experiment>")
    _add_configfiles(s, "an overlay on config.yaml that made it (as for verify)")
    s.add_argument(
        "--readme", type=Output, default=Output("README.md"), help="the file holding its block (rewritten)"
    )
    s.add_argument("--check", action="store_true", help="only say whether the block is up to date")


def cmd_readme(a: argparse.Namespace) -> None:
    from mixnmt.readme import rewrite
    from mixnmt.verify import configuration

    current = rewrite(a.readme, a.folder, configuration(a.folder, a.configfile or []), check=a.check)
    if a.check and not current:
        raise MixnmtError(
            f"{a.readme}: the results of {a.folder} are not the ones its tables give; run mixnmt readme"
        )


class Command(NamedTuple):
    """A `mixnmt` subcommand: what it runs, the arguments it takes, and its one-line help."""

    run: Callable[[argparse.Namespace], None]
    arguments: Callable[[argparse.ArgumentParser], None]
    help: str


COMMANDS: dict[str, Command] = {
    "config": Command(
        cmd_config, config_arguments, "config.yaml with overlays merged, checked, as DVC runs it (YAML)"
    ),
    "download": Command(
        cmd_download, download_arguments, "fetch one dataset file and verify its size and sha256"
    ),
    "prepare": Command(cmd_prepare, prepare_arguments, "decode, normalise and check a parallel corpus"),
    "spm-train": Command(cmd_spm_train, spm_train_arguments, "train a SentencePiece model"),
    "spm-encode": Command(cmd_spm_encode, spm_encode_arguments, "encode a text file into lines of token ids"),
    "train": Command(cmd_train, train_arguments, "train one model and keep its best checkpoint"),
    "decoding": Command(
        cmd_decoding, decoding_arguments, "the decoding settings that travel with an experiment's checkpoints"
    ),
    "translate": Command(cmd_translate, translate_arguments, "translate source ids, or raw text with --text"),
    "score": Command(
        cmd_score, score_arguments, "BLEU, chrF and lowercased BLEU of a translation against its references"
    ),
    "aggregate": Command(
        cmd_aggregate, aggregate_arguments, "the score table: scores, intervals, p-values, runs"
    ),
    "headline": Command(
        cmd_headline, headline_arguments, "BLEU and chrF per model and test set, flat, for `dvc metrics`"
    ),
    "significance": Command(
        cmd_significance, significance_arguments, "paired bootstrap of every system against a baseline"
    ),
    "contrasts": Command(
        cmd_contrasts,
        contrasts_arguments,
        "each contrast A:B (B against A) over seeds, with Holm's correction",
    ),
    "lengths": Command(cmd_lengths, lengths_arguments, "BLEU per source-length bucket"),
    "speed": Command(cmd_speed, speed_arguments, "decoding speed, greedy and beam, and peak memory"),
    "reliance": Command(
        cmd_reliance,
        reliance_arguments,
        "how much the true source raises validation tokens' probability over others",
    ),
    "analyse": Command(
        cmd_analyse, analyse_arguments, "weights and mixture responsibilities of a model on fixed sentences"
    ),
    "align": Command(
        cmd_align,
        align_arguments,
        "a run's word alignments (and prior and posterior) while it reads a test set's references",
    ),
    "silver": Command(
        cmd_silver,
        silver_arguments,
        "silver word alignments of the test set by a statistical aligner (eflomal)",
    ),
    "table": Command(cmd_table, table_arguments, "build one of the study's tables"),
    "plot": Command(cmd_plot, plot_arguments, "draw one of the study's figures"),
    "report": Command(cmd_report, report_arguments, "the self-contained HTML report"),
    "readme": Command(
        cmd_readme,
        readme_arguments,
        "write a published experiment's results into the README, from its tables",
    ),
    "verify": Command(
        cmd_verify,
        verify_arguments,
        "check that every published number comes from the runs the configuration defines",
    ),
}


def parser(arguments_of: Iterable[str] = COMMANDS) -> argparse.ArgumentParser:
    """The command line: every command, with the arguments of those in `arguments_of` (a
    command's arguments import what their choices come from: the tables' import pandas, half
    a second that a job reading no table need not spend)."""
    p = argparse.ArgumentParser(prog="mixnmt", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        s = sub.add_parser(name, help=command.help, description=command.help)
        s.set_defaults(func=command.run)
        if name in arguments_of:
            command.arguments(s)
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


if __name__ == "__main__":
    sys.exit(main())
