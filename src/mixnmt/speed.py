"""Decoding speed of a trained model: sentences per second, greedy and beam, and peak memory."""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

from mixnmt.batching import read_ids
from mixnmt.checkpoint import Inference
from mixnmt.decode import DecodeConfig, translate_ids
from mixnmt.device import peak_memory_mb
from mixnmt.files import write_json

log = logging.getLogger(__name__)


def measure_speed(
    loaded: Inference, source_ids: Path, output: Path, config: DecodeConfig, sentences: int | None = None
) -> dict:
    """Sentences per second of greedy and of beam search over the first `sentences` of a
    test set (all by default), and peak memory; with the run (`mixnmt.runs`)."""
    sources = read_ids(source_ids, len(loaded.source))[:sentences]
    result: dict = {"model": loaded.name, "run": loaded.run, "sentences": len(sources), "beam": config.beam}
    for search, beam in (("greedy", 1), ("beam", config.beam)):
        start = time.perf_counter()
        translate_ids(loaded.model, sources, dataclasses.replace(config, beam=beam), loaded.device)
        result[f"{search}_sentences_per_s"] = len(sources) / (time.perf_counter() - start)
    result["peak_memory"] = peak_memory_mb(loaded.device)
    write_json(output, result)
    log.info(
        "%s: greedy %.1f, beam %.1f sentences/s",
        loaded.files[0],
        result["greedy_sentences_per_s"],
        result["beam_sentences_per_s"],
    )
    return result
