"""The simple RNN encoder-decoder (Cho et al., 2014), section 1 of models.md.

The whole source passes through one vector c: the fixed-length bottleneck that
attention was invented to remove. No mixture anywhere. With `source: initial` the
decoder sees c only as its first state (s_0 = c; it reads y_{t-1} alone and predicts from
s_t and y_{t-1}): the gated twin of the mixture cell whose source reaches it only in h_0.
With `bridge: false` the decoder reads the final states themselves at every step,
c = [h_fwd_T ; h_bwd_1] (2H wide), and the bridge makes only its first state: the one
vector as attention's decoder reads it with `weights: final`. `project: true` (with
`bridge: false`) gives that c a tanh layer of its own at its width, c = tanh(W_c [h_fwd_T ;
h_bwd_1]): the bridge's layer without its squeeze into H.
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
        bridge: bool = True,
        project: bool = False,
        dropout: Probability = 0.2,
    ):
        if project and (bridge or source != "every_step"):
            raise ValueError("project: true needs bridge: false and source: every_step")
        super().__init__(src_vocab, tgt_vocab, shared_vocab, d_model)
        self.every_step = source == "every_step"
        self.bridged = bridge
        context = (hidden if bridge else 2 * hidden) if self.every_step else 0  # c's width where read
        self.encoder = BiGRU(d_model, hidden)
        self.bridge = nn.Linear(2 * hidden, hidden)  # s_0 = tanh(W [h_fwd_T ; h_bwd_1]), c if bridged
        self.project = nn.Linear(2 * hidden, 2 * hidden) if project else None  # c = tanh(W_c [...])
        self.decoder = GRU(d_model + context, hidden, batch_first=True)  # reads [y_{t-1} ; c]
        self.predict = DeepOutput(hidden, context, d_model, dropout)
        self.drop = Dropout(dropout)

    @property
    def static_state(self) -> frozenset[str]:
        return frozenset({"c"} if self.every_step else ())

    def summary(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """The fixed-length source vector c (B, H; B, 2H unbridged) and the first state s_0 (B, H)."""
        _, forward_last, backward_first = self.encoder(
            self.drop(self.embed(self.src_embed, src)), source_mask(src)
        )
        ends = torch.cat([forward_last, backward_first], dim=-1)  # (B, 2H)
        s_0 = torch.tanh(self.bridge(ends))
        if self.bridged:
            return s_0, s_0
        return (ends if self.project is None else torch.tanh(self.project(ends))), s_0

    def teacher_forcing(self, src: Tensor, tgt: Tensor, keep_weights: bool = False) -> tuple[Tensor, Weights]:
        c, s_0 = self.summary(src)
        y = self.drop(self.embed(self.tgt_embed, tgt))  # (B, T, d)
        c_t = c[:, None].expand(-1, y.size(1), -1) if self.every_step else y[..., :0]  # (B, T, |c|), or none
        s, _ = self.decoder(torch.cat([y, c_t], dim=-1), s_0[None].contiguous())  # (B, T, H)
        return self.output(self.predict(s, c_t, y)), {}

    def encode(self, src: Tensor) -> State:
        c, s_0 = self.summary(src)
        return {"c": c, "s": s_0} if self.every_step else {"s": s_0}

    def step(self, state: State, y: Tensor) -> tuple[Tensor, State]:
        e = self.drop(self.embed(self.tgt_embed, y))  # (B, d)
        c = state["c"] if self.every_step else e[:, :0]  # (B, |c|), or none: only s_0 saw the source
        s, _ = self.decoder(torch.cat([e, c], dim=-1)[:, None], state["s"][None].contiguous())
        s = s[:, 0]  # (B, H)
        return self.output(self.predict(s, c, e)), {**state, "s": s}
