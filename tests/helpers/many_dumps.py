"""A device dump tree of many tiny operators and their ground truth, for the tests of trees of 100,000+ files.

`many_dumps(root, n)` writes n dumps of one FLOAT output of 4 values (Conv2D.op{k}.{k + 1}.{ts}) into one run folder
of a device dump tree, and op{k}.0.{ts}.npy ground truth holding the same values, through dumpcmp.write_dump and
NumPy. Returns (device tree, ground-truth folder).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

import dumpcmp

TS = 1700000000000000


def many_dumps(root: str | os.PathLike[str], n: int) -> tuple[Path, Path]:
    root = Path(root)
    dev = root / "dump" / "20260101000000" / "0" / "net" / "1" / "0"
    gt = root / "gt"
    dev.mkdir(parents=True)
    gt.mkdir()
    values = np.arange(4, dtype=np.float32).reshape(1, 4)
    for k in range(n):
        name = f"op{k}"
        dumpcmp.write_dump(dev / f"Conv2D.{name}.{k + 1}.{TS + k}", op_name=name,
                           outputs=[dumpcmp.TensorData(values + k)])
        np.save(gt / f"{name}.0.{TS + k}.npy", values + k)
    return root / "dump", gt


def mapping_count() -> int:
    """Memory mappings of this process (lines of /proc/self/maps): vm.max_map_count bounds them."""
    with open("/proc/self/maps", "rb") as f:
        return sum(1 for _ in f)
