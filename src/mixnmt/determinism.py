"""One place that makes a run repeatable: seeds, deterministic kernels, data order."""

from __future__ import annotations

import random

import numpy as np
import torch


def setup(seed: int, deterministic: bool = True) -> None:
    """Seed Python, NumPy and torch (CPU and CUDA: init and dropout) and, if
    `deterministic`, restrict torch to deterministic kernels.

    (cuBLAS's deterministic workspace is set when mixnmt is imported: see CUBLAS_WORKSPACE.)
    """
    if deterministic:
        # warn_only: an op without a deterministic CUDA kernel warns in the log instead of
        # stopping a long run; every op mixnmt uses on the CPU is deterministic.
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        # Flash, memory-efficient and cuDNN attention have non-deterministic backward
        # passes, and warn_only lets them through: PyTorch may pick cuDNN's first on Hopper.
        torch.backends.cuda.enable_flash_sdp(False)
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        torch.backends.cuda.enable_cudnn_sdp(False)
        # Deterministic mode would also fill every torch.empty (a kernel each, in a
        # launch-bound loop); no mixnmt op reads memory it has not written.
        torch.utils.deterministic.fill_uninitialized_memory = False
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    """The generator that orders epoch `epoch`'s batches; a function of (seed, epoch)
    only, so a resumed run sees exactly the batches an uninterrupted one would."""
    return torch.Generator().manual_seed(seed * 1_000_003 + epoch)
