"""A training job: the model, data and vocabularies of a config entry, trained on
token-count batches (the step: mixnmt.trainer) until its budget is spent; the best
checkpoint by validation loss, the per-epoch metrics and the run's manifest; resumable at
any step.

The run's whole state (weights, optimiser, schedule, RNG, data position, metrics) is
saved atomically every `save_every` steps, at every epoch end and on SIGTERM/SIGINT,
to a file outside the declared outputs. Rerunning the same command resumes from it,
and the final checkpoint is byte-identical to that of an uninterrupted run.
"""

from __future__ import annotations

import logging
import math
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

import torch
from sacrebleu.metrics import BLEU
from tqdm import tqdm

from mixnmt import MixnmtError, checkpoint, determinism
from mixnmt.batching import ParallelData, padding_fraction
from mixnmt.config import TrainConfig
from mixnmt.decode import DecodeConfig, translate_ids
from mixnmt.device import autocast_dtype, emulated_bf16, peak_memory_mb, pick_device, precision
from mixnmt.files import remove_leftovers, sha256sum, write_json, write_lines
from mixnmt.manifest import manifest
from mixnmt.models import Seq2Seq, build, parameter_counts, resolve
from mixnmt.paths import METRICS
from mixnmt.runs import definition, fingerprint, identity
from mixnmt.stopping import StopRequested, stop_requests
from mixnmt.tokenize import Tokenizer
from mixnmt.trainer import NonFiniteLoss, Trainer, validate

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


class ValidationBleu:
    """Corpus BLEU of greedy translations of the first validation sentences, against
    their detokenised references: the learning curve's quality axis. Its decoding is
    fixed, so that changing the `decode` settings never retrains a model."""

    search = DecodeConfig(beam=1, length_penalty=1.0, max_len_a=1.5, max_len_b=10, batch_size=64)

    def __init__(
        self,
        data: ParallelData,
        tokenizer: Tokenizer,
        sentences: int,
        device: torch.device,
        dtype: torch.dtype | None,
    ):
        self.sources, self.tokenizer, self.device, self.dtype = data.src[:sentences], tokenizer, device, dtype
        self.references = tokenizer.decode(data.tgt[:sentences])

    def __call__(self, model: Seq2Seq) -> float:
        if not self.sources:
            return math.nan
        model.eval()
        hypotheses = translate_ids(model, self.sources, self.search, self.device, self.dtype)
        model.train()
        return BLEU().corpus_score(self.tokenizer.decode(hypotheses), [self.references]).score


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
        print(f"{self.path}: resuming at epoch {trainer.progress.epoch}, step {self.saved}", flush=True)
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
    dtype = autocast_dtype(device, config.precision)
    log.info("%s: %d parameters on %s (autocast %s)", name, params[0], device, dtype)
    if warning := emulated_bf16(config.precision, device):
        log.warning(warning)
    return Run(
        name,
        arch,
        hparams,
        model,
        vocab,
        train_data,
        valid_data,
        ValidationBleu(valid_data, tgt_tok, config.bleu_sentences, device, dtype),
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


def stop(trainer: Trainer, run: Run, state: StateFile, sig: signal.Signals) -> NoReturn:
    """Save the state after the step in which `sig` arrived, say so, and end the run."""
    log.warning("stopping for %s", sig.name)
    state.save(trainer)
    step = trainer.progress.step
    print(
        f"{run.name} seed {trainer.config.seed}: stopped at step {step} ({sig.name}); its state is "
        "saved, and the same command resumes it",
        flush=True,
    )
    raise MixnmtError(
        f"{run.name}: interrupted at step {step}; state saved to {state.path}; "
        "run the same command again to resume"
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
            due = time.monotonic() - shown >= SHOW_EVERY  # a line at the terminal, however slow a step
            if p.step % SETTLE_EVERY == 0 or due:
                trainer.settle()
                progress_bar.set_postfix(loss=f"{p.loss_sum / max(p.tokens, 1):.3f}", refresh=False)
            p.add_time(time.perf_counter() - start)  # before the line, which counts this step
            if due:
                print(progress_line(run.name, trainer, len(batches)), flush=True)
                shown = time.monotonic()
            if sig := stop_requested():
                stop(trainer, run, state, sig)
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
        compute={
            "precision": precision(config.precision, run.device),
            "autocast": str(trainer.dtype).removeprefix("torch.") if trainer.dtype else None,
            "compile": config.compile,
            "threads": torch.get_num_threads(),
        },
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
