"""Training and decoding speed of every model, against naive PyTorch references.

    python benchmarks/speed.py --configfile experiments/cpu.yaml --precision bf16 \
        --data results/multi30k-cpu                             # the CPU study: real batches, its checkpoints
    python benchmarks/speed.py                                  # synthetic Multi30k-like batches
    python benchmarks/speed.py --device cuda --processes 1 4 8  # on a GPU, and GPU sharing
    python benchmarks/speed.py --models rnn --profile           # and where its steps spend their time

For each model of the configuration (config.yaml, with `--configfile` overlays) at its
size: parameters, training FLOPs per target token (counted by torch's FlopCounterMode
over forward and backward), target tokens/s of the real training step
(`Trainer.train_step`: AdamW, clipping, label smoothing; timed between synchronisations
after warm-up steps), the share of the device's matmul peak that reaches (MFU; the peak
is a large `torch.mm` in each precision, measured in the same run), padding of the
token-count batches, decoding sentences/s (greedy and beam) of the first test set when
`--data` has checkpoints, and the peak RSS of a process that only trains that model.
Each model is measured on two paths, back to back: the configuration's precision
(`--precision` overrides it) with the memory settings `mixnmt` runs it with
(`device.ready_memory`) and its `train.compile`, and, unless `--no-baseline`, fp32,
eager, with the allocator's defaults, as every model ran before mixed precision on the
CPU; the ratios are the new path's speed over the old one's. The references, written out
below in plain PyTorch, are measured the same way, each at the size of the models it
mirrors (those whose hyperparameters include its size arguments, and that attend to the
source exactly when it does): `nn.Transformer`, and the textbook GRU encoder-decoders
that step their decoder in a Python loop, reading the source summary or attending to its
states (additive scores). Models whose decoder state grows with the prefix (a key/value
cache) also decode without it. Each measurement runs in its own process, so peak RSS is
its own.
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
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode

from mixnmt import MixnmtError, checkpoint
from mixnmt.batching import Batch, ParallelData, padding_fraction, read_ids
from mixnmt.config import TrainConfig, load, selected
from mixnmt.decode import DecodeConfig, translate_ids
from mixnmt.device import autocast_dtype, precision, ready_memory
from mixnmt.files import write_json
from mixnmt.models import REGISTRY, Seq2Seq, State, build, resolve
from mixnmt.paths import Layout
from mixnmt.symbols import PAD
from mixnmt.tokenize import Tokenizer
from mixnmt.trainer import Trainer

ROOT = Path(__file__).resolve().parents[1]
VOCAB = 8000
BEFORE = "fp32 before"
"""The old path's name: fp32, eager, with the allocator's defaults."""


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


def matmul_peak(device: torch.device, dtype: torch.dtype, repeats: int = 10) -> float:
    """GFLOP/s of a large square torch.mm in `dtype`: the device's practical peak in it. The
    side doubles from 256 to 8192 (GPU) or 2048 (CPU) while a product would take under a
    quarter of a second: bf16 on a CPU that emulates it reaches about 1 GFLOP/s, and 2048
    would take 17 s a product. Each size is timed on its second product: the first sets up
    the library (cuBLAS's handle and kernels take a tenth of a second), and timing it
    stopped an H100 at 256, a launch-bound 453 GFLOP/s against about 800,000."""
    n, largest = 256, 8192 if device.type == "cuda" else 2048
    while True:
        a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
        a @ b
        sync(device)
        start = time.perf_counter()
        a @ b
        sync(device)
        if n == largest or 8 * (time.perf_counter() - start) > 0.25:
            break
        n *= 2
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    sync(device)
    return 2 * n**3 * repeats / (time.perf_counter() - start) / 1e9


def flops_per_token(step, batches: list[Batch]) -> float:
    """Training FLOPs (forward and backward) per target token, over `batches`. Counted
    eagerly: compiled code traced under the counter would run uncompiled ever after."""
    counter = FlopCounterMode(display=False)
    with torch.compiler.set_stance("force_eager"), counter:
        for batch in batches:
            step(batch)
    return counter.get_total_flops() / sum(b.target_tokens for b in batches)


def plain_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, device: torch.device, dtype: torch.dtype | None
):
    """The textbook training step: forward, label-smoothed loss, backward, clip, update."""

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
    """Target tokens per second of `step` over `batches` (after a few warm-up steps). On
    a GPU every batch runs once untimed first: the first step at a new shape (kernel
    choice, allocator growth) is paid once per shape in training, not at every step."""
    warm, timed = (batches, batches) if device.type == "cuda" else (batches[:warmup], batches[warmup:])
    for batch in warm:
        step(batch)
    sync(device)
    start = time.perf_counter()
    for batch in timed:
        step(batch)
    sync(device)
    return sum(b.target_tokens for b in timed) / (time.perf_counter() - start)


def decode_speed(model: Seq2Seq, sources: list[list[int]], beam: int, job: dict) -> float:
    config = DecodeConfig(**{**job["decode"], "beam": beam})
    device, dtype = torch.device(job["device"]), autocast_dtype(torch.device(job["device"]), job["precision"])
    translate_ids(model, sources[:8], config, device, dtype)  # warm-up
    sync(device)
    start = time.perf_counter()
    translate_ids(model, sources, config, device, dtype)
    sync(device)
    return len(sources) / (time.perf_counter() - start)


def study_files(config: dict[str, Any], layout: Layout, model: str, seed: int) -> dict[str, Any]:
    """What a job reads of a trained study (--data), in the languages `config` names: the
    training ids, the run's checkpoint (None until it is trained), the source's and the
    target's SentencePiece models, and the source ids of the first test set."""
    languages = (config["src"], config["tgt"])
    first = next(iter(config["datasets"][config["dataset"]]["test"]))
    trained = Path(layout.checkpoint(model, seed))
    return {
        "train": tuple(layout.ids("train", lang) for lang in languages),
        "checkpoint": trained if trained.exists() else None,
        "spm": tuple(layout.spm("joint" if config["spm"]["joint"] else lang) for lang in languages),
        "test": layout.ids(first, config["src"]),
    }


def training_data(job: dict) -> ParallelData:
    return ParallelData.load(*job["train"], (VOCAB, VOCAB)) if job["train"] else synthetic()


def trainer(job: dict, device: torch.device) -> Trainer:
    """The workflow's trainer of model `job["model"]` at its configured size on `device`,
    in the job's precision; on the old path eager (`train.compile` off), as before."""
    arch, hparams = resolve(job["model"], job["entry"])
    model = build(arch, hparams, VOCAB, VOCAB, True).to(device)
    settings = job["settings"] | {"lr": 1e-4, "deterministic": False, "precision": job["precision"]}
    if job["path"] == BEFORE:
        settings["compile"] = False
    return Trainer(model, TrainConfig(**settings), device)


def measure(job: dict) -> dict:
    """One row of the table, measured in a fresh process."""
    if job["path"] != BEFORE:
        ready_memory()
    torch.set_num_threads(job["threads"])
    torch.manual_seed(0)
    device = torch.device(job["device"])
    data = training_data(job)
    batch_lists = data.batches(job["max_tokens"], torch.Generator().manual_seed(1))
    batches = [data.collate(b) for b in batch_lists[: job["steps"]]]
    row = {"model": job["name"], "path": job["path"], "precision": precision(job["precision"], device)}
    if job["reference"]:
        model = REFERENCES[job["reference"]].build(resolve(job["model"], job["entry"])[1]).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        step = plain_step(model, optimizer, device, autocast_dtype(device, job["precision"]))
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
        trained = checkpoint.load_model(job["checkpoint"], *map(Tokenizer, job["spm"])).to(device)
        sources = read_ids(job["test"], VOCAB)[: job["sentences"]]
        row["greedy"] = decode_speed(trained, sources, 1, job)
        row["beam"] = decode_speed(trained, sources, 5, job)
        if job["path"] != BEFORE and has_cache(trained.cpu()):
            trained.to(device)
            row["beam_no_cache"] = decode_speed(
                NoCache(trained).eval(), sources[: job["sentences"] // 10], 5, job
            )
    return row


def training(job: dict, threads: int) -> tuple[torch.device, Trainer, list[Batch]]:
    """In a fresh process: `threads` threads, the memory settings `mixnmt` runs with,
    the job's trainer on its device and every batch of its training data."""
    ready_memory()
    torch.set_num_threads(threads)
    device = torch.device(job["device"])
    data = training_data(job)
    batches = [data.collate(b) for b in data.batches(job["max_tokens"], torch.Generator().manual_seed(1))]
    return device, trainer(job, device), batches


def profile(job: dict, rows: int = 15) -> str:
    """Where one model's training steps spend their time: torch.profiler's operators by
    self time over the job's steps after two warm-up steps (`rows` of them), measured in a
    fresh process as `measure` is."""
    device, model_trainer, batches = training(job, job["threads"])
    step = model_trainer.train_step
    for batch in batches[:2]:
        step(batch)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profiler:
        for batch in batches[2 : job["steps"]]:
            step(batch)
        sync(device)
    key = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    return profiler.key_averages().table(sort_by=key, row_limit=rows)


def share(job: dict, start: object, seconds: float) -> int:
    """Target tokens one of several processes training side by side gets through in
    `seconds` after `start` (a barrier all of them wait at, warmed up)."""
    _, model_trainer, batches = training(job, 1)
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
    parser.add_argument(
        "--configfile",
        type=Path,
        nargs="+",
        default=[],
        help="overlays on config.yaml (an experiment): its models, sizes and settings",
    )
    parser.add_argument("--data", type=Path, help="an experiment's results folder (ids/, spm/, checkpoints/)")
    parser.add_argument("--seed", type=int, help="the run whose checkpoints decode (default: the first)")
    parser.add_argument("--models", nargs="+", help="models of the configuration (default: those it trains)")
    parser.add_argument(
        "--device", default="cuda" if torch.cuda.is_available() else "cpu", help="cpu or cuda"
    )
    parser.add_argument(
        "--precision", choices=["auto", "fp32", "bf16"], help="the new path's (default: the configuration's)"
    )
    parser.add_argument(
        "--baseline",
        action=argparse.BooleanOptionalAction,
        default=True,
        help=f"also measure the old path ({BEFORE}: fp32, eager, the allocator's defaults)",
    )
    parser.add_argument("--steps", type=int, default=12, help="training steps timed per model")
    parser.add_argument("--max-tokens", type=int, help="tokens per training batch (default: the config's)")
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
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print torch.profiler's table of the first model's training steps (new path)",
    )
    parser.add_argument("--json", type=Path, help="also write every number here")
    a = parser.parse_args()
    try:
        config = load(ROOT / "config.yaml", *a.configfile)  # from any working directory
    except MixnmtError as e:
        parser.error(f"--configfile: {e}")
    models = a.models or selected(config)
    unknown = [m for m in models if m not in config["models"]]
    if unknown:
        parser.error(
            f"--models: {', '.join(unknown)} not in config.yaml's models ({', '.join(config['models'])})"
        )
    if a.data and not (a.data / "ids").is_dir():
        parser.error(f"--data {a.data}: not an experiment's results folder (no ids/ in it)")
    device = torch.device(a.device)
    layout = Layout(str(a.data)) if a.data else None
    seed = a.seed or config["seeds"][0]
    uncapped = config | {"max_steps": None}
    new = precision(a.precision or TrainConfig.values(uncapped, seed=1)["precision"], device)
    paths = {"new": new, **({BEFORE: "fp32"} if a.baseline else {})}

    torch.set_num_threads(a.threads)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"{a.threads} CPU threads"
    record = {"device": name, "precision": new, "peak_gflops": {}, "rows": [], "shared": {}}

    def keep() -> None:
        """Write what is measured so far to --json (at once, to know it can)."""
        if a.json:
            try:
                write_json(a.json, record, indent=1)
            except (MixnmtError, OSError) as e:
                sys.exit(f"speed.py: --json {a.json}: cannot write it ({getattr(e, 'strerror', None) or e})")

    keep()
    peaks = record["peak_gflops"]
    for p in dict.fromkeys(paths.values()):
        peaks[p] = matmul_peak(device, autocast_dtype(device, p) or torch.float32)
        print(f"{p} torch.mm peak: {peaks[p]:.1f} GFLOP/s on {name}")
    jobs, versus = [], {}
    for model in models:
        settings = TrainConfig.values(uncapped, seed=1, model=model)
        files = study_files(config, layout, model, seed) if layout else {"train": None, "checkpoint": None}
        reference = reference_for(model, config["models"][model]) if a.references else None
        runs = [(path, None) for path in paths] + ([("new", reference)] if reference else [])
        for path, ref in runs:
            if ref:
                versus[model] = f"{ref} @{model}"
            jobs.append(
                {
                    "name": f"{ref} @{model}" if ref else model,
                    "path": path,
                    "precision": paths[path],
                    "model": model,
                    "entry": config["models"][model],
                    "reference": ref,
                    "device": a.device,
                    "threads": a.threads,
                    "steps": a.steps,
                    "max_tokens": a.max_tokens or settings["max_tokens"],
                    "settings": settings,
                    "decode": config["decode"],
                    "sentences": a.sentences,
                    **files,
                }
            )
    spawn = get_context("spawn")
    rows = record["rows"]
    for job in jobs:  # one at a time: concurrent measurements would share the device
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            rows.append(pool.submit(measure, job).result())
        keep()  # an interrupted benchmark keeps the rows it has
    print_table(rows, versus, peaks)

    if a.profile:
        job = next(j for j in jobs if not j["reference"] and j["path"] == "new")
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            table = pool.submit(profile, job).result()
        print(f"\nWhere {job['model']}'s training steps spend their time ({job['precision']}):\n{table}")

    shared = record["shared"]
    if a.processes:
        recurrent = [m for m in models if REGISTRY[resolve(m, config["models"][m])[0]].compiled_steps]
        model = a.share_model or (recurrent or models)[0]
        job = next(j for j in jobs if j["model"] == model and not j["reference"] and j["path"] == "new")
        for n in a.processes:
            shared[n] = shared_throughput(job, n, a.seconds)
            print(f"{n} processes training {model} side by side: {shared[n]:.0f} target tokens/s in all")
            keep()


def print_table(rows: list[dict], versus: dict[str, str], peaks: dict[str, float]) -> None:
    """The new path's numbers per model, with the old path's and their ratios where measured."""
    new = {r["model"]: r for r in rows if r["path"] == "new"}
    old = {r["model"]: r for r in rows if r["path"] == BEFORE}

    def mfu(r: dict) -> float:
        return r["flops_per_token"] * r["tokens_per_s"] / 1e9 / peaks[r["precision"]]

    def ratio(a: dict, b: dict | None, key: str) -> str:
        return f"{a[key] / b[key]:.2f}x" if b and key in a and key in b else "-"

    def number(r: dict | None, key: str, form: str = ".0f") -> str:
        return format(r[key], form) if r and key in r else "-"

    columns = {  # header: (width, cell of the new path's row r and the old path's row w)
        "params": (8, lambda r, w: f"{r['params'] / 1e6:.2f}M"),
        "MFLOP/tok": (10, lambda r, w: f"{r['flops_per_token'] / 1e6:.1f}"),
        "tok/s": (8, lambda r, w: number(r, "tokens_per_s")),
        "MFU": (6, lambda r, w: f"{mfu(r):.0%}"),
        "was": (7, lambda r, w: number(w, "tokens_per_s")),
        "MFU was": (8, lambda r, w: f"{mfu(w):.0%}" if w else "-"),
        "ratio": (7, lambda r, w: ratio(r, w, "tokens_per_s")),
        "vs ref": (8, lambda r, w: ratio(r, new.get(versus.get(r["model"], "")), "tokens_per_s")),
        "pad": (6, lambda r, w: f"{r['padding']:.1%}"),
        "greedy/s": (9, lambda r, w: number(r, "greedy", ".1f")),
        "beam/s": (8, lambda r, w: number(r, "beam", ".1f")),
        "was ": (7, lambda r, w: number(w, "beam", ".1f")),
        "ratio ": (7, lambda r, w: ratio(r, w, "beam")),
        "RSS MB": (8, lambda r, w: number(r, "rss_mb")),
        "GPU MB": (8, lambda r, w: number(r, "gpu_mb")),
    }
    print(f"{'model':<28}" + "".join(f"{h:>{w}}" for h, (w, _) in columns.items()))
    for model, r in new.items():
        print(f"{model:<28}" + "".join(f"{cell(r, old.get(model)):>{w}}" for w, cell in columns.values()))
    for r in new.values():
        if "beam_no_cache" in r:
            print(
                f"{r['model']} beam search without its key/value cache: {r['beam_no_cache']:.1f} sentences/s "
                f"({r['beam'] / r['beam_no_cache']:.1f}x slower than with it)"
            )
    if old:
        print(f"'was': {BEFORE} (fp32, eager, the allocator's defaults); ratio: the new path's speed over it")


if __name__ == "__main__":
    main()
