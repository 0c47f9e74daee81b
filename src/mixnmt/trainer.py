"""The training step and what it carries: AdamW with inverse-sqrt warmup, label
smoothing and clipping, the device's tally of the loss, validation, the best and the
averaged weights, and the whole state to save and resume. What runs a training job is
mixnmt.train; benchmarks and the CUDA tests use the Trainer alone."""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
from torch import Tensor

from mixnmt.batching import Batch, ParallelData
from mixnmt.config import TrainConfig
from mixnmt.device import autocast_dtype
from mixnmt.loss import smoothed_cross_entropy
from mixnmt.models import Seq2Seq
from mixnmt.usage import ComponentUsage, mixtures

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """Where a run is, and what it has measured so far."""

    epoch: int = 1
    position: int = 0  # batches of this epoch already trained on
    step: int = 0
    loss_sum: float = 0.0  # this epoch's summed training loss ...
    tokens: int = 0  # ... over this many target tokens
    epoch_seconds: float = 0.0  # time in training steps this epoch
    trained_tokens: int = 0  # target tokens of the whole run ...
    train_seconds: float = 0.0  # ... and the time its training steps took
    seconds: float = 0.0  # wall time of the whole run, validation included
    rows: list[dict[str, Any]] = field(default_factory=list)
    best_loss: float = math.inf
    best_epoch: int = 0
    best_step: int = 0

    def add_time(self, seconds: float) -> None:
        """A training step's time, counted in the epoch's, the steps' and the run's."""
        self.epoch_seconds += seconds
        self.train_seconds += seconds
        self.seconds += seconds


class NonFiniteLoss(Exception):
    def __init__(self, value: float, step: int):
        super().__init__(value, step)
        self.value, self.step = value, step


class Tally:
    """What the training steps measured since the last `read`, kept on the device so
    that a step never waits for it: the summed loss, and the first step whose loss (or
    gradient norm) was not finite, with that value."""

    def __init__(self, device: torch.device):
        self.device = device
        self.reset()

    def reset(self) -> None:
        zero = torch.zeros((), device=self.device)
        self.loss_sum, self.bad_step, self.bad_value = zero.double(), zero.long(), zero

    def add(self, step: int, loss: Tensor, norm: Tensor | None) -> None:
        """Count training step `step`'s summed loss; `norm`, if given, must be finite too."""
        loss = loss.detach().float()
        value = loss if norm is None else torch.where(torch.isfinite(loss), norm.float(), loss)
        first = ~torch.isfinite(value) & (self.bad_step == 0)
        self.bad_step = torch.where(first, step, self.bad_step)
        self.bad_value = torch.where(first, value, self.bad_value)
        self.loss_sum += loss.double()

    def read(self) -> float:
        """The summed loss since the last read (a wait for the device); raises
        NonFiniteLoss for the first non-finite step among them."""
        loss_sum, bad_step, bad_value = self.loss_sum.item(), int(self.bad_step), float(self.bad_value)
        self.reset()
        if bad_step:
            raise NonFiniteLoss(bad_value, bad_step)
        return loss_sum


def inverse_sqrt(warmup: int):
    """Learning-rate factor: linear warmup to 1 over `warmup` steps, then 1/sqrt decay."""
    warmup = max(warmup, 1)
    return lambda step: min((step + 1) / warmup, math.sqrt(warmup / (step + 1)))


def token_loss(
    model: Seq2Seq | Callable[..., torch.Tensor],
    batch: Batch,
    label_smoothing: float,
    dtype: torch.dtype | None,
) -> torch.Tensor:
    """Summed cross-entropy of a batch's target tokens (padding ignored)."""
    with torch.autocast(batch.src.device.type, dtype=dtype, enabled=dtype is not None):
        logits = model(batch.src, batch.tgt_in)  # (B, T, V)
    return smoothed_cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), label_smoothing)


