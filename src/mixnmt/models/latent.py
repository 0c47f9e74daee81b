"""Attention as a latent alignment (section 7 of models.md): the source positions are the
mixture's components and the next-token distribution is their mixture, marginalised
exactly (Deng et al., 2018), with the posterior fed to the next step as Shankar and
Sarawagi's posterior attention (2019).

    s_t     = GRU([y_{t-1} ; c_{t-1}], s_{t-1})          c: what `feed` says
    a_tj    = softmax_j(v^T tanh(W s_t + U h_j))           the prior, padding masked
    p(v|j)  = softmax_v(E_v . tanh(A s_t + B h_j + C y_{t-1}))
    p(y_t)  = sum_j a_tj p(y_t | j)
    q_tj    = a_tj p(y_t | j) / p(y_t)                     the posterior, once y_t is known

`feed: posterior` gives the next step c_t = sum_j q_tj h_j, `prior` sum_j a_tj h_j, and
`none` nothing. The candidates j are the source positions (`candidates: source`), K
learned vectors m_k in their place (`learned`: a mixture of softmaxes, Yang et al., 2018,
the source reaching the decoder through s_0 only, from both directions), or both. Each step costs one (N, V)
block of logits over the N candidates where `attention` has one V row; `top_k` > 0
mixes only the k candidates of highest prior (renormalised), k V rows.
`step` returns log p(y_t) as logits (a normalised log-distribution is its own
log_softmax), so the training loss is the exact negative log marginal likelihood and
label smoothing acts on the mixture.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Literal

import torch
from torch import Tensor, nn

from mixnmt.compiled import try_compile
from mixnmt.models.base import (
    Dropout,
    NonNegativeInt,
    PositiveInt,
    Probability,
    Seq2Seq,
    State,
    Weights,
    source_mask,
)
from mixnmt.models.recurrent import BiGRU, GRUCell, additive_keys, additive_scores, weighted_mean
from mixnmt.symbols import EOS, PAD

Feed = Literal["posterior", "prior", "none"]
Candidates = Literal["source", "learned", "both"]
CHUNK_ELEMENTS = 1 << 24
"""Logits held at once while mixing: positions are taken in chunks of at most this many
(batch x positions x vocabulary) elements, their log-sum-exp accumulated."""
COMPILED_ELEMENTS = 1 << 18
"""Chunks of at least this many logits mix in the CPU's compiled code (2x eager's speed
there, 3.5x at 3M on an AVX2 EPYC, forward); smaller ones eagerly (within 25% of it),
which spares a small job, such as the tiny experiment's, 5-15 s of compiling."""


