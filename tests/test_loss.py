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
