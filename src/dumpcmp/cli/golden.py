"""`dumpcmp golden MODEL.onnx -i INPUT... -o DIR`: ground truth from an ONNX model. Runs it in onnxruntime with
every node output exposed and writes each as `{op_name}.{output_index}.{timestamp}.npy` in execution order (model
inputs first, as op `{input}` output 0), with `golden_index.csv` (order, op, type, output index, file, shape,
dtype, note). Needs `pip install 'dumpcmp[onnx]'`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

EPILOG = """\
inputs (-i, several values or repeated):
  PATH or NAME=PATH     unnamed values go to the model's inputs in order; NAME= for models with several inputs
  .npy / .bin           dtype and shape must match the model (.bin: raw values, shaped by the model)
  image + --preprocess  the script's get_image(path, ..., nchw=True) makes the array (SigmaStar convention)
  folder / list file    every file / one line per sample (.txt, .list, .lst; for several inputs a line may list
                        one path per input, comma-separated); several samples go to DIR/0, DIR/1, ...
  (none) + --seed N     random data: floats N(0,1), integers in [0,10), free dims 1

examples:
  dumpcmp golden resnet50.onnx --seed 0 -o golden
  dumpcmp golden resnet50.onnx -i images/ --preprocess preprocess.py -o golden
  dumpcmp golden two_inputs.onnx -i image=img.npy -i mask=mask.bin -o golden
  dumpcmp golden resnet50.onnx --seed 0 --stats -o golden     # also statistic.csv for the statistics compare
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("golden", help="write per-op ground truth (.npy) of an ONNX model",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="the .onnx file (external data files beside it)")
    p.add_argument("-i", "--input", dest="inputs", nargs="+", action="extend", default=[], metavar="INPUT",
                   help="input data; see below")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for the .npy files")
    p.add_argument("-n", "--preprocess", action="extend", nargs="+", default=[], metavar="SCRIPT",
                   help="preprocessing script with get_image() per image input (NAME=SCRIPT, or in input order; "
                        "a,b.py lists allowed)")
    p.add_argument("--seed", type=int, default=None, help="random data for inputs without -i")
    p.add_argument("--shape", action="extend", nargs="+", default=[], metavar="NAME=D,D,...",
                   help="sizes of an input's free dimensions for random data (e.g. x=1,3,224,224)")
    p.add_argument("--include-constants", action="store_true",
                   help="also write outputs computed from the weights alone (Constant nodes and what folds them)")
    p.add_argument("--batch-mb", type=float, default=512,
                   help="memory for exposed outputs per onnxruntime run, MB (default 512); more runs when smaller")
    p.add_argument("--no-check", action="store_true",
                   help="skip the plain run that checks exposing outputs does not change the final outputs")
    p.add_argument("--format", dest="golden_format", choices=("npy", "sigmastar"), default="npy",
                   help="sigmastar: also write SigmaStar's onnx_NHWC_outtensor_dump.bin (4-D tensors NHWC, float32) "
                        "beside the .npy files, the benchmark of SigmaStar's DumpDebug compare")
    p.add_argument("--stats", action="store_true",
                   help="also write statistic.csv: each tensor's max/min/mean/L2 norm and NaN/Inf/zero counts, which "
                        "the statistics compare (dumpcmp compare of a dump_data stats dump) reads instead of "
                        "recomputing")
    p.add_argument("--force", action="store_true", help="write into a folder that already has ground truth")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.errors import ConfigError
    from dumpcmp.onnx.golden import CONSTANT_NOTE, golden_from_sources
    from dumpcmp.onnx.inputs import parse_shapes

    if args.batch_mb <= 0:
        raise ConfigError(f"--batch-mb {args.batch_mb}: must be positive")
    if args.golden_format == "sigmastar":
        from dumpcmp.onnx.sigmastar import SIGMASTAR_GOLDEN_NAME
        from dumpcmp.support.files import exists_error

        taken = Path(args.output) / SIGMASTAR_GOLDEN_NAME
        if not args.force and os.path.lexists(taken):
            raise exists_error(taken, "SigmaStar dump")
    runs = golden_from_sources(args.model, args.output, args.inputs, args.preprocess, seed=args.seed,
                               batch_bytes=int(args.batch_mb * 1024 * 1024), check=not args.no_check,
                               force=args.force, include_constants=args.include_constants,
                               shapes=parse_shapes(args.shape), quiet=args.quiet, stats=args.stats)
    for r in [] if args.quiet else runs:
        written = r.written
        ops = len({rec.op_name for rec in written})
        constants = [rec for rec in r.records if not rec.file and CONSTANT_NOTE in rec.note]
        skipped = [rec for rec in r.records if not rec.file and CONSTANT_NOTE not in rec.note]
        print(f"{r.out_dir}: {len(written)} tensors of {ops} ops in {len(r.batches)} run"
              f"{'s' * (len(r.batches) != 1)}" + (", final outputs equal to a plain run" if r.checked else ""))
        if constants:
            print(f"  {len(constants)} constant outputs (weights only) not written; --include-constants writes them")
        for rec in skipped:
            print(f"  skipped {rec.op_name}:{rec.output_index} ({rec.op_type}): {rec.note}")
        inside = {rec.op_name: rec for rec in r.records if "inside its subgraphs" in rec.note}
        for rec in inside.values():
            print(f"  {rec.op_name} ({rec.op_type}): {rec.note[rec.note.index('outputs inside'):]}")
        print(f"  index: {r.index_path}")
        if r.stats_path is not None:
            print(f"  statistics: {r.stats_path}")
    if args.golden_format == "sigmastar":
        from dumpcmp.onnx.sigmastar import write_sigmastar_golden

        for r in runs:
            path, left_out = write_sigmastar_golden(r, force=args.force)
            if not args.quiet:
                print(f"  SigmaStar dump: {path}" + (f" ({len(left_out)} scalar or non-numeric tensors left out)"
                                                     if left_out else ""))
    return 0
