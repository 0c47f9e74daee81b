"""Training and decoding speed of every model, against naive PyTorch references.

    python benchmarks/speed.py --data results/multi30k-cpu     # real batches, trained checkpoints
    python benchmarks/speed.py                                  # synthetic Multi30k-like batches

For each model of config.yaml at its size: parameters, training FLOPs per target token
(counted by torch's FlopCounterMode over forward and backward), target tokens/s of the
real training step (`Trainer.train_step`: AdamW, clipping, label smoothing), the share of
the machine's fp32 matmul peak that reaches (MFU; the peak is a large `torch.mm`
measured in the same run), padding of the token-count batches, decoding sentences/s
(greedy and beam) of the first test set when `--data` has checkpoints, and the peak RSS
of a process that only trains that model. The references, written out below in plain
PyTorch, are measured the same way, each at the size of the models it mirrors (those
whose hyperparameters include its size arguments, and that attend to the source exactly
when it does): `nn.Transformer`, and the textbook GRU encoder-decoders that step their
decoder in a Python loop, reading the source summary or attending to its states (additive
scores). Models whose decoder state grows with the prefix (a key/value cache) also decode
without it. Each measurement runs in its own process, so peak RSS is its own.
Numbers, not tests: CI does not run this.
"""

from __future__ import annotations

import argparse
import math
import random
import resource
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

import torch
import torch.nn.functional as F
import yaml
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode

from mixnmt import checkpoint
from mixnmt.batching import Batch, ParallelData, padding_fraction, read_ids
from mixnmt.decode import DecodeConfig, translate_ids
from mixnmt.models import REGISTRY, Seq2Seq, State, build, resolve
from mixnmt.tokenize import PAD, Tokenizer
from mixnmt.train import TrainConfig, Trainer

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())
VOCAB = 8000


# --- the naive references ------------------------------------------------------------


class TorchTransformer(nn.Module):
    """nn.Transformer with embeddings and an output layer: what a plain loop would use."""

    def __init__(self, d: int = 256, heads: int = 4, layers: int = 3, ffn: int = 1024, dropout: float = 0.1):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d, padding_idx=PAD)
        self.core = nn.Transformer(d, heads, layers, layers, ffn, dropout, batch_first=True)
        self.out = nn.Linear(d, VOCAB)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1))
        h = self.core(
            self.embed(src),
            self.embed(tgt),
            tgt_mask=causal,
            src_key_padding_mask=src == PAD,
            tgt_key_padding_mask=tgt == PAD,
            memory_key_padding_mask=src == PAD,
        )
        return self.out(h)


class GruLoop(nn.Module):
    """The textbook GRU encoder-decoder: a bidirectional nn.GRU encoder, and a decoder
    nn.GRU fed one token at a time in a Python loop, optionally attending to the source
    states with additive scores (Bahdanau et al., 2015)."""

    def __init__(self, d: int = 256, hidden: int = 512, attend: bool = False):
        super().__init__()
        self.attend = attend
        self.embed = nn.Embedding(VOCAB, d, padding_idx=PAD)
        self.encoder = nn.GRU(d, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, hidden)
        self.decoder = nn.GRU(d + (2 * hidden if attend else 0), hidden, batch_first=True)
        self.w, self.u, self.v = (
            nn.Linear(hidden, hidden),
            nn.Linear(2 * hidden, hidden),
            nn.Linear(hidden, 1),
        )
        self.out = nn.Linear(hidden, VOCAB)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        h, _ = self.encoder(self.embed(src))  # (B, S, 2H)
        s = torch.tanh(self.bridge(h.mean(1)))[None]  # (1, B, H)
        y, outputs = self.embed(tgt), []
        for t in range(tgt.size(1)):
            x = y[:, t : t + 1]
            if self.attend:
                e = self.v(torch.tanh(self.w(s[0])[:, None] + self.u(h))).squeeze(-1)
                a = e.masked_fill(src == PAD, -math.inf).softmax(-1)
                x = torch.cat([x, torch.bmm(a[:, None], h)], dim=-1)
            o, s = self.decoder(x, s)
            outputs.append(o)
        return self.out(torch.cat(outputs, 1))


class NoCache(Seq2Seq):
    """A model decoded without its incremental state: every step re-reads the source and
    the whole prefix through `forward`."""

    def __init__(self, model: Seq2Seq):
        nn.Module.__init__(self)
        self.model = model

    def teacher_forcing(self, src: Tensor, tgt: Tensor, keep_weights: bool = False):
        return self.model.teacher_forcing(src, tgt, keep_weights)

    def encode(self, src: Tensor) -> State:
        return {"src": src, "prefix": src[:, :0]}

    def step(self, state: State, y: Tensor) -> tuple[Tensor, State]:
        prefix = torch.cat([state["prefix"], y[:, None]], 1)  # BOS y_1 ... y_t
        return self.model(state["src"], prefix)[:, -1], {"src": state["src"], "prefix": prefix}


