"""The encoder-decoder Transformer (Vaswani et al., 2017), section 4 of models.md.

Seen as a mixture: every query mixes value vectors with responsibilities
softmax(q k^T / sqrt(d_k)); the components are the source and prefix positions.
Layer norm is applied before each sublayer (pre-norm), which trains robustly at the
short budgets of this study; both stacks end with a final layer norm. Dropout acts on
embeddings, sublayer outputs and the feed-forward hidden layer, not on attention
weights (fairseq's default too): dropping weights would cost a random mask per
head and position, and rules out the fused attention kernels.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mixnmt.models.base import (
    Dropout,
    PositiveInt,
    Probability,
    Seq2Seq,
    State,
    Weights,
    sinusoids,
    source_mask,
)
from mixnmt.symbols import PAD


def split_heads(x: Tensor, heads: int) -> Tensor:
    """(B, T, d) -> (B, H, T, d/H)."""
    b, t, d = x.shape
    return x.view(b, t, heads, d // heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """(B, H, T, d/H) -> (B, T, d)."""
    b, h, t, dk = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dk)


def attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    causal: bool = False,
    keep_weights: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """softmax(q k^T / sqrt(d_k)) v per head (B, H, T, dk), and the weights (B, H, T, S)
    if `keep_weights`; `mask` (broadcast to (B, H, T, S)) keeps the positions it is True at.

    The fused kernel, except where weights are kept and on the CPU under autocast or for
    one query (a decoding step): there these products, in bf16 under autocast with the
    softmax in fp32, take a half to a fifth of the fused kernel's time, forward and
    backward (`benchmarks/speed.py --profile` shows it)."""
    written_out = q.device.type == "cpu" and (torch.is_autocast_enabled("cpu") or q.size(-2) == 1)
    if not keep_weights and not written_out:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal), None
    scores = (q @ k.transpose(-2, -1)).float() / math.sqrt(q.size(-1))  # (B, H, T, S)
    if causal:
        mask = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device).tril()
    weights = scores if mask is None else scores.masked_fill(~mask, -math.inf)
    weights = weights.softmax(-1)
    return weights.to(v.dtype) @ v, weights if keep_weights else None


class SelfAttention(nn.Module):
    """Multi-head self-attention; with a (keys, values) cache it extends the cache."""

    def __init__(self, d: int, heads: int, causal: bool):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(
        self, x: Tensor, mask: Tensor | None = None, cache: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        q, k, v = (split_heads(t, self.heads) for t in self.qkv(x).chunk(3, dim=-1))  # (B,H,T,dk)
        if cache is not None:  # one new position attends to every earlier one
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        y, _ = attend(q, k, v, mask, causal=self.causal and cache is None)
        return self.out(merge_heads(y)), (k, v)


class CrossAttention(nn.Module):
    """Multi-head attention of decoder queries over the encoder's memory."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d)
        self.kv = nn.Linear(d, 2 * d)
        self.out = nn.Linear(d, d)

    def keys_values(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Keys and values (B, H, S, dk) of the memory, computed once per sentence."""
        k, v = self.kv(memory).chunk(2, dim=-1)
        return split_heads(k, self.heads), split_heads(v, self.heads)

    def forward(
        self, x: Tensor, k: Tensor, v: Tensor, mask: Tensor, keep_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        q = split_heads(self.q(x), self.heads)  # (B,H,T,dk)
        y, weights = attend(q, k, v, mask, keep_weights=keep_weights)
        return self.out(merge_heads(y)), weights


class FeedForward(nn.Sequential):
    def __init__(self, d: int, ffn: int, dropout: float):
        super().__init__(nn.Linear(d, ffn), nn.ReLU(), Dropout(dropout), nn.Linear(ffn, d))


class EncoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, dropout: float):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = SelfAttention(d, heads, causal=False)
        self.ffn = FeedForward(d, ffn, dropout)
        self.drop = Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        x = x + self.drop(self.attn(self.norm1(x), mask)[0])
        return x + self.drop(self.ffn(self.norm2(x)))


class DecoderLayer(nn.Module):
    def __init__(self, d: int, heads: int, ffn: int, dropout: float):
        super().__init__()
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.self_attn = SelfAttention(d, heads, causal=True)
        self.cross_attn = CrossAttention(d, heads)
        self.ffn = FeedForward(d, ffn, dropout)
        self.drop = Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        k: Tensor,
        v: Tensor,
        mask: Tensor,
        cache: tuple[Tensor, Tensor] | None = None,
        keep_weights: bool = False,
    ) -> tuple[Tensor, tuple[Tensor, Tensor], Tensor | None]:
        a, cache = self.self_attn(self.norm1(x), cache=cache)
        x = x + self.drop(a)
        a, weights = self.cross_attn(self.norm2(x), k, v, mask, keep_weights)
        x = x + self.drop(a)
        return x + self.drop(self.ffn(self.norm3(x))), cache, weights


class Transformer(Seq2Seq):
    analysis_axes = {"cross_attention": ("layer", "head", "target", "source")}
    alignment = "cross_attention"  # averaged over layers and heads

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        shared_vocab: bool,
        *,
        d_model: PositiveInt = 256,
        heads: PositiveInt = 4,
        layers: PositiveInt = 3,
        ffn: PositiveInt = 1024,
        dropout: Probability = 0.1,
    ):
        if d_model % heads:
            raise ValueError(f"d_model={d_model} is not divisible by heads={heads}")
        super().__init__(src_vocab, tgt_vocab, shared_vocab, d_model)
        self.encoder = nn.ModuleList(EncoderLayer(d_model, heads, ffn, dropout) for _ in range(layers))
        self.decoder = nn.ModuleList(DecoderLayer(d_model, heads, ffn, dropout) for _ in range(layers))
        self.enc_norm, self.dec_norm = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.drop = Dropout(dropout)

    @property
    def static_state(self) -> frozenset[str]:
        return frozenset({"mask", *(f"cross_{kv}{i}" for kv in "kv" for i in range(len(self.decoder)))})

    def embed_at(self, embedding: nn.Embedding, ids: Tensor, start: int = 0) -> Tensor:
        """Scaled embeddings plus sinusoidal positions start, start+1, ...: (B, T, d)."""
        positions = torch.arange(start, start + ids.size(1), device=ids.device)
        return self.drop(self.embed(embedding, ids) + sinusoids(positions, self.d_model))

    def encode_memory(self, src: Tensor) -> tuple[Tensor, Tensor]:
        """Encoder output (B, S, d) and the attention mask (B, 1, 1, S) of real tokens."""
        mask = source_mask(src)[:, None, None, :]
        x = self.embed_at(self.src_embed, src)
        for layer in self.encoder:
            x = layer(x, mask)
        return self.enc_norm(x), mask

    def teacher_forcing(self, src: Tensor, tgt: Tensor, keep_weights: bool = False) -> tuple[Tensor, Weights]:
        memory, mask = self.encode_memory(src)
        x = self.embed_at(self.tgt_embed, tgt)  # (B, T, d)
        cross = []
        for layer in self.decoder:
            x, _, weights = layer(x, *layer.cross_attn.keys_values(memory), mask, keep_weights=keep_weights)
            cross.append(weights)
        logits = self.output(self.dec_norm(x))  # (B, T, V)
        if not keep_weights:
            return logits, {}
        real = (tgt != PAD)[:, None, None, :, None]
        return logits, {"cross_attention": torch.stack(cross, 1) * real}  # (B, layers, H, T, S)

    def encode(self, src: Tensor) -> State:
        memory, mask = self.encode_memory(src)
        b, h = src.size(0), self.decoder[0].cross_attn.heads
        empty = memory.new_zeros(b, h, 0, self.d_model // h)
        state: State = {"mask": mask}
        for i, layer in enumerate(self.decoder):
            state[f"cross_k{i}"], state[f"cross_v{i}"] = layer.cross_attn.keys_values(memory)
            state[f"self_k{i}"], state[f"self_v{i}"] = empty, empty
        return state

    def step(self, state: State, y: Tensor) -> tuple[Tensor, State]:
        t = state["self_k0"].size(2)  # positions decoded so far
        x = self.embed_at(self.tgt_embed, y[:, None], start=t)  # (B, 1, d)
        new: State = dict(state)
        for i, layer in enumerate(self.decoder):
            x, (new[f"self_k{i}"], new[f"self_v{i}"]), _ = layer(
                x,
                state[f"cross_k{i}"],
                state[f"cross_v{i}"],
                state["mask"],
                cache=(state[f"self_k{i}"], state[f"self_v{i}"]),
            )
        return self.output(self.dec_norm(x[:, 0])), new
