"""Where computation runs, and in what precision: CUDA when present, the CPU otherwise;
mixed precision (bf16 autocast) as the `train.precision` setting asks."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
import os
import resource
import sys
from pathlib import Path
from typing import Any, Literal

import torch

from mixnmt.config import CPU_EMULATED_BF16, FP32, train_settings
from mixnmt.machine import auto_precision, cpu_native_bf16
from mixnmt.models import REGISTRY, resolve


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


Precision = Literal["auto", "fp32", "bf16"]
"""The `train.precision` setting: bf16 autocast ("bf16"), none ("fp32"), or bf16 where
the device computes it natively and fp32 elsewhere ("auto")."""


def native_bf16(device: torch.device) -> bool:
    """Whether `device` computes bf16 natively: a CUDA GPU that supports it, or a CPU with
    AVX-512 BF16 or AMX (elsewhere bf16 is emulated, slower than fp32)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return device.type == "cpu" and cpu_native_bf16()


def precision(setting: Precision, device: torch.device) -> Literal["fp32", "bf16"]:
    """What `setting` computes in on `device`: "bf16" (mixed precision) or "fp32"."""
    if setting == "auto":
        return auto_precision(device.type == "cuda", native_bf16(device))
    return setting


def emulated_bf16(setting: Precision, device: torch.device) -> str | None:
    """A warning when `setting` asks for bf16 on a CPU that emulates it (no AVX-512 BF16
    or AMX), where training takes about CPU_EMULATED_BF16 times fp32's time; None elsewhere."""
    if device.type != "cpu" or precision(setting, device) == "fp32" or native_bf16(device):
        return None
    vectors = torch.backends.cpu.get_cpu_capability()
    return (
        f"train.precision: bf16 on a CPU without AVX-512 BF16 or AMX ({vectors}): PyTorch emulates "
        f"bf16 here, and training takes about {CPU_EMULATED_BF16} times as long as in fp32 "
        f"(benchmarks/speed.py measures both). To train in fp32 instead: {FP32} (other runs than "
        "the bf16 ones: a run's fingerprint names its precision)"
    )


def autocast_dtype(device: torch.device, setting: Precision) -> torch.dtype | None:
    """The autocast dtype of `setting` on `device`: None for fp32; for mixed precision
    bf16, or fp16 on a GPU without bf16 (the trainer then scales the loss)."""
    if precision(setting, device) == "fp32":
        return None
    return torch.float16 if device.type == "cuda" and not native_bf16(device) else torch.bfloat16


KERNEL_CACHES = {"LRU_CACHE_CAPACITY": 64, "ONEDNN_PRIMITIVE_CACHE_CAPACITY": 64}
"""The entries of oneDNN's two kernel caches on the CPU (ideep's and oneDNN's own), each
1,024 by default: the environment variables that set them, and their values here."""


def ready_memory() -> None:
    """Ready this process's memory to run a model on the CPU: freed memory kept for reuse
    (`keep_freed_memory`) and oneDNN's kernel caches bounded (`bound_kernel_caches`)."""
    keep_freed_memory()
    bound_kernel_caches()


def keep_freed_memory() -> None:
    """Have glibc's malloc keep freed memory for reuse instead of returning it to the
    system. Each training step allocates and frees tensors of tens of MB (a batch's logits
    and their gradients), which malloc otherwise maps afresh every time: the CPU then
    spends up to a third of a step faulting in zeroed pages. A no-op without glibc."""
    if sys.platform != "linux" or not (name := ctypes.util.find_library("c")):
        return
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt"):  # musl
        return
    m_trim_threshold, m_mmap_max = -1, -4  # <malloc.h>
    libc.mallopt(m_mmap_max, 0)  # no block of its own for a large allocation ...
    libc.mallopt(m_trim_threshold, 2**31 - 1)  # ... and the freed heap kept (the most an int says)


def bound_kernel_caches() -> None:
    """Keep at most KERNEL_CACHES kernels in oneDNN's caches, unless the environment sets
    their sizes. oneDNN runs the CPU's bf16 matrix products and keeps a compiled kernel for
    each shape; a batch's shapes seldom recur, so at 1,024 entries each the caches grew a
    training process for epochs (ten of the states mixture in bf16: 4.7 GB at the peak,
    1.7 GB bounded, the same checkpoint at the same speed), while 64 keep what a step
    reuses. The caches read their sizes when they make their first kernel."""
    for variable, entries in KERNEL_CACHES.items():
        os.environ.setdefault(variable, str(entries))


def peak_memory_mb(device: torch.device) -> dict[str, float]:
    """Peak resident memory of this process and, on CUDA, peak allocated GPU memory (MiB)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    peak = {"rss_mb": rss / (1 << 20) if sys.platform == "darwin" else rss / 1024}
    if device.type == "cuda":
        peak["cuda_mb"] = torch.cuda.max_memory_allocated(device) / (1 << 20)
    return peak


def gpu_shares(config: dict[str, Any], model: str, ids: list[str | Path], memory: int, shares: int) -> int:
    """How many of the `shares` equal shares of a GPU of `memory` bytes (Snakemake's
    gpu_jobs) the training of `model` takes on the id files `ids`: one, or as many as its
    widest batch holds beyond a model's usual (latent models' logits), all at most."""
    arch, hyperparameters = resolve(model, config["models"][model])
    width = widest(tuple(map(str, ids)))
    tokens, vocab = train_settings(config, model)["max_tokens"], config["spm"]["vocab_size"]
    need = REGISTRY[arch].held_bytes(hyperparameters, tokens, width, vocab)
    return min(shares, max(1, math.ceil(need / (memory / shares))))


@functools.cache
def widest(ids: tuple[str, ...]) -> int:
    """The widest batch of the id files `ids`: their longest line, +1 for EOS or BOS (read
    once per process: Snakemake asks for every training job's shares)."""
    return 1 + max(len(line.split()) for path in ids for line in Path(path).open())
