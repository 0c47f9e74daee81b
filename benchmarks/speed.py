"""Training and decoding speed of every model, against naive PyTorch references.

    python benchmarks/speed.py --data results/multi30k-cpu     # real batches, trained checkpoints
    python benchmarks/speed.py                                  # synthetic Multi30k-like batches
    python benchmarks/speed.py --device cuda --processes 1 4 8  # on a GPU, and GPU sharing

For each model of config.yaml at its size: parameters, training FLOPs per target token
(counted by torch's FlopCounterMode over forward and backward), target tokens/s of the
real training step (`Trainer.train_step`: AdamW, clipping, label smoothing; on CUDA with
autocast, timed between synchronisations after warm-up steps), the share of the
device's matmul peak that reaches (MFU; the peak is a large `torch.mm` in the training
dtype, fp32 on the CPU and bf16 on a GPU, measured in the same run), padding of the
token-count batches, decoding sentences/s
(greedy and beam) of the first test set when `--data` has checkpoints, and the peak RSS
of a process that only trains that model. The references, written out below in plain
PyTorch, are measured the same way, each at the size of the models it mirrors (those
whose hyperparameters include its size arguments, and that attend to the source exactly
when it does): `nn.Transformer`, and the textbook GRU encoder-decoders that step their
decoder in a Python loop, reading the source summary or attending to its states (additive
scores). Models whose decoder state grows with the prefix (a key/value cache) also decode
without it. Each measurement runs in its own process, so peak RSS is its own.
`--processes` then measures the aggregate training tokens/s of 1, N, 2N ... processes
training the same model side by side (one thread each), as a run with `gpu_jobs=N`
shares a GPU; `--json` keeps every number for scripts (the GPU session picks N from it).
Numbers, not tests: CI runs it only in the GPU session's dry run.
"""

from __future__ import annotations

import argparse
import math
import random
import resource
import sys
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

from mixnmt import MixnmtError, checkpoint
from mixnmt.batching import Batch, ParallelData, padding_fraction, read_ids
from mixnmt.config import TrainConfig
from mixnmt.decode import DecodeConfig, translate_ids
from mixnmt.device import autocast_dtype
from mixnmt.files import write_json
from mixnmt.models import REGISTRY, Seq2Seq, State, build, resolve
from mixnmt.paths import Layout
from mixnmt.symbols import PAD
from mixnmt.tokenize import Tokenizer
from mixnmt.trainer import Trainer

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


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (timings on a GPU are otherwise launch times)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(device: torch.device, repeats: int = 10) -> float:
    """GFLOP/s of a large square torch.mm in the training dtype (bf16 under autocast on
    a GPU, fp32 on the CPU): the device's practical peak."""
    dtype = autocast_dtype(device) or torch.float32
    n = 8192 if device.type == "cuda" else 2048
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    a @ b
    sync(device)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    sync(device)
    return 2 * n**3 * repeats / (time.perf_counter() - start) / 1e9


def flops_per_token(step, batches: list[Batch]) -> float:
    """Training FLOPs (forward and backward) per target token, over `batches`."""
    counter = FlopCounterMode(display=False)
    with counter:
        for batch in batches:
            step(batch)
    return counter.get_total_flops() / sum(b.target_tokens for b in batches)


def plain_step(model: nn.Module, optimizer: torch.optim.Optimizer, device: torch.device):
    """The textbook training step: forward, label-smoothed loss, backward, clip, update."""
    dtype = autocast_dtype(device)

    def step(batch: Batch) -> None:
        batch = batch.to(device)
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            logits = model(batch.src, batch.tgt_in)
        loss = F.cross_entropy(
            logits.float().flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD, label_smoothing=0.1
        )
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def throughput(step, batches: list[Batch], device: torch.device, warmup: int = 2) -> float:
    """Target tokens per second of `step` over `batches` (after a few warm-up steps)."""
    for batch in batches[:warmup]:
        step(batch)
    sync(device)
    start = time.perf_counter()
    for batch in batches[warmup:]:
        step(batch)
    sync(device)
    return sum(b.target_tokens for b in batches[warmup:]) / (time.perf_counter() - start)


def decode_speed(model: Seq2Seq, sources: list[list[int]], beam: int, device: torch.device) -> float:
    config = DecodeConfig(**{**CONFIG["decode"], "beam": beam})
    translate_ids(model, sources[:8], config, device)  # warm-up
    sync(device)
    start = time.perf_counter()
    translate_ids(model, sources, config, device)
    sync(device)
    return len(sources) / (time.perf_counter() - start)


def training_data(job: dict) -> ParallelData:
    return ParallelData.load(*job["train"], (VOCAB, VOCAB)) if job["train"] else synthetic()


