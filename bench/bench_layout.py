"""Benchmark the layout codec against memcpy and NumPy (not part of the test run).

    python bench/bench_layout.py --size 128MB            # table on stdout, JSON in bench/results/

The measuring code lives in dumpcmp.benchmark.layouts so that `dumpcmp bench layouts` can reuse it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from dumpcmp.benchmark import layouts


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?)B?\s*", text, re.IGNORECASE)
    if not m:
        raise argparse.ArgumentTypeError(f"size like 128MB or 1GB, not {text!r}")
    return int(float(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[m.group(2).upper()])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=parse_size, default=2**30, help="bytes of each plain tensor (default 1GB)")
    p.add_argument("--dtypes", default="float16,float32")
    p.add_argument("--threads", default=None, help="comma list, default '1,<all>'")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-numpy", action="store_true", help="skip the NumPy baseline (slow at large sizes)")
    p.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "bench_layout.json")
    args = p.parse_args(argv)
    threads = tuple(int(t) for t in args.threads.split(",")) if args.threads else None
    result = layouts.run(args.size, tuple(args.dtypes.split(",")), threads, args.repeats, not args.no_numpy)
    print(layouts.format_table(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    print(f"JSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
