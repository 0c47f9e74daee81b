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


class TrainingTally:
    """The training runs done of those to train, told by their checkpoints (the training
    jobs' outputs, written whole when a run ends): one there before the start (a run
    trained again) counts only once it is written again."""

    def __init__(self, checkpoints: list[str], say: Callable[[str], None]) -> None:
        self.before = {path: signature(path) for path in checkpoints}
        self.say, self.said, self.lock = say, 0, threading.Lock()
        say(self.line(0))

    def line(self, count: int) -> str:
        return f"training: {count} of {len(self.before)} runs done"

    def update(self) -> bool:
        """Say the count if it changed since last said; whether every run is done."""
        with self.lock:  # the watching thread and the workflow's end
            count = sum(1 for path, old in self.before.items() if signature(path) not in (None, old))
            if count != self.said:
                self.say(self.line(count))
                self.said = count
            return count == len(self.before)


def watch_training(
    checkpoints: list[str], say: Callable[[str], None], every: float = POLL_SECONDS
) -> TrainingTally | None:
    """The tally of `checkpoints`, said now and updated every `every` s by a daemon thread
    until every run is done (the workflow updates it once more at its end, when the last
    run may have finished within the interval); None when there is nothing to train."""
    if not checkpoints:
        return None
    tally = TrainingTally(checkpoints, say)

    def poll() -> None:
        while not tally.update():
            time.sleep(every)

    threading.Thread(target=poll, daemon=True).start()
    return tally
