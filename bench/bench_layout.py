"""Benchmark the layout codec against memcpy, a memory read and NumPy (not part of the test run).

    python bench/bench_layout.py --size 128MB [--dtypes float16,float32] [--formats all]   # JSON in bench/results/

The measuring code is dumpcmp.benchmark.layouts, which `dumpcmp bench layouts` runs too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dumpcmp.benchmark import layouts
from dumpcmp.benchmark.common import parse_size


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=parse_size, default=2**30, help="bytes of each plain tensor (default 1GB)")
    p.add_argument("--dtypes", default="float16,float32", help="float16/fp16, float32/fp32, int8, bf16")
    p.add_argument("--formats", default=",".join(layouts.DEFAULT_FORMATS), help="device layouts or 'all'")
    p.add_argument("--threads", default=None, help="comma list, default '1,<all>'")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-numpy", action="store_true", help="time the NumPy recipe once (it still checks the kernel)")
    p.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "bench_layout.json")
    args = p.parse_args(argv)
    formats = layouts.ALL_FORMATS if args.formats == "all" else tuple(args.formats.split(","))
    result = layouts.run(args.size, tuple(args.dtypes.split(",")), args.threads, args.repeats, not args.no_numpy,
                         formats=formats, quiet=False)
    print(layouts.format_table(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    print(f"JSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
