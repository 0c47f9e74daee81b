"""Token-id corpora and token-count batching over length-sorted buckets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from mixnmt import MixnmtError
from mixnmt.files import read_lines
from mixnmt.symbols import BOS, EOS, PAD


def read_ids(path: str | Path, vocab_size: int) -> list[list[int]]:
    """Sentences of a file of space-separated token ids, one sentence per line, each id
    in the vocabulary (0 .. vocab_size - 1)."""
    try:
        sentences = [[int(tok) for tok in line.split()] for line in read_lines(path)]
    except ValueError:
        raise MixnmtError(f"{path}: expected lines of space-separated integer ids") from None
    for line, ids in enumerate(sentences, 1):
        if ids and not 0 <= min(ids) <= max(ids) < vocab_size:
            bad = next(i for i in ids if not 0 <= i < vocab_size)
            raise MixnmtError(
                f"{path}: line {line}: id {bad} is outside the vocabulary (0..{vocab_size - 1}); "
                "encode with the model's own SentencePiece model"
            )
    return sentences


def pad(seqs: Sequence[Sequence[int]], value: int = PAD) -> Tensor:
    """Right-pad sequences into a (B, T) tensor."""
    out = torch.full((len(seqs), max(len(s) for s in seqs)), value, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
    return out


@dataclass
class Batch:
    src: Tensor  # (B, S) source ids + EOS, padded
    tgt_in: Tensor  # (B, T) BOS + target ids, padded
    tgt_out: Tensor  # (B, T) target ids + EOS, padded
    target_tokens: int | None = None  # counted where the batch is made, on the host

    def __post_init__(self) -> None:
        if self.target_tokens is None:
            self.target_tokens = int((self.tgt_out != PAD).sum())

    def to(self, device: torch.device) -> Batch:
        """The batch on `device`; to a GPU from pinned memory, without waiting for the copy."""
        tensors = (self.src, self.tgt_in, self.tgt_out)
        if device.type == "cuda":
            tensors = tuple(t.pin_memory() for t in tensors)
        return Batch(*(t.to(device, non_blocking=True) for t in tensors), target_tokens=self.target_tokens)


class ParallelData:
    """A tokenised parallel corpus that yields token-count batches."""

    def __init__(self, src: list[list[int]], tgt: list[list[int]], name: str = "corpus"):
        if len(src) != len(tgt):
            raise MixnmtError(f"{name}: {len(src)} source but {len(tgt)} target sentences")
        self.src, self.tgt, self.name = src, tgt, name

    @classmethod
    def load(cls, src: str | Path, tgt: str | Path, vocab_sizes: tuple[int, int]) -> ParallelData:
        """Aligned id files, each checked against its side's vocabulary size."""
        return cls(read_ids(src, vocab_sizes[0]), read_ids(tgt, vocab_sizes[1]), name=str(src))

    def __len__(self) -> int:
        return len(self.src)

    def batches(self, max_tokens: int, generator: torch.Generator | None = None) -> list[list[int]]:
        """Sentence indices grouped so that each padded batch holds at most `max_tokens`.

        Sentences are sorted by the longer of their two sides (the batch width the
        budget counts), then by source and target length, so that batches carry little
        padding on either side. With a `generator` the order within equal lengths and the
        order of the batches are shuffled (a new draw each call); without one both are fixed.
        """
        n = len(self)
        order = torch.randperm(n, generator=generator).tolist() if generator else range(n)
        # +1 for EOS on the source and BOS/EOS on the shifted target.
        key = [(len(self.src[i]) + 1, len(self.tgt[i]) + 1) for i in range(n)]
        order = sorted(order, key=lambda i: (max(key[i]), *key[i]))
        batches: list[list[int]] = []
        current: list[int] = []
        width = 0
        for i in order:
            w = max(width, *key[i])
            if current and w * (len(current) + 1) > max_tokens:
                batches.append(current)
                current, w = [], max(key[i])
            current.append(i)
            width = w
        if current:
            batches.append(current)
        if generator:
            batches = [batches[j] for j in torch.randperm(len(batches), generator=generator)]
        return batches

    def collate(self, indices: Sequence[int]) -> Batch:
        src = [self.src[i] + [EOS] for i in indices]
        tgt = [self.tgt[i] for i in indices]
        return Batch(pad(src), pad([[BOS] + t for t in tgt]), pad([t + [EOS] for t in tgt]))


def padding_fraction(data: ParallelData, batches: list[list[int]]) -> float:
    """Share of padded (source + target) token slots in `batches`."""
    slots = real = 0
    for b in batches:
        s = [len(data.src[i]) + 1 for i in b]
        t = [len(data.tgt[i]) + 1 for i in b]
        slots += len(b) * (max(s) + max(t))
        real += sum(s) + sum(t)
    return 1 - real / slots if slots else 0.0
