"""`dumpcmp sample DIR`: write a small sample dump tree and its ground truth to try the other commands on."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from dumpcmp.errors import DumpcmpError
from dumpcmp.support.files import exists_error


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sample", help="write a small sample dump tree with ground truth",
                       description=__doc__)
    p.add_argument("out", help="folder to create (must not exist, or be empty)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true",
                   help="write into an existing folder, replacing the sample's own files (others are left alone)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.dumps.samples import make_sample_tree

    out = Path(args.out)
    if os.path.lexists(out) and (not out.is_dir() or out.is_symlink()):
        raise DumpcmpError(f"{out}: exists and is not a folder (a link is not followed); choose a new one")
    if out.is_dir() and any(out.iterdir()) and not args.force:
        raise exists_error(out, "folder")
    device = make_sample_tree(out, seed=args.seed)
    print(f"device dumps:  {device}")
    print(f"ground truth:  {out / 'ground_truth'}")
    print(f"next: dumpcmp info {out}")
    return 0
