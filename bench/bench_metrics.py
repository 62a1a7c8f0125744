"""Throughput of the metrics kernel on one big tensor pair, with its baselines measured in the same run.

    python bench/bench_metrics.py --size 512MB [--threads 1,2] [--simd avx2] [--json out.json]

fp16 device vs fp32 ground truth and fp32 vs fp32 (plain arrays, and fp16 NC1HWC0/FRACTAL_NZ dumps read through
their layout); GB/s of both sides' bytes, against a C++ memory-read probe over the same bytes and a NumPy
implementation of the original's float32 formulas, which also checks every kernel run; peak RSS beyond the inputs.
The measuring code is dumpcmp.benchmark.compare, which `dumpcmp bench compare` runs too.
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="512MB", help="bytes of fp32 ground truth per side (default 512MB)")
    parser.add_argument("--threads", default="1,2", help="thread counts to measure (default 1,2)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case; the median is reported")
    parser.add_argument("--reference-elements", type=int, default=1 << 20,
                        help="elements per chunk of the NumPy reference (default 1Mi; it runs on the whole pair)")
    parser.add_argument("--no-dumps", action="store_true", help="leave out the cases read from dump files")
    parser.add_argument("--json", help="also write the results as JSON here")
    parser.add_argument("--simd", choices=("scalar", "avx2", "avx512"),
                        help="cap the kernels' instruction set (sets DUMPCMP_SIMD; default: the best the CPU has)")
    args = parser.parse_args(argv)
    if args.simd:
        os.environ["DUMPCMP_SIMD"] = args.simd  # read by the kernels at their first use, so before importing them
    from dumpcmp.benchmark.common import parse_size
    from dumpcmp.benchmark.compare import run_compare_benchmark, summary

    bench = run_compare_benchmark(parse_size(args.size), threads=args.threads, repeat=args.repeat,
                                  reference_elements=args.reference_elements, dumps=not args.no_dumps, quiet=False)
    print(summary(bench))
    if args.json:
        with open(args.json, "w") as f:
            f.write(bench.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
