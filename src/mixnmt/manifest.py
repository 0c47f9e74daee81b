"""What a training run was: code version, software, hardware, inputs and settings."""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import torch

PACKAGES = ("mixnmt", "torch", "sentencepiece", "sacrebleu", "numpy", "pandas")


HERE = Path(__file__).resolve().parent


def git_state(folder: Path = HERE) -> dict[str, Any]:
    """Commit and dirty flag of the git checkout holding `folder` (None outside one).
    Dirty means edited code or configuration: a run rewriting committed results/ is not."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    code = [":/", ":(top,exclude)results"]  # the whole checkout but results/
    status = git("status", "--porcelain", "--untracked-files=no", "--", *code) if commit else None
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


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
