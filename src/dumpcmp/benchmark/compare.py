"""Measuring the metrics kernel: throughput against a memory-read probe and a NumPy reference, in the same run.

Reused by bench/bench_metrics.py and by a later `dumpcmp bench compare`. Sizes are bytes per side of the ground
truth (float32); the device side is float16 or float32 of the same element count.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from .._native import core
from ..metrics import compare_arrays

EPS = float(np.finfo(np.float64).eps)
F32_EPS = float(np.finfo(np.float32).eps)


def parse_size(text: str) -> int:
    """'512MB', '2GB', '100M', '4096' -> bytes (powers of 1024)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1] if t and t[-1] in units else ""
    number = t[: len(t) - len(unit)] if unit else t
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"size {text!r} is not like 512MB or 2GB") from None
    return int(value * units[unit])


def numpy_metrics(x: np.ndarray, y: np.ndarray) -> list[float]:
    """The ten metrics written plainly in NumPy (float64 on the float32 values), the baseline the kernel must beat."""
    X = x.astype(np.float32).astype(np.float64).ravel()
    Y = y.astype(np.float32).astype(np.float64).ravel()
    with np.errstate(all="ignore"):
        nx, ny = np.linalg.norm(X), np.linalg.norm(Y)
        if nx <= EPS and ny < EPS:
            cos = 1.0
        elif np.sqrt(nx) <= EPS or np.sqrt(ny) <= EPS:
            cos = float("nan")
        else:
            cos = float(min(np.sum((X / nx) * (Y / ny)), 1.0))
        diff = X - Y
        absd = np.abs(diff)
        rel = np.where(np.abs(Y) > EPS, np.abs(X / Y - 1.0), 0.0)
        s = np.sum(Y * Y)
        red = 0.0 if np.sqrt(s) <= EPS else float(np.sqrt(np.sum(diff * diff) / s))

        def normalise(d: np.ndarray) -> np.ndarray:
            lo, hi = d.min(), d.max()
            if hi > lo:
                d = (d - lo) / (hi - lo)
            return np.maximum(d, F32_EPS)

        p, q = normalise(X), normalise(Y)
        P, Q = p / p.sum(), q / q.sum()
        kld = float(np.sum(P * np.log(P / Q)))
        return [cos, float(absd.max()), float(rel.sum()), red, kld, float(np.std(X)), float(absd.mean()),
                float(np.sqrt(np.mean(diff * diff))), float(rel.max()), float(rel.mean())]


