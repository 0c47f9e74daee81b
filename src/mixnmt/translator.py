"""Trained models as translators: text in, detokenised text out.

    from mixnmt.translator import Translator
    Translator.load("results/multi30k-cpu/checkpoints/attention/seed1.pt",
                    "results/multi30k-cpu/spm/joint.model").translate(["A man is riding a bike."])

decodes with the settings that travel with the checkpoint (`carried_settings`), from any
directory; `decode_settings(overlay, ...)` gives config.yaml's with overlays instead.

`translate_file` is what the workflow runs (a file of source ids, from `mixnmt spm-encode`);
`mixnmt translate --text` reads raw text from a file or standard input. Either writes the
best translation of each line or, with `Output.nbest`, the n best with their scores, and
with `Output.alignments` the best one's attention weights or responsibilities (JSON lines),
with `Output.pharaoh` its word alignment (`i-j` pairs).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np

from mixnmt import MixnmtError, checkpoint
from mixnmt.alignment import word_links, words
from mixnmt.batching import read_ids
from mixnmt.config import CONFIG, config_section
from mixnmt.config import load as load_config
from mixnmt.data import normalise
from mixnmt.decode import DecodeConfig, Hypothesis, search
from mixnmt.files import read_bounded, read_json, read_lines, sha256sum, split_lines, write_json, write_lines
from mixnmt.manifest import manifest
from mixnmt.models import REGISTRY
from mixnmt.paths import decoding_of
from mixnmt.weights import sentence_weights

log = logging.getLogger(__name__)

STDIN = "<stdin>"
MAX_BYTES = 64 * 2**20
"""The most text `translate --text` reads at once: a file or a pipe, not a device that
never ends (/dev/zero)."""
MAX_CHARACTERS = 2000
"""The longest line `translate --text` accepts: a sentence or a few, not a document
(decoding time and memory grow with the length, quadratically in the Transformer)."""


def decode_settings(*overlays: str | Path) -> DecodeConfig:
    """The `decode` section of config.yaml with `overlays` merged on it, as Snakemake's
    `--configfile` merges them, and checked as the workflow checks the config."""
    return config_section(DecodeConfig, "decode", load_config(*overlays)["decode"])


def carried_settings(checkpoint_path: str | Path, remedy: str = "give decode_settings(...)") -> DecodeConfig:
    """The decoding settings that travel with the checkpoint at `checkpoint_path`: the
    workflow's decode.json beside it (`paths.decoding_of`), or without one config.yaml's in
    the working directory, with those of the model's own entry over them (its `decode`: a
    variant that decodes differently, mixnmt.config); without either file, an error that
    ends with `remedy`. A missing checkpoint is named as such, not as a checkpoint without
    settings."""
    if not Path(checkpoint_path).is_file():
        raise MixnmtError(f"{checkpoint_path}: not found")
    path = decoding_of(Path(checkpoint_path))
    if path.is_file():
        found, where = read_json(path), f"{path}: decode"
    elif CONFIG.is_file():
        found, where = dataclasses.asdict(decode_settings()), f"{CONFIG}: decode"
    else:
        raise MixnmtError(
            f"{path}: no decoding settings beside the checkpoint, and no {CONFIG} in the working "
            f"directory; {remedy}"
        )
    own = (checkpoint.load(checkpoint_path).get("definition") or {}).get("entry") or {}
    return config_section(DecodeConfig, where, found | own.get("decode", {}))


def decoding(
    checkpoint: str | Path, config: dict | None, overlays: list[str | Path], options: dict
) -> DecodeConfig:
    """The decoding settings of `checkpoint`: `config` (JSON's), or config.yaml's with
    `overlays` merged on it, or else those it carries (`carried_settings`), each setting in
    `options` overriding them; with every setting an option, no file is read."""
    names = [f.name for f in dataclasses.fields(DecodeConfig)]
    missing = [f"--{name.replace('_', '-')}" for name in names if name not in options]
    if not missing:
        return config_section(DecodeConfig, "decode", options)
    if config:
        found = config_section(DecodeConfig, "decode", config)
    elif overlays:
        found = decode_settings(*overlays)
    else:
        remedy = f"give --configfile, --config, or every setting (missing: {' '.join(missing)})"
        found = carried_settings(checkpoint, remedy)
    return config_section(DecodeConfig, "decode", dataclasses.asdict(found) | options) if options else found


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
        config: DecodeConfig | None = None,
        name: str | None = None,
        entry: dict | None = None,
    ) -> Translator:
        """The model at `checkpoint_path` with its SentencePiece model(s) (one path when the
        vocabulary is shared, else source and target), decoding with `config` (default: the
        settings it carries, `carried_settings`); `name` and `entry` refuse a checkpoint of
        another model (see `checkpoint.load_model`)."""
        spm_files = (Path(spm),) * 2 if isinstance(spm, str | Path) else (Path(spm[0]), Path(spm[1]))
        loaded = checkpoint.load_for_inference(checkpoint_path, spm_files, name, entry)
        return cls(loaded, config or carried_settings(checkpoint_path))

    def search(self, sources: list[list[int]], nbest: int = 1) -> list[list[Hypothesis]]:
        """The `nbest` best hypotheses of each source (ids), best first (see `decode.search`)."""
        inference = self.inference
        return search(inference.model, sources, self.config, inference.device, nbest, inference.dtype)

    def detokenise(self, hyps: Sequence[Hypothesis]) -> list[str]:
        """The text of each hypothesis, on one line."""
        # A line break inside a hypothesis would break the one-line-per-source invariant.
        return [" ".join(text.split()) for text in self.inference.target.decode([h.tokens for h in hyps])]

    def translate_ids(self, sources: list[list[int]]) -> list[str]:
        """One detokenised line per source (ids); an empty source gives an empty line."""
        return self.detokenise([hyps[0] for hyps in self.search(sources)])

    def translate(self, sentences: Sequence[str]) -> list[str]:
        """One translation per sentence, normalised as the corpus was (`data.normalise`)."""
        return self.translate_ids(self.inference.source.encode(normalise(s) for s in sentences))


@dataclass(frozen=True)
class Output:
    """What `mixnmt translate` writes for each source line, numbered from 0: its best
    translation; or with `nbest`, its `nbest` best as INDEX<TAB>SCORE<TAB>TRANSLATION lines
    (SCORE: what beam search ranks by, `decode.Hypothesis`); with `alignments`, a file of
    one JSON record per source: the best translation's index, score, source and target
    subwords, and the model's analysis weights along them with their axes; with
    `pharaoh`, a file of the best translation's word alignment per source (`pharaoh`)."""

    nbest: int | None = None
    alignments: Path | None = None
    pharaoh: Path | None = None

    def check(self, translator: Translator) -> None:
        """Refuse, before any decoding, a Pharaoh file of a model that has no alignment."""
        model = translator.inference.model
        if self.pharaoh is not None and model.alignment is None:
            aligning = ", ".join(arch for arch, cls in REGISTRY.items() if cls.alignment)
            raise MixnmtError(
                f"{self.pharaoh}: the model of {translator.inference.files[0]} ({type(model).__name__}) "
                f"has no weights over source positions to align with; these architectures have: {aligning}"
            )

    def render(
        self, translator: Translator, sources: list[list[int]], first: int = 0
    ) -> tuple[list[str], dict[Path, list[str]]]:
        """The output lines of `sources` (ids), the first numbered `first`, and the lines
        of each side file (alignment records, Pharaoh links) by path."""
        found = translator.search(sources, self.nbest or 1)
        texts = iter(translator.detokenise([h for hyps in found for h in hyps]))  # in one call
        lines, side = [], {path: [] for path in (self.alignments, self.pharaoh) if path is not None}
        for index, (source, hyps) in enumerate(zip(sources, found), start=first):
            scored = [(h, next(texts)) for h in hyps]
            lines += [f"{index}\t{h.score:.4f}\t{t}" for h, t in scored] if self.nbest else [scored[0][1]]
            if side:
                record = self._record(translator, index, source, hyps[0])
                if self.alignments is not None:
                    side[self.alignments].append(json.dumps(record, ensure_ascii=False))
                if self.pharaoh is not None:
                    side[self.pharaoh].append(pharaoh(record, translator.inference.model.alignment))
        return lines, side

    @staticmethod
    def _record(translator: Translator, index: int, source: list[int], best: Hypothesis) -> dict:
        """The alignment record of one source; an empty one, never decoded, has no weights."""
        record = {"index": index, "score": None if math.isnan(best.score) else round(best.score, 4)}
        if not source:
            return record | {"source": [], "target": [], "axes": {}, "weights": {}}
        axes = {name: list(axes) for name, axes in translator.inference.model.analysis_axes.items()}
        weights = sentence_weights(translator.inference, source, best.tokens)
        return record | {
            "source": weights["source"],
            "target": weights["target"],
            "axes": axes,
            "weights": weights["weights"],
        }

    def write(self, translator: Translator, sources: list[list[int]], output: Path | None) -> None:
        """Render `sources` and write them to `output` (None: standard output) and the
        side files, each whole or not at all."""
        lines, side = self.render(translator, sources)
        for path, side_lines in side.items():
            write_lines(path, side_lines)
        if output is None:
            sys.stdout.write("".join(f"{line}\n" for line in lines))
        else:
            write_lines(output, lines)


def pharaoh(record: dict, name: str) -> str:
    """The word alignment "i-j" (source word i, target word j, from 0, as whitespace splits
    the source line and its translation) of an alignment record: each target subword
    linked to the source subword that weights `name` favour (averaged over a Transformer's
    layers and heads), EOS left out, as fast_align and fairseq write them."""
    if not record["weights"]:
        return ""
    weights = np.asarray(record["weights"][name], dtype=float)
    weights = weights.reshape(-1, *weights.shape[-2:]).mean(0)  # (target, source)
    links = word_links(weights, words(record["source"]), words(record["target"]))
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


def translate_file(
    translator: Translator,
    source_ids: Path,
    output: Path,
    record: Path | None = None,
    written: Output = Output(),
) -> None:
    """Decode a file of source ids into detokenised text, one line per source line unless
    `written` asks for n-best lists, and write to `record` (if given) what made it: code
    version, the run (`mixnmt.runs`), inputs and the output's sha256, settings, time."""
    loaded, config = translator.inference, translator.config
    written.check(translator)
    sources = read_ids(source_ids, len(loaded.source))
    start = time.perf_counter()
    written.write(translator, sources, output)
    seconds = time.perf_counter() - start
    if record is not None:
        checkpoint_path, *spm_files = loaded.files
        inputs = {str(p): sha256sum(p) for p in (checkpoint_path, source_ids, *spm_files)}
        made = manifest(
            inputs,
            loaded.device,
            run=loaded.run,
            source={"path": str(source_ids), "sha256": inputs[str(source_ids)]},
            output={"path": str(output), "sha256": sha256sum(output)},
            model=loaded.name,
            decode=dataclasses.asdict(config),
        )
        write_json(record, made | {"sentences": len(sources), "seconds": round(seconds, 1)})
    log.info(
        "%s: %d lines (beam %d) in %.1fs, %.1f sentences/s -> %s",
        loaded.files[0],
        len(sources),
        config.beam,
        seconds,
        len(sources) / seconds,
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


def translate_text(
    translator: Translator, source: Path | None, output: Path | None, written: Output = Output()
) -> None:
    """Translate raw text, one line per input line: from `source` or standard input (None)
    to `output` or standard output (None), as `written` says. At a terminal each line is
    answered as it is typed (and its alignment record written at once); otherwise the
    whole input is translated in batches."""
    encode = translator.inference.source.encode
    if source is None and sys.stdin is None:
        raise MixnmtError("standard input is closed: give the text as INPUT")
    written.check(translator)
    if source is None and sys.stdin.isatty():
        with contextlib.ExitStack() as files:
            opened = {}
            for index, line in enumerate(_typed_lines(sys.stdin)):
                lines, side = written.render(translator, encode([normalise(line)]), index)
                print("\n".join(lines), flush=True)
                for path, side_lines in side.items():
                    if path not in opened:
                        path.unlink(missing_ok=True)  # a link is replaced, as atomic writes do
                        opened[path] = files.enter_context(open(path, "x", encoding="utf-8"))
                    opened[path].writelines(f"{line}\n" for line in side_lines)
                    opened[path].flush()
        return
    if source is None:
        lines = _checked(split_lines(read_bounded(sys.stdin.buffer, STDIN, MAX_BYTES), STDIN), STDIN)
    else:
        try:
            lines = _checked(read_lines(source, MAX_BYTES), str(source))
        except OSError as e:
            raise MixnmtError(f"{source}: cannot read ({e.strerror})") from None
    written.write(translator, encode(normalise(line) for line in lines), output)
