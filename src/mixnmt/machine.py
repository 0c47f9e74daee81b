"""What the machine offers, asked without importing torch where the answer does not need
it (the import takes 3 s, and Snakemake asks at every start): whether PyTorch may see a
GPU, whether the CPU computes bf16, what `precision: auto` means, and which PyTorch
build a job's environment installs."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Literal

GPU_DRIVERS = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg", "/dev/kfd", "/dev/nvhost-ctrl-gpu")
"""What a loaded GPU driver shows: NVIDIA's on Linux, under WSL, AMD's ROCm, NVIDIA Jetson's."""


def cuda_available() -> bool:
    """torch.cuda.is_available(); False at once where no GPU driver is loaded."""
    if not any(os.path.exists(path) for path in GPU_DRIVERS):
        return False
    import torch

    return torch.cuda.is_available()


@functools.cache
def cpu_native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU computes bf16 natively (AVX-512 BF16 or AMX; elsewhere PyTorch
    emulates it, slower than fp32): from Linux's CPU flags, else as PyTorch detects it."""
    try:
        flags = next(line for line in cpuinfo.read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):  # not Linux on x86
        import torch

        return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    return bool({"avx512_bf16", "amx_tile"} & set(flags.split(":", 1)[1].split()))


def auto_precision(cuda: bool, native_bf16: bool) -> Literal["fp32", "bf16"]:
    """What `train.precision: auto` computes in: mixed precision on a GPU (bf16, or fp16
    where it lacks bf16) and on a CPU that computes bf16 natively; fp32 elsewhere."""
    return "bf16" if cuda or native_bf16 else "fp32"


def torch_environment(build: Literal["auto", "cpu", "cuda"], gpu: bool) -> str:
    """The conda environment of envs/ that installs the PyTorch build `build` (the config's
    `torch_build`): "torch-cuda" (PyPI's wheel, with CUDA), or "torch" (PyTorch's CPU
    build); "auto" is CUDA's where Snakemake sees a `gpu`."""
    return "torch-cuda" if build == "cuda" or (build == "auto" and gpu) else "torch"
