"""Label-smoothed cross-entropy in two passes over the logits.

The target distribution q puts 1 - eps on the reference token and eps / V on every
token (as `F.cross_entropy(label_smoothing=eps)` does), so

    loss  = -sum_v q_v log p_v = -(1 - eps) log p_y - eps/V sum_v log p_v
    dloss/dlogits = p - q

The backward pass is a single in-place pass over the saved log-probabilities, where
PyTorch's composite version writes several (N, V) temporaries (the NLL gradient, the
smoothing gradient, their sum and the log-softmax backward): on the CPU those passes
over a large vocabulary cost more time than the output projection itself.
"""

from __future__ import annotations

import torch
from torch import Tensor

from mixnmt.symbols import PAD


class _SmoothedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor, eps: float) -> Tensor:
        logp = logits.float().log_softmax(-1)  # (N, V)
        real = target != PAD  # (N,)
        nll = -logp.gather(1, target[:, None]).squeeze(1)  # (N,)
        smooth = -logp.mean(-1)  # (N,)
        loss = torch.where(real, (1 - eps) * nll + eps * smooth, 0.0).sum()  # no boolean indexing: no sync
        ctx.save_for_backward(logp, target, real)
        ctx.eps, ctx.dtype = eps, logits.dtype
        return loss

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:
        logp, target, real = ctx.saved_tensors
        n, v = logp.shape
        g = logp.exp_()  # p, in place: the saved tensor is not needed again
        g.sub_(ctx.eps / v)
        g[torch.arange(n, device=g.device), target] -= 1 - ctx.eps
        g.mul_((grad * real)[:, None])  # padding rows get no gradient
        return g.to(ctx.dtype), None, None


def smoothed_cross_entropy(logits: Tensor, target: Tensor, eps: float) -> Tensor:
    """Summed label-smoothed cross-entropy of logits (N, V) against target ids (N,),
    ignoring PAD targets; equal to F.cross_entropy(..., ignore_index=PAD,
    label_smoothing=eps, reduction="sum"), with the same gradient."""
    return _SmoothedCrossEntropy.apply(logits, target, eps)
