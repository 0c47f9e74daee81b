"""The mixture RNN encoder-decoder, section 2 of models.md.

An RNN whose transition is a mixture model: the state attends over candidates, "stay"
(itself), K learned components and, with `source: states`, the encoder states, and
moves by the responsibility-weighted mean of their values.

    u_t  = h_{t-1} + x_t                              (+ W_c c      if source: summary)
    g_t  = [u_t ; m_1 ; ... ; m_K]                    (+ e_1..e_S   if source: states)
    pi_t = softmax((W_q u_t) . (W_k g_t)^T / sqrt(d_head))     (per head; padding masked)
    h_t  = LN(u_t + pi_t . (W_v g_t))

The encoder runs the cell over the source (both ways if `bidirectional`) and hands the
decoder its summary c (the last states, joined and projected): h_0 = c. The keys and
values of the components and of the encoder states are computed once per forward pass,
not once per step.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor, nn

from mixnmt import MixnmtError
from mixnmt.models.base import (
    Dropout,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
    Probability,
    Seq2Seq,
    State,
    Weights,
    reverse_padded,
    source_mask,
)
from mixnmt.symbols import PAD


@dataclass(frozen=True)
class Memory:
    """The candidates of a mixture beyond "stay", as keys and values laid out per head
    for batched products (`heads_first`): the learned components, shared by the batch,
    keys (H, dh, K) and values (H, K, dh), and optionally per-sentence source states,
    keys (B, H, dh, S) and values (B, H, S, dh), with their mask (B, S). Laid out once
    per forward pass, not (as einsum would) at every step."""

    keys: Tensor
    values: Tensor
    source_keys: Tensor | None = None
    source_values: Tensor | None = None
    source_mask: Tensor | None = None


def heads_first(keys: Tensor, values: Tensor) -> tuple[Tensor, Tensor]:
    """Keys and values (..., n, H, dh) of n candidates laid out per head for batched
    products, as `Memory` holds them: keys (..., H, dh, n), values (..., H, n, dh)."""
    return keys.movedim(-3, -1).contiguous(), values.movedim(-3, -2).contiguous()


GROUPS = ("stay", "learned", "source")
"""A mixture's groups of candidates, in the order of its responsibilities."""


Temperature = Literal["fixed", "learned"]


