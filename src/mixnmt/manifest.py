"""What a training run was: code version, software, hardware, inputs and settings."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

from mixnmt.provenance import git_state

PACKAGES = ("mixnmt", "torch", "sentencepiece", "sacrebleu", "numpy", "pandas")


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The processor's model name (Linux's /proc/cpuinfo), else what `platform` knows."""
    try:
        lines = cpuinfo.read_text().splitlines()
    except OSError:
        lines = []
    named = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return named[0] if named else platform.processor() or platform.machine()


def device_name(device: torch.device) -> str:
    """The GPU's name; for the CPU its model, the vector instructions PyTorch dispatches
    to and those that compute bf16 (bf16 results differ between processors that have them
    and those that do not), and the threads."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    bf16 = {"AMX": torch.cpu._is_amx_tile_supported(), "AVX-512 BF16": torch.cpu._is_avx512_bf16_supported()}
    isa = ", ".join([torch.backends.cpu.get_cpu_capability(), *(name for name, has in bf16.items() if has)])
    return f"{cpu_model()}, {isa} ({torch.get_num_threads()} threads)"


def manifest(inputs: dict[str, str], device: torch.device, **settings: Any) -> dict[str, Any]:
    """The run manifest: git state, versions, device, sha256 of every input file, settings."""
    return {
        "git": git_state(),
        "versions": versions(),
        "platform": f"{platform.system()} {platform.release()} {sys.implementation.name}",
        "device": device_name(device),
        "inputs": inputs,
        **settings,
    }
