"""Throughput of the histogram reduction (two passes: range, then counts) against NumPy in the same run.

    python bench/bench_histogram.py --size 256MB [--bins 256] [--threads 1,2] [--json out.json]

For an fp32 and an fp16 tensor of `--size` bytes: dumpcmp's histogram over the data's own range (pass one finds the
range, pass two counts), `numpy.histogram` with the range from `a.min()` / `a.max()` (NumPy's own two reads), and
the C++ memory-read probe over the same bytes. Every dumpcmp run is checked once against NumPy's counts on the
same bins (the first 4 Mi elements in float64, where NumPy's bins are the reference's). Medians of `--repeat`.

    python bench/bench_histogram.py --pngs 200 [--bins 256]

The drawing instead (the slow step of `dumpcmp histogram`): N layers' PNGs (device counts, the ground truth
overlaid, min/max lines, long and short op names) written by `dumpcmp.output.histogram.plot.draw` into a folder
under /tmp that is deleted after; prints seconds per PNG (the first PNG, which pays for matplotlib's start, apart).
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
    parser.add_argument("--pngs", type=int, default=0, metavar="N", help="time drawing N layers' PNGs instead")
    args = parser.parse_args(argv)
    if args.pngs:
        return bench_pngs(args.pngs, args.bins)

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


def bench_pngs(n: int, bins: int) -> int:
    import shutil
    import tempfile
    from pathlib import Path

    import numpy as np

    from dumpcmp.output.histogram import Hist
    from dumpcmp.output.histogram.plot import draw

    rng = np.random.default_rng(0)

    def hist(scale: float) -> Hist:
        counts = np.histogram(rng.standard_normal(10_000) * scale, bins, range=(-4.0, 4.0))[0]
        return Hist(counts, -4.0, 4.0, -3.9, 3.9, int(counts.sum()), 0, 0, 0)

    folder = Path(tempfile.mkdtemp(prefix="bench_histogram_", dir="/tmp"))
    try:
        times = []
        for k in range(n):
            name = f"layer_{k}" if k % 3 else "backbone/stage3/block_%d/" % k + "conv_bn_relu_fused" * 8
            t = time.perf_counter()
            draw(folder / f"{k:04d}.png", f"#{k} {name} (Conv2D)", hist(1.0), hist(1.1), None)
            times.append(time.perf_counter() - t)
        rest = times[1:] or times
        print(f"{n} PNGs of {bins} bins: first {times[0]:.3f} s, then median {statistics.median(rest):.4f} s, "
              f"mean {statistics.mean(rest):.4f} s a PNG; total {sum(times):.2f} s")
    finally:
        shutil.rmtree(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
