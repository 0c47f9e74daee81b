"""Training: token-count batches, AdamW with inverse-sqrt warmup, label smoothing and
clipping; the best checkpoint by validation loss; resumable at any step.

The run's whole state (weights, optimiser, schedule, RNG, data position, metrics) is
saved atomically every `save_every` steps, at every epoch end and on SIGTERM/SIGINT,
to a file outside the declared outputs. Rerunning the same command resumes from it,
and the final checkpoint is byte-identical to that of an uninterrupted run.
"""

from __future__ import annotations

import logging
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from sacrebleu.metrics import BLEU
from torch import Tensor
from tqdm import tqdm

from mixnmt import MixnmtError, checkpoint, determinism
from mixnmt.batching import Batch, ParallelData, padding_fraction
from mixnmt.config import TrainConfig
from mixnmt.decode import DecodeConfig, translate_ids
from mixnmt.device import autocast_dtype, peak_memory_mb, pick_device
from mixnmt.files import remove_leftovers, sha256sum, write_json, write_lines
from mixnmt.inputs import METRICS
from mixnmt.loss import smoothed_cross_entropy
from mixnmt.manifest import manifest
from mixnmt.models import Seq2Seq, build, parameter_counts, resolve
from mixnmt.runs import definition, fingerprint, identity
from mixnmt.stopping import StopRequested, stop_requests
from mixnmt.tokenize import Tokenizer
from mixnmt.usage import ComponentUsage, mixtures

log = logging.getLogger(__name__)

SETTLE_EVERY = 100
"""Training steps between reads of the device's tally (each read waits for the device)."""
SHOW_EVERY = 30.0
"""Seconds between progress lines on standard output (the terminal, under Snakemake)."""


@dataclass(frozen=True)
class TrainFiles:
    train: tuple[Path, Path]  # source and target id files
    valid: tuple[Path, Path]
    spm: tuple[Path, Path]  # source and target SentencePiece models
    checkpoint: Path
    metrics: Path
    manifest: Path
    state: Path  # the resumable state, outside the declared outputs


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


class ValidationBleu:
    """Corpus BLEU of greedy translations of the first validation sentences, against
    their detokenised references: the learning curve's quality axis. Its decoding is
    fixed, so that changing the `decode` settings never retrains a model."""

    search = DecodeConfig(beam=1, length_penalty=1.0, max_len_a=1.5, max_len_b=10, batch_size=64)

    def __init__(self, data: ParallelData, tokenizer: Tokenizer, sentences: int, device: torch.device):
        self.sources, self.tokenizer, self.device = data.src[:sentences], tokenizer, device
        self.references = tokenizer.decode(data.tgt[:sentences])

    def __call__(self, model: Seq2Seq) -> float:
        if not self.sources:
            return math.nan
        model.eval()
        hypotheses = translate_ids(model, self.sources, self.search, self.device)
        model.train()
        return BLEU().corpus_score(self.tokenizer.decode(hypotheses), [self.references]).score


