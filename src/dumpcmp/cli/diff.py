"""`dumpcmp diff A.csv B.csv`: two result files row by row (e.g. two compiler versions): layers whose metric got
better or worse beyond a tolerance, rows new in B and rows vanished from A.

Exit codes: 0 nothing worse and nothing vanished, 1 something got worse or vanished, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diff", help="two result files: what got better, worse, new, vanished",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", metavar="A.csv", help="the baseline result file")
    p.add_argument("b", metavar="B.csv", help="the result file to judge")
    p.add_argument("--metric", default="CosineSimilarity",
                   help="the column to compare (default CosineSimilarity; error columns: smaller is better); an extra "
                        "metric column (a custom algorithm's) too")
    p.add_argument("--higher-is-better", action="store_const", const=True, default=None,
                   help="--metric is an extra column whose larger values are better (default: smaller is better)")
    p.add_argument("--tolerance", type=float, default=1e-4, help="changes up to this are unchanged (default 1e-4)")
    p.add_argument("--json", action="store_true", help="the diff as JSON on standard output")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.output.diff import diff

    result = diff(args.a, args.b, metric=args.metric, tolerance=args.tolerance,
                  higher_is_better=args.higher_is_better)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        print(result.text())
    return 1 if result.regressed else 0
