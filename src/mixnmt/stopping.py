"""SIGTERM (how SLURM preempts a job) and SIGINT (Ctrl-C) recorded instead of killing the
process: training stops between two steps, and never between writing its outputs and
exiting."""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

StopRequested = Callable[[], signal.Signals | None]
"""Names the first stop signal received, if any."""


def record_stop_signals() -> StopRequested:
    """From now on, record the stop signals instead of dying (Python runs the handler in
    the main thread, whichever thread the signal reached). `mixnmt train` keeps this until
    the process exits: a signal after the outputs are written then cannot turn the
    finished job into a failed one, whose outputs Snakemake would delete."""
    received: list[signal.Signals] = []

    def record(signum: int, frame: object) -> None:
        log.warning("received %s", signal.Signals(signum).name)
        received.append(signal.Signals(signum))

    for sig in STOP_SIGNALS:
        signal.signal(sig, record)
    return lambda: received[0] if received else None


@contextlib.contextmanager
def stop_requests(recorded: StopRequested | None = None) -> Iterator[StopRequested]:
    """`recorded` (signals already being recorded), or else the stop signals recorded
    until the block ends and their previous handlers back."""
    if recorded is not None:
        yield recorded
        return
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    try:
        yield record_stop_signals()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
