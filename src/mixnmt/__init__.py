"""mixnmt: attention as a mixture model, compared on English->German translation."""

from __future__ import annotations

__version__ = "0.1.0"


class MixnmtError(Exception):
    """A user-facing error; its message is one line naming the file or key at fault."""
