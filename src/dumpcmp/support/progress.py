"""A progress bar on stderr for long runs: drawn only on a terminal, silent otherwise or when quiet."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """`advance(n, nbytes)` after each step; the bar shows the steps done of `total`, their rate, the bytes' rate
    when steps report bytes, and the time left at the rate so far."""

    def __init__(self, total: int, label: str, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = not quiet and total > 0 and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.total = max(total, 1)
        self.label = label
        self.done = 0
        self.bytes = 0
        self._start = time.monotonic()
        self._last = 0.0
        self._width = 0

    def advance(self, n: int = 1, nbytes: int = 0) -> None:
        self.done += n
        self.bytes += nbytes
        now = time.monotonic()
        if self.enabled and (now - self._last > 0.1 or self.done >= self.total):
            self._last = now
            self.stream.write("\r" + self.line(now))
            self.stream.flush()

    def line(self, now: float) -> str:
        """The bar as drawn at time `now` (time.monotonic())."""
        width = 30
        filled = int(width * min(self.done, self.total) / self.total)
        text = f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
        elapsed = now - self._start
        if elapsed > 0 and self.done > 0:
            rate = self.done / elapsed
            text += f"  {rate:,.0f}/s"
            if self.bytes:
                text += f"  {self.bytes / elapsed / 1e9:.2f} GB/s"
            left = max(self.total - self.done, 0) / rate
            text += f"  ETA {int(left) // 60}:{int(left) % 60:02d}"
        self._width = max(self._width, len(text))
        return text.ljust(self._width)

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * max(self._width, len(self.label) + 50) + "\r")
            self.stream.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
