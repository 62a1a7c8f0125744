"""The compare loop's engine thread: one thread for the whole loop, its batches compared one after another in the
order they were made, and no thread left once compare() returns (by a result or by an error)."""

from __future__ import annotations

import threading

import pytest

import dumpcmp
import dumpcmp.comparison.compare as C
from dumpcmp.support.native import core
from helpers.many_dumps import many_dumps


@pytest.fixture
def engine_calls(monkeypatch):
    """compare_many recording, per call, the thread it ran on and how many jobs it had."""
    real = core.compare.compare_many
    calls: list[tuple[threading.Thread, int]] = []

    def recorded(jobs, *args, **kwargs):
        calls.append((threading.current_thread(), len(jobs)))
        return real(jobs, *args, **kwargs)

    monkeypatch.setattr(core.compare, "compare_many", recorded)
    return calls


def test_one_engine_thread_for_every_batch(tmp_path, monkeypatch, engine_calls):
    dev, gt = many_dumps(tmp_path, 40)
    whole = dumpcmp.compare(dev, gt)
    engine_calls.clear()
    monkeypatch.setattr(C, "_BATCH_PAIRS", 3)
    split = dumpcmp.compare(dev, gt)
    assert len(engine_calls) >= 10
    threads = {id(t) for t, _ in engine_calls}
    assert len(threads) == 1, f"{len(threads)} threads for {len(engine_calls)} batches"
    assert engine_calls[0][0] is not threading.main_thread() and engine_calls[0][0].name == "dumpcmp-engine"
    assert not [t for t in threading.enumerate() if t.name == "dumpcmp-engine"]
    assert split.table() == whole.table()


def test_no_engine_thread_is_left_after_an_error(tmp_path, monkeypatch, engine_calls):
    """An error on the loop's side while the next batch is queued (filling in a row): it reaches the caller once
    that batch is compared, and the thread ends."""
    dev, gt = many_dumps(tmp_path, 20)
    monkeypatch.setattr(C, "_BATCH_PAIRS", 2)
    real, rows = C.finish_row, []

    def failing(*args, **kwargs):
        rows.append(1)
        if len(rows) == 5:
            raise OSError("disk full")
        return real(*args, **kwargs)

    monkeypatch.setattr(C, "finish_row", failing)
    with pytest.raises(OSError, match="disk full"):
        dumpcmp.compare(dev, gt)
    assert len(engine_calls) >= 3
    assert not [t for t in threading.enumerate() if t.name == "dumpcmp-engine"]


def test_an_interrupt_does_not_start_the_batch_queued_behind(tmp_path, monkeypatch, engine_calls):
    """A Ctrl-C while the engine compares one batch and the next is queued: the run stops once that batch is done,
    without comparing the queued one (as long as one batch, not two)."""
    import os
    import signal
    import time

    dev, gt = many_dumps(tmp_path, 40)
    monkeypatch.setattr(C, "_BATCH_PAIRS", 4)
    queued: list[object] = []
    real_submit = C._Engine.submit

    def submit(self, batch):
        queued.append(batch)
        real_submit(self, batch)

    monkeypatch.setattr(C._Engine, "submit", submit)
    recorded = core.compare.compare_many  # engine_calls' recorder

    def interrupted_in_the_first(jobs, *args, **kwargs):
        if not engine_calls:  # the first batch: wait until the second is queued, then Ctrl-C
            deadline = time.monotonic() + 20
            while len(queued) < 2 and time.monotonic() < deadline:
                time.sleep(0.005)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)  # the main thread gets it meanwhile
        return recorded(jobs, *args, **kwargs)

    monkeypatch.setattr(core.compare, "compare_many", interrupted_in_the_first)
    with pytest.raises(KeyboardInterrupt):
        dumpcmp.compare(dev, gt)
        time.sleep(5)  # never reached: the interrupt comes while comparing
    assert len(queued) == 2
    assert len(engine_calls) == 1, f"{len(engine_calls)} batches compared after the interrupt"
    assert not [t for t in threading.enumerate() if t.name == "dumpcmp-engine"]
