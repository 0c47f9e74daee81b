"""What every model shares: embeddings, the tied output projection, masks, decoder state."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

import torch
from torch import Tensor, nn

from mixnmt import MixnmtError
from mixnmt.schema import NonNegativeFloat as NonNegativeFloat
from mixnmt.schema import NonNegativeInt as NonNegativeInt
from mixnmt.schema import PositiveInt as PositiveInt
from mixnmt.schema import Probability as Probability
from mixnmt.symbols import PAD

State = dict[str, Tensor]
"""A decoder's cache between steps: tensors whose first dimension is the batch."""


Weights = dict[str, Tensor]
"""Analysis weights by name (attention alignments, mixture responsibilities)."""

# Types of hyperparameters (mixnmt.schema): the registry turns a constructor's annotated
# keyword arguments into the JSON schema of its config entries, so a model's signature is
# the one home of its hyperparameters.


class Seq2Seq(nn.Module, ABC):
    """An encoder-decoder over padded id tensors.

    `forward` scores a whole target prefix at once (teacher forcing); `encode` followed
    by repeated `step` computes the same logits one token at a time, as search does;
    `analyse` returns the weights models.md asks the figures to show.
    """

    analysis_axes: ClassVar[dict[str, tuple[str, ...]]] = {}
    """The weights `analyse` returns, each with its axes after the batch axis, named from
    "source", "target" (positions), "layer", "head" and "component" (mixture candidates);
    the last axis is the one each distribution sums over."""

    compiled_steps: ClassVar[tuple[str, ...]] = ()
    """The submodules (or methods) that one decoding step runs, for `compile_steps`; none
    for models without a recurrence, which are compiled whole."""

    alignment: str | None = None
    """The analysis weights (their last axes target x source) that align a translation
    with its source (`mixnmt translate --pharaoh`); None for a model without them."""

    learned_components = 0
    """On a "component" axis: candidate 0 is "stay", the next `learned_components` are
    learned components, and any further ones are source positions."""

    def __init__(self, src_vocab: int, tgt_vocab: int, shared_vocab: bool, d_model: int):
        super().__init__()
        self.d_model = d_model
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model, padding_idx=PAD)
        self.src_embed = self.tgt_embed if shared_vocab else nn.Embedding(src_vocab, d_model, padding_idx=PAD)
        for embed in dict.fromkeys([self.tgt_embed, self.src_embed]):  # once if shared
            nn.init.normal_(embed.weight, std=d_model**-0.5)
            nn.init.zeros_(embed.weight[PAD])

    @classmethod
    def held_bytes(cls, hyperparameters: dict, tokens: int, width: int, vocab: int) -> int:
        """GPU memory beyond a model's usual that a training batch of `tokens` padded
        tokens, at most `width` wide, holds for its backward pass (the usual fits any share
        of a GPU): none."""
        return 0

    @classmethod
    def unused(cls, hyperparameters: dict) -> frozenset[str]:
        """The hyperparameters that the others make inert (what a contrast changes leaves
        them out): none."""
        return frozenset()

    def compile_steps(self) -> None:
        """torch.compile, in place (checkpoints keep the plain keys), the per-step parts
        named by `compiled_steps` with dynamic batch and length, so that one graph
        serves every batch shape; without them the whole forward pass."""
        if not self.compiled_steps:
            self.compile()
        for name in self.compiled_steps:
            part = getattr(self, name)
            if isinstance(part, nn.Module):
                for module in part if isinstance(part, nn.ModuleList) else [part]:
                    module.compile(dynamic=True)
            else:
                setattr(self, name, torch.compile(part, dynamic=True))

    @property
    def static_state(self) -> frozenset[str]:
        """Decoder-state entries that `step` passes on unchanged (per-sentence tensors such
        as the encoder's keys): beam search never reorders them, as a sentence's beams share them."""
        return frozenset()

    def embed(self, embedding: nn.Embedding, ids: Tensor) -> Tensor:
        """Embeddings scaled to unit variance per dimension: (..., d)."""
        return embedding(ids) * math.sqrt(self.d_model)

    def output(self, h: Tensor) -> Tensor:
        """Next-token logits from decoder features (..., d): the target embedding, tied
        (as a parameter, not its transpose: autocast casts it once per context, not per step)."""
        return nn.functional.linear(h, self.tgt_embed.weight)

    def auxiliary_loss(self) -> Tensor | float:
        """A per-token term that the last training forward pass adds to the training
        objective (a mixture's load balancing); 0 for most models."""
        return 0.0

    @contextmanager
    def knocked_out(self, weights: str, group: str) -> Iterator[None]:
        """Within the block, the mixture whose responsibilities `analyse` returns as
        `weights` (a "component" axis) never picks a candidate of `group` ("stay",
        "learned" or "source"; the rest renormalised): how much the model uses a group.
        A model with a "component" axis implements it; others have nothing to knock out."""
        raise MixnmtError(f"{type(self).__name__} has no mixture to knock candidates out of ({weights})")
        yield  # a generator, for the contextmanager

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        """Logits (B, T, V) for source ids (B, S) and target-prefix ids (B, T)."""
        return self.teacher_forcing(src, tgt)[0]

    def analyse(self, src: Tensor, tgt: Tensor) -> Weights:
        """The model's analysis weights while it reads `tgt` after `src`; zero on padding."""
        return self.teacher_forcing(src, tgt, keep_weights=True)[1]

    @abstractmethod
    def teacher_forcing(self, src: Tensor, tgt: Tensor, keep_weights: bool = False) -> tuple[Tensor, Weights]:
        """Logits (B, T, V) and, if `keep_weights`, the analysis weights."""

    @abstractmethod
    def encode(self, src: Tensor) -> State:
        """The decoder's initial state for source ids (B, S)."""

    @abstractmethod
    def step(self, state: State, y: Tensor) -> tuple[Tensor, State]:
        """Logits (B, V) after feeding the previous tokens y (B,), and the new state."""


