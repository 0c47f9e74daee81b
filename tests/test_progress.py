"""The whole run's progress line: training runs done of those the workflow started."""

from __future__ import annotations

import time

from mixnmt.progress import watch_training


def test_the_count_of_runs_done_is_said_at_the_start_and_as_each_checkpoint_is_written(tmp_path):
    """A checkpoint there before the start (a run being trained again) counts only once
    it is written again; the watching thread ends when every run is done."""
    paths = [tmp_path / f"seed{seed}.pt" for seed in (1, 2, 3)]
    paths[2].write_bytes(b"stale")
    said: list[str] = []
    tally = watch_training([str(p) for p in paths], said.append, every=0.01)
    assert said == ["training: 0 of 3 runs done"]

    def settle(count: int) -> None:
        deadline = time.monotonic() + 10
        while said[-1] != f"training: {count} of 3 runs done" and time.monotonic() < deadline:
            time.sleep(0.01)

    time.sleep(0.05)
    assert said == ["training: 0 of 3 runs done"]  # the stale checkpoint is no run done
    paths[0].write_bytes(b"weights")
    settle(1)
    paths[2].unlink()  # as Snakemake removes a job's old outputs before it runs
    time.sleep(0.05)
    paths[2].write_bytes(b"weights, trained again")
    settle(2)
    paths[1].write_bytes(b"weights")
    settle(3)
    assert said == [f"training: {n} of 3 runs done" for n in range(4)]
    assert tally.update() and len(said) == 4  # all done, said once


def test_the_end_of_the_workflow_says_the_last_count_without_waiting_for_the_thread(tmp_path):
    """The last run can finish within a poll's interval just before Snakemake ends (a run
    of training targets alone, as DVC's stages are): the workflow's end updates the tally."""
    paths = [tmp_path / f"seed{seed}.pt" for seed in (1, 2)]
    said: list[str] = []
    tally = watch_training([str(p) for p in paths], said.append, every=3600)
    for path in paths:
        path.write_bytes(b"weights")
    assert tally.update()
    assert said == ["training: 0 of 2 runs done", "training: 2 of 2 runs done"]


def test_nothing_to_train_says_nothing():
    said: list[str] = []
    assert watch_training([], said.append) is None and said == []
