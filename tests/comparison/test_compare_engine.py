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
