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
fp32 a few rows at a time on the CPU, and all at once on a GPU. On the CPU inductor
compiles the half-precision loss and its gradient into one pass each over the logits,
from each row's log-sum-exp (twice as fast as the eager passes, which run where it cannot
compile: no C++ compiler).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor

from mixnmt.compiled import try_compile
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
        fused = _fused() if logits.device.type == "cpu" else None
        if fused:  # one pass over all rows; the gradient from each row's log-sum-exp
            loss, lse = fused[0](logits.detach(), target, real, torch.tensor(eps))  # eps: no constant
            ctx.save_for_backward(logits, target, real, lse)
            return loss
        ctx.save_for_backward(logits, target, real)
        ctx.rows = ROWS if logits.device.type == "cpu" else len(logits)  # a GPU: one launch each
        chunks = _chunks(ctx.rows, logits, target, real)
        return torch.stack([_summed(x.log_softmax(-1, torch.float32), t, r, eps) for x, t, r in chunks]).sum()

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:
        saved, target, real, *lse = ctx.saved_tensors
        if not ctx.half:
            return _gradient(saved.exp_(), target, real, grad, ctx.eps).to(ctx.dtype), None, None  # in place
        if lse:
            return _fused()[1](saved.detach(), target, *lse, grad * real, torch.tensor(ctx.eps)), None, None
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


def _half_loss(x: Tensor, target: Tensor, real: Tensor, eps: Tensor) -> tuple[Tensor, Tensor]:
    """Summed loss of half-precision logits (n, V) over the real rows, in fp32, and each
    row's log-sum-exp (n,): -log p_v = lse - x_v."""
    xf = x.float()
    lse = xf.logsumexp(-1)
    nll, smooth = lse - xf.gather(1, target[:, None]).squeeze(1), lse - xf.mean(-1)
    return torch.where(real, (1 - eps) * nll + eps * smooth, 0.0).sum(), lse


def _half_gradient(x: Tensor, target: Tensor, lse: Tensor, scale: Tensor, eps: Tensor) -> Tensor:
    """(p - q) * scale of half-precision logits (n, V), in their dtype, from their rows'
    log-sum-exp; `scale` (n,) is zero at padding. The targets' entries are written apart
    (a comparison with every column costs as much as the rest)."""
    v, t = x.size(-1), target[:, None]
    g = (((x.float() - lse[:, None]).exp() - eps / v) * scale[:, None]).to(x.dtype)
    p_t = (x.gather(1, t).float() - lse[:, None]).exp()
    return g.scatter_(1, t, ((p_t - (1 - eps) - eps / v) * scale[:, None]).to(x.dtype))


@functools.cache
def _fused() -> tuple[Callable, Callable] | None:
    """`_half_loss` and `_half_gradient` compiled for the CPU, or None where they do not compile."""
    x, t, eps = torch.zeros(3, 5, dtype=torch.bfloat16), torch.tensor([4, 1, PAD]), torch.tensor(0.1)
    loss = try_compile(_half_loss, x, t, t != PAD, eps)
    gradient = loss and try_compile(_half_gradient, x, t, torch.zeros(3), torch.ones(3), eps)
    return (loss, gradient) if gradient else None


def smoothed_cross_entropy(logits: Tensor, target: Tensor, eps: float) -> Tensor:
    """Summed label-smoothed cross-entropy of logits (N, V) against target ids (N,),
    ignoring PAD targets; equal to F.cross_entropy(..., ignore_index=PAD,
    label_smoothing=eps, reduction="sum"), with the same gradient."""
    return _SmoothedCrossEntropy.apply(logits, target, eps)