@torch.no_grad()
def validate(
    model: Seq2Seq, data: ParallelData, max_tokens: int, device: torch.device, dtype
) -> tuple[float, dict[str, float]]:
    """Mean per-token negative log-likelihood (nats, no smoothing) over `data`, and how
    a mixture model uses its candidates there: for each responsibility tensor the mean
    mass on stay, learned components and source, and per head (averaged over heads) the
    per-step entropy and the mutual information between step and candidate (columns
    "<weights>.stay", ..., "<weights>.mi"; none for other models)."""
    model.eval()
    total, tokens = torch.zeros((), dtype=torch.float64, device=device), 0
    usage = {name: ComponentUsage(model.learned_components) for name in mixtures(model)}
    for indices in data.batches(max_tokens):
        batch = data.collate(indices).to(device)
        tokens += batch.target_tokens
        with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
            logits, weights = model.teacher_forcing(batch.src, batch.tgt_in, keep_weights=bool(usage))
        total += smoothed_cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), 0.0).double()
        for name, stats in usage.items():
            stats.add(weights[name], batch.src if model.analysis_axes[name][0] == "source" else batch.tgt_in)
    model.train()
    split = {f"{name}.{k}": v for name, stats in usage.items() for k, v in stats.split().items()}
    return float(total) / tokens, split


def decayed(model: Seq2Seq, decay: str) -> Iterable[torch.nn.Parameter] | list[dict]:
    """AdamW's parameters: all of them at the configured weight decay (`decay: all`), or
    two groups, the weight matrices (2-D) at it and the rest (biases, gains, vectors) at 0."""
    if decay == "all":
        return model.parameters()
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    return [
        {"params": matrices},
        {"params": [p for p in model.parameters() if p.dim() < 2], "weight_decay": 0.0},
    ]


