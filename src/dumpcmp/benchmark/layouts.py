"""Layout codec throughput: NC1HWC0->NCHW, FRACTAL_NZ->ND, FRACTAL_Z->NCHW and their encodes.

Every figure is GB/s of the PLAIN tensor (bytes of the NCHW/ND side per second), best of `repeats` runs after a
warm-up, measured in the same run as two baselines:
  memcpy  np.copyto of the same number of bytes into a preallocated array (the memory-speed ceiling);
  numpy   the spec's reshape/transpose/copy recipe in NumPy, into a preallocated array where NumPy allows.

    >>> from dumpcmp.benchmark import layouts
    >>> result = layouts.run(size_bytes=64 << 20)
    >>> print(layouts.format_table(result))

`run` returns a JSON-ready dict (machine info, parameters, one row per case, dtype and thread count).
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import __version__
from .. import layout as L
from .._native import core


def machine_info() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "platform": platform.platform(), "python": platform.python_version(), "numpy": np.__version__,
        "dumpcmp": __version__, "cpu": cpu, "logical_cpus": os.cpu_count(), "memory_bytes": mem,
        "dumpcmp_threads": core.num_threads(),
    }


def best_time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up: faults the pages in, fills caches of the plan
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


@dataclass
class Case:
    name: str
    src: str
    dst: str
    plain_format: str
    plain_shape: tuple[int, ...]
    numpy_path: Callable[[np.ndarray, np.ndarray], None]  # (source, preallocated destination)


def _cases(size_bytes: int, dtype: np.dtype) -> list[Case]:
    e = dtype.itemsize
    elems = max(1, size_bytes // e)
    # 5HD: a ResNet-like activation; N grows with the size
    c, h, w = 256, 56, 56
    act = (max(1, elems // (c * h * w)), c, h, w)
    # NZ: batched 1024 x 1024 matrices
    mat = (max(1, elems // (1024 * 1024)), 1024, 1024)
    # FRACTAL_Z: 3x3 weights, 2048 output channels, input channels a multiple of 16
    cin = max(16, (elems // (2048 * 9)) // 16 * 16)
    wgt = (2048, cin, 3, 3)

    def hd5_decode(dev, out):
        n, c1, hh, ww, c0 = dev.shape
        out[...] = dev.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, hh, ww)[:, : out.shape[1]]

    def hd5_encode(x, out):
        n, cc, hh, ww = x.shape
        c1, c0 = out.shape[1], out.shape[4]
        padded = np.pad(x, ((0, 0), (0, c1 * c0 - cc), (0, 0), (0, 0)))
        out[...] = padded.reshape(n, c1, c0, hh, ww).transpose(0, 1, 3, 4, 2)

    def nz_decode(dev, out):
        b, n1, m1, m0, n0 = dev.shape
        out[...] = dev.transpose(0, 2, 3, 1, 4).reshape(b, m1 * m0, n1 * n0)[:, : out.shape[1], : out.shape[2]]

    def nz_encode(x, out):
        b, m, n = x.shape
        n1, m1, m0, n0 = out.shape[1:]
        padded = np.pad(x, ((0, 0), (0, m1 * m0 - m), (0, n1 * n0 - n)))
        out[...] = padded.reshape(b, m1, m0, n1, n0).transpose(0, 3, 1, 2, 4)

    def fz_decode(dev, out):
        n, cc, hh, ww = out.shape
        _, n1, n0, c0 = dev.shape
        c1 = dev.shape[0] // (hh * ww)
        six = dev.reshape(c1, hh, ww, n1, n0, c0).transpose(3, 4, 0, 5, 1, 2)
        out[...] = six.reshape(n1 * n0, c1 * c0, hh, ww)[:n, :cc]

    def fz_encode(x, out):
        n, cc, hh, ww = x.shape
        _, n1, n0, c0 = out.shape
        c1 = out.shape[0] // (hh * ww)
        padded = np.pad(x, ((0, n1 * n0 - n), (0, c1 * c0 - cc), (0, 0), (0, 0)))
        out[...] = padded.reshape(n1, n0, c1, c0, hh, ww).transpose(2, 4, 5, 0, 1, 3).reshape(out.shape)

    return [
        Case("NC1HWC0->NCHW", "NC1HWC0", "NCHW", "NCHW", act, hd5_decode),
        Case("NCHW->NC1HWC0", "NCHW", "NC1HWC0", "NCHW", act, hd5_encode),
        Case("FRACTAL_NZ->ND", "FRACTAL_NZ", "ND", "ND", mat, nz_decode),
        Case("ND->FRACTAL_NZ", "ND", "FRACTAL_NZ", "ND", mat, nz_encode),
        Case("FRACTAL_Z->NCHW", "FRACTAL_Z", "NCHW", "NCHW", wgt, fz_decode),
        Case("NCHW->FRACTAL_Z", "NCHW", "FRACTAL_Z", "NCHW", wgt, fz_encode),
    ]


def run(size_bytes: int = 1 << 30, dtypes: tuple[str, ...] = ("float16", "float32"),
        threads: tuple[int, ...] | None = None, repeats: int = 3, numpy_baseline: bool = True) -> dict:
    """Measure every case for every dtype; threads defaults to (1, all of dumpcmp's threads)."""
    if threads is None:
        threads = tuple(sorted({1, core.num_threads()}))
    rows = []
    for dtype_name in dtypes:
        dtype = np.dtype(dtype_name)
        for case in _cases(size_bytes, dtype):
            device = case.dst if case.src == case.plain_format else case.src
            c0 = L.default_c0(device, dtype)
            dev_shape = L.device_shape(device, case.plain_format, case.plain_shape, c0=c0)
            plain = np.random.default_rng(0).standard_normal(case.plain_shape, dtype=np.float32).astype(dtype)
            decode = case.src == device
            if decode:
                src = L.convert(plain, case.plain_format, device, c0=c0)
                dst = np.empty(case.plain_shape, dtype)
                plan = L.make_plan(device, dev_shape, case.dst, case.plain_shape, itemsize=dtype.itemsize)
            else:
                src = plain
                dst = np.empty(dev_shape, dtype)
                plan = L.make_plan(case.src, case.plain_shape, device, dev_shape, itemsize=dtype.itemsize)
            del plain
            nbytes = int(np.prod(case.plain_shape)) * dtype.itemsize
            copy_src = np.ones(nbytes // dtype.itemsize, dtype)
            copy_dst = np.empty_like(copy_src)
            memcpy = nbytes / best_time(lambda: np.copyto(copy_dst, copy_src), repeats) / 1e9
            del copy_src, copy_dst
            row = {"case": case.name, "dtype": dtype_name, "plain_shape": list(case.plain_shape),
                   "device_shape": list(dev_shape), "plain_bytes": nbytes, "kernel": plan.kernel,
                   "memcpy_gbps": memcpy}
            if numpy_baseline:
                row["numpy_gbps"] = nbytes / best_time(lambda: case.numpy_path(src, dst), repeats) / 1e9
                reference = dst.copy()
            for t in threads:
                row[f"dumpcmp_{t}t_gbps"] = nbytes / best_time(lambda: plan.run(src, dst, t), repeats) / 1e9
            if numpy_baseline and not np.array_equal(dst.view(np.uint8), reference.view(np.uint8)):
                raise AssertionError(f"{case.name} {dtype_name}: dumpcmp and the NumPy recipe disagree")
            rows.append(row)
            del src, dst
    return {"benchmark": "layouts", "machine": machine_info(), "size_bytes": size_bytes, "repeats": repeats,
            "threads": list(threads), "unit": "GB/s of the plain tensor (1 GB = 1e9 bytes)", "results": rows}


def format_table(result: dict) -> str:
    threads = result["threads"]
    head = ["case", "dtype", "kernel", "memcpy", "numpy"] + [f"{t} thr" for t in threads] + \
           [f"{t} thr/memcpy" for t in threads]
    lines = [head]
    for r in result["results"]:
        cells = [r["case"], r["dtype"], r["kernel"], f"{r['memcpy_gbps']:.2f}",
                 f"{r['numpy_gbps']:.2f}" if "numpy_gbps" in r else "-"]
        cells += [f"{r[f'dumpcmp_{t}t_gbps']:.2f}" for t in threads]
        cells += [f"{r[f'dumpcmp_{t}t_gbps'] / r['memcpy_gbps']:.0%}" for t in threads]
        lines.append(cells)
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    out = [f"layout codec, GB/s of the plain tensor, {result['size_bytes'] / 2**20:.0f} MiB per tensor, "
           f"best of {result['repeats']}; CPU: {result['machine']['cpu']}"]
    for i, row in enumerate(lines):
        out.append("  ".join(c.ljust(w) if j < 3 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
