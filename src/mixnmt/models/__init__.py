"""The model registry: config name -> class. A new model is one module plus one line here."""

from __future__ import annotations

import inspect

from mixnmt import MixnmtError
from mixnmt.models.base import Seq2Seq, State, reorder
from mixnmt.models.transformer import Transformer

REGISTRY: dict[str, type[Seq2Seq]] = {
    "transformer": Transformer,
}

__all__ = ["REGISTRY", "Seq2Seq", "State", "build", "reorder"]


def build(name: str, hparams: dict, src_vocab: int, tgt_vocab: int, shared_vocab: bool) -> Seq2Seq:
    """Instantiate model `name` with the hyperparameters of `models.<name>` in the config."""
    if name not in REGISTRY:
        raise MixnmtError(f"models.{name}: unknown model (expected one of {', '.join(REGISTRY)})")
    cls = REGISTRY[name]
    known = set(inspect.signature(cls).parameters) - {"src_vocab", "tgt_vocab", "shared_vocab"}
    for key in hparams:
        if key not in known:
            raise MixnmtError(
                f"models.{name}.{key}: unknown hyperparameter (expected one of {', '.join(sorted(known))})"
            )
    try:
        return cls(src_vocab=src_vocab, tgt_vocab=tgt_vocab, shared_vocab=shared_vocab, **hparams)
    except ValueError as e:
        raise MixnmtError(f"models.{name}: {e}") from None
