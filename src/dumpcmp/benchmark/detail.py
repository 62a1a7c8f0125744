"""Measuring the single-operator detail export: rows/s and MB/s written, against Python's csv module and
numpy.savetxt on a sample of the same rows (timed in the same run, extrapolated per row), and the memory the export
adds beyond its inputs.

The case is the issue's: an fp16 NC1HWC0 device dump read through its layout plan against fp32 NCHW ground truth.
Reused by bench/bench_detail.py.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from dumpcmp.support.native import core
from dumpcmp.comparison.detail import export_detail, padded_shape
from dumpcmp.dumps.dump import TensorData, open_dump, write_dump
from dumpcmp.dumps.layout import convert
from dumpcmp.benchmark.common import current_rss_bytes, machine_info, peak_rss_bytes, reset_peak_rss

#: plain NCHW shape per image; the batch grows with the element count
IMAGE = (64, 56, 56)


@dataclass
class DetailMeasurement:
    name: str
    threads: int
    rows: int
    bytes_written: int
    seconds: float
    rows_per_s: float = field(init=False)
    mb_per_s: float = field(init=False)

    def __post_init__(self) -> None:
        self.rows_per_s = self.rows / self.seconds
        self.mb_per_s = self.bytes_written / self.seconds / 1e6


@dataclass
class DetailBenchmark:
    elements: int
    shape: tuple[int, ...]
    sample_rows: int
    machine: dict
    results: list[DetailMeasurement] = field(default_factory=list)
    peak_extra_rss_bytes: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def make_inputs(folder: str, elements: int, sample: int, seed: int = 0):
    """An fp16 NC1HWC0 dump in `folder` read as NCHW (a TensorSource), its fp32 ground truth (about `elements`
    elements), the NCHW shape, and the first `sample` device values as float32 for the baselines."""
    per_image = int(np.prod(IMAGE))
    shape = (max(1, round(elements / per_image)),) + IMAGE
    rng = np.random.default_rng(seed)
    truth = rng.standard_normal(shape, dtype=np.float32)
    device = (truth + rng.standard_normal(shape, dtype=np.float32) * np.float32(0.01)).astype(np.float16)
    npu_sample = device.reshape(-1)[:sample].astype(np.float32)
    nc1hwc0 = convert(device, "NCHW", "NC1HWC0")
    del device
    path = write_dump(os.path.join(folder, "Conv2D.conv1.1.1700000000000000"), op_name="conv1",
                      outputs=[TensorData(nc1hwc0, data_type="FLOAT16", format="NC1HWC0", original_shape=shape)])
    del nc1hwc0
    dump = open_dump(path)
    int(dump.outputs[0].raw()[::4096].sum())  # fault the mapping in before memory is measured
    x = core.compare.source_from_dump(dump._file, "output", 0, dst_format="NCHW", dst_shape=list(shape))
    return x, truth, shape, npu_sample


def folder_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


def sample_columns(npu: np.ndarray, truth: np.ndarray, shape: tuple[int, ...]):
    """The first rows as NumPy columns (index, coordinates, npu, ground truth, errors) for the Python baselines."""
    rows = len(npu)
    y = truth.reshape(-1)[:rows].astype(np.float64)
    xs = npu.astype(np.float64)
    with np.errstate(all="ignore"):
        ae = np.abs(xs - y)
        re = np.where(np.isfinite(y) & (y != 0), ae / np.abs(y), np.nan)
    coords = np.array(np.unravel_index(np.arange(rows), padded_shape(shape))).T
    return np.arange(rows), coords, xs, y, ae, re


def time_csv_module(columns, path: str) -> float:
    index, coords, xs, y, ae, re = columns
    start = time.perf_counter()
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["Index", "N C H W", "NPUDump", "GroundTruth", "AbsoluteError", "RelativeError"])
        for i in range(len(index)):
            rel = "-" if np.isnan(re[i]) else "%.6f" % re[i]
            w.writerow([int(index[i]), " ".join(str(int(c)) for c in coords[i]), "%.6f" % xs[i], "%.6f" % y[i],
                        "%.6f" % ae[i], rel])
    return time.perf_counter() - start


def time_savetxt(columns, path: str) -> float:
    index, coords, xs, y, ae, re = columns
    table = np.column_stack([index, coords, xs, y, ae, re])
    fmt = "%d," + " ".join(["%d"] * coords.shape[1]) + ",%.6f,%.6f,%.6f,%.6f"
    start = time.perf_counter()
    np.savetxt(path, table, fmt=fmt, header="Index,N C H W,NPUDump,GroundTruth,AbsoluteError,RelativeError",
               comments="")
    return time.perf_counter() - start


def run_detail_benchmark(elements: int, *, threads: tuple[int, ...] = (1, 2), sample: int = 200_000,
                         folder: str | None = None, npy: bool = True, seed: int = 0) -> DetailBenchmark:
    """Export the detail of about `elements` elements with each thread count (CSV, and .npy), each into a fresh
    folder that is deleted right after; the baselines write `sample` rows."""
    work = tempfile.mkdtemp(prefix="dumpcmp-bench-detail-", dir=folder)
    try:
        x, truth, shape, npu_sample = make_inputs(work, elements, sample, seed)
        n = x.count
        bench = DetailBenchmark(n, shape, min(sample, n), machine_info())
        y = core.compare.source_from_array(truth)
        runs = [("csv", t) for t in threads] + ([("npy", t) for t in threads] if npy else [])
        for fmt, t in runs:
            out = os.path.join(work, f"out-{fmt}-{t}")
            reset_peak_rss()
            before = current_rss_bytes()
            start = time.perf_counter()
            export_detail(x, y, shape, out, op_name="conv1", ground_truth_name="conv1", fmt=fmt, threads=t)
            seconds = time.perf_counter() - start
            bench.peak_extra_rss_bytes[f"{fmt} threads={t}"] = max(peak_rss_bytes() - before, 0)
            bench.results.append(DetailMeasurement(f"dumpcmp detail ({fmt})", t, n, folder_bytes(out), seconds))
            shutil.rmtree(out)

        columns = sample_columns(npu_sample, truth, shape)
        m = bench.sample_rows
        for name, fn in (("python csv module", time_csv_module), ("numpy.savetxt", time_savetxt)):
            path = os.path.join(work, name.replace(" ", "_") + ".csv")
            seconds = fn(columns, path)
            bench.results.append(DetailMeasurement(name + f" (sample of {m} rows)", 1, m, os.path.getsize(path),
                                                   seconds))
            os.remove(path)
        bench.notes.append("baselines write precomputed NumPy columns (decoding and errors not timed); "
                           "numpy.savetxt prints NaN instead of '-' for undefined relative errors")
        bench.notes.append("peak extra RSS: growth of the resident high-water mark during the export, the inputs "
                           "being resident before it starts")
        return bench
    finally:
        shutil.rmtree(work, ignore_errors=True)


def summary(bench: DetailBenchmark) -> str:
    lines = [f"{bench.elements} elements, fp16 NC1HWC0 dump vs fp32 NCHW ground truth, shape {list(bench.shape)}"]
    for r in bench.results:
        lines.append(f"  {r.name:<45} threads={r.threads}  {r.rows_per_s / 1e6:7.2f} M rows/s  "
                     f"{r.mb_per_s:8.1f} MB/s  ({r.seconds:7.2f} s for {r.rows} rows)")
    for key, value in bench.peak_extra_rss_bytes.items():
        lines.append(f"  peak RSS beyond the inputs, {key}: {value / 2**20:.1f} MiB")
    best = max((r.rows_per_s for r in bench.results if r.name == "dumpcmp detail (csv)"), default=0.0)
    for r in bench.results:
        if "sample" in r.name and best:
            lines.append(f"  CSV export vs {r.name.split(' (')[0]}: {best / r.rows_per_s:.0f}x rows/s")
    lines.extend(f"  note: {n}" for n in bench.notes)
    return "\n".join(lines)
