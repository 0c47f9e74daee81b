"""The whole run's progress at the terminal: how many of the training runs a workflow
started have finished, said at the start and each time another finishes (each training
job says its own: `train.progress_line`)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

POLL_SECONDS = 10.0


def signature(path: str | Path) -> tuple[int, int, int] | None:
    """What tells a rewritten file from the one there before (None: absent)."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


def watch_training(
    checkpoints: list[str], say: Callable[[str], None], every: float = POLL_SECONDS
) -> threading.Thread | None:
    """Say "training: 0 of N runs done" now and the count again whenever another of
    `checkpoints` (the training jobs' outputs, written whole when a run ends) is written,
    in a daemon thread that ends once all are; None when there is nothing to train."""
    if not checkpoints:
        return None
    before = {path: signature(path) for path in checkpoints}  # a stale one is not a run done

    def done() -> int:
        return sum(1 for path, old in before.items() if signature(path) not in (None, old))

    def line(count: int) -> str:
        return f"training: {count} of {len(checkpoints)} runs done"

    def poll() -> None:
        said = 0
        while said < len(checkpoints):
            time.sleep(every)
            count = done()
            if count != said:
                say(line(count))
                said = count

    say(line(0))
    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    return thread