def mixture_logprobs(log_prior: Tensor, features: Tensor, embeddings: Tensor) -> tuple[Tensor, Tensor]:
    """log p(v) = logsumexp_j(log a_j + log p(v|j)) (B, V) for the log prior (B, n) over n
    candidates with output features (B, n, d) and the output embeddings (V, d), taking the
    candidates in chunks (large ones compiled on the CPU); and each candidate's
    log-normaliser (B, n)."""
    b, n, _ = features.shape
    chunk = max(1, CHUNK_ELEMENTS // (b * embeddings.size(0)))
    large = b * min(chunk, n) * embeddings.size(0) >= COMPILED_ELEMENTS
    mix = (_compiled_chunk() if large and features.device.type == "cpu" else None) or _mixed_chunk
    mixed, normalisers = None, []
    for start in range(0, n, chunk):
        part, norm = mix(log_prior[:, start : start + chunk], features[:, start : start + chunk], embeddings)
        mixed = part if mixed is None else torch.logaddexp(mixed, part)
        normalisers.append(norm)
    return mixed, torch.cat(normalisers, 1)


def untraced_mixing() -> Callable:
    """`mixture_logprobs` as a compiled step calls it (train.compile): left out of the
    step's graph, since its chunks' count and size follow the batch's shape, and traced
    they recompiled the step for each batch size until Dynamo's limit; its chunks compile
    on their own. Made when a step compiles: `torch.compiler.disable` imports Dynamo."""
    return torch.compiler.disable(mixture_logprobs)


def _mixed_chunk(log_prior: Tensor, features: Tensor, embeddings: Tensor) -> tuple[Tensor, Tensor]:
    """logsumexp_j(log a_j + log p(v|j)) (B, V) over a chunk of candidates (B, c), and
    their log-normalisers (B, c)."""
    logits = (features @ embeddings.t()).float()  # (B, c, V)
    norm = logits.logsumexp(-1)  # (B, c)
    return (log_prior[..., None] + logits - norm[..., None]).logsumexp(1), norm


@functools.cache
def _compiled_chunk() -> Callable | None:
    """`_mixed_chunk` compiled for the CPU, or None where it does not compile."""
    return try_compile(_mixed_chunk, torch.zeros(2, 3), torch.zeros(2, 3, 4), torch.zeros(5, 4))


class Latent(Seq2Seq):
    analysis_axes = {"prior": ("target", "source"), "posterior": ("target", "source")}
    alignment = "posterior"  # q_tj: the position that best predicts the word written
    compiled_steps = ("advance",)
    mixing = staticmethod(mixture_logprobs)  # `compile_steps` leaves it out of the graph
    # with learned candidates the weights' last axis is "candidate": the source positions
    # (`both`), then the K learned vectors

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        shared_vocab: bool,
        *,
        d_model: PositiveInt = 256,
        hidden: PositiveInt = 512,
        dropout: Probability = 0.2,
        feed: Feed = "posterior",
        top_k: NonNegativeInt = 0,
        candidates: Candidates = "source",
        components: PositiveInt = 64,
    ):
        super().__init__(src_vocab, tgt_vocab, shared_vocab, d_model)
        self.feed, self.top_k, self.candidates = feed, top_k, candidates
        if candidates != "source":  # K learned vectors m_k where the source has h_j (K: `components`)
            # drawn by nn.init, not scaled after: the config check builds models on the meta device
            self.memory = nn.Parameter(
                nn.init.normal_(torch.empty(components, 2 * hidden), std=(2 * hidden) ** -0.5)
            )
            self.analysis_axes = {name: ("target", "candidate") for name in Latent.analysis_axes}
            self.alignment = None  # the candidates are not (only) source positions
        self.encoder = BiGRU(d_model, hidden)
        # s_0 = tanh(W_s h_bwd_1); with learned candidates only, tanh(W_s [h_fwd_S ; h_bwd_1])
        self.init = nn.Linear(hidden * (2 if candidates == "learned" else 1), hidden)
        self.keys = nn.Linear(2 * hidden, hidden, bias=False)  # U h_j
        self.query = nn.Linear(hidden, hidden)  # W s_t
        self.score = nn.Linear(hidden, 1, bias=False)  # v
        self.cell = GRUCell(d_model + (0 if feed == "none" else 2 * hidden), hidden)
        self.from_state = nn.Linear(hidden, d_model)  # A s_t
        self.from_source = nn.Linear(2 * hidden, d_model, bias=False)  # B h_j
        self.from_word = nn.Linear(d_model, d_model, bias=False)  # C y_{t-1}
        self.drop = Dropout(dropout)

    @property
    def static_state(self) -> frozenset[str]:
        return frozenset({"h", "keys", "values", "mask"})

    @classmethod
    def held_bytes(cls, hyperparameters: dict, tokens: int, width: int, vocab: int) -> int:
        """What the backward pass keeps of each step's mixing: the fp32 logits (B, n, V)
        over its n candidates and their log-normalised copy, and the mixture's (B, V)
        pair: 8·B·T·(n + 1)·V bytes, B·T <= `tokens` (tests/test_latent.py measures it)."""
        h = hyperparameters
        n = {"source": width, "learned": h["components"], "both": width + h["components"]}[h["candidates"]]
        return 8 * tokens * ((min(h["top_k"], n) if h["top_k"] else n) + 1) * vocab

    @classmethod
    def unused(cls, hyperparameters: dict) -> frozenset[str]:
        """`components` counts learned candidates: none with the source's alone."""
        return frozenset({"components"} if hyperparameters["candidates"] == "source" else ())

    def mixed(self, h: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """The candidates' states (B, N, 2H) and mask (B, N): the source's (B, S, 2H) with
        its padding mask, the learned vectors, or both."""
        if self.candidates == "source":
            return h, mask
        memory = self.memory.to(h.dtype).expand(h.size(0), -1, -1)
        learned = mask.new_ones(memory.shape[:2])
        if self.candidates == "learned":
            return memory, learned
        return torch.cat([h, memory], 1), torch.cat([mask, learned], 1)

    def encode(self, src: Tensor) -> State:
        mask = source_mask(src)
        h, forward_last, backward_first = self.encoder(self.drop(self.embed(self.src_embed, src)), mask)
        summary = (
            torch.cat([forward_last, backward_first], -1) if self.candidates == "learned" else backward_first
        )
        h, mask = self.mixed(h, mask)  # (B, N, 2H), (B, N): the candidates
        b, s = mask.shape
        state = {"h": h, "keys": additive_keys(self.keys, h), "values": self.from_source(h), "mask": mask}
        state["s"] = torch.tanh(self.init(summary))
        if self.feed == "posterior":  # the previous step's prior and output, to read y_{t-1}
            n = min(self.top_k, s) if self.top_k else s
            state["log_prior"] = h.new_zeros(b, n)  # c_0 = 0: no weight on any position
            state["positions"] = torch.zeros(b, n, dtype=torch.long, device=src.device)
            state["features"] = h.new_zeros(b, n, self.d_model)
            state["normalisers"] = h.new_zeros(b, n)
            state["first"] = torch.ones(b, dtype=torch.bool, device=src.device)
        elif self.feed == "prior":
            state["c"] = h.new_zeros(b, h.size(-1))
        return state

    def posterior(self, mixing: State, y: Tensor) -> Tensor:
        """q_j = a_j p(y|j) / p(y) (B, n) over a step's mixed candidates, for its output y (B,)."""
        log_likelihood = torch.einsum("bnd,bd->bn", mixing["features"], self.tgt_embed.weight[y]).float()
        return (mixing["log_prior"] + log_likelihood - mixing["normalisers"]).softmax(-1)

    def posterior_context(self, state: State, y: Tensor) -> Tensor:
        """c_{t-1} = sum_j q_{t-1,j} h_j (B, 2H) once y_{t-1} (B,) is known; 0 at t = 1."""
        q = self.posterior(state, y).masked_fill(state["first"][:, None], 0.0)  # (B, n)
        h = state["h"].gather(1, state["positions"][..., None].expand(-1, -1, state["h"].size(-1)))
        return weighted_mean(q, h)

    def prior(self, state: State, s: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The log prior (B, n) over the candidates that mix, their source positions (B, n),
        and the prior over every source position (B, S), for decoder state s."""
        scores = additive_scores(self.query, self.score, s, state["keys"])  # (B, S), fp32
        scores = scores.masked_fill(~state["mask"], -math.inf)
        if not self.top_k:
            every = torch.arange(scores.size(1), device=s.device).expand(scores.size(0), -1)
            return scores.log_softmax(-1), every, scores.softmax(-1)
        positions = scores.topk(min(self.top_k, scores.size(1)), -1)[1]  # (B, k)
        return scores.gather(1, positions).log_softmax(-1), positions, scores.softmax(-1)  # renormalised

    def compile_steps(self) -> None:
        self.mixing = untraced_mixing()
        super().compile_steps()

    def advance(self, state: State, y: Tensor) -> tuple[Tensor, State, State]:
        """One decoder step after y_{t-1} (B,): log p(y_t) (B, V), the new state, and how
        it mixed: the full prior over source positions (B, S), and of the n candidates
        that mix their log prior, positions, output features and log-normalisers."""
        x = self.drop(self.embed(self.tgt_embed, y))  # (B, d)
        if self.feed == "posterior":
            inputs = torch.cat([x, self.posterior_context(state, y)], -1)
        else:
            inputs = x if self.feed == "none" else torch.cat([x, state["c"]], -1)
        s = self.cell(inputs, state["s"])  # (B, H)
        log_prior, positions, a = self.prior(state, s)
        values = state["values"].gather(1, positions[..., None].expand(-1, -1, self.d_model))  # B h_j
        features = self.drop(torch.tanh(self.from_state(s)[:, None] + values + self.from_word(x)[:, None]))
        logp, normalisers = self.mixing(log_prior, features, self.tgt_embed.weight)
        mixing = {
            "log_prior": log_prior,
            "positions": positions,
            "features": features,
            "normalisers": normalisers,
        }
        new = {**state, "s": s}
        if self.feed == "posterior":
            new |= mixing | {"first": torch.zeros_like(state["first"])}
        elif self.feed == "prior":
            new["c"] = weighted_mean(a, state["h"])
        return logp, new, mixing | {"prior": a}

    def teacher_forcing(self, src: Tensor, tgt: Tensor, keep_weights: bool = False) -> tuple[Tensor, Weights]:
        state = self.encode(src)
        steps, priors, posteriors = [], [], []
        # what each step outputs: the next prefix token, EOS after the last (as collated)
        following = torch.cat([tgt[:, 1:], tgt.new_full((tgt.size(0), 1), PAD)], 1)
        following = following.masked_fill((following == PAD) & (tgt != PAD), EOS)
        for t in range(tgt.size(1)):
            logp, state, mixing = self.advance(state, tgt[:, t])
            steps.append(logp)
            if keep_weights:
                priors.append(mixing["prior"])
                q = self.posterior(mixing, following[:, t])
                posteriors.append(torch.zeros_like(mixing["prior"]).scatter(1, mixing["positions"], q))
        logits = torch.stack(steps, 1)  # (B, T, V): log p(y_t)
        if not keep_weights:
            return logits, {}
        real = (tgt != PAD)[..., None]
        return logits, {
            "prior": torch.stack(priors, 1) * real,
            "posterior": torch.stack(posteriors, 1) * real,
        }

    def step(self, state: State, y: Tensor) -> tuple[Tensor, State]:
        logp, state, _ = self.advance(state, y)
        return logp, state
