"""Single-operator detail export of an fp16 NC1HWC0 dump against fp32 NCHW ground truth, with its baselines.

    python bench/bench_detail.py --elements 20M [--threads 1,2] [--no-npy] [--dir /some/disk] [--json out.json]

Rows per second and MB/s of CSV (and .npy) written by dumpcmp, against Python's csv module and numpy.savetxt on a
sample of the same rows measured in the same run, and the peak memory the export adds beyond its inputs. CSV takes
about 60 bytes a row on disk: 100 million elements write about 6 GB (to a temporary folder, deleted afterwards).
"""

from __future__ import annotations

import argparse
import sys

from dumpcmp.benchmark.detail import run_detail_benchmark, summary


def parse_count(text: str) -> int:
    """'100M', '20m', '1.5G', '500000' -> elements (powers of 1000)."""
    t = text.strip().upper()
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(t[-1:], 1)
    number = t[:-1] if scale != 1 else t
    try:
        return int(float(number) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"element count {text!r} is not like 100M or 20000000") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--elements", type=parse_count, default=100_000_000,
                        help="elements of the tensor (default 100M)")
    parser.add_argument("--threads", default="1,2", help="thread counts to measure (default 1,2)")
    parser.add_argument("--sample", type=parse_count, default=200_000,
                        help="rows the csv-module and savetxt baselines write (default 200K)")
    parser.add_argument("--no-npy", action="store_true", help="skip the .npy format runs")
    parser.add_argument("--dir", help="where the temporary output goes (default: the system's temporary folder)")
    parser.add_argument("--json", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    threads = tuple(int(t) for t in args.threads.split(","))
    bench = run_detail_benchmark(args.elements, threads=threads, sample=args.sample, folder=args.dir,
                                 npy=not args.no_npy)
    print(summary(bench))
    if args.json:
        with open(args.json, "w") as f:
            f.write(bench.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
