"""Label-smoothed cross-entropy in two passes over the logits.

The target distribution q puts 1 - eps on the reference token and eps / V on every
token (as `F.cross_entropy(label_smoothing=eps)` does), so

    loss  = -sum_v q_v log p_v = -(1 - eps) log p_y - eps/V sum_v log p_v
    dloss/dlogits = p - q

The backward pass is a single in-place pass over the probabilities, where PyTorch's
composite version writes several (N, V) temporaries (the NLL gradient, the smoothing
gradient, their sum and the log-softmax backward): on the CPU those passes over a large
vocabulary cost more time than the output projection itself. fp32 logits keep their
log-probabilities for it; half-precision logits (mixed precision) are computed on in
fp32 a few rows at a time on the CPU, and all at once on a GPU.
"""

from __future__ import annotations

import torch
from torch import Tensor

from mixnmt.symbols import PAD

ROWS = 512
"""Rows of half-precision logits converted to fp32 at a time on the CPU (512 x 8000 fit in
its cache; fewer rows cost more in per-chunk overhead than they save): no (N, V) fp32
tensor is made, and the backward pass recomputes the softmax from the saved logits
instead of reading it back from memory."""


class _SmoothedCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor, eps: float) -> Tensor:
        real = target != PAD  # (N,)
        ctx.eps, ctx.dtype, ctx.half = eps, logits.dtype, logits.dtype in (torch.bfloat16, torch.float16)
        if not ctx.half:  # one pass; its log-probabilities kept for backward
            logp = logits.float().log_softmax(-1)  # (N, V)
            ctx.save_for_backward(logp, target, real)
            return _summed(logp, target, real, eps)
        ctx.save_for_backward(logits, target, real)
        ctx.rows = ROWS if logits.device.type == "cpu" else len(logits)  # a GPU: one launch each
        chunks = _chunks(ctx.rows, logits, target, real)
        return torch.stack([_summed(x.log_softmax(-1, torch.float32), t, r, eps) for x, t, r in chunks]).sum()

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:
        saved, target, real = ctx.saved_tensors
        if not ctx.half:
            return _gradient(saved.exp_(), target, real, grad, ctx.eps).to(ctx.dtype), None, None  # in place
        g = torch.empty_like(saved)
        for out, (x, t, r) in zip(g.split(ctx.rows), _chunks(ctx.rows, saved, target, real)):
            out.copy_(_gradient(x.softmax(-1, torch.float32), t, r, grad, ctx.eps))
        return g, None, None


def _chunks(rows: int, *tensors: Tensor):
    """The tensors' first `rows` rows together, then the next ..."""
    return zip(*(x.split(rows) for x in tensors))


def _summed(logp: Tensor, target: Tensor, real: Tensor, eps: float) -> Tensor:
    """Summed loss of log-probabilities (n, V) over the real rows."""
    nll = -logp.gather(1, target[:, None]).squeeze(1)  # (n,)
    smooth = -logp.mean(-1)  # (n,)
    return torch.where(real, (1 - eps) * nll + eps * smooth, 0.0).sum()  # no boolean indexing: no sync


def _gradient(p: Tensor, target: Tensor, real: Tensor, grad: Tensor, eps: float) -> Tensor:
    """dloss/dlogits = p - q, in place in the probabilities p (n, V); none at padding."""
    n, v = p.shape
    p.sub_(eps / v)
    p[torch.arange(n, device=p.device), target] -= 1 - eps
    return p.mul_((grad * real)[:, None])


def smoothed_cross_entropy(logits: Tensor, target: Tensor, eps: float) -> Tensor:
    """Summed label-smoothed cross-entropy of logits (N, V) against target ids (N,),
    ignoring PAD targets; equal to F.cross_entropy(..., ignore_index=PAD,
    label_smoothing=eps, reduction="sum"), with the same gradient."""
    return _SmoothedCrossEntropy.apply(logits, target, eps)
