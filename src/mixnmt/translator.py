"""Trained models as translators: text in, detokenised text out.

    from mixnmt.translator import Translator, decode_settings
    Translator.load("results/multi30k-cpu/checkpoints/attention/seed1.pt",
                    "results/multi30k-cpu/spm/joint.model",
                    decode_settings()).translate(["A man is riding a bike."])

`translate_file` is what the workflow runs (a file of source ids, from `mixnmt spm-encode`);
`mixnmt translate --text` reads raw text from a file or standard input.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from mixnmt import MixnmtError, checkpoint
from mixnmt.batching import read_ids
from mixnmt.config import config_section
from mixnmt.config import load as load_config
from mixnmt.data import normalise
from mixnmt.decode import DecodeConfig, translate_ids
from mixnmt.files import read_lines, sha256sum, split_lines, write_json, write_lines
from mixnmt.manifest import manifest

log = logging.getLogger(__name__)

STDIN = "<stdin>"
MAX_CHARACTERS = 2000
"""The longest line `translate --text` accepts: a sentence or a few, not a document
(decoding time and memory grow with the length, quadratically in the Transformer)."""


def decode_settings(*overlays: str | Path) -> DecodeConfig:
    """The `decode` section of config.yaml with `overlays` merged on it, as Snakemake's
    `--configfile` merges them, and checked as the workflow checks the config."""
    return config_section(DecodeConfig, "decode", load_config(*overlays)["decode"])


@dataclass(frozen=True)
class Translator:
    """A trained model with its tokenizers and decoding settings."""

    inference: checkpoint.Inference
    config: DecodeConfig

    @classmethod
    def load(
        cls,
        checkpoint_path: str | Path,
        spm: str | Path | tuple[str | Path, str | Path],
        config: DecodeConfig,
        name: str | None = None,
        entry: dict | None = None,
    ) -> Translator:
        """The model at `checkpoint_path` with its SentencePiece model(s) (one path when the
        vocabulary is shared, else source and target), decoding with `config` (config.yaml's
        is `decode_settings()`); `name` and `entry` refuse a checkpoint of another model
        (see `checkpoint.load_model`)."""
        spm_files = (Path(spm),) * 2 if isinstance(spm, str | Path) else (Path(spm[0]), Path(spm[1]))
        loaded = checkpoint.load_for_inference(checkpoint_path, spm_files, name, entry)
        return cls(loaded, config)

    def translate_ids(self, sources: list[list[int]]) -> list[str]:
        """One detokenised line per source (ids); an empty source gives an empty line."""
        hyps = translate_ids(self.inference.model, sources, self.config, self.inference.device)
        # A line break inside a hypothesis would break the one-line-per-source invariant.
        return [" ".join(text.split()) for text in self.inference.target.decode(hyps)]

    def translate(self, sentences: Sequence[str]) -> list[str]:
        """One translation per sentence, normalised as the corpus was (`data.normalise`)."""
        return self.translate_ids(self.inference.source.encode(normalise(s) for s in sentences))


def translate_file(
    translator: Translator, source_ids: Path, output: Path, record: Path | None = None
) -> None:
    """Decode a file of source ids into detokenised text, exactly one line per source line,
    and write to `record` (if given) what made it: code version, inputs, settings, time."""
    loaded, config = translator.inference, translator.config
    sources = read_ids(source_ids, len(loaded.source))
    start = time.perf_counter()
    lines = translator.translate_ids(sources)
    seconds = time.perf_counter() - start
    if record is not None:
        checkpoint_path, *spm_files = loaded.files
        inputs = {str(p): sha256sum(p) for p in (checkpoint_path, source_ids, *spm_files)}
        made = manifest(inputs, loaded.device, model=loaded.name, decode=dataclasses.asdict(config))
        write_json(record, made | {"sentences": len(lines), "seconds": round(seconds, 1)})
    write_lines(output, lines)
    log.info(
        "%s: %d lines (beam %d) in %.1fs, %.1f sentences/s -> %s",
        loaded.files[0],
        len(lines),
        config.beam,
        seconds,
        len(lines) / seconds,
        output,
    )


def _checked(lines: list[str], name: str, first: int = 1) -> list[str]:
    """`lines` as they are, if none is longer than MAX_CHARACTERS; each empty one gets a
    warning, since it translates to nothing."""
    for number, line in enumerate(lines, start=first):
        if len(line) > MAX_CHARACTERS:
            raise MixnmtError(
                f"{name}: line {number} has {len(line)} characters; lines of at most {MAX_CHARACTERS} "
                "are translated (split it into sentences)"
            )
        if not line.strip():
            log.warning("%s: line %d is empty; its translation is an empty line", name, number)
    return lines


def _typed_lines(stream: TextIO) -> Iterator[str]:
    """Standard input at a terminal: one line at a time, as it is typed."""
    for number, raw in enumerate(stream.buffer, start=1):
        yield from _checked(split_lines(raw, STDIN, number), STDIN, number)


def translate_text(translator: Translator, source: Path | None, output: Path | None) -> None:
    """Translate raw text, one line per input line: from `source` or standard input (None)
    to `output` or standard output (None). At a terminal each line is answered as it is
    typed; otherwise the whole input is translated in batches."""
    if source is None and sys.stdin.isatty():
        for line in _typed_lines(sys.stdin):
            print(translator.translate([line])[0], flush=True)
        return
    if source is None:
        lines = _checked(split_lines(sys.stdin.buffer.read(), STDIN), STDIN)
    else:
        try:
            lines = _checked(read_lines(source), str(source))
        except OSError as e:
            raise MixnmtError(f"{source}: cannot read ({e.strerror})") from None
    translations = translator.translate(lines)
    if output is None:
        sys.stdout.write("".join(f"{line}\n" for line in translations))
    else:
        write_lines(output, translations)
