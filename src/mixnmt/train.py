"""Training: token-count batches, AdamW with inverse-sqrt warmup, label smoothing, best checkpoint."""

from __future__ import annotations

import copy
import json
import logging
import math
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from mixnmt import MixnmtError, checkpoint
from mixnmt.batching import ParallelData, padding_fraction
from mixnmt.files import write_lines, write_text
from mixnmt.models import Seq2Seq, build, resolve
from mixnmt.tokenize import PAD, Tokenizer

log = logging.getLogger(__name__)

METRICS = ("epoch", "step", "train_loss", "valid_loss", "valid_ppl", "tokens_per_s", "seconds")


@dataclass(frozen=True)
class TrainConfig:
    """The `train` section of the config (plus the global seed and step cap)."""

    max_tokens: int = 4096
    epochs: int = 30
    max_steps: int | None = None
    lr: float = 7e-4
    warmup: int = 1000
    betas: tuple[float, float] = (0.9, 0.98)
    weight_decay: float = 0.0
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    seed: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "betas", tuple(self.betas))  # YAML gives a list


def inverse_sqrt(warmup: int):
    """Learning-rate factor: linear warmup to 1 over `warmup` steps, then 1/sqrt decay."""
    warmup = max(warmup, 1)
    return lambda step: min((step + 1) / warmup, math.sqrt(warmup / (step + 1)))


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def autocast_dtype(device: torch.device) -> torch.dtype | None:
    """Mixed precision on CUDA (bf16 where supported, else fp16); full fp32 elsewhere."""
    if device.type != "cuda":
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def token_loss(model: Seq2Seq, batch, label_smoothing: float, dtype: torch.dtype | None) -> torch.Tensor:
    """Summed cross-entropy of a batch's target tokens (padding ignored)."""
    with torch.autocast(batch.src.device.type, dtype=dtype, enabled=dtype is not None):
        logits = model(batch.src, batch.tgt_in)  # (B, T, V)
    return F.cross_entropy(
        logits.float().flatten(0, 1),
        batch.tgt_out.flatten(),
        ignore_index=PAD,
        label_smoothing=label_smoothing,
        reduction="sum",
    )


@torch.no_grad()
def validate(model: Seq2Seq, data: ParallelData, max_tokens: int, device: torch.device, dtype) -> float:
    """Mean per-token negative log-likelihood (nats, no smoothing) over `data`."""
    model.eval()
    total = tokens = 0.0
    for indices in data.batches(max_tokens):
        batch = data.collate(indices)
        tokens += batch.target_tokens
        total += float(token_loss(model, batch.to(device), 0.0, dtype))
    model.train()
    return total / tokens


def train(
    model_name: str,
    hparams: dict,
    config: TrainConfig,
    train_files: tuple[Path, Path],
    valid_files: tuple[Path, Path],
    spm_files: tuple[Path, Path],
    checkpoint_path: Path,
    metrics_path: Path,
    manifest_path: Path,
) -> None:
    """Train `model_name`; write its best checkpoint (by validation loss), per-epoch
    metrics, and a JSON manifest of the run (parameter count, resolved settings)."""
    seed_everything(config.seed)
    device = pick_device()
    dtype = autocast_dtype(device)
    src_tok, tgt_tok = Tokenizer(spm_files[0]), Tokenizer(spm_files[1])
    shared = Path(spm_files[0]).resolve() == Path(spm_files[1]).resolve()
    vocab = {
        "src": checkpoint.vocab_record(src_tok),
        "tgt": checkpoint.vocab_record(tgt_tok),
        "shared": shared,
    }
    hparams = resolve(model_name, hparams)
    model = build(model_name, hparams, len(src_tok), len(tgt_tok), shared).to(device)
    train_data, valid_data = ParallelData.load(*train_files), ParallelData.load(*valid_files)
    if not len(train_data) or not len(valid_data):
        raise MixnmtError(f"{train_files[0]} or {valid_files[0]}: no sentences to train or validate on")
    n_params = sum(p.numel() for p in model.parameters())
    log.info(
        "%s: %d parameters on %s (autocast %s); config %s",
        model_name,
        n_params,
        device,
        dtype,
        asdict(config),
    )

    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=config.lr,
        betas=config.betas,
        weight_decay=config.weight_decay,
        fused=device.type == "cuda",
    )
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, inverse_sqrt(config.warmup))
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)
    order = torch.Generator().manual_seed(config.seed)

    rows: list[dict] = []
    best_loss, best_state = math.inf, None
    step, start = 0, time.perf_counter()
    for epoch in range(1, config.epochs + 1):
        batches = train_data.batches(config.max_tokens, order)
        if epoch == 1:
            log.info(
                "%d batches per epoch, %.1f%% padding",
                len(batches),
                100 * padding_fraction(train_data, batches),
            )
        loss_sum, tokens, epoch_start = torch.zeros((), device=device), 0, time.perf_counter()
        progress = tqdm(
            batches,
            desc=f"{model_name} epoch {epoch}",
            file=sys.stderr,
            mininterval=1 if sys.stderr.isatty() else 30,
            leave=False,
        )
        for indices in progress:
            batch = train_data.collate(indices)
            n = batch.target_tokens
            loss = token_loss(model, batch.to(device), config.label_smoothing, dtype)
            scaler.scale(loss / n).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
            scaler.step(optimizer)
            scaler.update()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            loss_sum += loss.detach()
            tokens += n
            step += 1
            if config.max_steps is not None and step >= config.max_steps:
                break
        progress.close()
        train_seconds = time.perf_counter() - epoch_start
        if not math.isfinite(float(loss_sum)):
            raise MixnmtError(f"{model_name}: training loss is not finite at step {step}; lower train.lr")
        valid_loss = validate(model, valid_data, config.max_tokens, device, dtype)
        rows.append(
            {
                "epoch": epoch,
                "step": step,
                "train_loss": float(loss_sum) / tokens,
                "valid_loss": valid_loss,
                "valid_ppl": math.exp(min(valid_loss, 50.0)),
                "tokens_per_s": tokens / train_seconds,
                "seconds": time.perf_counter() - start,
            }
        )
        log.info(
            "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in rows[-1].items())
        )
        write_lines(
            metrics_path, ["\t".join(METRICS)] + ["\t".join(_fmt(r[k]) for k in METRICS) for r in rows]
        )
        if valid_loss < best_loss:
            best_loss, best_state = valid_loss, (epoch, step, copy.deepcopy(model.state_dict()))
        if config.max_steps is not None and step >= config.max_steps:
            break

    best_epoch, best_step, state = best_state
    model.load_state_dict(state)
    checkpoint.save(
        checkpoint_path,
        model_name,
        hparams,
        model,
        vocab,
        epoch=best_epoch,
        step=best_step,
        valid_loss=best_loss,
        params=n_params,
    )
    manifest = {
        "model": model_name,
        "params": n_params,
        "hparams": hparams,
        "train": asdict(config),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "steps": step,
        "best": {"epoch": best_epoch, "step": best_step, "valid_loss": best_loss},
        "seconds": time.perf_counter() - start,
    }
    write_text(manifest_path, json.dumps(manifest, indent=2) + "\n")
    log.info(
        "%s: best epoch %d (step %d, valid loss %.4f) -> %s",
        model_name,
        best_epoch,
        best_step,
        best_loss,
        checkpoint_path,
    )


def _fmt(value: float | int) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)
