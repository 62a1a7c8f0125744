"""The original tool's `compare -max N`: each tensor pair compared on its first N elements only (in the compared
order: the device tensor converted to the ground truth's layout, flattened), and the note saying so.

To cut a pair the engine reads both tensors whole once (as float32, as the original holds them), so -max saves no
memory on a large tensor: it changes what the numbers are of, as in the original.
"""

from __future__ import annotations

from typing import Any

from dumpcmp.support.lazy_numpy import np
from dumpcmp.support.native import core

__all__ = ["prefix_notes", "prefix_sources"]


def prefix_sources(x: Any, y: Any, n: int, threads: int = 0) -> tuple[Any, Any]:
    """Engine sources of the first `n` elements of both sides (float32 values in the compared order)."""
    from dumpcmp.comparison.detail import compared_values

    xs, ys = compared_values(x, y, [int(x.count)], None, threads)
    return (core.compare.source_from_array(np.ascontiguousarray(xs[:n])),
            core.compare.source_from_array(np.ascontiguousarray(ys[:n])))


def prefix_notes(n: int) -> list[str]:
    """The summary's note for `-max n` (none for 0)."""
    if not n:
        return []
    return [f"-max {n}: the metrics are of each tensor's first {n} elements (a prefix), not of the whole tensor"]
