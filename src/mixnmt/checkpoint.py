"""Checkpoints: plain tensors and built-in types only, so they load with weights_only=True."""

from __future__ import annotations

import hashlib
import io
import pickle
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mixnmt import MixnmtError
from mixnmt.device import autocast_dtype, pick_device
from mixnmt.files import atomic_path, gist, sha256sum
from mixnmt.models import REGISTRY, Seq2Seq, build, defaults, resolve
from mixnmt.paths import Layout
from mixnmt.runs import ADDED, identity
from mixnmt.tokenize import Tokenizer

FORMAT = 1
DIGEST = "tensors_sha256"
"""The payload key of the sha256 of its tensors: torch.load does not check the archive's
checksums, so bytes garbled inside the weights would otherwise load without notice."""


def _tensors(value: Any, key: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor in a payload, with its key path, in a fixed order."""
    if isinstance(value, torch.Tensor):
        yield key, value
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            yield from _tensors(value[k], f"{key}/{k}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _tensors(item, f"{key}/{i}")


def tensors_sha256(payload: dict[str, Any]) -> str:
    """sha256 over the key path, dtype, shape and bytes of every tensor in `payload`."""
    digest = hashlib.sha256()
    for key, tensor in _tensors({k: v for k, v in payload.items() if k != DIGEST}):
        digest.update(f"{key}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def write(path: str | Path, payload: dict[str, Any]) -> None:
    """torch.save `payload`, with the digest of its tensors, atomically: on any failure
    the previous file is left intact.

    Serialised in memory first: torch.save names the archive after the file it writes,
    and a temporary name would make equal payloads differ byte for byte.
    """
    buffer = io.BytesIO()
    torch.save({**payload, DIGEST: tensors_sha256(payload)}, buffer)
    with atomic_path(path) as tmp:
        tmp.write_bytes(buffer.getbuffer())


def read(path: str | Path) -> dict[str, Any]:
    """A payload `write` produced, loaded safely (weights_only=True)."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise MixnmtError(f"{path}: not found") from None
    except pickle.UnpicklingError as e:  # torch's own message advises weights_only=False: never
        found = re.search(r"GLOBAL (\S+)", str(e))
        what = f"the Python object {found[1]}" if found else "Python objects"
        raise MixnmtError(
            f"{path}: refused: it holds {what}, where a mixnmt file holds only tensors and built-in types"
        ) from None
    except Exception as e:  # a corrupt or truncated archive
        raise MixnmtError(f"{path}: not a readable mixnmt file ({type(e).__name__}: {gist(e)})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise MixnmtError(f"{path}: not a mixnmt file of format {FORMAT}")
    # Files written before the digest was recorded have none to check.
    if DIGEST in payload and payload.pop(DIGEST) != tensors_sha256(payload):
        raise MixnmtError(
            f"{path}: corrupted (its tensors do not match the sha256 recorded when it was written)"
        )
    return payload


def vocab_record(tokenizer: Tokenizer) -> dict[str, Any]:
    """What a checkpoint remembers of a SentencePiece model, to refuse a different one."""
    return {"size": len(tokenizer), "sha256": sha256sum(tokenizer.path)}


def save(
    path: str | Path, name: str, arch: str, hparams: dict, model: Seq2Seq, vocab: dict, **info: Any
) -> None:
    """Write a model checkpoint: config name, architecture, resolved hyperparameters,
    vocabularies, weights, and whatever else the run wants to remember (`info`)."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    write(
        path,
        {
            "format": FORMAT,
            "model": name,
            "arch": arch,
            "hparams": hparams,
            "vocab": vocab,
            "state_dict": state,
            **info,
        },
    )


def load(path: str | Path) -> dict[str, Any]:
    """A model checkpoint's payload."""
    payload = read(path)
    if not {"state_dict", "model", "arch", "hparams", "vocab"} <= payload.keys():
        raise MixnmtError(f"{path}: not a model checkpoint")
    vocab = payload["vocab"]
    if not isinstance(vocab, dict) or not {"src", "tgt", "shared"} <= vocab.keys():
        raise MixnmtError(f"{path}: not a model checkpoint (no record of its vocabularies)")
    if payload["arch"] not in REGISTRY:
        raise MixnmtError(f"{path}: not a model checkpoint (unknown architecture {payload['arch']!r})")
    if not isinstance(payload["hparams"], dict):
        raise MixnmtError(f"{path}: not a model checkpoint (no hyperparameters)")
    return payload


def load_model(
    path: str | Path,
    src: Tokenizer,
    tgt: Tokenizer,
    name: str | None = None,
    entry: dict | None = None,
    payload: dict[str, Any] | None = None,
) -> Seq2Seq:
    """The model stored at `path` (whose payload `load` gave, if already read), after
    checking it matches these vocabularies and, if given, the config's model name and its
    entry `models.<name>` (architecture and hyperparameters)."""
    payload = load(path) if payload is None else payload
    # a hyperparameter added after the model was trained takes its default, which the
    # architecture keeps equal to the model before it existed
    hparams = defaults(payload["arch"]) | payload["hparams"]
    if name is not None and payload["model"] != name:
        raise MixnmtError(f"{path}: holds model {payload['model']!r}, not {name!r}")
    if entry is not None:
        arch, expected = resolve(payload["model"], entry)
        if arch != payload["arch"]:
            raise MixnmtError(
                f"{path}: a {payload['arch']!r} model, but models.{payload['model']}.arch is {arch!r}; "
                "retrain it"
            )
        for key, value in expected.items():
            if hparams.get(key) != value:
                raise MixnmtError(
                    f"{path}: trained with models.{payload['model']}.{key}={hparams.get(key)!r}, "
                    f"but the config says {value!r}; retrain it"
                )
    for side, tokenizer in (("src", src), ("tgt", tgt)):
        if payload["vocab"][side] != vocab_record(tokenizer):
            raise MixnmtError(f"{path}: trained with a different {side} vocabulary than {tokenizer.path}")
    model = build(payload["arch"], hparams, len(src), len(tgt), shared_vocab=payload["vocab"]["shared"])
    try:
        model.load_state_dict(payload["state_dict"])
    except (RuntimeError, TypeError, AttributeError) as e:  # missing, extra or misshapen weights
        raise MixnmtError(
            f"{path}: its weights do not fit its {payload['arch']!r} model ({gist(e)})"
        ) from None
    return model.eval()


@dataclass(frozen=True)
class Inference:
    """A trained model on its device, with the tokenizers of its two sides, its name in
    the config (if the caller gave one) and the files it was loaded from."""

    model: Seq2Seq
    source: Tokenizer
    target: Tokenizer
    device: torch.device
    name: str | None
    files: tuple[Path, Path, Path]  # checkpoint, source and target SentencePiece models
    run: dict[str, Any]  # the training run, as every file made from it records it (mixnmt.runs)
    dtype: torch.dtype | None  # decoding's autocast: the training's precision (`train.precision`)


def load_run(layout: Layout, name: str, seed: int) -> tuple[Seq2Seq, Tokenizer, Tokenizer]:
    """A trained run of an experiment's folder (`layout`), checked as `load_model` checks
    it, with its source and target tokenizers: what the diagnoses in benchmarks/ read."""
    path = layout.checkpoint(name, seed)
    payload = load(path)
    shared = payload["vocab"]["shared"]
    names = ("joint", "joint") if shared else payload["definition"]["data"]["languages"]  # source, target
    source, target = (Tokenizer(layout.spm(spm)) for spm in names)
    return load_model(path, source, target, payload=payload), source, target


def load_for_inference(
    path: str | Path, spm_files: tuple[Path, Path], name: str | None = None, entry: dict | None = None
) -> Inference:
    """What translate, speed, reliance and analyse run: the checked model (see
    `load_model`) on the best device, and the source and target tokenizers."""
    device = pick_device()
    source, target = Tokenizer(spm_files[0]), Tokenizer(spm_files[1])
    payload = load(path)
    model = load_model(path, source, target, name, entry, payload).to(device)
    train = (payload.get("definition") or {}).get("train", {})  # none before fingerprints
    run = identity(payload["model"], train.get("seed"), payload.get("fingerprint"), sha256sum(path))
    files = (Path(path), Path(spm_files[0]), Path(spm_files[1]))
    dtype = autocast_dtype(device, train.get("precision", ADDED["precision"]))
    return Inference(model, source, target, device, name, files, run, dtype)
