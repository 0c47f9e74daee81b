"""mixnmt: attention as a mixture model, compared on English->German translation."""

from __future__ import annotations

import os

__version__ = "0.1.0"

CUBLAS_WORKSPACE = ":4096:8"
"""cuBLAS's deterministic workspace. cuBLAS reads CUBLAS_WORKSPACE_CONFIG once, at a
process's first matrix product on the GPU, so it is set when mixnmt is imported: before
any, in the trainer's process and in a test session alike (a user's own value stands)."""
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)


class MixnmtError(Exception):
    """A user-facing error; its message is one line naming the file or key at fault."""
