"""Measuring a whole model comparison: a generated dump tree of many operators (fp16 device dumps in fractal
layouts, fp32 ground truth) compared end to end, against a memory-read probe over the same files and a faithful
NumPy implementation (layout decode by reshape/transpose + the ten metrics), in the same run.

Reused by bench/bench_model.py and `dumpcmp bench dumps`.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .._native import core
from ..dump import TensorData, write_dump
from ..layout import convert
from .compare import machine_info, numpy_metrics

TS = 1700000000000000


def _anon_rss() -> int:
    """Anonymous resident memory (heap, stacks): what the process holds beyond page-cache-backed file mappings."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


class AnonPeak:
    """Samples RssAnon every few milliseconds in a thread while a block runs; `.peak` is the largest seen."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self) -> "AnonPeak":
        self.base = _anon_rss()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _anon_rss())
            time.sleep(self.interval)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _anon_rss())


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


def _read_everything(paths: list[Path]) -> int:
    """The probe: every byte of the files read once through mappings, summed in C++ on all threads."""
    total = 0
    for p in paths:
        a = np.memmap(p, dtype=np.uint8, mode="r")
        total += core.read_probe(a, 0)
        del a
    return total


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

    def to_dict(self) -> dict:
        return asdict(self)


def run_model_benchmark(dump: Path, gt: Path, *, repeat: int = 2, numpy_ops: int = 8) -> ModelBenchmark:
    from ..comparison import compare
    from ..dump import open_dump

    files = sorted(p for p in Path(dump).rglob("*") if p.is_file())
    gts = sorted(Path(gt).glob("*.npy"))
    dev_bytes = sum(p.stat().st_size for p in files)
    gt_bytes = sum(p.stat().st_size for p in gts)
    total = dev_bytes + gt_bytes
    bench = ModelBenchmark(len(files), dev_bytes, gt_bytes, machine_info())
    _read_everything(files + gts)  # page cache warm: these figures are for data already in memory

    def timed(label: str, fn) -> None:
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        bench.seconds[label] = best
        bench.gb_per_s[label] = total / best / 1e9

    timed("memory_read_probe", lambda: _read_everything(files + gts))
    for threads in (1, 2):
        timed(f"dumpcmp_compare_{threads}_threads", lambda: compare(dump, gt, threads=threads))
    with AnonPeak() as peak:
        compare(dump, gt)
    bench.anon_peak_extra_bytes = max(0, peak.peak - peak.base)

    # NumPy: decode by the spec's reshape/transpose recipe, then the ten metrics, on the first few ops
    sample = files[:numpy_ops]
    sample_bytes = 0
    t = time.perf_counter()
    for p in sample:
        d = open_dump(p)
        out = d.outputs[0]
        name = d.op_name
        truth = np.load(next(Path(gt).glob(f"{name}.0.*.npy")))
        a = np.asarray(out.array(), dtype=np.float32)
        if out.format == "NC1HWC0":
            n, c1, h, w, c0 = a.shape
            plain = a.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, : truth.shape[1]]
        else:
            n1, m1, m0, n0 = a.shape
            plain = a.transpose(1, 2, 0, 3).reshape(m1 * m0, n1 * n0)[: truth.shape[0], : truth.shape[1]]
        numpy_metrics(plain, truth)
        sample_bytes += p.stat().st_size + truth.nbytes
    bench.numpy_sample_ops = len(sample)
    elapsed = time.perf_counter() - t
    bench.seconds["numpy_reference_sample"] = elapsed
    bench.gb_per_s["numpy_reference"] = sample_bytes / elapsed / 1e9
    return bench


def format_model(bench: ModelBenchmark) -> str:
    probe = bench.gb_per_s["memory_read_probe"]
    lines = [f"{bench.ops} ops, device {bench.device_bytes / 2**20:.0f} MiB + ground truth "
             f"{bench.ground_truth_bytes / 2**20:.0f} MiB (page-cached)"]
    for label, v in bench.gb_per_s.items():
        lines.append(f"  {label:32s} {v:8.2f} GB/s  ({100 * v / probe:5.1f}% of the probe)")
    lines.append(f"  extra anonymous memory at peak      {bench.anon_peak_extra_bytes / 2**20:8.1f} MiB")
    return "\n".join(lines)