@dataclass(frozen=True)
class Reference:
    build: Callable[[dict], nn.Module]  # from the hyperparameters of the model it mirrors
    size: frozenset[str]  # the hyperparameters it needs
    attends: bool  # whether it attends to source positions


REFERENCES = {
    "nn.Transformer": Reference(
        lambda h: TorchTransformer(h["d_model"], h["heads"], h["layers"], h["ffn"], h["dropout"]),
        frozenset({"d_model", "heads", "layers", "ffn", "dropout"}),
        attends=True,
    ),
    "GRU loop": Reference(
        lambda h: GruLoop(h["d_model"], h["hidden"]), frozenset({"d_model", "hidden"}), False
    ),
    "GRU attending loop": Reference(
        lambda h: GruLoop(h["d_model"], h["hidden"], attend=True), frozenset({"d_model", "hidden"}), True
    ),
}


def reference_for(name: str, entry: dict | None) -> str | None:
    """The plain reference that mirrors model `name`, if one does."""
    arch, hparams = resolve(name, entry)
    attends = any(axes[-1] == "source" for axes in REGISTRY[arch].analysis_axes.values())
    return next(
        (r for r, ref in REFERENCES.items() if ref.size <= hparams.keys() and ref.attends == attends), None
    )


def has_cache(model: Seq2Seq) -> bool:
    """Whether the decoder state grows with the prefix (a key/value cache)."""
    src = torch.tensor([[4, 5, 6]])
    state = model.encode(src)
    _, new = model.step(state, torch.tensor([4]))
    return any(new[k].shape != state[k].shape for k in state)


# --- measurements ----------------------------------------------------------------------


def synthetic(n: int = 29000, seed: int = 0) -> ParallelData:
    """Sentence pairs with Multi30k's subword lengths (about 16 source, 18 target tokens)."""
    rng = random.Random(seed)
    src, tgt = [], []
    for _ in range(n):
        s = min(max(int(rng.gauss(16, 5)), 3), 60)
        t = min(max(int(s * rng.gauss(1.12, 0.15)), 3), 70)
        src.append([rng.randrange(4, VOCAB) for _ in range(s)])
        tgt.append([rng.randrange(4, VOCAB) for _ in range(t)])
    return ParallelData(src, tgt, "synthetic")


