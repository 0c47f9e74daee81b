"""mixnmt: attention as a mixture model, compared on English->German translation."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__version__ = "0.1.0"

T = TypeVar("T")


class MixnmtError(Exception):
    """A user-facing error; its message is one line naming the file or key at fault."""


def config_section(cls: type[T], name: str, values: dict[str, Any]) -> T:
    """Build dataclass `cls` from config section `name`, naming any unknown or missing key."""
    known = [f.name for f in dataclasses.fields(cls)]
    for key in values:
        if key not in known:
            raise MixnmtError(f"{name}.{key}: unknown setting (expected one of {', '.join(sorted(known))})")
    for key in known:
        if key not in values:
            raise MixnmtError(f"{name}.{key}: missing setting")
    return cls(**values)
