"""mixnmt: attention as a mixture model, compared on English->German translation."""

from __future__ import annotations

import types
import typing
from typing import Any, TypeVar

__version__ = "0.1.0"

T = TypeVar("T")


class MixnmtError(Exception):
    """A user-facing error; its message is one line naming the file or key at fault."""


def _fits(value: Any, hint: Any) -> bool:
    """Whether a JSON/YAML value has type `hint` (int, float, bool, str, None, unions,
    lists and tuples of them); an int is a float, a bool is not a number."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, arg) for arg in args)
    if origin in (list, tuple):
        return isinstance(value, list | tuple) and all(_fits(v, args[0]) for v in value)
    if hint is type(None):
        return value is None
    if hint in (int, float) and isinstance(value, bool):
        return False
    return isinstance(value, int | float) if hint is float else isinstance(value, hint)


def config_section(cls: type[T], name: str, values: dict[str, Any]) -> T:
    """Build dataclass `cls` from config section `name`, naming any unknown or missing
    key and any value of the wrong type."""
    hints = typing.get_type_hints(cls)
    for key in values:
        if key not in hints:
            raise MixnmtError(f"{name}.{key}: unknown setting (expected one of {', '.join(sorted(hints))})")
    for key, hint in hints.items():
        if key not in values:
            raise MixnmtError(f"{name}.{key}: missing setting")
        if not _fits(values[key], hint):
            expected = str(hint) if typing.get_origin(hint) else hint.__name__
            raise MixnmtError(f"{name}.{key}: expected {expected}, got {values[key]!r}")
    return cls(**values)