def matmul_peak(n: int = 2048, repeats: int = 10) -> float:
    """fp32 GFLOP/s of a large square torch.mm: the machine's practical peak."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * n**3 * repeats / (time.perf_counter() - start) / 1e9


def flops_per_token(step, batches: list[Batch]) -> float:
    """Training FLOPs (forward and backward) per target token, over `batches`."""
    counter = FlopCounterMode(display=False)
    with counter:
        for batch in batches:
            step(batch)
    return counter.get_total_flops() / sum(b.target_tokens for b in batches)


def plain_step(model: nn.Module, optimizer: torch.optim.Optimizer):
    """The textbook training step: forward, label-smoothed loss, backward, clip, update."""

    def step(batch: Batch) -> None:
        logits = model(batch.src, batch.tgt_in)
        loss = F.cross_entropy(
            logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD, label_smoothing=0.1
        )
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def throughput(step, batches: list[Batch], warmup: int = 2) -> float:
    """Target tokens per second of `step` over `batches` (after a few warm-up steps)."""
    for batch in batches[:warmup]:
        step(batch)
    start = time.perf_counter()
    for batch in batches[warmup:]:
        step(batch)
    return sum(b.target_tokens for b in batches[warmup:]) / (time.perf_counter() - start)


def decode_speed(model: Seq2Seq, sources: list[list[int]], beam: int) -> float:
    start = time.perf_counter()
    translate_ids(model, sources, DecodeConfig(**{**CONFIG["decode"], "beam": beam}), torch.device("cpu"))
    return len(sources) / (time.perf_counter() - start)


def measure(job: dict) -> dict:
    """One row of the table, measured in a fresh process."""
    torch.set_num_threads(job["threads"])
    torch.manual_seed(0)
    data = ParallelData.load(*job["train"], (VOCAB, VOCAB)) if job["train"] else synthetic()
    batch_lists = data.batches(4096, torch.Generator().manual_seed(1))
    batches = [data.collate(b) for b in batch_lists[: job["steps"]]]
    row = {"model": job["name"]}
    arch, hparams = resolve(job["model"], job["entry"])
    if job["reference"]:
        model = REFERENCES[job["reference"]].build(hparams)
        step = plain_step(model, torch.optim.AdamW(model.parameters(), lr=1e-4))
    else:
        model = build(arch, hparams, VOCAB, VOCAB, True)
        settings = {**CONFIG["train"], "seed": 1, "max_steps": None, "lr": 1e-4, "deterministic": False}
        step = Trainer(model, TrainConfig(**settings), torch.device("cpu")).train_step
    row["params"] = sum(p.numel() for p in model.parameters())
    row["flops_per_token"] = flops_per_token(step, batches[:2])
    row["tokens_per_s"] = throughput(step, batches)
    row["padding"] = padding_fraction(data, batch_lists)
    row["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if job["checkpoint"] and not job["reference"]:
        trained = checkpoint.load_model(job["checkpoint"], *[Tokenizer(job["spm"])] * 2)
        sources = read_ids(job["test"], VOCAB)[: job["sentences"]]
        row["greedy"] = decode_speed(trained, sources, 1)
        row["beam"] = decode_speed(trained, sources, 5)
        if has_cache(trained):
            row["beam_no_cache"] = decode_speed(NoCache(trained).eval(), sources[: job["sentences"] // 10], 5)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, help="an experiment's results folder (ids/, spm/, checkpoints/)")
    parser.add_argument("--models", nargs="+", default=list(CONFIG["models"]), help="models of config.yaml")
    parser.add_argument("--steps", type=int, default=12, help="training steps timed per model")
    parser.add_argument("--sentences", type=int, default=300, help="test sentences decoded per model")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    a = parser.parse_args()
    ids = a.data / "ids" if a.data else None
    test = sorted(ids.glob("test*.en"))[0] if ids else None

    torch.set_num_threads(a.threads)
    peak = matmul_peak()
    print(f"fp32 torch.mm peak: {peak:.1f} GFLOP/s on {a.threads} threads")
    jobs, versus = [], {}
    for name in a.models:
        ckpt = a.data / "checkpoints" / f"{name}.pt" if a.data else None
        reference = reference_for(name, CONFIG["models"][name])
        for ref in [None, reference] if reference else [None]:
            if ref:
                versus[name] = f"{ref} @{name}"
            jobs.append(
                {
                    "name": f"{ref} @{name}" if ref else name,
                    "model": name,
                    "entry": CONFIG["models"][name],
                    "reference": ref,
                    "threads": a.threads,
                    "steps": a.steps,
                    "sentences": a.sentences,
                    "train": (ids / "train.en", ids / "train.de") if ids else None,
                    "checkpoint": ckpt if ckpt and ckpt.exists() else None,
                    "spm": a.data / "spm" / "joint.model" if a.data else None,
                    "test": test,
                }
            )
    spawn = get_context("spawn")
    rows = []
    for job in jobs:  # one at a time: concurrent measurements would share the cores
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            rows.append(pool.submit(measure, job).result())
    speeds = {r["model"]: r["tokens_per_s"] for r in rows}
    header = f"{'model':<28}{'params':>8}{'MFLOP/tok':>10}{'tok/s':>8}{'MFU':>6}{'vs ref':>8}{'pad':>6}"
    print(header + f"{'greedy/s':>9}{'beam/s':>8}{'RSS MB':>8}")
    for r in rows:
        ref = versus.get(r["model"])
        ratio = f"{r['tokens_per_s'] / speeds[ref]:.2f}x" if ref in speeds else "-"
        decode = "".join(
            f"{r[k]:>{w}.1f}" if k in r else f"{'-':>{w}}" for k, w in (("greedy", 9), ("beam", 8))
        )
        print(
            f"{r['model']:<28}{r['params'] / 1e6:>7.2f}M{r['flops_per_token'] / 1e6:>10.1f}"
            f"{r['tokens_per_s']:>8.0f}{r['flops_per_token'] * r['tokens_per_s'] / 1e9 / peak:>6.0%}"
            f"{ratio:>8}{r['padding']:>6.1%}{decode}{r['rss_mb']:>8.0f}"
        )
    for r in rows:
        if "beam_no_cache" in r:
            print(
                f"{r['model']} beam search without its key/value cache: {r['beam_no_cache']:.1f} sentences/s "
                f"({r['beam'] / r['beam_no_cache']:.1f}x slower than with it)"
            )


if __name__ == "__main__":
    main()
