"""Where computation runs: CUDA with mixed precision when present, the CPU otherwise."""

from __future__ import annotations

import resource
import sys

import torch


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
