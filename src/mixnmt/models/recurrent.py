"""Pieces the GRU models share: GRUs with an fp32 state, a padding-exact bidirectional
encoder, additive scores and weighted means over source positions, and the deep output."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from mixnmt.models.base import Dropout, reverse_padded


class FullPrecision:
    """Mixin for a recurrent module: its state in fp32, also under autocast.

    CUDA's autocast runs cuDNN's recurrent kernels in fp16 whatever dtype it was given,
    and under bf16 autocast no gradient scaler guards fp16 gradients; a GRU is small next
    to its loop, so a GPU runs it in fp32. The CPU's GRUs are loops of plain operators:
    their products run under autocast (bf16: twice as fast) while the state, given in
    fp32, is updated in fp32. Outputs are fp32; autocast casts them on use.
    """

    def forward(self, x: Tensor, hx: Tensor | None = None):
        hx = self.zeros(x) if hx is None else hx.float()
        if x.device.type == "cpu":
            return super().forward(x, hx)
        with torch.autocast(x.device.type, enabled=False):
            return super().forward(x.float(), hx)


class GRU(FullPrecision, nn.GRU):
    """nn.GRU with an fp32 state (`FullPrecision`)."""

    def zeros(self, x: Tensor) -> Tensor:
        """The initial state in fp32, whatever the input's dtype."""
        batch = x.size(0 if self.batch_first else 1)
        return x.new_zeros(
            self.num_layers * (1 + self.bidirectional), batch, self.hidden_size, dtype=torch.float32
        )


class GRUCell(FullPrecision, nn.GRUCell):
    """nn.GRUCell with an fp32 state (`FullPrecision`)."""

    def zeros(self, x: Tensor) -> Tensor:
        """The initial state in fp32, whatever the input's dtype."""
        return x.new_zeros(x.size(0), self.hidden_size, dtype=torch.float32)


class BiGRU(nn.Module):
    """Bidirectional GRU over right-padded sequences, padding-exact.

    The forward direction ends at each sentence's last real token and the backward one
    starts there: it reads every sentence reversed within its length, so padding never
    updates a state. (Packed sequences do the same, at twice the cost on the CPU: their
    shrinking batches defeat its products under autocast.)
    """

    def __init__(self, d_in: int, hidden: int):
        super().__init__()
        self.left_to_right = GRU(d_in, hidden, batch_first=True)
        self.right_to_left = GRU(d_in, hidden, batch_first=True)
        self.register_load_state_dict_pre_hook(_one_bidirectional_gru)

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """States (B, S, 2H), zero at padding; last forward state and first backward state (B, H)."""
        forward, _ = self.left_to_right(x)  # (B, S, H)
        backward = reverse_padded(self.right_to_left(reverse_padded(x, mask))[0], mask)  # (B, S, H)
        last = forward[torch.arange(x.size(0), device=x.device), mask.sum(1) - 1]  # (B, H)
        return torch.cat([forward, backward], dim=-1) * mask[..., None], last, backward[:, 0]


def _one_bidirectional_gru(module: BiGRU, state_dict: dict, prefix: str, *_) -> None:
    """Checkpoints from before the two directions ran apart hold one bidirectional
    nn.GRU: `gru.<weight>_l0` and `gru.<weight>_l0_reverse`."""
    for key in [k for k in state_dict if k.startswith(prefix + "gru.")]:
        name = key.removeprefix(prefix + "gru.")
        direction = "right_to_left" if name.endswith("_reverse") else "left_to_right"
        state_dict[f"{prefix}{direction}.{name.removesuffix('_reverse')}"] = state_dict.pop(key)


def additive_keys(keys: nn.Linear, h: Tensor) -> Tensor:
    """The source's part of additive scores, 2 U h_j (B, S, H) in fp32 (`additive_scores`):
    computed once per sentence, not at every step."""
    return 2 * keys(h).float()


def additive_scores(query: nn.Linear, score: nn.Linear, s: Tensor, keys: Tensor) -> Tensor:
    """Additive scores e_j = v^T tanh(W s + U h_j) (B, S) for decoder states s (B, H) and
    `additive_keys` 2 U h (B, S, H), in fp32, plus sum(v): a constant for every j, which
    the softmax over j ignores. As tanh x = 2 sigmoid(2x) - 1, e_j + sum(v) = 2 v^T
    sigmoid(2 W s + 2 U h_j), and a CPU's sigmoid takes a fifth of the time of its tanh
    (`score` is v, without a bias). Past the query, fp32 under autocast too: passes over
    (B, S, H) are bound by memory, where bf16 would only add casts (and slower elementwise
    kernels on a CPU)."""
    q = query(s)[:, None]  # (B, 1, H)
    with torch.autocast(s.device.type, enabled=False):
        half = torch.sigmoid_(torch.add(keys, q.float(), alpha=2))  # (1 + tanh(W s + U h_j)) / 2
        return 2 * (half @ score.weight[0].float())


def weighted_mean(weights: Tensor, states: Tensor) -> Tensor:
    """sum_j a_j h_j (B, D) of weights (B, S) and states (B, S, D), in fp32 (memory-bound,
    as `additive_scores`)."""
    with torch.autocast(states.device.type, enabled=False):
        return torch.bmm(weights[:, None].float(), states.float())[:, 0]


class DeepOutput(nn.Module):
    """Features for the tied output layer from the decoder state s_t, the context c and
    the previous word y_{t-1}: tanh(W [s; c; y]) (the "deep output" of Cho et al., 2014)."""

    def __init__(self, d_state: int, d_context: int, d_model: int, dropout: float):
        super().__init__()
        self.proj = nn.Linear(d_state + d_context + d_model, d_model)
        self.drop = Dropout(dropout)

    def forward(self, s: Tensor, c: Tensor, y: Tensor) -> Tensor:
        return self.drop(torch.tanh(self.proj(torch.cat([s, c, y], dim=-1))))