class Trainer:
    """A model with its optimiser, schedule, progress and best weights, all resumable."""

    def __init__(self, model: Seq2Seq, config: TrainConfig, device: torch.device):
        self.model, self.config, self.device = model, config, device
        self.dtype = autocast_dtype(device, config.precision)
        self.optimizer = torch.optim.AdamW(
            decayed(model, config.decay),
            lr=config.lr,
            betas=config.betas,
            weight_decay=config.weight_decay,
            fused=True,
        )
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimizer, inverse_sqrt(config.warmup))
        self.scaler = torch.amp.GradScaler(device.type, enabled=self.dtype == torch.float16)
        if config.compile:  # in place: checkpoints keep the plain model's keys
            model.compile_steps()
        self.tally = Tally(device)
        self.progress = Progress()
        self.best: dict[str, torch.Tensor] = {}  # weights of the best epoch so far
        self.recent: list[dict[str, torch.Tensor]] = []  # of the last `average` epochs

    @property
    def spent(self) -> bool:
        """The budget is spent: every epoch trained, the step cap reached, or patience out."""
        p, cap, patience = self.progress, self.config.max_steps, self.config.patience
        stalled = patience is not None and p.epoch - 1 - p.best_epoch >= patience
        return p.epoch > self.config.epochs or (cap is not None and p.step >= cap) or stalled

    @property
    def finished(self) -> bool:
        """Spent, and the last steps validated (a run stopped after its last step under the
        cap resumes to validate them, as an uninterrupted run does)."""
        return self.spent and self.progress.position == 0

    def train_step(self, batch: Batch) -> None:
        """One update, without waiting for the device: the loss and its finiteness stay
        there until `settle` reads them."""
        loss = token_loss(self.model, batch.to(self.device), self.config.label_smoothing, self.dtype)
        self.scaler.scale(loss / batch.target_tokens + self.model.auxiliary_loss()).backward()
        self.scaler.unscale_(self.optimizer)
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.clip_norm)
        self.scaler.step(self.optimizer)  # fp16: skips a step whose gradients overflowed
        self.scaler.update()
        self.schedule.step()
        self.optimizer.zero_grad(set_to_none=True)
        p = self.progress
        p.step += 1
        p.position += 1
        p.tokens += batch.target_tokens
        p.trained_tokens += batch.target_tokens
        self.tally.add(p.step, loss, None if self.scaler.is_enabled() else norm)

    def settle(self) -> None:
        """Bring the device's tally into the progress (a wait for the device); raises
        NonFiniteLoss if a step since the last call had a nan/inf loss or gradient norm:
        the weights are then spoilt, and only an earlier saved state is good."""
        self.progress.loss_sum += self.tally.read()

    def end_epoch(self, valid_loss: float, valid_bleu: float, usage: dict[str, float]) -> dict[str, Any]:
        """Record the epoch's metrics, keep the weights if they are the best, move on."""
        p = self.progress
        row = {
            "epoch": p.epoch,
            "step": p.step,
            "train_loss": p.loss_sum / max(p.tokens, 1),
            "valid_loss": valid_loss,
            "valid_ppl": math.exp(min(valid_loss, 50.0)),
            "valid_bleu": valid_bleu,
            "tokens_per_s": p.tokens / max(p.epoch_seconds, 1e-9),
            "seconds": p.seconds,
            **usage,
        }
        p.rows.append(row)
        if valid_loss < p.best_loss:
            p.best_loss, p.best_epoch, p.best_step = valid_loss, p.epoch, p.step
            self.best = self.weights()
        if self.config.average > 1:
            self.recent = [*self.recent, self.weights()][-self.config.average :]
        p.epoch, p.position, p.loss_sum, p.tokens, p.epoch_seconds = p.epoch + 1, 0, 0.0, 0, 0.0
        return row

    def state_dict(self) -> dict[str, Any]:
        self.settle()
        rng = {"torch": torch.get_rng_state(), "python": random.getstate()}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state_all()
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "schedule": self.schedule.state_dict(),
            "scaler": self.scaler.state_dict(),
            "rng": rng,
            "progress": asdict(self.progress),
            "best": self.best,
            "recent": self.recent,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.schedule.load_state_dict(state["schedule"])
        self.scaler.load_state_dict(state["scaler"])
        torch.set_rng_state(state["rng"]["torch"])
        random.setstate(state["rng"]["python"])
        if "cuda" in state["rng"] and self.device.type == "cuda":
            torch.cuda.set_rng_state_all(state["rng"]["cuda"])
        elif "cuda" in state["rng"]:  # saved on a GPU node, resumed on a CPU
            log.warning("the saved state comes from a GPU: its CUDA random state is not restored here")
        self.progress = Progress(**state["progress"])
        self.best = {k: v.to(self.device) for k, v in state["best"].items()}
        self.recent = [{k: v.to(self.device) for k, v in w.items()} for w in state["recent"]]

    def weights(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}

    def final_weights(self, valid_data: ParallelData) -> dict[str, Any]:
        """Load the weights to ship: the best epoch's, or the mean of the last `average`
        epochs' if its validation loss is lower. Returns what was chosen."""
        p = self.progress
        chosen = {"epoch": p.best_epoch, "step": p.best_step, "valid_loss": p.best_loss}
        self.model.load_state_dict(self.best)
        if len(self.recent) < 2:
            return chosen
        mean = {
            k: torch.stack([w[k].float() for w in self.recent]).mean(0).to(v.dtype)
            for k, v in self.best.items()
        }
        self.model.load_state_dict(mean)
        loss, _ = validate(self.model, valid_data, self.config.max_tokens, self.device, self.dtype)
        epochs = [p.epoch - len(self.recent) + i for i in range(len(self.recent))]
        log.info("mean of epochs %s: valid loss %.4f (best single epoch %.4f)", epochs, loss, p.best_loss)
        if loss < p.best_loss:
            return {"averaged_epochs": epochs, "step": p.step, "valid_loss": loss}
        self.model.load_state_dict(self.best)
        return chosen
