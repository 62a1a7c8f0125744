"""`dumpcmp file_compare -m MY.npy -g GOLDEN.npy -out DIR`: two .npy files, as the original tool's
`msaccucmp file_compare` (its eight metrics, its console lines, its file_result_{time}.txt in DIR)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("file_compare", help="compare two .npy files (the original tool's file_compare)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", "--my_dump_path", required=True, metavar="MY.npy", help='"My Output": a .npy file')
    p.add_argument("-g", "--golden_dump_path", required=True, metavar="GOLDEN.npy", help="the ground truth .npy")
    p.add_argument("-out", "--output", dest="output", required=True, metavar="DIR",
                   help="an existing folder: file_result_{YYYYmmddHHMMSS}.txt is written in it")
    p.add_argument("--force", action="store_true", help="replace a result file of the same second")
    p.add_argument("--quiet", action="store_true", help="no console lines")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from dumpcmp.comparison.file_compare import compare_files, result_file_name
    from dumpcmp.errors import ConfigError
    from dumpcmp.support.files import atomic_write_text, exists_error

    folder = Path(args.output)
    if not folder.is_dir():
        raise ConfigError(f"[file_compare] -out {args.output}: not an existing folder")
    result = compare_files(args.my_dump_path, args.golden_dump_path)
    path = folder / result_file_name()
    if path.exists() and not args.force:
        raise exists_error(path, "result file")
    atomic_write_text(path, result.text(), force=args.force, what="result file")
    if not args.quiet:
        for line in result.console():
            print(line)
        print(f"  result: {path}")
    return 0
