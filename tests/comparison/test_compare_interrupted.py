"""A compare interrupted (Ctrl-C, or SIGTERM once the command's handlers turned it into an exception) while the engine
compares a batch on its thread: the exception leaves compare() only once the engine has stopped. Python's
Thread.join() interrupted by a signal marks the thread stopped while it still runs (Python 3.10-3.12), so waiting on
it let the command return and the interpreter finalize under the engine: SIGABRT, "terminate called without an
active exception", in 16 of 160 interrupts. The engine here is slowed down (it sleeps before comparing) so the signal
always lands while the main thread waits for it.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import dumpcmp
from dumpcmp.support.native import core
from helpers.many_dumps import many_dumps


class _Calls(list):
    on_start = None


@pytest.fixture
def slow_engine(monkeypatch):
    """compare_many that takes 0.5 s; `calls` records (started, finished) per call; `calls.on_start` (if set) is
    called as the first call starts."""
    real = core.compare.compare_many
    calls: _Calls = _Calls()

    def slow(*args, **kwargs):
        state = [True, False]
        calls.append(state)
        if len(calls) == 1 and calls.on_start is not None:
            calls.on_start()
        time.sleep(0.5)
        out = real(*args, **kwargs)
        state[1] = True
        return out

    monkeypatch.setattr(core.compare, "compare_many", slow)
    return calls


@pytest.mark.parametrize("signals", [1, 3])
def test_an_interrupt_waits_for_the_engine(tmp_path, slow_engine, signals):
    dev, gt = many_dumps(tmp_path, 200)  # four batches
    # the signals are timed from the engine's first call, not from the test's start: on a loaded host the test's
    # own timers fired before compare() began, and the interrupt stopped the whole pytest session
    timers = [threading.Timer(0.15 + 0.05 * k, os.kill, (os.getpid(), signal.SIGINT)) for k in range(signals)]

    def start() -> None:
        for t in timers:
            t.start()

    slow_engine.on_start = start
    try:
        with pytest.raises(KeyboardInterrupt):
            dumpcmp.compare(dev, gt)
            time.sleep(5)  # a compare that ended first still gets its signal here
        alive = [t.name for t in threading.enumerate() if t.name == "dumpcmp-engine" and t.is_alive()]
        assert slow_engine and all(finished for _, finished in slow_engine), slow_engine
        assert not alive
    finally:
        for t in timers:
            if t.ident is not None:  # started
                t.join()
