"""Checkpoints: plain tensors and built-in types only, so they load with weights_only=True."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from mixnmt import MixnmtError
from mixnmt.files import atomic_path, sha256sum
from mixnmt.models import Seq2Seq, build
from mixnmt.tokenize import Tokenizer

FORMAT = 1


def vocab_record(tokenizer: Tokenizer) -> dict[str, Any]:
    """What a checkpoint remembers of a SentencePiece model, to refuse a different one."""
    return {"size": len(tokenizer), "sha256": sha256sum(tokenizer.path)}


def save(path: str | Path, model_name: str, hparams: dict, model: Seq2Seq, vocab: dict, **info: Any) -> None:
    """Write a checkpoint atomically: the model's name, hyperparameters, vocabularies and weights."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    payload = {
        "format": FORMAT,
        "model": model_name,
        "hparams": hparams,
        "vocab": vocab,
        "state_dict": state,
        **info,
    }
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def load(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint safely (weights_only=True) and check its format."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise MixnmtError(f"{path}: checkpoint not found") from None
    except Exception as e:  # unpickling refused or corrupt archive
        raise MixnmtError(f"{path}: not a readable mixnmt checkpoint ({type(e).__name__}: {e})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise MixnmtError(f"{path}: not a mixnmt checkpoint of format {FORMAT}")
    return payload


def load_model(path: str | Path, src: Tokenizer, tgt: Tokenizer) -> Seq2Seq:
    """The model stored at `path`, after checking it was trained with these vocabularies."""
    payload = load(path)
    for side, tokenizer in (("src", src), ("tgt", tgt)):
        if payload["vocab"][side] != vocab_record(tokenizer):
            raise MixnmtError(f"{path}: trained with a different {side} vocabulary than {tokenizer.path}")
    model = build(
        payload["model"],
        payload["hparams"],
        len(src),
        len(tgt),
        shared_vocab=payload["vocab"]["shared"],
    )
    model.load_state_dict(payload["state_dict"])
    return model.eval()