class Dropout(nn.Module):
    """Inverted dropout whose mask costs one 64-bit random draw per four elements (each
    element keeps 16 random bits), about three times faster on the CPU than
    `nn.Dropout`'s one Bernoulli draw per element. The drop probability is rounded to a
    multiple of 2**-16."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0:
            return x
        n = x.numel()
        bits = torch.empty((n + 3) // 4, dtype=torch.int64, device=x.device).random_(-(2**63), None)
        keep = bits.view(torch.int16)[:n].view(x.shape) >= round(self.p * 65536) - 32768
        return x * (keep * (1 / (1 - self.p)))

    def extra_repr(self) -> str:
        return f"p={self.p}"


def source_mask(src: Tensor) -> Tensor:
    """True at real source tokens, False at padding: (B, S)."""
    return src != PAD


def reverse_padded(x: Tensor, mask: Tensor) -> Tensor:
    """Each sentence of x (B, S, d) reversed within its length; padding stays at the end."""
    lengths = mask.sum(1, keepdim=True)  # (B, 1)
    t = torch.arange(x.size(1), device=x.device)[None]  # (1, S)
    index = torch.where(t < lengths, lengths - 1 - t, t)  # (B, S)
    return x.gather(1, index[..., None].expand_as(x))


def reorder(state: State, index: Tensor, keep: frozenset[str] = frozenset()) -> State:
    """Select (and repeat) batch rows of every tensor in a decoder state but those in `keep`."""
    return {name: t if name in keep else t.index_select(0, index) for name, t in state.items()}


def sinusoids(positions: Tensor, d: int) -> Tensor:
    """Sinusoidal position encodings (len(positions), d) of Vaswani et al. (2017)."""
    inv_freq = torch.exp(
        torch.arange(0, d, 2, device=positions.device, dtype=torch.float32) * (-math.log(10000.0) / d)
    )
    angles = positions.float()[:, None] * inv_freq[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=-1)
