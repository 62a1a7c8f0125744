"""`dumpcmp convert -type quant|tf|caffe|offline|sim -target numpy|dump -i FILE_OR_DIR -o DIR`: dump files to
NumPy files and back (the original tool's dump_data_conversion). A folder is converted whole, recursively, its
subfolders mirrored in DIR. Files whose names do not fit are skipped, files that cannot be converted fail (listed
in DIR/convert_failed_file_list.txt); the others are converted either way.

Exit code: 0 when every matching file was converted; 2 when one failed, nothing was converted, an output file
exists (nothing is written then; --force overwrites) or the input does not exist."""

from __future__ import annotations

import argparse
import sys

# as in dumpcmp.dumps.convert.TYPES / TARGETS; repeated so that `dumpcmp --help` does not import NumPy
TYPES = ("quant", "tf", "caffe", "offline", "sim")
TARGETS = ("numpy", "dump")

EPILOG = """\
names:
  -target numpy, -type offline|sim   {dump}  ->  {dump}.output.{i}.npy, {dump}.input.{i}.npy  (stored layout)
  -target numpy, -type caffe|tf      {op}.{idx}.{ts}.pb     ->  {op}.{idx}.{ts}.npy
  -target numpy, -type quant         {op}.{idx}.{ts}.quant  ->  {op}.{idx}.{ts}.npy
  -target dump,  -type caffe|tf      {op}.{idx}.{ts}.npy    ->  {op}.{idx}.{ts}.pb
  -target dump,  -type quant         {op}.{idx}.{ts}.npy    ->  {op}.{idx}.{ts}.quant
  -target dump,  -type offline|sim   {op}.{idx}.{ts}.npy    ->  {op_type}.{op}.0.{newest ts}: one dump per op
                                     and folder with outputs 0..n-1 (--op-type, default Npy)

examples:
  dumpcmp convert -type offline -target numpy -i dump/20240101000000 -o npy
  dumpcmp convert -type caffe -target dump -i caffe_npy -o caffe_dump
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="convert dump files to .npy files and back", description=__doc__,
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-type", "--type", required=True, choices=TYPES, help="whose files: quantized Caffe, TensorFlow, "
                   "Caffe, offline model (NPU), functional simulation (NPU)")
    p.add_argument("-target", "--target", required=True, choices=TARGETS,
                   help="numpy: dump -> .npy; dump: .npy -> dump")
    p.add_argument("-i", "--input", required=True, metavar="FILE_OR_DIR", help="a file or a folder (recursive)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder (created)")
    p.add_argument("--op-type", default="Npy", help="op type in the names of offline/sim dumps made from .npy "
                   "(default Npy)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.dumps.convert import convert

    report = convert(args.type, args.target, args.input, args.output, force=args.force, op_type=args.op_type)
    for s in report.skipped:
        print(f"dumpcmp: skipped {s.path}: {s.reason}", file=sys.stderr)
    for f in report.failed:
        print(f"dumpcmp: failed {f.path}: {f.reason}", file=sys.stderr)
    print(report.summary())
    return 0 if report.ok else 2
