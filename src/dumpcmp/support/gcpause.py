"""Python's cyclic garbage collector paused while a model's records are built.

Reading a model of 10^4-10^5 operators allocates millions of containers (the graph JSON's objects, ops, pairs, rows)
that all live to the end of the command, and each allocation burst makes the collector walk every live object again:
on a model of 20,000 operators that was about 30% of `dumpcmp compare`'s CPU, for nothing (the records hold no
cycles). `paused()` turns the collector off for a block (or, as a decorator, a function's call) and back on after
it, if it was on; reference counting still frees everything that is dropped, and nested blocks leave it to the
outermost.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

__all__ = ["paused"]


@contextlib.contextmanager
def paused() -> Iterator[None]:
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
