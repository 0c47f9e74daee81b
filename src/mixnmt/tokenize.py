"""SentencePiece subwords: deterministic training, encoding to id files, decoding."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

import sentencepiece as spm

from mixnmt import MixnmtError
from mixnmt.files import gist, read_lines, write_bytes, write_lines
from mixnmt.symbols import BOS, EOS, PAD, UNK

log = logging.getLogger(__name__)


def train(
    inputs: Sequence[str | Path],
    model: str | Path,
    vocab_size: int,
    model_type: str = "unigram",
    character_coverage: float = 1.0,
    seed: int = 1,
) -> None:
    """Train a SentencePiece model on the lines of `inputs` and write it to `model`.

    Single-threaded with a fixed seed, so the same text gives a byte-identical model.
    """
    lines = [line for path in inputs for line in read_lines(path) if line]
    spm.set_random_generator_seed(seed)
    buffer = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(lines),
            model_writer=buffer,
            vocab_size=vocab_size,
            model_type=model_type,
            character_coverage=character_coverage,
            pad_id=PAD,
            unk_id=UNK,
            bos_id=BOS,
            eos_id=EOS,
            num_threads=1,
            minloglevel=1,
        )
    except RuntimeError as e:
        raise MixnmtError(f"{model}: SentencePiece training failed: {e}") from None
    write_bytes(model, buffer.getvalue())
    log.info("%s: %s model with %d pieces from %d lines", model, model_type, vocab_size, len(lines))


class Tokenizer:
    """A SentencePiece model with the special ids mixnmt relies on."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise MixnmtError(f"{path}: No such file (a SentencePiece model was expected)")
        try:
            self.sp = spm.SentencePieceProcessor(model_file=str(path))
        except (OSError, RuntimeError) as e:  # SentencePiece raises RuntimeError on a bad file
            raise MixnmtError(
                f"{path}: not a readable SentencePiece model ({gist(e)}); delete it and rerun to rebuild it"
            ) from None
        ids = (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id())
        if ids != (PAD, UNK, BOS, EOS):
            raise MixnmtError(f"{path}: expected pad/unk/bos/eos ids {(PAD, UNK, BOS, EOS)}, got {ids}")

    def __len__(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, lines: Iterable[str]) -> list[list[int]]:
        return self.sp.encode(list(lines))

    def decode(self, ids: Iterable[Sequence[int]]) -> list[str]:
        return self.sp.decode([list(s) for s in ids])

    def pieces(self, ids: Sequence[int]) -> list[str]:
        """The subword of each id, for axis labels and token tables."""
        return [self.sp.id_to_piece(i) for i in ids]


def encode_file(model: str | Path, text: str | Path, output: str | Path) -> None:
    """Write the ids of every line of `text`, space-separated, one line per input line."""
    encoded = Tokenizer(model).encode(read_lines(text))
    write_lines(output, (" ".join(map(str, ids)) for ids in encoded))
    log.info("%s: %d lines, %d tokens", output, len(encoded), sum(map(len, encoded)))
