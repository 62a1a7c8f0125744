"""`dumpcmp simulate MODEL.onnx --precision fp16|int8 [--acl-json acl.json] -i INPUT... -o DIR`: what an Ascend
NPU would dump for the model, without the hardware. Runs an fp16 or int8 (static QDQ quantization calibrated on
the inputs) version of the model in onnxruntime and writes device-format dumps (NC1HWC0, FRACTAL_NZ, FRACTAL_Z
layouts) under DIR/{time}/{device}/{model}/{model_id}/{data_index}/, plus the compiler-style graph JSON with fused
and inserted ops (DIR/model.json) to compare with: `dumpcmp golden` writes the ground truth for the same inputs.
Needs `pip install 'dumpcmp[onnx]'`."""

from __future__ import annotations

import argparse
import sys

EPILOG = """\
inputs (-i) are read as `dumpcmp golden` reads them: .npy/.bin files (NAME=PATH for several inputs), images with
--preprocess, folders or list files (one data_index per sample), or random data with --seed.

what is dumped: every compiled op's outputs, unless an acl.json (--acl-json) says otherwise: dump_mode
input/output/all, the dump_list entry of this model (model_name = the file stem, the ONNX graph name, or
--model-name) and its `layer` list (names of the compiled ops, as in the graph JSON); with "dump_data": "stats" one
statistic.csv per sample folder instead of the dump files. -o overrides the acl.json's dump_path. Each run gets its
own time folder; nothing is overwritten but the graph JSON.

examples:
  dumpcmp simulate net.onnx --precision fp16 --seed 0 -o npu
  dumpcmp golden net.onnx --seed 0 -o golden          # the same random input, in fp32
  dumpcmp simulate net.onnx --precision int8 -i images/ --preprocess prep.py --acl-json acl.json
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="write the dumps an NPU would produce for an ONNX model (fp16 or int8)",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="the .onnx file")
    p.add_argument("--precision", choices=("fp16", "int8"), default="fp16",
                   help="fp16: float16 tensors, fp32 compute; int8: quantized Conv/Gemm/MatMul (default fp16)")
    p.add_argument("-i", "--input", dest="inputs", nargs="+", action="extend", default=[], metavar="INPUT",
                   help="input data, as for `dumpcmp golden`")
    p.add_argument("-n", "--preprocess", action="extend", nargs="+", default=[], metavar="SCRIPT",
                   help="preprocessing script with get_image() per image input")
    p.add_argument("--seed", type=int, default=None, help="random data for inputs without -i")
    p.add_argument("--shape", action="extend", nargs="+", default=[], metavar="NAME=D,D,...",
                   help="sizes of an input's free dimensions for random data (e.g. x=1,3,224,224)")
    p.add_argument("-o", "--output", default=None, metavar="DIR",
                   help="dump path (default: the acl.json's dump_path)")
    p.add_argument("--acl-json", default=None, metavar="FILE", help="dump configuration (checked first)")
    p.add_argument("--dump-mode", choices=("input", "output", "all"), default=None,
                   help="without --acl-json: what to dump of each op (default output)")
    p.add_argument("--device-id", type=int, default=0, help="device folder (default 0)")
    p.add_argument("--model-name", default=None, help="model folder and acl.json model_name (default: file stem)")
    p.add_argument("--model-id", type=int, default=1, help="model id folder (default 1)")
    p.add_argument("--json-out", default=None, metavar="FILE", help="graph JSON path (default DIR/model.json)")
    p.add_argument("--batch-mb", type=float, default=512,
                   help="memory for exposed tensors per onnxruntime run, MB (default 512)")
    p.add_argument("--quiet", action="store_true", help="print nothing but warnings and errors")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.errors import ConfigError
    from dumpcmp.onnx.inputs import parse_shapes
    from dumpcmp.device.simulate import simulate_from_sources

    if args.batch_mb <= 0:
        raise ConfigError(f"--batch-mb {args.batch_mb}: must be positive")
    if args.device_id < 0 or args.model_id < 0:
        raise ConfigError("--device-id and --model-id must not be negative")
    r = simulate_from_sources(args.model, args.output, args.inputs, args.preprocess, seed=args.seed,
                              shapes=parse_shapes(args.shape),
                              precision=args.precision, acl_json=args.acl_json, dump_mode=args.dump_mode,
                              device_id=args.device_id, model_name=args.model_name, model_id=args.model_id,
                              json_out=args.json_out, batch_bytes=int(args.batch_mb * 1024 * 1024),
                              quiet=args.quiet)
    for note in r.notes:
        print(f"dumpcmp: warning: {note}", file=sys.stderr)
    if args.quiet:
        return 0
    fused = ", ".join("+".join(chain) for chain in r.fused) or "none"
    what = "statistics files (dump_data stats)" if r.data == "stats" else "dump files"
    print(f"{r.precision} simulation of {r.model_name}: {len(r.files)} {what} ({r.mode}) of "
          f"{len(r.dumped_ops)} ops, {len(r.sample_dirs)} sample{'s' * (len(r.sample_dirs) != 1)}")
    for d in r.sample_dirs:
        print(f"  {d}")
    print(f"  fused: {fused}")
    print(f"  graph JSON: {r.json_path}")
    return 0
