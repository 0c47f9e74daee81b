"""The model registry: architecture name -> class. A new architecture is one module plus
one line here; a variant of one is a config entry (`models.<name>: {arch: ..., ...}`).

A class's hyperparameters are the annotated keyword-only arguments of its constructor:
their defaults are the only defaults, and `entry_schema` turns them into the JSON schema
that config entries are validated against.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

import jsonschema
import torch

from mixnmt import MixnmtError
from mixnmt.config import OWN
from mixnmt.models.attention import Attention
from mixnmt.models.base import Seq2Seq, State, Weights, reorder
from mixnmt.models.latent import Latent
from mixnmt.models.mixture import Mixture
from mixnmt.models.mixture2 import Mixture2
from mixnmt.models.rnn import RNN
from mixnmt.models.transformer import Transformer
from mixnmt.runs import architecture
from mixnmt.schema import Validator, property_schema, schema_error

REGISTRY: dict[str, type[Seq2Seq]] = {
    "rnn": RNN,
    "mixture": Mixture,
    "mixture2": Mixture2,
    "transformer": Transformer,
    "attention": Attention,
    "latent": Latent,
}

__all__ = [
    "REGISTRY",
    "Validator",
    "Seq2Seq",
    "State",
    "Weights",
    "architecture",
    "build",
    "defaults",
    "entry_schema",
    "hyperparameter_schemas",
    "parameter_counts",
    "reorder",
    "resolve",
]


def hyperparameters(arch: str) -> dict[str, inspect.Parameter]:
    """The keyword-only constructor arguments of architecture `arch`."""
    params = inspect.signature(REGISTRY[arch]).parameters.values()
    return {p.name: p for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY}


def defaults(arch: str) -> dict[str, Any]:
    """Every hyperparameter of `arch` with its default."""
    return {name: p.default for name, p in hyperparameters(arch).items()}


def hyperparameter_schemas(arch: str) -> dict[str, dict[str, Any]]:
    """The JSON schema, default included, of each hyperparameter of `arch`."""
    hints = typing.get_type_hints(REGISTRY[arch].__init__, include_extras=True)
    params = hyperparameters(arch).items()
    return {name: {"default": p.default} | property_schema(hints[name]) for name, p in params}


def entry_schema() -> dict[str, Any]:
    """JSON schema of a `models:` entry: `arch` (the entry's name if absent) and that
    architecture's hyperparameters, nothing else."""
    branches = [
        {
            "if": {"properties": {"arch": {"const": arch}}},
            "then": {
                "properties": {"arch": True, **hyperparameter_schemas(arch)},
                "additionalProperties": False,
            },
        }
        for arch in REGISTRY
    ]
    return {
        "type": "object",
        "required": ["arch"],
        "properties": {"arch": {"enum": list(REGISTRY)}},
        "allOf": branches,
    }


def resolve(name: str, entry: dict | None) -> tuple[str, dict[str, Any]]:
    """The architecture and all hyperparameters of config entry `models.<name>` (its
    values over the architecture's defaults), after checking them against the schema. An
    entry's `train` and `decode`, the training and decoding settings its runs override
    (mixnmt.config), are no hyperparameters: left out."""
    hparams = {k: v for k, v in (entry or {}).items() if k not in OWN}
    entry = {"arch": architecture(name, entry), **hparams}
    error = jsonschema.exceptions.best_match(Validator(entry_schema()).iter_errors(entry))
    if error is not None:
        message = schema_error(error, f"models.{name}")
        if error.validator == "additionalProperties":
            message += f" (expected one of {', '.join(['arch', *hyperparameters(entry['arch'])])})"
        raise MixnmtError(message)
    arch = entry.pop("arch")
    return arch, defaults(arch) | entry


def build(
    arch: str, hparams: dict, src_vocab: int, tgt_vocab: int, shared_vocab: bool, name: str | None = None
) -> Seq2Seq:
    """Instantiate architecture `arch` with complete hyperparameters (see `resolve`);
    errors name the config entry `models.<name>` (default: the architecture)."""
    try:
        return REGISTRY[arch](src_vocab, tgt_vocab, shared_vocab, **hparams)
    except ValueError as e:
        raise MixnmtError(f"models.{name or arch}: {e}") from None


def parameter_counts(model: torch.nn.Module) -> tuple[int, int]:
    """The parameters of `model`: all of them, and those outside its embeddings."""
    total = sum(p.numel() for p in model.parameters())
    embeddings = {
        id(m.weight): m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Embedding)
    }
    return total, total - sum(embeddings.values())


class Undrawn(torch.overrides.TorchFunctionMode):
    """Random draws and initialisations as no-ops (new tensors left empty): on the meta
    device they compute nothing anyway, and drawing there imports torch._dynamo, 1.9 s
    of every check of a config."""

    FILLS = {
        getattr(torch.nn.init, f) for f in dir(torch.nn.init) if f.endswith("_") and not f.startswith("_")
    }
    FILLS |= {torch.Tensor.normal_, torch.Tensor.uniform_, torch.Tensor.bernoulli_, torch.Tensor.random_}
    DRAWS = {torch.randn, torch.rand}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.FILLS:
            return args[0] if args else kwargs["tensor"]
        if func in self.DRAWS:
            return torch.empty(*args, **{k: v for k, v in kwargs.items() if k != "generator"})
        return func(*args, **kwargs)


def check(name: str, entry: dict | None) -> None:
    """Raise MixnmtError, naming the key, if config entry `models.<name>` cannot make a
    model: its values one by one (`resolve`), then together (built on the meta device,
    which allocates nothing, and `Undrawn`)."""
    arch, hparams = resolve(name, entry)
    with torch.device("meta"), Undrawn():
        build(arch, hparams, 8, 8, True, name)
