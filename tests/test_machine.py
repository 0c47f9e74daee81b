"""What the machine offers, asked without torch where the answer does not need it."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from conftest import ROOT
from mixnmt.machine import GPU_DRIVERS, cpu_native_bf16, cuda_available


def test_cuda_is_available_as_torch_says():
    assert cuda_available() == torch.cuda.is_available()


def test_without_a_gpu_driver_torch_is_not_asked(tmp_path):
    code = (
        "import sys, mixnmt.machine as m\n"
        f"m.GPU_DRIVERS = ({str(tmp_path / 'absent')!r},)\n"
        "assert m.cuda_available() is False and 'torch' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "/proc/driver/nvidia" in GPU_DRIVERS


@pytest.mark.parametrize(
    "flags, native",
    [("fpu avx2 avx512f", False), ("fpu avx512f avx512_bf16", True), ("fpu amx_bf16 amx_tile", True)],
)
def test_native_bf16_is_read_from_the_cpu_flags(tmp_path, flags, native):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: {flags}\n\n" * 2)
    assert cpu_native_bf16(cpuinfo) is native


def test_native_bf16_is_what_torch_detects():
    """The CPU flags (or, where there are none, torch) and torch's own detection agree."""
    detected = torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    assert cpu_native_bf16() == detected
    assert cpu_native_bf16(ROOT / "absent") == detected  # no /proc/cpuinfo: torch's answer
