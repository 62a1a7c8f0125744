"""The progress bar's rates and time left, worked by hand (#35: tensors/s, GB/s and an ETA on long runs)."""

from __future__ import annotations

import io

import pytest

from dumpcmp.support import progress as progress_module
from dumpcmp.support.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: now[0])
    return now


def test_rates_and_time_left(clock):
    out = Terminal()
    bar = Progress(4, "comparing run", stream=out)
    clock[0] = 102.0
    bar.advance(2, 2_000_000_000)  # 2 tensors, 2 GB in 2 s: 1 tensor/s, 1 GB/s, 2 tensors left: 2 s
    last = out.getvalue().split("\r")[-1]
    assert last.startswith("comparing run [###############...............] 2/4")
    assert "  1/s  1.00 GB/s  ETA 0:02" in last
    clock[0] = 250.0
    bar.advance(1)  # 3 tensors in 150 s: 0.02/s; 1 left: 50 s
    assert "ETA 0:50" in out.getvalue().split("\r")[-1]


def test_no_bytes_no_byte_rate_and_quiet_draws_nothing(clock):
    out = Terminal()
    bar = Progress(10, "x", stream=out)
    clock[0] = 110.0
    bar.advance(5)
    assert "GB/s" not in out.getvalue() and "ETA 0:10" in out.getvalue()
    quiet = Terminal()
    with Progress(10, "x", stream=quiet, quiet=True) as q:
        q.advance(10)
    assert quiet.getvalue() == ""


def test_a_shorter_line_covers_a_longer_one(clock):
    out = Terminal()
    bar = Progress(1000, "x", stream=out)
    clock[0] = 100.5
    bar.advance(999, 10**12)
    clock[0] = 10_000.0
    bar.advance(1)
    lines = out.getvalue().split("\r")[1:]
    assert len(lines[1]) == len(lines[0])