class Mix(nn.Module):
    """Mix(q ; M): attention of a query over [q ; M ; source states], multi-head.

    Remedies for heads that lock onto one candidate (models.md, section 2): `qk_norm`
    puts queries and keys through LayerNorm per head, so that a score is bounded by
    sqrt(dh) times the norms' gains; `temperature: learned` scales each head's scores by
    a learned exp(tau_h), tau_h = 0 at the start."""

    knocked_out: frozenset[str] = frozenset()
    """Candidate groups masked out (the rest renormalised): a test-time knock-out."""

    def __init__(
        self, d: int, components: int, heads: int, qk_norm: bool = False, temperature: Temperature = "fixed"
    ):
        super().__init__()
        self.heads = heads
        # m_1..m_K at the states' scale: unit variance per coordinate, as after LN.
        self.components = nn.Parameter(torch.randn(components, d))
        self.qkv = nn.Linear(d, 3 * d)  # W_q, W_k, W_v
        self.norm_q, self.norm_k = (nn.LayerNorm(d // heads) if qk_norm else nn.Identity() for _ in "qk")
        self.tau = nn.Parameter(torch.zeros(heads, 1)) if temperature == "learned" else None

    def keys_values(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values (..., H, dh) of candidates x (..., d)."""
        d = x.size(-1)
        kv = nn.functional.linear(x, self.qkv.weight[d:], self.qkv.bias[d:])
        keys, values = kv.unflatten(-1, (2, self.heads, d // self.heads)).unbind(-3)
        return self.norm_k(keys), values

    def project(self, q: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The query, divided by the head's scale, and the own key and value of states
        q (B, d): (B, H, dh) each, so that a score is query . key."""
        b, d = q.shape
        h = self.heads
        query, k_self, v_self = self.qkv(q).view(b, 3, h, d // h).unbind(1)
        scale = math.sqrt(d // h) if self.tau is None else math.sqrt(d // h) * (-self.tau).exp()  # (H, 1)
        return self.norm_q(query) / scale, self.norm_k(k_self), v_self

    @staticmethod
    def scores(query: Tensor, k_self: Tensor, memory: Memory) -> list[Tensor]:
        """The scores query . key of each group of candidates (GROUPS) that `memory` has:
        stay (B, H, 1), the learned components (B, H, K), the source (B, H, S; padding
        -inf)."""
        bank = torch.bmm(query.transpose(0, 1), memory.keys).transpose(0, 1)
        scores = [(query * k_self).sum(-1, keepdim=True), bank]
        if memory.source_keys is not None:
            source = (query[:, :, None] @ memory.source_keys).squeeze(2)
            scores.append(source.masked_fill(~memory.source_mask[:, None], -math.inf))
        return scores

    def forward(self, q: Tensor, memory: Memory) -> tuple[Tensor, Tensor]:
        """Update pi . (W_v g) (B, d) and responsibilities pi (B, H, 1+K[+S])."""
        b, d = q.shape
        query, k_self, v_self = self.project(q)  # (B, H, dh) each
        scores = self.scores(query, k_self, memory)
        if self.knocked_out:
            scores = [
                torch.full_like(s, -math.inf) if g in self.knocked_out else s for g, s in zip(GROUPS, scores)
            ]
        # (B, H, 1+K[+S]), fp32 under autocast too: the values and gradient of .float().softmax(-1), sooner
        pi = torch.cat(scores, -1).softmax(-1, dtype=torch.float32)
        if self.knocked_out:
            pi = pi.nan_to_num(0.0)  # every candidate knocked out: no update
        # pi . values, one candidate group at a time (no (B, H, n, dh) copy of the bank per step)
        k = memory.keys.size(-1)
        pi_self, pi_bank, pi_source = pi.split([1, k, pi.size(-1) - 1 - k], -1)
        update = pi_self * v_self + torch.bmm(pi_bank.transpose(0, 1), memory.values).transpose(0, 1)
        if memory.source_values is not None:
            update = update + (pi_source[:, :, None] @ memory.source_values).squeeze(2)
        return update.reshape(b, d), pi


def balance(pi: Tensor, mask: Tensor, choices: int) -> Tensor:
    """Load balancing of responsibilities pi (B, T, H, n), zero where `mask` (B, T) is
    False, over their first `choices` candidates (stay and the learned components), as
    Switch Transformer balances its experts, per head: choices * sum_i f_i P_i, where f_i
    is the share of steps that candidate i leads and P_i its mean responsibility. 1 when
    a head spreads its choices evenly over the steps, `choices` when it picks one
    candidate at every step; mean over heads. Its gradient flows through P only."""
    p = pi[..., :choices].float().flatten(0, 1)  # (N, H, c)
    real = mask.flatten().float()[:, None, None]  # (N, 1, 1)
    steps = real.sum()
    leads = (nn.functional.one_hot(p.argmax(-1), choices) * real).sum(0) / steps  # f (H, c)
    return choices * (leads * p.sum(0) / steps).sum(-1).mean()


Source = tuple[Tensor, Tensor, Tensor]
"""Keys (B, H, dh, S) and values (B, H, S, dh) of the encoder states (`heads_first`), and
the source mask (B, S)."""


class MixtureCell(nn.Module):
    """h_t = LN(u_t + Mix(u_t ; M)), u_t = h_{t-1} + x_t. The state is (h_{t-1},).

    With `gate`, the new state enters through a GRU-style update gate:
    h_t = (1 - z_t) * h_{t-1} + z_t * LN(...), z_t = sigmoid(W_z u_t)."""

    order = 1
    mixtures = ("responsibilities",)  # the names of the responsibilities `forward` returns

    def __init__(
        self,
        d: int,
        components: int,
        heads: int,
        gate: bool = False,
        reads_source: bool = False,
        **remedies: Any,
    ):
        """`reads_source`: the encoder states join the first mixture's candidates. The
        scoring `remedies` of Mix apply where a mixture has more than "stay" to choose from."""
        super().__init__()
        self.mixes = nn.ModuleList(
            Mix(d, components, heads, **(remedies if components or (i == 0 and reads_source) else {}))
            for i in range(len(self.mixtures))
        )
        self.norm = nn.LayerNorm(d)
        self.gate = nn.Linear(d, d) if gate else None  # W_z

    def memory(self, source: Source | None = None) -> tuple[Memory, ...]:
        """Each mixture's candidates, computed once per forward pass; the source states
        (if given) join the first mixture's."""
        return tuple(
            Memory(*heads_first(*mix.keys_values(mix.components)), *(source if i == 0 and source else ()))
            for i, mix in enumerate(self.mixes)
        )

    def next_state(self, previous: Tensor, u: Tensor, mixed: Tensor) -> Tensor:
        """h_t from h_{t-1}, u_t and u_t plus the mixtures' updates."""
        h = self.norm(mixed)
        if self.gate is None:
            return h
        # lerp is on no autocast list: under CUDA's the gate (a linear layer) arrives in bf16
        # and the states (layer norm) in fp32, which it refuses; the state keeps the wider type
        z, dtype = torch.sigmoid(self.gate(u)), torch.promote_types(previous.dtype, h.dtype)
        return torch.lerp(previous.to(dtype), h.to(dtype), z.to(dtype))

    def forward(
        self, state: tuple[Tensor, ...], x: Tensor, memory: tuple[Memory, ...]
    ) -> tuple[tuple[Tensor, ...], Weights]:
        u = state[0] + x
        update, pi = self.mixes[0](u, memory[0])
        return (self.next_state(state[0], u, u + update),), {"responsibilities": pi}


def recur(
    cell: nn.Module,
    state: tuple[Tensor, ...],
    x: Tensor,
    mask: Tensor,
    memory: tuple[Memory, ...],
    keep_weights: bool,
) -> tuple[Tensor, tuple[Tensor, ...], Weights]:
    """Run `cell` over x (B, T, d); padded steps (mask False) leave the state unchanged.

    Returns the newest state at every step (B, T, d), the final state, and, if
    `keep_weights`, the responsibilities (B, T, H, n) of each of the cell's mixtures by
    name, zero at padding (else none: training without them skips their per-step copies).
    """
    outputs, responsibilities = [], {name: [] for name in cell.mixtures if keep_weights}
    for t, x_t in enumerate(x.unbind(1)):  # one view per step: their gradients meet in one stack
        new, pis = cell(state, x_t, memory)
        keep = mask[:, t, None]  # (B, 1)
        state = tuple(torch.where(keep, n, old) for n, old in zip(new, state))
        outputs.append(state[0])
        for name, weights in responsibilities.items():
            weights.append(pis[name])
    padding = ~mask[:, :, None, None]  # (B, T, 1, 1)
    return (
        torch.stack(outputs, 1),
        state,
        {name: torch.stack(pis, 1).masked_fill(padding, 0.0) for name, pis in responsibilities.items()},
    )


def mixture_axes(cell: type[nn.Module]) -> dict[str, tuple[str, ...]]:
    """The analysis axes of an encoder and a decoder made of `cell`: one responsibility
    tensor per mixture of the cell and side, e.g. "decoder_responsibilities"."""
    return {
        f"{side}_{name}": (position, "head", "component")
        for side, position in (("encoder", "source"), ("decoder", "target"))
        for name in cell.mixtures
    }


SOURCE_STATE = {
    "initial": (),
    "summary": ("context",),
    "states": ("source_keys", "source_values", "source_mask"),
}
"""What the decoder keeps of the source besides h_0, by the knob `source`."""


class Mixture(Seq2Seq):
    Cell: type[nn.Module] = MixtureCell
    analysis_axes = mixture_axes(MixtureCell)
    compiled_steps = ("encoders", "decoder")

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        shared_vocab: bool,
        *,
        d_model: PositiveInt = 576,
        components: NonNegativeInt = 64,
        heads: PositiveInt = 8,
        bidirectional: bool = True,
        source: Literal["initial", "summary", "states"] = "initial",
        gate: bool = False,
        qk_norm: bool = False,
        temperature: Temperature = "fixed",
        balance: NonNegativeFloat = 0.0,
        dropout: Probability = 0.2,
    ):
        if d_model % heads:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}")
        super().__init__(src_vocab, tgt_vocab, shared_vocab, d_model)
        self.learned_components, self.source, self.balance = components, source, balance
        remedies = {"qk_norm": qk_norm, "temperature": temperature}
        self.encoders = nn.ModuleList(
            self.Cell(d_model, components, heads, **remedies) for _ in range(1 + bidirectional)
        )
        if bidirectional:  # c = LN(W [f_S ; b_1]) and e_j = LN(W [f_j ; b_j]), at the states' scale
            self.bridge = nn.Sequential(nn.Linear(2 * d_model, d_model), nn.LayerNorm(d_model))
        self.decoder = self.Cell(
            d_model, components, heads, gate=gate, reads_source=source == "states", **remedies
        )
        if source == "summary":
            self.context = nn.Linear(d_model, d_model)  # W_c
        self.drop = Dropout(dropout)

    @property
    def static_state(self) -> frozenset[str]:
        return frozenset(SOURCE_STATE[self.source])

    def encode_with_weights(self, src: Tensor, keep_weights: bool) -> tuple[Tensor, Tensor, Weights]:
        """The summary c (B, d), the encoder states e (B, S, d), and, if `keep_weights`, the
        responsibilities (B, S, H, 1+K) of each mixture of the (forward) encoder."""
        mask = source_mask(src)
        x = self.drop(self.embed(self.src_embed, src))
        zero = (x.new_zeros(x.size(0), self.d_model),) * self.decoder.order
        forward = self.encoders[0]
        states, last, pis = recur(forward, zero, x, mask, forward.memory(), keep_weights)
        if len(self.encoders) == 1:
            return last[0], states, pis
        backward = self.encoders[1]
        reversed_states, first, _ = recur(
            backward, zero, reverse_padded(x, mask), mask, backward.memory(), keep_weights=False
        )
        summary = self.bridge(torch.cat([last[0], first[0]], -1))
        return summary, self.bridge(torch.cat([states, reverse_padded(reversed_states, mask)], -1)), pis

    def source_state(self, src: Tensor, summary: Tensor, states: Tensor) -> State:
        """The decoder's view of the source beyond h_0 (SOURCE_STATE)."""
        if self.source == "summary":
            return {"context": self.context(summary)}  # W_c c (B, d)
        if self.source == "states":
            keys, values = heads_first(*self.decoder.mixes[0].keys_values(states))
            return {"source_keys": keys, "source_values": values, "source_mask": source_mask(src)}
        return {}

    def mixes(self, weights: str) -> list[Mix]:
        """The Mix modules whose responsibilities `analyse` returns as `weights`."""
        side, name = weights.split("_", 1)
        cells = self.encoders if side == "encoder" else [self.decoder]
        return [cell.mixes[cell.mixtures.index(name)] for cell in cells]

    @contextmanager
    def knocked_out(self, weights: str, group: str) -> Iterator[None]:
        if group not in GROUPS:
            raise MixnmtError(f"{group!r} is not a candidate group ({', '.join(GROUPS)})")
        mixes = self.mixes(weights)
        for mix in mixes:
            mix.knocked_out = frozenset({group})
        try:
            yield
        finally:
            for mix in mixes:
                del mix.knocked_out  # back to the class's: none

    def decoder_memory(self, state: State) -> tuple[Memory, ...]:
        source = tuple(state[name] for name in SOURCE_STATE["states"]) if self.source == "states" else None
        return self.decoder.memory(source)

    def teacher_forcing(self, src: Tensor, tgt: Tensor, keep_weights: bool = False) -> tuple[Tensor, Weights]:
        summary, states, enc_pis = self.encode_with_weights(src, keep_weights)
        source = self.source_state(src, summary, states)
        x = self.drop(self.embed(self.tgt_embed, tgt))  # (B, T, d)
        if "context" in source:
            x = x + source["context"][:, None]
        h0 = (summary,) * self.decoder.order
        balancing = self.training and bool(self.balance)
        memory = self.decoder_memory(source)
        h, _, dec_pis = recur(self.decoder, h0, x, tgt != PAD, memory, keep_weights or balancing)  # (B, T, d)
        if balancing:
            self.balance_loss = self.balance * sum(
                balance(pi, tgt != PAD, 1 + self.learned_components) for pi in dec_pis.values()
            )
        logits = self.output(self.drop(h))
        if not keep_weights:
            return logits, {}
        sides = {"encoder": enc_pis, "decoder": dec_pis}
        return logits, {f"{side}_{name}": pi for side, pis in sides.items() for name, pi in pis.items()}

    def auxiliary_loss(self) -> Tensor | float:
        """The decoder's load balancing (`balance` times `balance()` of each of its
        mixtures) in the last training forward pass."""
        return self.balance_loss if self.balance else 0.0

    def encode(self, src: Tensor) -> State:
        summary, states, _ = self.encode_with_weights(src, keep_weights=False)
        return {f"h{i}": summary for i in range(self.decoder.order)} | self.source_state(src, summary, states)

    def step(self, state: State, y: Tensor) -> tuple[Tensor, State]:
        previous = tuple(state[f"h{i}"] for i in range(self.decoder.order))
        x = self.drop(self.embed(self.tgt_embed, y)) + state.get("context", 0)
        new, _ = self.decoder(previous, x, self.decoder_memory(state))
        kept = {name: state[name] for name in SOURCE_STATE[self.source]}
        return self.output(self.drop(new[0])), {f"h{i}": h for i, h in enumerate(new)} | kept
