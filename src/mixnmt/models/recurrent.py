"""Pieces the GRU models share: GRUs with an fp32 state, a padding-exact bidirectional
encoder, and the deep output."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from mixnmt.models.base import Dropout


class FullPrecision:
    """Mixin for a recurrent module: its state in fp32, also under autocast.

    CUDA's autocast runs cuDNN's recurrent kernels in fp16 whatever dtype it was given,
    and under bf16 autocast no gradient scaler guards fp16 gradients; a GRU is small next
    to its loop, so a GPU runs it in fp32. So does the CPU a fused GRU over a sequence,
    which would otherwise carry its state in whatever dtype its inputs arrive in. A cell
    on the CPU runs its products under autocast (bf16: 3 times faster) and updates its
    fp32 state in fp32. Outputs are fp32; autocast casts them on use.
    """

    def forward(self, x: Tensor | PackedSequence, hx: Tensor | None = None):
        device = (x.data if isinstance(x, PackedSequence) else x).device
        hx = None if hx is None else hx.float()
        if device.type == "cpu" and isinstance(self, nn.RNNCellBase):
            return super().forward(x, hx)
        with torch.autocast(device.type, enabled=False):
            return super().forward(x.float(), hx)


class GRU(FullPrecision, nn.GRU):
    """nn.GRU in fp32 (`FullPrecision`)."""


class GRUCell(FullPrecision, nn.GRUCell):
    """nn.GRUCell with an fp32 state (`FullPrecision`)."""


class BiGRU(nn.Module):
    """Bidirectional GRU (fused kernel) over right-padded sequences.

    Sequences are packed, so padding never updates a state: the forward direction ends
    at each sentence's last real token and the backward one starts there.
    """

    def __init__(self, d_in: int, hidden: int):
        super().__init__()
        self.gru = GRU(d_in, hidden, batch_first=True, bidirectional=True)

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """States (B, S, 2H), zero at padding; last forward state and first backward state (B, H)."""
        lengths = mask.sum(1).cpu()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        states, final = self.gru(packed)  # final: (2, B, H), forward then backward
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=x.size(1))
        return states, final[0], final[1]


class DeepOutput(nn.Module):
    """Features for the tied output layer from the decoder state s_t, the context c and
    the previous word y_{t-1}: tanh(W [s; c; y]) (the "deep output" of Cho et al., 2014)."""

    def __init__(self, d_state: int, d_context: int, d_model: int, dropout: float):
        super().__init__()
        self.proj = nn.Linear(d_state + d_context + d_model, d_model)
        self.drop = Dropout(dropout)

    def forward(self, s: Tensor, c: Tensor, y: Tensor) -> Tensor:
        return self.drop(torch.tanh(self.proj(torch.cat([s, c, y], dim=-1))))