def best_time(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm: page faults, thread start-up, caches
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def peak_rss_bytes() -> int:
    """The high-water mark of resident memory: VmHWM (resettable), else getrusage's ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def reset_peak_rss() -> bool:
    """Start a new high-water mark (Linux: writing 5 to clear_refs), so freed set-up temporaries do not hide growth."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def current_rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class Measurement:
    name: str
    threads: int
    bytes: int
    seconds: float
    gb_per_s: float = field(init=False)

    def __post_init__(self) -> None:
        self.gb_per_s = self.bytes / self.seconds / 1e9


@dataclass
class CompareBenchmark:
    size_bytes: int
    elements: int
    reference_elements: int
    machine: dict
    results: list[Measurement] = field(default_factory=list)
    peak_extra_rss_bytes: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


def cpu_simd_flags() -> list[str]:
    """The vector extensions the kernels can dispatch to that this CPU reports (Linux /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return [name for name in ("avx512f", "avx512dq", "avx512bw", "avx512vl", "avx2", "fma", "f16c")
                            if name in flags]
    except OSError:
        pass
    return []


def machine_info() -> dict:
    return {
        "platform": platform.platform(),
        "processor": platform.processor(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "dumpcmp_threads": core.num_threads(),
        "cpu_simd_flags": cpu_simd_flags(),
        # caps the kernels' instruction set (scalar, avx2, avx512); unset = the best the CPU has
        "DUMPCMP_SIMD": os.environ.get("DUMPCMP_SIMD", ""),
    }


def run_compare_benchmark(size_bytes: int, *, threads: tuple[int, ...] = (1, 2), repeat: int = 3,
                          reference_elements: int = 1 << 24, seed: int = 0) -> CompareBenchmark:
    """fp16 device vs fp32 ground truth and fp32 vs fp32 of `size_bytes` per ground-truth side."""
    n = max(size_bytes // 4, 1)
    rng = np.random.default_rng(seed)
    truth = rng.standard_normal(n, dtype=np.float32)
    noise = rng.standard_normal(n, dtype=np.float32)
    noise *= 0.01
    device32 = truth + noise
    del noise
    device16 = device32.astype(np.float16)
    bench = CompareBenchmark(size_bytes, n, min(reference_elements, n), machine_info())

    if not reset_peak_rss():
        bench.notes.append("could not reset the RSS high-water mark: peak extra memory is a lower bound")
    rss_before = current_rss_bytes()
    peak_before = peak_rss_bytes()
    pairs = {"fp16 vs fp32": (device16, truth), "fp32 vs fp32": (device32, truth)}
    for t in threads:
        probe_bytes = device32.nbytes + truth.nbytes
        seconds = best_time(lambda t=t: (core.read_probe(device32, t), core.read_probe(truth, t)), repeat)
        bench.results.append(Measurement("memory-read probe (C++)", t, probe_bytes, seconds))
        for name, (x, y) in pairs.items():
            seconds = best_time(lambda x=x, y=y, t=t: compare_arrays(x, y, threads=t), repeat)
            bench.results.append(Measurement(f"kernel {name}, 10 metrics", t, x.nbytes + y.nbytes, seconds))
            seconds = best_time(lambda x=x, y=y, t=t: compare_arrays(x, y, threads=t, metrics="0,1,2,3,5,6,7,8,9"),
                                repeat)
            bench.results.append(Measurement(f"kernel {name}, without KLD", t, x.nbytes + y.nbytes, seconds))
    # The kernel's own memory: growth of the high-water mark beyond the inputs (which existed before).
    bench.peak_extra_rss_bytes = max(peak_rss_bytes() - max(peak_before, rss_before), 0)

    m = bench.reference_elements
    seconds = best_time(lambda: np.sum(truth[:m].view(np.int32)), 1)
    bench.results.append(Measurement("numpy sum probe", 1, truth[:m].nbytes, seconds))
    for name, (x, y) in pairs.items():
        seconds = best_time(lambda x=x, y=y: numpy_metrics(x[:m], y[:m]), 1)
        bench.results.append(Measurement(f"numpy reference {name}, 10 metrics", 1, x[:m].nbytes + y[:m].nbytes, seconds))
    bench.notes.append(f"numpy reference timed on the first {m} elements (it needs several full-size float64 temporaries)")
    return bench


def summary(bench: CompareBenchmark) -> str:
    lines = [f"{bench.elements} elements per side ({bench.size_bytes / 2**20:.0f} MiB of fp32 ground truth); "
             f"CPU {', '.join(bench.machine.get('cpu_simd_flags', [])) or 'no AVX'}"
             + (f", DUMPCMP_SIMD={bench.machine['DUMPCMP_SIMD']}" if bench.machine.get("DUMPCMP_SIMD") else "")]
    for r in bench.results:
        lines.append(f"  {r.name:<45} threads={r.threads}  {r.gb_per_s:7.2f} GB/s  ({r.seconds * 1e3:8.1f} ms)")
    lines.append(f"  peak RSS beyond the inputs during kernel runs: {bench.peak_extra_rss_bytes / 2**20:.1f} MiB")
    by = {(r.name, r.threads): r.gb_per_s for r in bench.results}
    for name in ("fp16 vs fp32", "fp32 vs fp32"):
        ref = by.get((f"numpy reference {name}, 10 metrics", 1))
        for variant in ("10 metrics", "without KLD"):
            for t in sorted({r.threads for r in bench.results}):
                kernel, probe = by.get((f"kernel {name}, {variant}", t)), by.get(("memory-read probe (C++)", t))
                if kernel and probe and ref:
                    # the NumPy reference always computes all ten metrics
                    lines.append(f"  {name}, {variant:<11}, {t} thread(s): {kernel / probe:6.1%} of the read probe, "
                                 f"{kernel / ref:6.1f}x NumPy (10 metrics)")
    lines.extend(f"  note: {n}" for n in bench.notes)
    return "\n".join(lines)
