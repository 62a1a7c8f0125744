"""Throughput of the histogram reduction (two passes: range, then counts) against NumPy in the same run.

    python bench/bench_histogram.py --size 256MB [--bins 256] [--threads 1,2] [--json out.json]

For an fp32 and an fp16 tensor of `--size` bytes: dumpcmp's histogram over the data's own range (pass one finds the
range, pass two counts), `numpy.histogram` with the range from `a.min()` / `a.max()` (NumPy's own two reads), and
the C++ memory-read probe over the same bytes. Every dumpcmp run is checked once against NumPy's counts on the
same bins (the first 4 Mi elements in float64, where NumPy's bins are the reference's). Medians of `--repeat`.

    python bench/bench_histogram.py --pngs 200 [--bins 256]

The drawing instead (the slow step of `dumpcmp histogram`): N layers' PNGs (device counts, the ground truth
overlaid, min/max lines, long and short op names) into a folder under /tmp that is deleted after, three ways in
the same run: the drawing before issue #34 (a new Figure a PNG, bars, steps, legend, tight_layout, savefig at
matplotlib's default zlib level) as the baseline; `Plotter` writing each PNG before the next (`draw`); `Plotter`
with its writer thread (what `dumpcmp histogram` does; the time includes waiting for the last PNG). Prints seconds
per PNG (the first PNG of each, which pays for the figure's start, apart), the speedups over the baseline and the
mean PNG size. `--old N` draws only N baseline PNGs (default: as many as the others).
"""

from __future__ import annotations

import argparse
import json
import os
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
    parser.add_argument("--old", type=int, metavar="N", help="with --pngs: N PNGs of the old drawing (default: N)")
    args = parser.parse_args(argv)
    if args.pngs:
        return bench_pngs(args.pngs, args.bins, args.pngs if args.old is None else args.old)

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


def old_draw(path, title, device, ground_truth, min_max=None) -> None:
    """The PNG as `dumpcmp histogram` drew it before issue #34: the baseline."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.5), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    main = device if device is not None else ground_truth
    edges = main.edges
    if device is not None:
        ax.bar(edges[:-1], device.counts.astype(float), width=edges[1:] - edges[:-1], align="edge",
               color="tab:blue", alpha=0.75, label="device" if ground_truth is not None else "values")
    if ground_truth is not None:
        ax.step(edges[:-1], ground_truth.counts.astype(float), where="post", color="black", linewidth=1.0,
                label="ground truth")
    lo, hi = min_max if min_max is not None else (main.min, main.max)
    for k, v in enumerate((lo, hi)):
        ax.axvline(v, color="red", linestyle="--", linewidth=1.2, label="min/max" if k == 0 else None)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("value")
    ax.set_ylabel("count")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with open(path, "wb") as f:
        fig.savefig(f, format="png")


def bench_pngs(n: int, bins: int, n_old: int) -> int:
    import shutil
    import tempfile
    import warnings
    from pathlib import Path

    import numpy as np

    from dumpcmp.benchmark.common import machine_info, machine_line
    from dumpcmp.output.histogram import Hist
    from dumpcmp.output.histogram.plot import Plotter

    rng = np.random.default_rng(0)

    def hist(values: np.ndarray, lo: float, hi: float) -> Hist:
        counts = np.histogram(values, bins, range=(lo, hi))[0]
        return Hist(counts, lo, hi, float(values.min()), float(values.max()), int(counts.sum()), 0, 0, 0)

    layers = []  # every layer its own range and size, as a network's layers: axes and tick labels differ
    for k in range(max(n, n_old)):
        name = f"layer_{k}" if k % 3 else "backbone/stage3/block_%d/" % k + "conv_bn_relu_fused" * 8
        scale, size = 10.0 ** rng.uniform(-2, 2), int(10 ** rng.uniform(3, 5))
        x = rng.standard_normal(size) * scale + rng.uniform(-1, 1) * scale
        y = x + rng.standard_normal(size) * scale * 0.05
        lo, hi = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
        layers.append((f"#{k} {name} (Conv2D)", hist(x, lo, hi), hist(y, lo, hi)))

    def run(folder: Path, count: int, draw, end=None) -> tuple[float, float]:
        """Seconds of the first PNG, and per PNG after it (the end included: the writer thread's last PNGs)."""
        folder.mkdir()
        t0 = time.perf_counter()
        first = None
        for k, (title, hx, hy) in enumerate(layers[:count]):
            draw(folder / f"{k:04d}.png", title, hx, hy)
            if first is None:
                first = time.perf_counter()
        if end is not None:
            end()
        t1 = time.perf_counter()
        return first - t0, (t1 - first) / max(count - 1, 1)

    print(machine_line(machine_info()))
    load0 = os.getloadavg()[0]
    root = Path(tempfile.mkdtemp(prefix="bench_histogram_", dir="/tmp"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the old drawing's matplotlib chatter
            old = run(root / "old", n_old, old_draw)
        plotter = Plotter()
        one = run(root / "draw", n, lambda *a: plotter.draw(*a, force=True))
        with Plotter(background=True) as background:
            bg = run(root / "background", n, lambda *a: background.draw(*a, force=True), background.flush)
        sizes = {name: statistics.mean(p.stat().st_size for p in (root / name).iterdir())
                 for name in ("old", "draw", "background")}
        for label, (first, per), size in (("old drawing (baseline)", old, sizes["old"]),
                                          ("Plotter.draw, one after another", one, sizes["draw"]),
                                          ("Plotter with the writer thread", bg, sizes["background"])):
            print(f"{label:34} first {first:.3f} s, then {per * 1000:6.1f} ms a PNG ({old[1] / per:4.1f}x), "
                  f"{size / 1024:.0f} KiB a PNG")
        print(f"{n} PNGs ({n_old} of the baseline), {bins} bins; load average {load0:.2f} before, "
              f"{os.getloadavg()[0]:.2f} after")
    finally:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
