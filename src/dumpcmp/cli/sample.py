"""`dumpcmp sample DIR`: write a small sample dump tree and its ground truth to try the other commands on."""

from __future__ import annotations

import argparse
from pathlib import Path

from dumpcmp.errors import DumpcmpError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sample", help="write a small sample dump tree with ground truth",
                       description=__doc__)
    p.add_argument("out", help="folder to create (must not exist, or be empty)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.dumps.samples import make_sample_tree

    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DumpcmpError(f"{out}: exists and is not an empty folder; choose a new one")
    device = make_sample_tree(out, seed=args.seed)
    print(f"device dumps:  {device}")
    print(f"ground truth:  {out / 'ground_truth'}")
    print(f"next: dumpcmp info {out}")
    return 0
