"""Word alignments: the models' (each target subword linked to the source subword of most
weight while the model reads the reference) against silver ones from a statistical
aligner, scored by alignment error rate (Och and Ney, 2003). Words are the whitespace
tokens of the raw text; a subword belongs to the word its "▁" opened."""

from __future__ import annotations

import importlib.metadata
import logging
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mixnmt import MixnmtError
from mixnmt.files import gist, read_lines, write_json

log = logging.getLogger(__name__)

Links = set[tuple[int, int]]  # (source word, target word), counted from 0
EFLOMAL = "eflomal==2.0.0"  # the aligner the study pins (pyproject's `align` extra)


def parse(line: str) -> Links:
    """Links from Pharaoh format: "0-0 1-2 ..." (source-target)."""
    try:
        return {(int(i), int(j)) for i, j in (link.split("-") for link in line.split())}
    except ValueError:
        raise MixnmtError(f"not an alignment in Pharaoh format (i-j ...): {line[:200]!r}") from None


def pharaoh(links: Iterable[tuple[int, int]]) -> str:
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


def error_rate(
    alignments: Sequence[Links], sure: Sequence[Links], possible: Sequence[Links]
) -> dict[str, float]:
    """Corpus alignment error rate 1 - (|A&S| + |A&P|) / (|A| + |S|), with precision
    |A&P| / |A| and recall |A&S| / |S|; every sure link is also possible."""
    if not len(alignments) == len(sure) == len(possible):
        raise MixnmtError(f"alignments of {len(alignments)}, {len(sure)} and {len(possible)} sentences")
    a_s = a_p = n_a = n_s = 0
    for a, s, p in zip(alignments, sure, possible):
        a_s, a_p = a_s + len(a & s), a_p + len(a & (p | s))
        n_a, n_s = n_a + len(a), n_s + len(s)
    if not n_a + n_s:
        raise MixnmtError(
            f"no alignment error rate: none of the {len(alignments)} sentences has a link, in the model's "
            "alignments or the silver ones"
        )
    return {
        "aer": 1 - (a_s + a_p) / (n_a + n_s),
        "precision": a_p / n_a if n_a else float("nan"),
        "recall": a_s / n_s if n_s else float("nan"),
    }


def words(pieces: Sequence[str]) -> list[int | None]:
    """The word of each SentencePiece piece ("▁" opens one); None for "</s>"."""
    found, word = [], -1
    for piece in pieces:
        if piece == "</s>":
            found.append(None)
            continue
        word += piece.startswith("▁") or word < 0
        found.append(word)
    return found


def word_links(weights: np.ndarray, source: Sequence[int | None], target: Sequence[int | None]) -> Links:
    """Word links from subword weights (target x source, as `words` maps their axes): each
    target subword to the source subword of most weight; none where either is EOS."""
    best = weights.argmax(-1)
    return {
        (source[j], target[t]) for t, j in enumerate(best) if target[t] is not None and source[j] is not None
    }


def silver(
    train: tuple[Path, Path], test: tuple[Path, Path], settings: dict[str, Any], output: Path
) -> dict[str, Any]:
    """Silver word alignments of the test set by eflomal, trained on the training and
    test sentences in both directions: the links both directions make are sure, those
    either makes possible. Without eflomal the file says the alignments were skipped and
    why. JSON: aligner, settings, corpus sizes, sure and possible links (Pharaoh)."""
    test_lines = [read_lines(p) for p in test]
    result: dict[str, Any] = {"aligner": EFLOMAL, "settings": settings, "sentences": len(test_lines[0])}
    try:
        import eflomal
    except ImportError:
        result["skipped"] = f"eflomal is not installed (pip install {EFLOMAL}, or the `align` extra)"
        log.warning("silver alignments skipped: %s", result["skipped"])
        write_json(output, result)
        return result
    try:
        version = importlib.metadata.version("eflomal")
    except importlib.metadata.PackageNotFoundError:
        raise MixnmtError(
            f"eflomal imports but has no package metadata (its version is unknown); install {EFLOMAL}"
        ) from None
    if f"eflomal=={version}" != EFLOMAL:
        raise MixnmtError(f"eflomal {version} is installed; the study pins {EFLOMAL}")
    train_lines = [read_lines(p) for p in train]
    src, tgt = (t + s for t, s in zip(train_lines, test_lines))
    if len(src) != len(tgt):
        raise MixnmtError(f"{train[0]} and {test[0]} have {len(src)} lines, their targets {len(tgt)}")
    with tempfile.TemporaryDirectory() as tmp:
        forward, reverse = f"{tmp}/forward", f"{tmp}/reverse"
        try:
            eflomal.Aligner(**settings).align(
                src, tgt, links_filename_fwd=forward, links_filename_rev=reverse
            )
        except Exception as e:  # a bad setting, or the aligner's own failure
            raise MixnmtError(f"analysis.aligner: eflomal failed ({type(e).__name__}: {gist(e)})") from None
        n = len(test_lines[0])
        found = [read_lines(p) for p in (forward, reverse)]
        for name, lines in zip(("forward", "reverse"), found):
            if len(lines) != len(src):  # the test set's links are the last n: a short file would shift them
                raise MixnmtError(
                    f"eflomal wrote {len(lines)} {name} alignments for {len(src)} sentence pairs"
                )
        both = [[parse(line) for line in lines[len(lines) - n :]] for lines in found]
    result |= {
        "trained_on": len(src),
        "words": [[len(s.split()), len(t.split())] for s, t in zip(*test_lines)],
        "sure": [pharaoh(f & r) for f, r in zip(*both)],
        "possible": [pharaoh(f | r) for f, r in zip(*both)],
    }
    write_json(output, result, indent=None)
    log.info("silver alignments of %d sentences (%s, trained on %d) -> %s", n, EFLOMAL, len(src), output)
    return result
