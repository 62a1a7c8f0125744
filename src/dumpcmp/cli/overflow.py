"""`dumpcmp overflow DIR -o OUT [-n N]` (the original's spelling `-d DIR -out OUT -n N` too): the overflowing
operators of a `"dump_debug": "on"` run, as the original tool's `msaccucmp overflow`: the first N OpDebug files
(oldest first), each with its overflow status, the op's dump and each input's and output's format, shape, dtype,
max, min and mean, in OUT/overflow_summary_{YYYYmmddHHMMSS}.txt and on the console (docs/overflow.md)."""

from __future__ import annotations

import argparse


def _top(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("overflow", help="summarise the overflowing operators of a dump_debug run (OpDebug files)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", nargs="?", metavar="DIR", help="the dump folder (searched 30 folders deep)")
    p.add_argument("-d", "--dump_path", dest="dump_path", metavar="DIR", help="the dump folder (original's spelling)")
    p.add_argument("-o", "-out", "--output", dest="output", required=True, metavar="OUT",
                   help="an existing folder: overflow_summary_{YYYYmmddHHMMSS}.txt is written in it")
    p.add_argument("-n", "--top_n", "--top-n", dest="top", type=_top, default=1, metavar="N",
                   help="how many overflowing operators to show, oldest first (default 1; the original takes 1-5)")
    p.add_argument("--force", action="store_true", help="replace a summary file of the same second")
    p.add_argument("--quiet", action="store_true", help="no console lines but warnings")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from dumpcmp.comparison.overflow_analysis import analyse_overflow, summary_file_name
    from dumpcmp.errors import ConfigError
    from dumpcmp.support.files import atomic_write_text, exists_error

    if (args.folder is None) == (args.dump_path is None):
        raise ConfigError("[overflow] give the dump folder once: DIR or -d DIR")
    folder = args.folder if args.folder is not None else args.dump_path
    if not Path(folder).is_dir():
        raise ConfigError(f"[overflow] {folder}: not an existing folder")
    out = Path(args.output)
    if out.is_symlink() or not out.is_dir():
        raise ConfigError(f"[overflow] -o {args.output}: not an existing folder (a symlink is not followed)")
    summary = analyse_overflow(folder, args.top)
    for warning in summary.warnings:
        print(f"dumpcmp: warning: {warning}", file=sys.stderr)
    if not args.quiet:
        for line in summary.console():
            print(line)
    if not summary.found:
        return 0
    path = out / summary_file_name()
    if path.exists() and not args.force:
        raise exists_error(path, "summary file")
    atomic_write_text(path, summary.text(), force=args.force, what="summary file")
    if not args.quiet:
        print(f"  result: {path}")
    return 0