class Trainer:
    """A model with its optimiser, schedule, progress and best weights, all resumable."""

    def __init__(self, model: Seq2Seq, config: TrainConfig, device: torch.device):
        self.model, self.config, self.device = model, config, device
        self.dtype = autocast_dtype(device)
        self.optimizer = torch.optim.AdamW(
            model.parameters(),
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


@dataclass
class StateFile:
    """Where one run's resumable state lives, and the fingerprint it must carry to be
    this run's (model, settings, vocabularies and the inputs' digests)."""

    path: Path
    fingerprint: dict[str, Any]
    saved: int | None = None  # the step of the last state saved or resumed

    def save(self, trainer: Trainer) -> None:
        """Save the trainer's state (raising NonFiniteLoss instead if it is spoilt)."""
        state = {"format": checkpoint.FORMAT, "fingerprint": self.fingerprint, **trainer.state_dict()}
        checkpoint.write(self.path, state)
        self.saved = trainer.progress.step
        log.info("saved the training state at step %d to %s", self.saved, self.path)

    def resume(self, trainer: Trainer) -> bool:
        """Load this very run's saved state into the trainer, if there is one; a stale one
        is ignored, an unreadable one moved aside to `<path>.unreadable`."""
        if not self.path.exists():
            return False
        try:
            state = checkpoint.read(self.path)
        except MixnmtError as e:  # truncated or corrupt: kept for a look, out of the way
            aside = self.path.with_name(f"{self.path.name}.unreadable")
            self.path.replace(aside)
            log.warning("%s; moved it to %s and starting afresh", e, aside)
            return False
        if state.get("fingerprint") != self.fingerprint:
            log.warning(
                "%s belongs to a different run (config, data or code changed); starting afresh", self.path
            )
            return False
        trainer.load_state_dict(state)
        self.saved = trainer.progress.step
        log.info("resuming from %s at epoch %d, step %d", self.path, trainer.progress.epoch, self.saved)
        return True

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        remove_leftovers(self.path)


def write_metrics(path: Path, rows: list[dict[str, Any]], run: dict[str, Any]) -> None:
    """METRICS, then any mixture-usage columns, one row per epoch; last the run's
    `model`, `seed` and `fingerprint`."""

    def fmt(value: float | int) -> str:
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    rows = [r | {k: run[k] for k in ("model", "seed", "fingerprint")} for r in rows]
    columns = [*METRICS, *(k for k in rows[0] if k not in METRICS)] if rows else list(METRICS)
    write_lines(path, ["\t".join(columns)] + ["\t".join(fmt(r[k]) for k in columns) for r in rows])


@dataclass
class Run:
    """What `prepare` makes of a config entry and the files: the model, its data, and what
    identifies the run."""

    name: str
    arch: str
    hparams: dict[str, Any]
    model: Seq2Seq
    vocab: dict[str, Any]
    train_data: ParallelData
    valid_data: ParallelData
    valid_bleu: ValidationBleu
    digests: dict[str, str]  # path -> sha256 of every input file
    params: tuple[int, int]  # with and without embeddings
    device: torch.device
    definition: dict[str, Any]  # what defines the run (mixnmt.runs)

    @property
    def identity(self) -> dict[str, Any]:
        """The run as its files record it (the checkpoint's sha256 is added once written)."""
        return identity(self.name, self.definition["train"]["seed"], fingerprint(self.definition))

    @property
    def state_fingerprint(self) -> dict[str, Any]:
        """What a saved state must match to be this run's: its definition (settings but
        `save_every`), the model it resolves to, the vocabularies and the inputs' digests."""
        return {
            "run": self.definition,
            "arch": self.arch,
            "hparams": self.hparams,
            "vocab": self.vocab,
            "inputs": self.digests,
        }


def prepare(
    name: str, entry: dict | None, config: TrainConfig, files: TrainFiles, data: dict | None = None
) -> Run:
    """Build model `name` of config entry `entry` on this machine's device and load its
    data and vocabularies; `data` is what defines the data (`runs.data_definition`)."""
    device = pick_device()
    src_tok, tgt_tok = Tokenizer(files.spm[0]), Tokenizer(files.spm[1])
    shared = Path(files.spm[0]).resolve() == Path(files.spm[1]).resolve()
    vocab = {
        "src": checkpoint.vocab_record(src_tok),
        "tgt": checkpoint.vocab_record(tgt_tok),
        "shared": shared,
    }
    arch, hparams = resolve(name, entry)
    model = build(arch, hparams, len(src_tok), len(tgt_tok), shared, name).to(device)
    sizes = (len(src_tok), len(tgt_tok))
    train_data, valid_data = ParallelData.load(*files.train, sizes), ParallelData.load(*files.valid, sizes)
    if not len(train_data) or not len(valid_data):
        raise MixnmtError(f"{files.train[0]} or {files.valid[0]}: no sentences to train or validate on")
    params = parameter_counts(model)
    log.info("%s: %d parameters on %s (autocast %s)", name, params[0], device, autocast_dtype(device))
    return Run(
        name,
        arch,
        hparams,
        model,
        vocab,
        train_data,
        valid_data,
        ValidationBleu(valid_data, tgt_tok, config.bleu_sentences, device),
        {str(path): sha256sum(path) for path in [*files.train, *files.valid, *files.spm]},
        params,
        device,
        definition(name, entry, config, data),
    )


def progress_line(name: str, trainer: Trainer, per_epoch: int) -> str:
    """Where a run is, for a person at the terminal: epoch and step of the planned total
    (epochs x steps per epoch, or max_steps if fewer), the epoch's loss and speed so far,
    and the time left at that speed (patience may end the run sooner)."""
    config, p = trainer.config, trainer.progress
    planned = (
        config.epochs * per_epoch
        if config.max_steps is None
        else min(config.epochs * per_epoch, config.max_steps)
    )
    left = (planned - p.step) * p.train_seconds / max(p.step, 1)
    eta = f"about {left / 60:.0f} min left" if left >= 60 else f"about {left:.0f} s left"
    speed = p.tokens / max(p.epoch_seconds, 1e-9)
    return (
        f"{name} seed {config.seed}: epoch {p.epoch}/{config.epochs}, step {p.step}/{planned}, "
        f"loss {p.loss_sum / max(p.tokens, 1):.3f}, {speed:.0f} tokens/s, {eta}"
    )


def train_epoch(trainer: Trainer, run: Run, state: StateFile, stop_requested: StopRequested) -> int:
    """The rest of the current epoch's steps, saving the state every `save_every` steps
    and stopping after the step in which `stop_requested` names a signal; the epoch's
    number of batches."""
    config, p = trainer.config, trainer.progress
    batches = run.train_data.batches(config.max_tokens, determinism.epoch_generator(config.seed, p.epoch))
    left = (
        len(batches)
        if config.max_steps is None
        else min(len(batches), p.position + config.max_steps - p.step)
    )
    shown = time.monotonic()
    progress_bar = tqdm(
        [] if trainer.spent else batches[p.position :],  # spent: only the validation is left
        desc=f"{run.name} epoch {p.epoch}",
        initial=p.position,
        total=left,  # the steps this epoch will take, under max_steps too
        file=sys.stderr,
        mininterval=1 if sys.stderr.isatty() else 30,
        leave=False,
    )
    try:
        for indices in progress_bar:
            start = time.perf_counter()
            trainer.train_step(run.train_data.collate(indices))
            if p.step % SETTLE_EVERY == 0:
                trainer.settle()
                progress_bar.set_postfix(loss=f"{p.loss_sum / max(p.tokens, 1):.3f}", refresh=False)
                if time.monotonic() - shown >= SHOW_EVERY:
                    print(progress_line(run.name, trainer, len(batches)), flush=True)
                    shown = time.monotonic()
            p.add_time(time.perf_counter() - start)
            if sig := stop_requested():
                log.warning("stopping for %s", sig.name)
                state.save(trainer)
                raise MixnmtError(
                    f"{run.name}: interrupted at step {p.step}; state saved to {state.path}; "
                    "run the same command again to resume"
                )
            if p.step % config.save_every == 0:
                state.save(trainer)
            if trainer.spent:
                break
        trainer.settle()
    except NonFiniteLoss as e:
        last = (
            f"the last good state (step {state.saved}) is in {state.path}"
            if state.saved
            else "no state was saved"
        )
        raise MixnmtError(
            f"{run.name}: the training loss became {e.value} at step {e.step}; {last}; "
            "lower train.lr or raise train.warmup"
        ) from None
    progress_bar.close()
    return len(batches)


def fit(trainer: Trainer, run: Run, state: StateFile, stop_requested: StopRequested) -> None:
    """Train until the epoch or step budget is spent: each epoch, its steps, then
    validation, metrics and a saved state."""
    p = trainer.progress
    while not trainer.finished:
        per_epoch = train_epoch(trainer, run, state, stop_requested)
        start = time.perf_counter()
        valid_loss, usage = validate(
            trainer.model, run.valid_data, trainer.config.max_tokens, trainer.device, trainer.dtype
        )
        bleu = run.valid_bleu(trainer.model)
        p.seconds += time.perf_counter() - start
        print(progress_line(run.name, trainer, per_epoch), flush=True)
        row = trainer.end_epoch(valid_loss, bleu, usage)
        log.info("  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()))
        state.save(trainer)


def finish(trainer: Trainer, run: Run, files: TrainFiles) -> None:
    """Write the weights to ship (best epoch or average), the per-epoch metrics and the
    run's manifest."""
    p, config = trainer.progress, trainer.config
    chosen = trainer.final_weights(run.valid_data)
    checkpoint.save(
        files.checkpoint,
        run.name,
        run.arch,
        run.hparams,
        run.model,
        run.vocab,
        params=run.params[0],
        definition=run.definition,
        fingerprint=run.identity["fingerprint"],
        **chosen,
    )
    weights = sha256sum(files.checkpoint)
    write_metrics(files.metrics, p.rows, run.identity)
    peak = peak_memory_mb(run.device)
    record = manifest(
        run.digests,
        run.device,
        run=run.identity | {"checkpoint": weights},
        definition=run.definition,
        model=run.name,
        arch=run.arch,
        checkpoint={"path": str(files.checkpoint), "sha256": weights},
        metrics={"path": str(files.metrics), "sha256": sha256sum(files.metrics)},
        params=run.params[0],
        params_no_embeddings=run.params[1],
        hparams=run.hparams,
        train=asdict(config),
        steps=p.step,
        best=chosen,
        seconds=p.seconds,
        tokens_per_s=p.trained_tokens / p.train_seconds,
        peak_memory=peak,
    )
    write_json(files.manifest, record)
    log.info("%s: kept %s -> %s; peak memory %s", run.name, chosen, files.checkpoint, peak)


def train(
    name: str,
    entry: dict | None,
    config: TrainConfig,
    files: TrainFiles,
    stop_requested: StopRequested | None = None,
    data: dict | None = None,
) -> None:
    """Train model `name` of config entry `entry` (`models.<name>`), resuming a saved
    state of the same run if there is one, and write its best checkpoint, per-epoch
    metrics, and the run manifest, each naming the run's fingerprint (of the entry, the
    settings and `data`, see `mixnmt.runs`). SIGTERM or SIGINT (or, if given, what
    `stop_requested` records) stops training after the current step, with the state saved."""
    determinism.setup(config.seed, config.deterministic)
    run = prepare(name, entry, config, files, data)
    state = StateFile(files.state, run.state_fingerprint)
    trainer = Trainer(run.model, config, run.device)
    if not state.resume(trainer):
        batches = run.train_data.batches(config.max_tokens, determinism.epoch_generator(config.seed, 1))
        padding = 100 * padding_fraction(run.train_data, batches)
        log.info("%d batches per epoch, %.1f%% padding", len(batches), padding)
    # While training, a signal stops after the current step; once the budget is spent,
    # the outputs are written first.
    with stop_requests(stop_requested) as requested:
        fit(trainer, run, state, requested)
        finish(trainer, run, files)
        state.remove()
