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
from mixnmt.batching import Batch
from mixnmt.models import REGISTRY, build, resolve
from mixnmt.models.attention import Attention
from mixnmt.trainer import Trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
CUDA = torch.device("cuda")


@pytest.mark.parametrize("name", CONFIG["models"])
def test_every_model_takes_finite_bf16_steps_at_its_config_size(name):
    """Every config.yaml entry, variants included (the gated cell's lerp once crashed under
    autocast; tests/test_models.py emulates autocast's dtype rules on the CPU)."""
    arch, hparams = resolve(name, CONFIG["models"][name])
    vocab = CONFIG["spm"]["vocab_size"]
    trainer = Trainer(build(arch, hparams, vocab, vocab, True).to(CUDA), train_config(lr=1e-4), CUDA)
    assert trainer.dtype == (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16)
    for b in synthetic_batches(vocab, 4):
        trainer.train_step(b)
    trainer.settle()  # raises NonFiniteLoss on a nan/inf loss or gradient norm
    assert trainer.progress.loss_sum > 0


def peak_step_bytes(name: str, batch: Batch) -> int:
    """The peak GPU memory of one bf16 training step of config.yaml's `name` on `batch`."""
    arch, hparams = resolve(name, CONFIG["models"][name])
    vocab = CONFIG["spm"]["vocab_size"]
    trainer = Trainer(build(arch, hparams, vocab, vocab, True).to(CUDA), train_config(lr=1e-4), CUDA)
    trainer.train_step(batch)  # the optimiser's state exists from here on
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    trainer.train_step(batch)
    trainer.settle()
    return torch.cuda.max_memory_allocated()


def test_a_latent_step_holds_no_more_than_its_gpu_shares_count():
    """What a latent model's training keeps beyond an attention model's, at config size on
    one batch, is at most Seq2Seq.held_bytes (+25%): the GPU shares it takes
    (device.gpu_shares) never undercount it."""
    entries = {name: resolve(name, entry) for name, entry in CONFIG["models"].items()}
    latent = next(n for n, (arch, h) in entries.items() if REGISTRY[arch].held_bytes(h, 1, 1, 1))
    reference = next(n for n, (arch, _) in entries.items() if REGISTRY[arch] is Attention)
    batch = synthetic_batches(CONFIG["spm"]["vocab_size"], 1)[0]  # 32 sentences of 5-30 tokens
    arch, hparams = entries[latent]
    tokens, width = batch.tgt_out.numel(), batch.src.size(1)
    held = REGISTRY[arch].held_bytes(hparams, tokens, width, CONFIG["spm"]["vocab_size"])
    extra = peak_step_bytes(latent, batch) - peak_step_bytes(reference, batch)
    assert extra <= 1.25 * held, (extra / 2**20, held / 2**20)


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
