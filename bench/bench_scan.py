"""Indexing a dump tree: names only, and names plus every header read in parallel in C++, against baselines
measured in the same run (os.walk over the same tree; reading every file whole in Python).

    python bench/bench_scan.py                      # 10,000 small dumps and 100,000 empty named files
    python bench/bench_scan.py --dumps 500 --names 0   # smoke size

Prints a table and writes JSON with machine info to bench/results/bench_scan.json. Timings are best of
`--repeat` runs on a warm page cache (the files were just written).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time

import numpy as np

import dumpcmp
from dumpcmp.support.native import core
from dumpcmp.benchmark.common import machine_info
from dumpcmp.dumps.scan import scan

T0 = 1700000000000000
OPS = ("Conv2D", "Relu", "Add", "MatMul", "BatchNorm", "Pooling", "Cast", "TransData")


def best_of(repeat: int, fn):
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def run_folder(root: str, device: int, iteration: int) -> str:
    return os.path.join(root, "20240101120000", str(device), "resnet50", "1", str(iteration))


def make_dump_tree(root: str, count: int, per_run: int = 500) -> None:
    """`count` small dumps (a 1x16x4x4 fp16 input, a 64-element fp32 output), `per_run` per iteration folder."""
    x = np.ones((1, 16, 4, 4), np.float16)
    y = np.ones(64, np.float32)
    for i in range(count):
        folder = run_folder(root, 0, i // per_run)
        if i % per_run == 0:
            os.makedirs(folder, exist_ok=True)
        op = OPS[i % len(OPS)]
        name = f"{op}.{op.lower()}_{i}.{i % 65536}.{i % 7}.{T0 + 17 * i}"
        dumpcmp.write_dump(os.path.join(folder, name), op_name=f"{op.lower()}_{i}", inputs=[x], outputs=[y])


def make_name_tree(root: str, count: int, per_run: int = 2000) -> None:
    """`count` empty files with dump names: name-only indexing does not care what is inside."""
    for i in range(count):
        folder = run_folder(root, 1, i // per_run)
        if i % per_run == 0:
            os.makedirs(folder, exist_ok=True)
        op = OPS[i % len(OPS)]
        with open(os.path.join(folder, f"{op}.{op.lower()}_{i}.{i % 65536}.{i % 7}.{T0 + 17 * i}"), "wb"):
            pass


def walk_count(root: str) -> int:
    return sum(len(files) for _, _, files in os.walk(root))


def read_all(root: str) -> int:
    total = 0
    for folder, _, files in os.walk(root):
        for f in files:
            with open(os.path.join(folder, f), "rb") as handle:
                total += len(handle.read())
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dumps", type=int, default=10_000, help="small real dumps (default 10000)")
    parser.add_argument("--names", type=int, default=100_000, help="empty named files (default 100000; 0 = skip)")
    parser.add_argument("--threads", type=int, default=0, help="header-reading threads (0 = all cores)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", help="build the trees in this folder and keep them")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bench_scan.json"))
    args = parser.parse_args(argv)

    base = args.keep or tempfile.mkdtemp(prefix="dumpcmp-bench-scan-")
    results: dict[str, object] = {
        "machine": machine_info(),
        "dumps": args.dumps, "names": args.names, "threads": args.threads, "repeat": args.repeat,
    }
    rows = []
    try:
        dump_root = os.path.join(base, "dumps")
        start = time.perf_counter()
        make_dump_tree(dump_root, args.dumps)
        results["generate_dumps_s"] = time.perf_counter() - start

        t_walk, n = best_of(args.repeat, lambda: walk_count(dump_root))
        t_names, index = best_of(args.repeat, lambda: scan(dump_root))
        assert index.dump_count == args.dumps == n and not index.skipped
        t_read, nbytes = best_of(args.repeat, lambda: read_all(dump_root))
        t_headers, hindex = best_of(args.repeat, lambda: scan(dump_root, read_headers=True, threads=args.threads))
        assert hindex.dump_count == args.dumps and not hindex.skipped
        paths = [e.path for e in index.entries()]
        t_core, files = best_of(args.repeat, lambda: core.dump.read_headers(paths, args.threads))
        assert not any(isinstance(f, str) for f in files)
        rows += [
            (f"{args.dumps} dumps: os.walk (baseline)", t_walk),
            (f"{args.dumps} dumps: scan, names only", t_names),
            (f"{args.dumps} dumps: read every file whole in Python (baseline, {nbytes / 1e6:.1f} MB)", t_read),
            (f"{args.dumps} dumps: C++ read_headers alone (parallel, no Python wrappers)", t_core),
            (f"{args.dumps} dumps: scan + parallel C++ header read", t_headers),
        ]
        results.update(walk_dumps_s=t_walk, scan_names_dumps_s=t_names, read_all_s=t_read, read_all_bytes=nbytes,
                       core_read_headers_s=t_core, scan_headers_s=t_headers)

        if args.names:
            name_root = os.path.join(base, "names")
            start = time.perf_counter()
            make_name_tree(name_root, args.names)
            results["generate_names_s"] = time.perf_counter() - start
            t_walk2, n2 = best_of(args.repeat, lambda: walk_count(name_root))
            t_names2, index2 = best_of(args.repeat, lambda: scan(name_root))
            assert index2.dump_count == args.names == n2
            rows += [(f"{args.names} named files: os.walk (baseline)", t_walk2),
                     (f"{args.names} named files: scan, names only", t_names2)]
            results.update(walk_names_s=t_walk2, scan_names_s=t_names2)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)

    width = max(len(r[0]) for r in rows)
    for label, seconds in rows:
        print(f"{label:<{width}}  {seconds:8.3f} s")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(results, handle, indent=1)
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
