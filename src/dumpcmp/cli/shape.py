"""`dumpcmp shape -i DUMP_FILE -format FMT -o DIR` (or the file as the first argument, as `dumpcmp view` takes it):
a dump's tensors converted from their device layout to FMT, one `.npy` each, named
`{dump_file_name}.{output|input}.{index}.{1x3x224x224}.npy` (the original tool's shape_conversion). Values keep the
dump's dtype (bf16 and the 8/6/4-bit floats as float32)."""

from __future__ import annotations

import argparse
import sys

EPILOG = """\
crop information (where the device layout pads):
  the dump's original shape is used when it fits the device shape; otherwise -shape gives the target shape in
  FMT's axis order (FRACTAL_NZ's M and N, FRACTAL_Z's H and W), or --padded keeps the padding.

user converters (-custom DIR):
  DIR/format_convert/convert_{FROM}_to_{TO}.py defining convert(shape_from, shape_to, array) replaces the
  built-in conversion of that pair; array is the flat source data, shape_to the target shape when known.

examples:
  dumpcmp shape -i Conv2D.conv1.3.1700000000000000 -format NCHW -o out
  dumpcmp shape -i MatMul.fc.5.1700000000000001 -format ND -shape 32,1000 -o out
  dumpcmp shape -i Conv2D.conv1.3.1700000000000000 -format HWCN -tensor input -index 1 -o out
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("shape", help="convert a dump's tensors to another layout (.npy)", description=__doc__,
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dump", metavar="DUMP_FILE", nargs="?", help="the NPU dump file (or -i DUMP_FILE)")
    p.add_argument("-i", "--input", metavar="DUMP_FILE", help="the NPU dump file (the original tool's flag)")
    p.add_argument("-format", "--format", required=True, metavar="FMT", help="target format: NCHW, NHWC, ND, ...")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for the .npy files (created)")
    p.add_argument("-shape", "--shape", metavar="D,D,..", help="target shape, e.g. 1,3,224,224")
    p.add_argument("-tensor", "--tensor", choices=("output", "input"), default="output",
                   help="convert outputs (default) or inputs")
    p.add_argument("-index", "--index", type=int, metavar="N", help="only this tensor (from 0); default: all")
    p.add_argument("-custom", "--custom", metavar="DIR", help="folder holding format_convert/convert_*_to_*.py")
    p.add_argument("--padded", action="store_true", help="keep the device padding where the crop is unknown")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.dumps.convert import shape_convert
    from dumpcmp.cli.options import one_file

    args.input = one_file(args.dump, args.input)

    written = shape_convert(args.input, args.format, args.output, shape=args.shape, tensor=args.tensor,
                            index=args.index, custom=args.custom, padded=args.padded, force=args.force)
    for w in written:
        if w.note:
            print(f"dumpcmp: {w.kind} {w.index}: {w.note}", file=sys.stderr)
        print(f"{w.path}  {w.dtype} [{','.join(map(str, w.shape))}]")
    return 0
