"""What a training run was: code version, software, hardware, inputs and settings."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
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


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{platform.processor() or platform.machine()} ({torch.get_num_threads()} threads)"


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
