"""`dumpcmp convert -type quant|tf|caffe|offline|sim -target numpy|dump -i FILE_OR_DIR -o DIR`: dump files to
NumPy files and back (the original tool's dump_data_conversion). A folder is converted whole, recursively, its
subfolders mirrored in DIR. Files whose names do not fit are skipped, files that cannot be converted fail (listed
in DIR/convert_failed_file_list.txt); the others are converted either way.

With -format FMT (or -file-type bin|msnpy, or -i a,b: a list of dump files) it is the original's
`msaccucmp convert -d DUMPS -f FMT`: every input and output of each NPU dump in layout FMT (as `dumpcmp shape`
converts it), one file each; a tensor that cannot be converted is listed, the others are written.

Exit code: 0 when every matching file was converted; 2 when one failed, nothing was converted, an output file
exists (nothing is written then; --force overwrites) or the input does not exist."""

from __future__ import annotations

import argparse
import sys

# as in dumpcmp.dumps.convert.TYPES / TARGETS / FILE_TYPES; repeated so that `dumpcmp --help` does not import NumPy
TYPES = ("quant", "tf", "caffe", "offline", "sim")
TARGETS = ("numpy", "dump")
FILE_TYPES = ("npy", "bin", "msnpy")

EPILOG = """\
names:
  -target numpy, -type offline|sim   {dump}  ->  {dump}.output.{i}.npy, {dump}.input.{i}.npy  (stored layout)
  -target numpy, -type caffe|tf      {op}.{idx}.{ts}.pb     ->  {op}.{idx}.{ts}.npy
  -target numpy, -type quant         {op}.{idx}.{ts}.quant  ->  {op}.{idx}.{ts}.npy
  -target dump,  -type caffe|tf      {op}.{idx}.{ts}.npy    ->  {op}.{idx}.{ts}.pb
  -target dump,  -type quant         {op}.{idx}.{ts}.npy    ->  {op}.{idx}.{ts}.quant
  -target dump,  -type offline|sim   {op}.{idx}.{ts}.npy    ->  {op_type}.{op}.0.{newest ts}: one dump per op
                                     and folder with outputs 0..n-1 (--op-type, default Npy)
  -format FMT                        {dump}  ->  {dump}.{input|output}.{i}.{1x3x224x224}.npy
  -format FMT -file-type bin         {dump}  ->  {dump}.{input|output}.{i}.{1_3_224_224}.{dtype}.{FMT}.bin (raw)
  -format FMT -file-type msnpy       {dump}  ->  {dump}.{input|output}.{i}.{FMT}.npy
  -file-type bin|msnpy (no -format)  the same in the stored layout (bin: the element count for the shape)

examples:
  dumpcmp convert -type offline -target numpy -i dump/20240101000000 -o npy
  dumpcmp convert -type caffe -target dump -i caffe_npy -o caffe_dump
  dumpcmp convert -format NCHW -i Conv2D.conv1.3.1700000000000000,MaxPool.pool1.4.1700000000000000 -o npy
  dumpcmp convert -format ND -shape 18,33 -tensor output -index 0 -i MatMulV2.fc.5.1700000000000000 -o npy
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="convert dump files to .npy files and back", description=__doc__,
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-type", "--type", choices=TYPES, help="whose files: quantized Caffe, TensorFlow, "
                   "Caffe, offline model (NPU), functional simulation (NPU); required without -format")
    p.add_argument("-target", "--target", choices=TARGETS,
                   help="numpy: dump -> .npy; dump: .npy -> dump; required without -format")
    p.add_argument("-i", "--input", required=True, metavar="FILE_OR_DIR", help="a file or a folder (recursive); "
                   "with -format also a list of files separated by commas")
    p.add_argument("-format", "--format", metavar="FMT", help="convert NPU dumps' tensors to this layout (NCHW, "
                   "NHWC, ND, ...), as dumpcmp shape does")
    p.add_argument("-shape", "--shape", metavar="D,D,..", help="with -format, one file: the target shape")
    p.add_argument("-tensor", "--tensor", choices=("output", "input"), help="with -format, one file: only this "
                   "kind (with -index)")
    p.add_argument("-index", "--index", type=int, metavar="N", help="with -format, one file: only this tensor")
    p.add_argument("-custom", "--custom", metavar="DIR", help="with -format: folder holding "
                   "format_convert/convert_*_to_*.py")
    p.add_argument("-file-type", "--file-type", choices=FILE_TYPES, default="npy", help="npy (default), bin (raw "
                   "values) or msnpy (.npy named with the format) for NPU dumps")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder (created)")
    p.add_argument("--op-type", default="Npy", help="op type in the names of offline/sim dumps made from .npy "
                   "(default Npy)")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.dumps.convert import convert
    from dumpcmp.errors import ConfigError

    if args.format is not None or args.file_type != "npy" or _is_list(args.input):
        report = _format(args)
    else:
        if args.type is None or args.target is None:
            raise ConfigError("convert needs -type and -target (or -format FMT to convert NPU dumps to a layout)")
        for flag, value in (("-shape", args.shape), ("-tensor", args.tensor), ("-index", args.index),
                            ("-custom", args.custom)):
            if value is not None:
                raise ConfigError(f"{flag} takes effect only with -format")
        report = convert(args.type, args.target, args.input, args.output, force=args.force, op_type=args.op_type)
    for s in report.skipped:
        print(f"dumpcmp: skipped {s.path}: {s.reason}", file=sys.stderr)
    for f in report.failed:
        print(f"dumpcmp: failed {f.path}: {f.reason}", file=sys.stderr)
    print(report.summary())
    return 0 if report.ok else 2


def _is_list(path: str) -> bool:
    """`-i a,b`: a list of files (a path holding a comma that exists is one file)."""
    import os

    return "," in path and not os.path.lexists(path)


def _format(args: argparse.Namespace):
    """-format / -file-type / a list of files: the original's `convert -d -f -s -o -i -c -t`."""
    from dumpcmp.dumps.convert import format_convert
    from dumpcmp.errors import ConfigError

    if args.type not in (None, "offline", "sim") or args.target not in (None, "numpy"):
        raise ConfigError("-format, -file-type and lists of files convert NPU dumps (-type offline|sim, -target "
                          f"numpy), not -type {args.type} -target {args.target}")
    sources = [p.strip() for p in args.input.split(",")] if _is_list(args.input) else args.input
    return format_convert(sources, args.format, args.output, shape=args.shape, tensor=args.tensor, index=args.index,
                          custom=args.custom, file_type=args.file_type, force=args.force)
