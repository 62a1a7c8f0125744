"""`dumpcmp view DUMP_FILE -o DIR [--txt]` (or `-i DUMP_FILE`, as `dumpcmp shape` takes it): what a dump holds,
and each input and output as `{dump_file_name}.{kind}.{i}.npy` in its stored layout; with --txt also `.txt` with one
value a line, written exactly (%.5g float16, %.9g float32, %.17g float64, integers as integers)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("view", help="a dump's tensors as .npy (and text) files, with a summary",
                       description=__doc__)
    p.add_argument("dump", metavar="DUMP_FILE", nargs="?", help="the dump file (or -i DUMP_FILE)")
    p.add_argument("-i", "--input", metavar="DUMP_FILE", help="the dump file, as `dumpcmp shape -i` takes it")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for the files (created)")
    p.add_argument("--txt", action="store_true", help="also write one value a line")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(run=run)


def _dims(shape) -> str:
    return "-" if shape is None else "[" + ",".join(str(d) for d in shape) + "]"


def run(args: argparse.Namespace) -> int:
    import os

    from dumpcmp.dumps.convert import view
    from dumpcmp.dumps.dump import open_dump

    from dumpcmp.cli.options import one_file

    args.dump = one_file(args.dump, args.input)
    written = view(args.dump, args.output, txt=args.txt, force=args.force)
    dump = open_dump(args.dump)
    files: dict[tuple[str, int], list[str]] = {}
    for w in written:
        files.setdefault((w.kind, w.index), []).append(os.path.basename(w.path))
    n_in, n_out = len(dump.inputs), len(dump.outputs)
    print(f"{os.path.basename(dump.path)}: op {dump.op_name or '-'}, {n_in} input{'s' * (n_in != 1)}, "
          f"{n_out} output{'s' * (n_out != 1)}, written to {args.output}")
    for t in dump.outputs + dump.inputs:
        print(f"  {t.kind}.{t.index:<3} {t.data_type:<10} {t.format:<12} shape {_dims(t.shape)}  original "
              f"{_dims(t.original_shape)}  -> {', '.join(files.get((t.kind, t.index), []))}")
    return 0
