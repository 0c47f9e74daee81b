"""The decoding settings and translation (workflow/rules/translate.smk), for the workflow
and for people."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from mixnmt import MixnmtError
from mixnmt.cli.options import (
    add_configfiles,
    add_trained_model,
    count,
    json_object,
    loaded,
    setting_options,
    settings_help,
)
from mixnmt.files import Output

if TYPE_CHECKING:
    from mixnmt.config import DecodeConfig


def decoding_arguments(s: argparse.ArgumentParser) -> None:
    settings_help(s, "decode")
    s.add_argument("--config", type=json_object, required=True, help="JSON: the decoding settings")
    s.add_argument("output", type=Output, help="where they go, beside the checkpoints (JSON)")


def cmd_decoding(a: argparse.Namespace) -> None:
    import dataclasses

    from mixnmt.config import DecodeConfig, config_section
    from mixnmt.files import write_json

    write_json(a.output, dataclasses.asdict(config_section(DecodeConfig, "decode", a.config)))


def translate_arguments(s: argparse.ArgumentParser) -> None:
    setting_options(s, "decode")
    add_trained_model(s, name_required=False)
    s.add_argument(
        "--config", type=json_object, help="JSON: the decoding settings (default: the checkpoint's)"
    )
    add_configfiles(s, "or take `decode:` from config.yaml with this overlay merged on it")
    s.add_argument("--text", action="store_true", help="INPUT is raw text (default: standard input)")
    s.add_argument(
        "--nbest",
        type=count,
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
    stdio = {None, Path("-")}
    if a.text and a.manifest:
        raise MixnmtError("--manifest records a translated file of source ids; not with --text")
    if not a.text and (a.input in stdio or a.output in stdio):
        raise MixnmtError(
            "source ids come from a file and go to a file (INPUT and OUTPUT); "
            "for text on standard input or output, add --text"
        )
    start = time.perf_counter()
    log = logging.getLogger("mixnmt.translate")
    log.info("loading %s ...", a.checkpoint)  # before torch's import: the first seconds
    from mixnmt.translator import Output, Translator, translate_file, translate_text

    config = _decoding(a)
    if a.nbest is not None and a.nbest > config.beam:
        raise MixnmtError(
            f"--nbest {a.nbest}: beam search keeps {config.beam}; give --beam {a.nbest} or more"
        )
    translator = Translator(loaded(a), config)
    name, device = translator.inference.name or a.checkpoint, translator.inference.device
    log.info("%s on %s, beam %d, loaded in %.1f s", name, device, config.beam, time.perf_counter() - start)
    written = Output(a.nbest, a.alignments, a.pharaoh)
    if a.text:
        source, output = (None if path in stdio else path for path in (a.input, a.output))
        translate_text(translator, source, output, written)
    else:
        translate_file(translator, a.input, a.output, a.manifest, written)
