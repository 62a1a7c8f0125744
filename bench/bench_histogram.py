"""Throughput of the histogram reduction (two passes: range, then counts) against NumPy in the same run.

    python bench/bench_histogram.py --size 256MB [--bins 256] [--threads 1,2] [--json out.json]

For an fp32 and an fp16 tensor of `--size` bytes: dumpcmp's histogram over the data's own range (pass one finds the
range, pass two counts), `numpy.histogram` with the range from `a.min()` / `a.max()` (NumPy's own two reads), and
the C++ memory-read probe over the same bytes. Every dumpcmp run is checked once against NumPy's counts on the
same bins (the first 4 Mi elements in float64, where NumPy's bins are the reference's). Medians of `--repeat`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="256MB", help="bytes per tensor (default 256MB)")
    parser.add_argument("--bins", type=int, default=256)
    parser.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the results as JSON here")
    args = parser.parse_args(argv)

    import numpy as np

    from dumpcmp.support.native import core
    from dumpcmp.benchmark.common import machine_info, machine_line, parse_size
    from dumpcmp.output.histogram import histogram

    size = parse_size(args.size)
    threads = [int(t) for t in args.threads.split(",")]
    rng = np.random.default_rng(0)
    rows = []
    print(machine_line(machine_info()))
    for dtype in (np.float32, np.float16):
        n = size // np.dtype(dtype).itemsize
        a = np.empty(n, dtype)
        step = 1 << 22
        for k in range(0, n, step):
            a[k:k + step] = rng.standard_normal(min(step, n - k), dtype=np.float32)
        src = core.compare.source_from_array(a)
        check = histogram(a[: 1 << 22], args.bins)
        ref = np.histogram(a[: 1 << 22].astype(np.float64), args.bins, range=(check.lo, check.hi))[0]
        assert (ref == check.counts).all(), "counts differ from numpy.histogram"
        t_np = median_time(lambda: np.histogram(a, args.bins, range=(float(a.min()), float(a.max()))), args.repeat)
        for th in threads:
            t_dc = median_time(lambda: histogram(src, args.bins, threads=th), args.repeat)
            t_probe = median_time(lambda: core.metrics.read_probe(a, th), args.repeat)
            row = {"dtype": np.dtype(dtype).name, "bytes": a.nbytes, "threads": th, "bins": args.bins,
                   "dumpcmp_gbs": a.nbytes / t_dc / 1e9, "numpy_gbs": a.nbytes / t_np / 1e9,
                   "probe_gbs": a.nbytes / t_probe / 1e9, "speedup_vs_numpy": t_np / t_dc,
                   "share_of_probe": t_probe / t_dc}
            rows.append(row)
            print(f"{row['dtype']:8} {a.nbytes / 2**20:7.0f} MiB  {th} thread(s): "
                  f"dumpcmp {row['dumpcmp_gbs']:.2f} GB/s "
                  f"(two passes; {row['share_of_probe']:.0%} of the read probe {row['probe_gbs']:.1f} GB/s), "
                  f"numpy.histogram {row['numpy_gbs']:.3f} GB/s -> {row['speedup_vs_numpy']:.1f}x")
        a = src = None  # this dtype's buffer freed before the next one is made
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "results": rows}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
