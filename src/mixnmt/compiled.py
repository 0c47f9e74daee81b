"""Functions compiled by inductor for the CPU, and the eager code where they cannot be.

A few passes over large tensors (the loss over the vocabulary, the latent model's
per-position output distributions) cost several times their arithmetic when each
operator reads and writes memory in turn; compiled, each is one loop that keeps a row in
the cache. Compiling needs a C++ compiler: without one the eager code runs, more slowly,
and the log says so once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

log = logging.getLogger(__name__)


def try_compile(fn: Callable, *example: torch.Tensor) -> Callable | None:
    """`fn` compiled by inductor (dynamic shapes: one graph for every size) once it has
    compiled and run on `example`; None, with a warning, where it does not."""
    compiled = torch.compile(fn, dynamic=True)
    try:
        compiled(*example)
    except Exception as error:  # inductor's errors have no common class
        log.warning("%s runs eagerly: torch.compile failed (%s)", fn.__name__, error)
        return None
    return compiled
