"""The mixture RNN encoder-decoder, section 2 of models.md.

An RNN whose transition is a mixture model: the state attends over K+1 candidates,
"stay" (itself) and K learned components, and moves by the responsibility-weighted
mean of their values.

    u_t  = h_{t-1} + x_t
    g_t  = [u_t ; m_1 ; ... ; m_K]
    pi_t = softmax((W_q u_t) . (W_k g_t)^T / sqrt(d_head))       (per head)
    h_t  = LN(u_t + pi_t . (W_v g_t))

The encoder hands its last state to the decoder: one vector, the same bottleneck as `rnn`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from mixnmt.models.base import Dropout, PositiveInt, Probability, Seq2Seq, State, Weights, source_mask
from mixnmt.tokenize import PAD


class Mix(nn.Module):
    """Mix(q ; M): attention of a query over [q ; M], K learned components, multi-head."""

    def __init__(self, d: int, components: int, heads: int):
        super().__init__()
        self.heads = heads
        self.components = nn.Parameter(torch.randn(components, d) * d**-0.5)  # m_1..m_K
        self.qkv = nn.Linear(d, 3 * d)  # W_q, W_k, W_v

    def forward(self, q: Tensor) -> tuple[Tensor, Tensor]:
        """Update pi . (W_v [q ; M]) (B, d) and responsibilities pi (B, H, K+1)."""
        b, d = q.shape
        h = self.heads
        query, k_self, v_self = self.qkv(q).view(b, 3, h, d // h).unbind(1)  # (B, H, dh) each
        k_m, v_m = (
            nn.functional.linear(self.components, self.qkv.weight[d:], self.qkv.bias[d:])
            .view(-1, 2, h, d // h)
            .unbind(1)
        )  # (K, H, dh) each
        scores = torch.cat(
            [(query * k_self).sum(-1, keepdim=True), torch.einsum("bhd,khd->bhk", query, k_m)], dim=-1
        ) / math.sqrt(d // h)  # (B, H, K+1)
        pi = scores.softmax(-1)
        update = pi[..., :1] * v_self + torch.einsum("bhk,khd->bhd", pi[..., 1:], v_m)  # (B, H, dh)
        return update.reshape(b, d), pi


class MixtureCell(nn.Module):
    """h_t = LN(u_t + Mix(u_t ; M)), u_t = h_{t-1} + x_t. The state is (h_{t-1},)."""

    order = 1
    mixtures = ("responsibilities",)  # the names of the responsibilities `forward` returns

    def __init__(self, d: int, components: int, heads: int):
        super().__init__()
        self.mix = Mix(d, components, heads)
        self.norm = nn.LayerNorm(d)

    def forward(self, state: tuple[Tensor, ...], x: Tensor) -> tuple[tuple[Tensor, ...], Weights]:
        u = state[0] + x
        update, pi = self.mix(u)
        return (self.norm(u + update),), {"responsibilities": pi}


def recur(
    cell: nn.Module, state: tuple[Tensor, ...], x: Tensor, mask: Tensor
) -> tuple[Tensor, tuple[Tensor, ...], Weights]:
    """Run `cell` over x (B, T, d); padded steps (mask False) leave the state unchanged.

    Returns the newest state at every step (B, T, d), the final state, and the
    responsibilities (B, T, H, K+1) of each of the cell's mixtures by name, zero at padding.
    """
    outputs, responsibilities = [], {name: [] for name in cell.mixtures}
    for t in range(x.size(1)):
        new, pis = cell(state, x[:, t])
        keep = mask[:, t, None]  # (B, 1)
        state = tuple(torch.where(keep, n, old) for n, old in zip(new, state))
        outputs.append(state[0])
        for name, pi in pis.items():
            responsibilities[name].append(pi * keep[..., None])
    return (
        torch.stack(outputs, 1),
        state,
        {name: torch.stack(pis, 1) for name, pis in responsibilities.items()},
    )


def mixture_axes(cell: type[nn.Module]) -> dict[str, tuple[str, ...]]:
    """The analysis axes of an encoder and a decoder made of `cell`: one responsibility
    tensor per mixture of the cell and side, e.g. "decoder_responsibilities"."""
    return {
        f"{side}_{name}": (position, "head", "component")
        for side, position in (("encoder", "source"), ("decoder", "target"))
        for name in cell.mixtures
    }


class Mixture(Seq2Seq):
    Cell: type[nn.Module] = MixtureCell
    analysis_axes = mixture_axes(MixtureCell)

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        shared_vocab: bool,
        *,
        d_model: PositiveInt = 576,
        components: PositiveInt = 64,
        heads: PositiveInt = 8,
        dropout: Probability = 0.2,
    ):
        if d_model % heads:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}")
        super().__init__(src_vocab, tgt_vocab, shared_vocab, d_model)
        self.encoder = self.Cell(d_model, components, heads)
        self.decoder = self.Cell(d_model, components, heads)
        self.drop = Dropout(dropout)

    def initial(self, src: Tensor) -> tuple[Tensor, ...]:
        zero = src.new_zeros(src.size(0), self.d_model, dtype=self.tgt_embed.weight.dtype)
        return (zero,) * self.encoder.order

    def encode_with_weights(self, src: Tensor) -> tuple[tuple[Tensor, ...], Weights]:
        """The encoder's last state and its responsibilities (B, S, H, K+1) per mixture."""
        x = self.drop(self.embed(self.src_embed, src))
        _, state, pis = recur(self.encoder, self.initial(src), x, source_mask(src))
        return state, pis

    def teacher_forcing(self, src: Tensor, tgt: Tensor, keep_weights: bool = False) -> tuple[Tensor, Weights]:
        state, enc_pis = self.encode_with_weights(src)
        y = self.drop(self.embed(self.tgt_embed, tgt))
        h, _, dec_pis = recur(self.decoder, state, y, tgt != PAD)  # (B, T, d)
        logits = self.output(self.drop(h))
        if not keep_weights:
            return logits, {}
        sides = {"encoder": enc_pis, "decoder": dec_pis}
        return logits, {f"{side}_{name}": pi for side, pis in sides.items() for name, pi in pis.items()}

    def encode(self, src: Tensor) -> State:
        state, _ = self.encode_with_weights(src)
        return {f"h{i}": h for i, h in enumerate(state)}

    def step(self, state: State, y: Tensor) -> tuple[Tensor, State]:
        previous = tuple(state[f"h{i}"] for i in range(len(state)))
        new, _ = self.decoder(previous, self.drop(self.embed(self.tgt_embed, y)))
        return self.output(self.drop(new[0])), {f"h{i}": h for i, h in enumerate(new)}
