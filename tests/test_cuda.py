"""What only a GPU can show: bf16 training of every architecture at its config size,
bit-identical reruns with strictly deterministic kernels, CPU against CUDA numbers, the
attention kernels chosen and the dtype the GRUs run in. Skipped, saying so, without CUDA
(benchmarks/gpu_session.py runs them first thing on a GPU)."""

from __future__ import annotations

import pytest
import torch

from conftest import (
    CONFIG,
    TINY_MODELS,
    VOCAB,
    batch,
    make,
    recurrent_dtypes,
    synthetic_batches,
    train_config,
    with_grus,
)
from mixnmt import determinism
from mixnmt.models import build, resolve
from mixnmt.trainer import Trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
CUDA = torch.device("cuda")


def one_entry_per_architecture() -> dict[str, dict]:
    """The first config.yaml model of each architecture, at its config size."""
    first = {}
    for name, entry in CONFIG["models"].items():
        first.setdefault(resolve(name, entry)[0], name)
    return {name: CONFIG["models"][name] for name in first.values()}


@pytest.mark.parametrize("name", one_entry_per_architecture())
def test_every_architecture_takes_finite_bf16_steps_at_its_config_size(name):
    arch, hparams = resolve(name, CONFIG["models"][name])
    vocab = CONFIG["spm"]["vocab_size"]
    trainer = Trainer(build(arch, hparams, vocab, vocab, True).to(CUDA), train_config(lr=1e-4), CUDA)
    assert trainer.dtype == (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
    for b in synthetic_batches(vocab, 4):
        trainer.train_step(b)
    trainer.settle()  # raises NonFiniteLoss on a nan/inf loss or gradient norm
    assert trainer.progress.loss_sum > 0


def train_strictly(name: str, steps: int = 5) -> dict[str, torch.Tensor]:
    determinism.setup(seed=1, deterministic=True)
    torch.use_deterministic_algorithms(True)  # no warn_only: an op without a deterministic kernel fails
    arch, hparams = resolve(name, TINY_MODELS[name])
    model = build(arch, hparams, VOCAB, VOCAB, True).to(CUDA)
    trainer = Trainer(model, train_config(lr=1e-3), CUDA)
    for b in synthetic_batches(VOCAB, steps):
        trainer.train_step(b)
    trainer.settle()
    return {k: v.cpu() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("name", TINY_MODELS)
def test_two_runs_are_bit_identical_with_strictly_deterministic_kernels(name):
    try:
        first, second = train_strictly(name), train_strictly(name)
    finally:
        torch.use_deterministic_algorithms(True, warn_only=True)
    assert all(torch.equal(first[k], second[k]) for k in first)


@pytest.mark.parametrize("name", TINY_MODELS)
def test_cuda_fp32_logits_match_the_cpu(name):
    model = make(name).eval()
    src, tgt = batch()
    with torch.no_grad():
        cpu = model(src, tgt)
        cuda = model.to(CUDA)(src.to(CUDA), tgt.to(CUDA)).cpu()
    assert (cuda - cpu).abs().max() < 1e-3


def test_deterministic_attention_runs_the_math_kernel():
    """Flash, memory-efficient and cuDNN attention have non-deterministic backward passes."""
    from torch.profiler import ProfilerActivity, profile

    determinism.setup(seed=1, deterministic=True)
    q, k, v = (
        torch.randn(8, 4, 32, 64, device=CUDA, dtype=torch.bfloat16, requires_grad=True) for _ in range(3)
    )
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
        torch.cuda.synchronize()
    kernels = {e.name.lower() for e in prof.events()}
    fused = sorted(
        n for n in kernels if any(w in n for w in ("flash", "fmha", "cudnn", "efficient_attention"))
    )
    assert not fused, fused


@pytest.mark.parametrize("name", with_grus())
def test_grus_run_in_fp32_under_cuda_autocast(name):
    model = make(name).to(CUDA)
    src, tgt = batch()
    dtypes = recurrent_dtypes(model, src.to(CUDA), tgt.to(CUDA), "cuda", torch.bfloat16)
    assert dtypes and set(dtypes.values()) == {torch.float32}, dtypes
