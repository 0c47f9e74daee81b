"""Where computation runs: CUDA with mixed precision when present, the CPU otherwise."""

from __future__ import annotations

import functools
import math
import resource
import sys
from pathlib import Path
from typing import Any

import torch

from mixnmt.models import REGISTRY, resolve


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def autocast_dtype(device: torch.device) -> torch.dtype | None:
    """Mixed precision on CUDA (bf16 where supported, else fp16); full fp32 elsewhere."""
    if device.type != "cuda":
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


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
    tokens, vocab = config["train"]["max_tokens"], config["spm"]["vocab_size"]
    need = REGISTRY[arch].held_bytes(hyperparameters, tokens, width, vocab)
    return min(shares, max(1, math.ceil(need / (memory / shares))))


@functools.cache
def widest(ids: tuple[str, ...]) -> int:
    """The widest batch of the id files `ids`: their longest line, +1 for EOS or BOS (read
    once per process: Snakemake asks for every training job's shares)."""
    return 1 + max(len(line.split()) for path in ids for line in Path(path).open())
