"""Corpus preparation: decode, normalise, check parallelism, filter training pairs."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from mixnmt import MixnmtError
from mixnmt.files import atomic_path, put_lines, read_lines

log = logging.getLogger(__name__)


def normalise(line: str) -> str:
    """Collapse every run of whitespace into one space and trim the ends."""
    return " ".join(line.split())


def read_parallel(src: str | Path, tgt: str | Path) -> tuple[list[str], list[str]]:
    """Normalised lines of two parallel files; their line counts must agree."""
    src_lines, tgt_lines = read_lines(src), read_lines(tgt)
    if len(src_lines) != len(tgt_lines):
        raise MixnmtError(
            f"{src} has {len(src_lines)} lines but {tgt} has {len(tgt_lines)}: "
            "source and target must be parallel"
        )
    return [normalise(s) for s in src_lines], [normalise(t) for t in tgt_lines]


def prepare(
    src: str | Path,
    tgt: str | Path,
    src_out: str | Path,
    tgt_out: str | Path,
    max_words: int | None = None,
    shown: Sequence[int] = (),
) -> None:
    """Decode, normalise and check a parallel corpus and write it as plain text.

    With `max_words` (training data) pairs with an empty side or a side longer than
    `max_words` words are dropped and counted in the log; without it (test data)
    every line is kept, in order. `shown` are the sentences the analysis will show
    (`analysis.sentences`): each must be a non-empty line.
    """
    src_lines, tgt_lines = read_parallel(src, tgt)
    pairs = list(zip(src_lines, tgt_lines))
    if max_words is not None:
        empty = sum(1 for s, t in pairs if not s or not t)
        kept = [
            (s, t)
            for s, t in pairs
            if s and t and len(s.split()) <= max_words and len(t.split()) <= max_words
        ]
        log.info(
            "%s: kept %d of %d pairs (dropped %d empty, %d longer than %d words)",
            src,
            len(kept),
            len(pairs),
            empty,
            len(pairs) - len(kept) - empty,
            max_words,
        )
        pairs = kept
    else:
        log.info("%s: kept all %d lines", src, len(pairs))
    if not any(s and t for s, t in pairs):
        raise MixnmtError(f"{src}, {tgt}: no sentence pairs (empty, or every pair has an empty side)")
    for i in shown:
        if not 0 <= i < len(pairs) or not pairs[i][0]:
            raise MixnmtError(
                f"analysis.sentences: {i} is not a non-empty line of {src} "
                f"({len(pairs)} lines, counted from 0)"
            )
    # Both files are renamed into place only after both were written.
    with atomic_path(src_out) as src_tmp, atomic_path(tgt_out) as tgt_tmp:
        put_lines(src_tmp, (s for s, _ in pairs))
        put_lines(tgt_tmp, (t for _, t in pairs))
