"""`dumpcmp demo [-o DIR]`: ground truth, a simulated int8 device run and the full comparison of a small network,
in one command, without an accelerator (needs the onnx extra: pip install "dumpcmp[onnx]")."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the whole job on a built-in network (no accelerator needed)",
                       description=__doc__)
    p.add_argument("-o", "--output", metavar="DIR",
                   help="folder for everything (default: a new dumpcmp-demo folder here)")
    p.add_argument("--precision", choices=("int8", "fp16"), default="int8", help="the simulated device run")
    p.add_argument("--threshold", type=float, default=0.99, help="cosine similarity below which a layer is bad")
    p.add_argument("--force", action="store_true", help="replace an earlier demo in DIR")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.demo import run_demo

    run_demo(args.output, precision=args.precision, force=args.force, threshold=args.threshold)
    return 0
