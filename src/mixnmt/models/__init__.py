"""The model registry: config name -> class. A new model is one module plus one line here."""

from __future__ import annotations

import inspect

from mixnmt import MixnmtError
from mixnmt.models.attention import Attention
from mixnmt.models.base import Seq2Seq, State, Weights, reorder
from mixnmt.models.mixture import Mixture
from mixnmt.models.mixture2 import Mixture2
from mixnmt.models.rnn import RNN
from mixnmt.models.transformer import Transformer

REGISTRY: dict[str, type[Seq2Seq]] = {
    "rnn": RNN,
    "mixture": Mixture,
    "mixture2": Mixture2,
    "transformer": Transformer,
    "attention": Attention,
}

__all__ = ["REGISTRY", "Seq2Seq", "State", "Weights", "build", "reorder", "resolve"]

VOCABULARY_ARGS = {"src_vocab", "tgt_vocab", "shared_vocab"}


def resolve(name: str, hparams: dict) -> dict:
    """All hyperparameters of model `name`: the config's `models.<name>` over the defaults."""
    if name not in REGISTRY:
        raise MixnmtError(f"models.{name}: unknown model (expected one of {', '.join(REGISTRY)})")
    params = inspect.signature(REGISTRY[name]).parameters
    defaults = {k: p.default for k, p in params.items() if k not in VOCABULARY_ARGS}
    for key in hparams:
        if key not in defaults:
            raise MixnmtError(
                f"models.{name}.{key}: unknown hyperparameter (expected one of {', '.join(sorted(defaults))})"
            )
    return defaults | hparams


def build(name: str, hparams: dict, src_vocab: int, tgt_vocab: int, shared_vocab: bool) -> Seq2Seq:
    """Instantiate model `name` with the hyperparameters of `models.<name>` in the config."""
    hparams = resolve(name, hparams)
    try:
        return REGISTRY[name](src_vocab=src_vocab, tgt_vocab=tgt_vocab, shared_vocab=shared_vocab, **hparams)
    except ValueError as e:
        raise MixnmtError(f"models.{name}: {e}") from None
