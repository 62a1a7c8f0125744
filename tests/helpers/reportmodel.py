"""A generated chain network for the report, advice, gate and histogram tests: `data -> op0 -> op1 -> ...`, each op
one NCHW fp16 (or fp32) device dump with its input and output, a graph JSON and fp32 ground truth. Layers can be
planted with the faults the advice rules look for."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from dumpcmp import TensorData, write_dump

from helpers import graphjson as G

TS = 1700000000000000
SHAPE = (1, 16, 16, 16)

# name -> f(ground truth, rng) -> device values (before the device dtype cast); ground truth changed in place
Plant = Callable[[np.ndarray, np.random.Generator], np.ndarray]


class Chain:
    def __init__(self, root: Path, rng: np.random.Generator, n: int = 6, *, shape=SHAPE, types=None,
                 plants: dict[int, Plant] | None = None, truth: dict[int, np.ndarray] | None = None,
                 noise: float | Callable[[int], float] = 1e-3, graph: bool = True,
                 device_dtype=np.float16) -> None:
        self.root, self.n = root, n
        self.dev = root / "dump" / "20260101000000" / "0" / "net" / "1" / "0"
        self.gt = root / "gt"
        self.dev.mkdir(parents=True)
        self.gt.mkdir()
        types = types or ["Conv2D" if k % 2 == 0 else "Relu" for k in range(n)]
        self.types = types
        x = rng.standard_normal(shape).astype(np.float32)
        np.save(self.gt / f"data.0.{TS}.npy", x)
        prev_dev = x.astype(device_dtype)
        ops = [G.op("data", "Data", 0, outputs=[G.desc(dtype="DT_FLOAT", layout="NCHW", shape=shape,
                                                       origin_shape=shape)])]
        prev = "data"
        for k in range(n):
            name = f"op{k}"
            gt = (truth or {}).get(k)
            if gt is None:
                gt = rng.standard_normal(shape).astype(np.float32)
            level = noise(k) if callable(noise) else noise
            dev = gt + rng.standard_normal(shape).astype(np.float32) * np.float32(level)
            if plants and k in plants:
                dev = plants[k](gt, rng)
            np.save(self.gt / f"{name}.0.{TS + k + 1}.npy", gt)
            with np.errstate(over="ignore"):
                out = dev.astype(device_dtype)
            write_dump(self.dev / f"{types[k]}.{name}.{k + 1}.{TS + k + 1}", op_name=name,
                       inputs=[TensorData(prev_dev, format="NCHW")], outputs=[TensorData(out, format="NCHW")])
            dt = "DT_FLOAT16" if device_dtype == np.float16 else "DT_FLOAT"
            ops.append(G.op(name, types[k], k + 1, inputs=[f"{prev}:0"],
                            outputs=[G.desc(dtype=dt, layout="NCHW", shape=shape, origin_shape=shape)]))
            prev, prev_dev = name, out
        self.graph = G.write(root / "model.json", G.document(*ops)) if graph else None

    def args(self) -> list[str]:
        out = ["-l", str(self.root / "dump"), "-r", str(self.gt)]
        return out + (["-f", str(self.graph)] if self.graph else [])