def trainer(job: dict, device: torch.device) -> Trainer:
    """The workflow's trainer of model `job["model"]` at its config size on `device`."""
    arch, hparams = resolve(job["model"], job["entry"])
    model = build(arch, hparams, VOCAB, VOCAB, True).to(device)
    settings = {
        **TrainConfig.values(CONFIG | {"max_steps": None}, seed=1),
        "lr": 1e-4,
        "deterministic": False,
    }
    return Trainer(model, TrainConfig(**settings), device)


def measure(job: dict) -> dict:
    """One row of the table, measured in a fresh process."""
    torch.set_num_threads(job["threads"])
    torch.manual_seed(0)
    device = torch.device(job["device"])
    data = training_data(job)
    batch_lists = data.batches(job["max_tokens"], torch.Generator().manual_seed(1))
    batches = [data.collate(b) for b in batch_lists[: job["steps"]]]
    row = {"model": job["name"]}
    if job["reference"]:
        model = REFERENCES[job["reference"]].build(resolve(job["model"], job["entry"])[1]).to(device)
        step = plain_step(model, torch.optim.AdamW(model.parameters(), lr=1e-4), device)
    else:
        model_trainer = trainer(job, device)
        model, step = model_trainer.model, model_trainer.train_step

    row["params"] = sum(p.numel() for p in model.parameters())
    row["flops_per_token"] = flops_per_token(step, batches[:2])
    row["tokens_per_s"] = throughput(step, batches, device)
    row["padding"] = padding_fraction(data, batch_lists)
    row["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if device.type == "cuda":
        row["gpu_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
    if job["checkpoint"] and not job["reference"]:
        trained = checkpoint.load_model(job["checkpoint"], *[Tokenizer(job["spm"])] * 2).to(device)
        sources = read_ids(job["test"], VOCAB)[: job["sentences"]]
        row["greedy"] = decode_speed(trained, sources, 1, device)
        row["beam"] = decode_speed(trained, sources, 5, device)
        if has_cache(trained.cpu()):
            trained.to(device)
            row["beam_no_cache"] = decode_speed(
                NoCache(trained).eval(), sources[: job["sentences"] // 10], 5, device
            )
    return row


def share(job: dict, start: object, seconds: float) -> int:
    """Target tokens one of several processes training side by side gets through in
    `seconds` after `start` (a barrier all of them wait at, warmed up)."""
    torch.set_num_threads(1)
    device = torch.device(job["device"])
    model_trainer = trainer(job, device)
    data = training_data(job)
    batches = [data.collate(b) for b in data.batches(job["max_tokens"], torch.Generator().manual_seed(1))]
    for batch in batches[:3]:
        model_trainer.train_step(batch)
    model_trainer.settle()
    start.wait()
    tokens, began, i = 0, time.perf_counter(), 3
    while time.perf_counter() - began < seconds:
        model_trainer.train_step(batches[i % len(batches)])
        tokens += batches[i % len(batches)].target_tokens
        i += 1
    model_trainer.settle()
    return tokens * seconds / (time.perf_counter() - began)  # tokens in exactly `seconds`


def shared_throughput(job: dict, processes: int, seconds: float) -> float:
    """Aggregate training tokens/s of `processes` processes training side by side."""
    spawn = get_context("spawn")
    with spawn.Manager() as manager, ProcessPoolExecutor(processes, mp_context=spawn) as pool:
        start = manager.Barrier(processes)
        futures = [pool.submit(share, job, start, seconds) for _ in range(processes)]
        return sum(f.result() for f in futures) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, help="an experiment's results folder (ids/, spm/, checkpoints/)")
    parser.add_argument(
        "--seed", default=CONFIG["seeds"][0], help="the training run whose checkpoints decode"
    )
    parser.add_argument("--models", nargs="+", default=list(CONFIG["models"]), help="models of config.yaml")
    parser.add_argument(
        "--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cpu or cuda"
    )
    parser.add_argument("--steps", type=int, default=12, help="training steps timed per model")
    parser.add_argument(
        "--max-tokens", type=int, default=CONFIG["train"]["max_tokens"], help="tokens per training batch"
    )
    parser.add_argument("--sentences", type=int, default=300, help="test sentences decoded per model")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument(
        "--processes",
        type=int,
        nargs="*",
        default=[],
        help="numbers of processes sharing the device (1 N 2N)",
    )
    parser.add_argument(
        "--share-model", help="the model they train (default: the first of --models decoded step by step)"
    )
    parser.add_argument("--seconds", type=float, default=20, help="timed seconds per number of processes")
    parser.add_argument(
        "--references", action=argparse.BooleanOptionalAction, default=True, help="also time the references"
    )
    parser.add_argument("--json", type=Path, help="also write every number here")
    a = parser.parse_args()
    unknown = [m for m in a.models if m not in CONFIG["models"]]
    if unknown:
        parser.error(
            f"--models: {', '.join(unknown)} not in config.yaml's models ({', '.join(CONFIG['models'])})"
        )
    if a.data and not (a.data / "ids").is_dir():
        parser.error(f"--data {a.data}: not an experiment's results folder (no ids/ in it)")
    device = torch.device(a.device)
    layout = Layout(str(a.data)) if a.data else None
    test = sorted(a.data.glob("ids/test*.en"))[0] if a.data else None

    torch.set_num_threads(a.threads)
    dtype = str(autocast_dtype(device) or torch.float32).removeprefix("torch.")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"{a.threads} CPU threads"
    record = {"device": name, "dtype": dtype, "peak_gflops": None, "rows": [], "shared": {}}

    def keep() -> None:
        """Write what is measured so far to --json (at once, to know it can)."""
        if a.json:
            try:
                write_json(a.json, record, indent=1)
            except (MixnmtError, OSError) as e:
                sys.exit(f"speed.py: --json {a.json}: cannot write it ({getattr(e, 'strerror', None) or e})")

    keep()
    record["peak_gflops"] = peak = matmul_peak(device)
    print(f"{dtype} torch.mm peak: {peak:.1f} GFLOP/s on {name}")
    jobs, versus = [], {}
    for model in a.models:
        ckpt = Path(layout.checkpoint(model, a.seed)) if layout else None
        reference = reference_for(model, CONFIG["models"][model]) if a.references else None
        for ref in [None, reference] if reference else [None]:
            if ref:
                versus[model] = f"{ref} @{model}"
            jobs.append(
                {
                    "name": f"{ref} @{model}" if ref else model,
                    "model": model,
                    "entry": CONFIG["models"][model],
                    "reference": ref,
                    "device": a.device,
                    "threads": a.threads,
                    "steps": a.steps,
                    "max_tokens": a.max_tokens,
                    "sentences": a.sentences,
                    "train": (layout.ids("train", "en"), layout.ids("train", "de")) if layout else None,
                    "checkpoint": ckpt if ckpt and ckpt.exists() else None,
                    "spm": layout.spm("joint" if CONFIG["spm"]["joint"] else "en") if layout else None,
                    "test": test,
                }
            )
    spawn = get_context("spawn")
    rows = record["rows"]
    for job in jobs:  # one at a time: concurrent measurements would share the device
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            rows.append(pool.submit(measure, job).result())
        keep()  # an interrupted benchmark keeps the rows it has
    print_table(rows, versus, peak)

    shared = record["shared"]
    if a.processes:
        recurrent = [m for m in a.models if REGISTRY[resolve(m, CONFIG["models"][m])[0]].compiled_steps]
        model = a.share_model or (recurrent or a.models)[0]
        job = next(j for j in jobs if j["model"] == model and not j["reference"])
        for n in a.processes:
            shared[n] = shared_throughput(job, n, a.seconds)
            print(f"{n} processes training {model} side by side: {shared[n]:.0f} target tokens/s in all")
            keep()


def print_table(rows: list[dict], versus: dict[str, str], peak: float) -> None:
    speeds = {r["model"]: r["tokens_per_s"] for r in rows}
    header = f"{'model':<28}{'params':>8}{'MFLOP/tok':>10}{'tok/s':>8}{'MFU':>6}{'vs ref':>8}{'pad':>6}"
    print(header + f"{'greedy/s':>9}{'beam/s':>8}{'RSS MB':>8}{'GPU MB':>8}")
    for r in rows:
        ref = versus.get(r["model"])
        ratio = f"{r['tokens_per_s'] / speeds[ref]:.2f}x" if ref in speeds else "-"
        extra = "".join(
            f"{r[k]:>{w}.1f}" if k in r else f"{'-':>{w}}" for k, w in (("greedy", 9), ("beam", 8))
        )
        extra += f"{r['rss_mb']:>8.0f}" + (f"{r['gpu_mb']:>8.0f}" if "gpu_mb" in r else f"{'-':>8}")
        print(
            f"{r['model']:<28}{r['params'] / 1e6:>7.2f}M{r['flops_per_token'] / 1e6:>10.1f}"
            f"{r['tokens_per_s']:>8.0f}{r['flops_per_token'] * r['tokens_per_s'] / 1e9 / peak:>6.0%}"
            f"{ratio:>8}{r['padding']:>6.1%}{extra}"
        )
    for r in rows:
        if "beam_no_cache" in r:
            print(
                f"{r['model']} beam search without its key/value cache: {r['beam_no_cache']:.1f} sentences/s "
                f"({r['beam'] / r['beam_no_cache']:.1f}x slower than with it)"
            )


if __name__ == "__main__":
    main()
