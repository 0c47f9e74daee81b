"""The simple RNN encoder-decoder (Cho et al., 2014), section 1 of models.md.

The whole source passes through one vector c: the fixed-length bottleneck that
attention was invented to remove. No mixture anywhere. With `source: initial` the
decoder sees c only as its first state (s_0 = c; it reads y_{t-1} alone and predicts from
s_t and y_{t-1}): the gated twin of the mixture cell whose source reaches it only in h_0.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor, nn

from mixnmt.models.base import Dropout, PositiveInt, Probability, Seq2Seq, State, Weights, source_mask
from mixnmt.models.recurrent import GRU, BiGRU, DeepOutput


class RNN(Seq2Seq):
    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        shared_vocab: bool,
        *,
        d_model: PositiveInt = 256,
        hidden: PositiveInt = 512,
        source: Literal["every_step", "initial"] = "every_step",
        dropout: Probability = 0.2,
    ):
        super().__init__(src_vocab, tgt_vocab, shared_vocab, d_model)
        self.every_step = source == "every_step"
        context = hidden if self.every_step else 0  # the width of c where the decoder reads it
        self.encoder = BiGRU(d_model, hidden)
        self.bridge = nn.Linear(2 * hidden, hidden)  # c = tanh(W [h_fwd_T ; h_bwd_1])
        self.decoder = GRU(d_model + context, hidden, batch_first=True)  # reads [y_{t-1} ; c]
        self.predict = DeepOutput(hidden, context, d_model, dropout)
        self.drop = Dropout(dropout)

    @property
    def static_state(self) -> frozenset[str]:
        return frozenset({"c"} if self.every_step else ())

    def summary(self, src: Tensor) -> Tensor:
        """The fixed-length source vector c (B, H)."""
        _, forward_last, backward_first = self.encoder(
            self.drop(self.embed(self.src_embed, src)), source_mask(src)
        )
        return torch.tanh(self.bridge(torch.cat([forward_last, backward_first], dim=-1)))

    def teacher_forcing(self, src: Tensor, tgt: Tensor, keep_weights: bool = False) -> tuple[Tensor, Weights]:
        c = self.summary(src)  # (B, H)
        y = self.drop(self.embed(self.tgt_embed, tgt))  # (B, T, d)
        c_t = c[:, None].expand(-1, y.size(1), -1) if self.every_step else y[..., :0]  # (B, T, H), or none
        s, _ = self.decoder(torch.cat([y, c_t], dim=-1), c[None].contiguous())  # s_0 = c; (B, T, H)
        return self.output(self.predict(s, c_t, y)), {}

    def encode(self, src: Tensor) -> State:
        c = self.summary(src)
        return {"c": c, "s": c} if self.every_step else {"s": c}

    def step(self, state: State, y: Tensor) -> tuple[Tensor, State]:
        e = self.drop(self.embed(self.tgt_embed, y))  # (B, d)
        c = state["c"] if self.every_step else e[:, :0]  # (B, H), or none: only s_0 saw the source
        s, _ = self.decoder(torch.cat([e, c], dim=-1)[:, None], state["s"][None].contiguous())
        s = s[:, 0]  # (B, H)
        return self.output(self.predict(s, c, e)), {**state, "s": s}
