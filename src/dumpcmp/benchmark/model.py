"""Measuring a whole model comparison: a generated dump tree of many operators (fp16 device dumps in fractal
layouts, fp32 ground truth) compared end to end, against a memory-read probe over the same files and a NumPy
implementation (layout decode by reshape/transpose + the ten metrics) on a sample of the ops, in the same run.

The timing itself is `dumpcmp.benchmark.dumps` (what `dumpcmp bench dumps` runs on a user's tree); this module
generates the tree. Reused by bench/bench_model.py.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from dumpcmp.dumps.dump import TensorData, write_dump
from dumpcmp.dumps.layout import convert
from dumpcmp.benchmark.common import machine_info
from dumpcmp.benchmark.dumps import run_dumps_benchmark

TS = 1700000000000000


def generate_model(root: str | os.PathLike[str], *, ops: int, bytes_per_side: int, seed: int = 0) -> tuple[Path, Path]:
    """Write `ops` operators alternating NC1HWC0 activations (C not a multiple of 16) and FRACTAL_NZ matrices,
    fp16 on the device, fp32 ground truth, about `bytes_per_side` of ground truth in all. Returns (dump, gt)."""
    root = Path(root)
    dev = root / "dump" / "20260101000000" / "0" / "net" / "1" / "0"
    gt = root / "gt"
    dev.mkdir(parents=True, exist_ok=True)
    gt.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    per_op = max(bytes_per_side // ops // 4, 1024)
    for k in range(ops):
        if k % 2 == 0:
            c = 20
            hw = max(int((per_op / c) ** 0.5), 2)
            truth = rng.standard_normal((1, c, hw, hw), dtype=np.float32)
            dev_fmt, dev_data = "NC1HWC0", convert(truth.astype(np.float16), "NCHW", "NC1HWC0")
        else:
            m = 100
            n = max(per_op // m, 2)
            truth = rng.standard_normal((m, n), dtype=np.float32)
            dev_fmt, dev_data = "FRACTAL_NZ", convert(truth.astype(np.float16), "ND", "FRACTAL_NZ")
        name = f"op{k}"
        write_dump(dev / f"Conv2D.{name}.{k + 1}.{TS + k}", op_name=name,
                   outputs=[TensorData(dev_data, format=dev_fmt, original_shape=truth.shape)])
        np.save(gt / f"{name}.0.{TS + k}.npy", truth)
    return root / "dump", gt


@dataclass
class ModelBenchmark:
    ops: int
    device_bytes: int
    ground_truth_bytes: int
    machine: dict
    seconds: dict = field(default_factory=dict)
    gb_per_s: dict = field(default_factory=dict)
    anon_peak_extra_bytes: int = 0
    numpy_sample_ops: int = 0
    checked_rows: int = 0
    details: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        return asdict(self)


def run_model_benchmark(dump: Path, gt: Path, *, repeat: int = 2, numpy_ops: int = 8,
                        threads: tuple[int, ...] = (1, 2)) -> ModelBenchmark:
    """The dump tree compared with its ground truth at each thread count; the NumPy reference (and the check) on
    the first `numpy_ops` rows."""
    result = run_dumps_benchmark(dump, gt, threads=threads, repeat=repeat, check_rows=numpy_ops)
    files = [p for p in Path(dump).rglob("*") if p.is_file()]
    gts = [p for p in Path(gt).rglob("*") if p.is_file()]
    bench = ModelBenchmark(len(files), sum(p.stat().st_size for p in files), sum(p.stat().st_size for p in gts),
                           machine_info(), anon_peak_extra_bytes=result["anon_peak_extra_bytes"],
                           numpy_sample_ops=result["checked_rows"], checked_rows=result["checked_rows"],
                           details=result)
    for r in result["results"]:
        if r["step"] == "read probe" and r["threads"] == max(threads):
            bench.seconds["memory_read_probe"] = r["seconds"]
            bench.gb_per_s["memory_read_probe"] = r["gbps"]["median"]
        elif r["step"] == "compare":
            bench.seconds[f"dumpcmp_compare_{r['threads']}_threads"] = r["seconds"]
            bench.gb_per_s[f"dumpcmp_compare_{r['threads']}_threads"] = r["gbps"]["median"]
        elif r["step"] == "numpy reference":
            bench.seconds["numpy_reference_sample"] = r["seconds"]
            bench.gb_per_s["numpy_reference"] = r["tensor_gbps"]
    return bench


def format_model(bench: ModelBenchmark) -> str:
    probe = bench.gb_per_s["memory_read_probe"]
    lines = [f"{bench.ops} ops, device {bench.device_bytes / 2**20:.0f} MiB + ground truth "
             f"{bench.ground_truth_bytes / 2**20:.0f} MiB (page-cached); {bench.checked_rows} rows checked "
             f"against NumPy"]
    for label, v in bench.gb_per_s.items():
        lines.append(f"  {label:32s} {v:8.2f} GB/s  ({100 * v / probe:5.1f}% of the probe)")
    lines.append(f"  extra anonymous memory at peak      {bench.anon_peak_extra_bytes / 2**20:8.1f} MiB")
    return "\n".join(lines)
