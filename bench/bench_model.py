"""A whole-model comparison: generated fp16 fractal device dumps vs fp32 ground truth, end to end.

    python bench/bench_model.py --size 1GB --ops 200 [--json out.json] [--keep DIR]

Baselines in the same run: a C++ read of every byte of the same files (the memory-speed limit for page-cached data)
and a NumPy implementation (reshape/transpose layout decode + the ten metrics) on a sample of the ops, which also
checks those rows. The timing is dumpcmp.benchmark.dumps (`dumpcmp bench dumps` on a tree of your own).
"""

from __future__ import annotations

import argparse
import json
import tempfile

from dumpcmp.benchmark.common import parse_size
from dumpcmp.benchmark.model import format_model, generate_model, run_model_benchmark


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GB", help="ground-truth bytes in all (device side is about half: fp16)")
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--json")
    ap.add_argument("--keep", help="generate into this folder and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or tmp
        dump, gt = generate_model(root, ops=args.ops, bytes_per_side=parse_size(args.size))
        bench = run_model_benchmark(dump, gt)
    print(format_model(bench))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(bench.to_dict(), f, indent=2)


if __name__ == "__main__":
    main()
