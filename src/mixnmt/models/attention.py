"""The RNN with additive attention (Bahdanau et al., 2015), section 5 of models.md.

`rnn` plus a mixture over source positions: at every step the decoder state scores
each source state, and the context is their softmax-weighted mean.

    e_tj = v^T tanh(W s_{t-1} + U h_j)     a_t = softmax(e_t)     c_t = sum_j a_tj h_j
    s_t  = GRU([y_{t-1} ; c_t], s_{t-1})   prediction from s_t, c_t, y_{t-1}

`query: current` scores the source after the step instead (Luong et al., 2015, with
input feeding), the timing of `latent`'s prior, so that `latent` differs from it only in
where the mixture sits:

    s_t  = GRU([y_{t-1} ; c_{t-1}], s_{t-1})   e_tj = v^T tanh(W s_t + U h_j)   c_0 = 0

`weights: uniform` mixes every source position equally instead, with no scorer: the
mixture without its weights, c_t = mean_j h_j, the same at every step. `weights: final`
reads each direction's final state instead, c_t = [h_fwd_S ; h_bwd_1], the same at every
step: the one vector of `rnn` (before its bridge) in attention's decoder.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import Tensor, nn

from mixnmt.models.base import Dropout, PositiveInt, Probability, Seq2Seq, State, Weights, source_mask
from mixnmt.models.recurrent import BiGRU, DeepOutput, GRUCell, additive_keys, additive_scores, weighted_mean
from mixnmt.symbols import PAD

Query = Literal["previous", "current"]
MixWeights = Literal["scored", "uniform", "final"]


class Attention(Seq2Seq):
    analysis_axes = {"alignment": ("target", "source")}
    alignment = "alignment"
    compiled_steps = ("advance",)

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        shared_vocab: bool,
        *,
        d_model: PositiveInt = 256,
        hidden: PositiveInt = 512,
        dropout: Probability = 0.2,
        query: Query = "previous",
        weights: MixWeights = "scored",
    ):
        super().__init__(src_vocab, tgt_vocab, shared_vocab, d_model)
        self.query_from = query
        self.weights = weights
        self.encoder = BiGRU(d_model, hidden)
        self.init = nn.Linear(hidden, hidden)  # s_0 = tanh(W_s h_bwd_1)
        if self.weights == "scored":
            self.keys = nn.Linear(2 * hidden, hidden, bias=False)  # U h_j
            self.query = nn.Linear(hidden, hidden)  # W s_{t-1} (W s_t if query: current)
            self.score = nn.Linear(hidden, 1, bias=False)  # v
        self.cell = GRUCell(d_model + 2 * hidden, hidden)
        self.predict = DeepOutput(hidden, 2 * hidden, d_model, dropout)
        self.drop = Dropout(dropout)

    @property
    def static_state(self) -> frozenset[str]:
        per_sentence = {"scored": {"keys"}, "final": {"final", "ends"}}.get(self.weights, set())
        return frozenset({"h", "mask"} | per_sentence)

    def encode(self, src: Tensor) -> State:
        mask = source_mask(src)
        x = self.drop(self.embed(self.src_embed, src))
        h, forward_last, backward_first = self.encoder(x, mask)  # (B, S, 2H); (B, H) each
        state = {"h": h, "mask": mask, "s": torch.tanh(self.init(backward_first))}
        if self.weights == "scored":
            state["keys"] = additive_keys(self.keys, h)
        if self.weights == "final":
            state["final"] = torch.cat([forward_last, backward_first], dim=-1)  # (B, 2H)
            state["ends"] = final_positions(mask)
        return state | ({"c": h.new_zeros(h.size(0), h.size(-1))} if self.query_from == "current" else {})

    def attend(self, state: State, s: Tensor) -> tuple[Tensor, Tensor]:
        """Context c_t (B, 2H) and alignment a_t (B, S) for the querying decoder state s (B, H)."""
        if self.weights == "final":
            return state["final"], state["ends"]  # the same whatever s
        if self.weights == "scored":
            e = additive_scores(self.query, self.score, s, state["keys"])  # (B, S), fp32
            a = e.masked_fill(~state["mask"], -math.inf).softmax(-1)
        else:
            a = state["mask"].float()
            a = a / a.sum(-1, keepdim=True)  # 1/S over the source's words, whatever s
        return weighted_mean(a, state["h"]), a

    def advance(self, state: State, e: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """One decoder step from embedded y_{t-1} (B, d): new state s_t, context c_t, alignment a_t."""
        if self.query_from == "current":
            s = self.cell(torch.cat([e, state["c"]], dim=-1), state["s"])
            return s, *self.attend(state, s)
        c, a = self.attend(state, state["s"])
        return self.cell(torch.cat([e, c], dim=-1), state["s"]), c, a

    def carried(self, s: Tensor, c: Tensor) -> State:
        """What the next step reads of this one: s_t, and c_t if it feeds the input."""
        return {"s": s, "c": c} if self.query_from == "current" else {"s": s}

    def teacher_forcing(self, src: Tensor, tgt: Tensor, keep_weights: bool = False) -> tuple[Tensor, Weights]:
        state = self.encode(src)
        y = self.drop(self.embed(self.tgt_embed, tgt))  # (B, T, d)
        states, contexts, alignments = [], [], []
        for y_t in y.unbind(1):  # not y[:, t]: each of those has a (B, T, d) zero gradient
            s, c, a = self.advance(state, y_t)
            state |= self.carried(s, c)
            states.append(s)
            contexts.append(c)
            alignments.append(a)
        logits = self.output(self.predict(torch.stack(states, 1), torch.stack(contexts, 1), y))
        if not keep_weights:
            return logits, {}
        return logits, {"alignment": torch.stack(alignments, 1) * (tgt != PAD)[..., None]}  # (B, T, S)

    def step(self, state: State, y: Tensor) -> tuple[Tensor, State]:
        e = self.drop(self.embed(self.tgt_embed, y))
        s, c, _ = self.advance(state, e)
        return self.output(self.predict(s, c, e)), state | self.carried(s, c)


def final_positions(mask: Tensor) -> Tensor:
    """Where `weights: final` reads (B, S): half at the first source position, where the
    backward direction ends, half at the last real one, where the forward direction ends
    (all of it at position 1 for a one-word source)."""
    ends = mask.new_zeros(mask.shape, dtype=torch.float32)
    ends[:, 0] = 0.5
    ends[torch.arange(mask.size(0), device=mask.device), mask.sum(1) - 1] += 0.5
    return ends
