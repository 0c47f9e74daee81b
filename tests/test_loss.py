import pytest
import torch
import torch.nn.functional as F

from mixnmt.loss import smoothed_cross_entropy
from mixnmt.symbols import PAD


@pytest.mark.parametrize("eps", [0.0, 0.1])
def test_smoothed_cross_entropy_matches_torch_in_value_and_gradient(eps):
    torch.manual_seed(0)
    logits = torch.randn(12, 50, dtype=torch.float64, requires_grad=True)
    target = torch.randint(4, 50, (12,))
    target[[2, 7]] = PAD
    ours = smoothed_cross_entropy(logits, target, eps)
    (grad,) = torch.autograd.grad(3 * ours, logits)
    theirs = F.cross_entropy(logits, target, ignore_index=PAD, label_smoothing=eps, reduction="sum")
    (expected,) = torch.autograd.grad(3 * theirs, logits)
    torch.testing.assert_close(ours.double(), theirs)
    torch.testing.assert_close(grad, expected)
    assert grad[[2, 7]].abs().sum() == 0  # padding rows learn nothing


@pytest.mark.parametrize("fused, rows", [(True, None), (False, 5), (False, 512)])
def test_half_precision_logits_give_the_fp32_loss_and_gradient(monkeypatch, fused, rows):
    """Under mixed precision the logits arrive in bf16: the loss is computed on them in
    fp32 with no (N, V) fp32 copy, by the CPU's compiled pass over every row or eagerly
    `ROWS` rows at a time (the last chunk shorter; a GPU, or a CPU that cannot compile),
    and the gradient, recomputed from them, comes back in bf16."""
    import mixnmt.loss

    if not fused:
        monkeypatch.setattr(mixnmt.loss, "_fused", lambda: None)
        monkeypatch.setattr(mixnmt.loss, "ROWS", rows)
    else:
        assert mixnmt.loss._fused() is not None  # this machine compiles
    torch.manual_seed(0)
    logits = (4 * torch.randn(23, 300)).bfloat16().requires_grad_()
    target = torch.randint(4, 300, (23,))
    target[[0, 11, 22]] = PAD
    ours = smoothed_cross_entropy(logits, target, 0.1)
    (grad,) = torch.autograd.grad(2 * ours, logits)
    exact = logits.detach().double().requires_grad_()
    theirs = F.cross_entropy(exact, target, ignore_index=PAD, label_smoothing=0.1, reduction="sum")
    (expected,) = torch.autograd.grad(2 * theirs, exact)
    assert ours.dtype == torch.float32 and grad.dtype == torch.bfloat16
    torch.testing.assert_close(ours.double(), theirs, rtol=1e-6, atol=0)
    torch.testing.assert_close(grad.double(), expected, rtol=1e-2, atol=1e-4)  # bf16's 8 bits
    assert grad[[0, 11, 22]].abs().sum() == 0
    with torch.no_grad():  # validation: no smoothing, no gradient
        unsmoothed = F.cross_entropy(exact, target, ignore_index=PAD, reduction="sum")
        torch.testing.assert_close(
            smoothed_cross_entropy(logits, target, 0.0).double(), unsmoothed, rtol=1e-6, atol=0
        )


def test_a_cpu_that_cannot_compile_the_loss_says_so_once_and_computes_it_eagerly(monkeypatch, caplog):
    import mixnmt.loss

    def fails(*args, **kwargs):
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(torch, "compile", lambda f, **kwargs: fails)
    mixnmt.loss._fused.cache_clear()
    try:
        logits, target = torch.randn(4, 30).bfloat16(), torch.tensor([5, 6, PAD, 7])
        with caplog.at_level("WARNING", logger="mixnmt.compiled"):
            first = smoothed_cross_entropy(logits, target, 0.1)
            assert torch.equal(first, smoothed_cross_entropy(logits, target, 0.1))
        assert [r.getMessage() for r in caplog.records] == [
            "_half_loss runs eagerly: torch.compile failed (no C++ compiler)"
        ]
        expected = F.cross_entropy(
            logits.double(), target, ignore_index=PAD, label_smoothing=0.1, reduction="sum"
        )
        torch.testing.assert_close(first.double(), expected, rtol=1e-6, atol=0)
    finally:
        mixnmt.loss._fused.cache_clear()
