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
  dumpcmp simulate --target sigmastar net.onnx --seed 0 -o sim   # sim/float/, sim/fixed/, sim/tensor_min_max.txt

--target sigmastar: SigmaStar's DumpDebug files instead of Ascend dumps: -o DIR gets float/sigma_outtensor_dump.bin
(the float model), fixed/sigma_outtensor_dump.bin (every float activation quantised per tensor with min/max
calibration on the one input sample, the quantised model run so its error accumulates layer by layer) and
tensor_min_max.txt. --quant-level int16, int8 or mixed (8-bit Conv/Gemm/MatMul inputs, 16-bit others: the SDK's
default). --fault TENSOR adds noise to one activation of the fixed model. The Ascend options do not apply.
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="write the dumps an NPU would produce for an ONNX model (fp16 or int8)",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="the .onnx file")
    p.add_argument("--target", choices=("ascend", "sigmastar"), default="ascend",
                   help="whose dumps to write: Ascend NPU dump files (default) or SigmaStar's sigma_outtensor_dump.bin")
    p.add_argument("--quant-level", choices=("mixed", "int16", "int8"), default=None,
                   help="sigmastar: activation widths of the fixed model (default mixed)")
    p.add_argument("--fault", default=None, metavar="TENSOR",
                   help="sigmastar: plant noise in this activation of the fixed model (tests, demonstrations)")
    p.add_argument("--fault-scale", type=float, default=0.5, metavar="X",
                   help="sigmastar: the planted noise's RMS relative to the tensor's (default 0.5)")
    p.add_argument("--no-dequant-fixed", action="store_true",
                   help="sigmastar: the fixed dump holds the integers (isFloat 0), as without DebugConfig's "
                        "dequantFixed")
    p.add_argument("--force", action="store_true", help="sigmastar: replace an existing output folder")
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

    if args.target == "sigmastar":
        return _run_sigmastar(args)
    if args.quant_level or args.fault or args.force or args.no_dequant_fixed:
        raise ConfigError("--quant-level, --fault, --no-dequant-fixed and --force are options of --target sigmastar")
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
    what = "statistics files (dump_data stats)" if r.data == "stats" else \
        "dump and OpDebug files (dump_debug on)" if r.data == "debug" else "dump files"
    print(f"{r.precision} simulation of {r.model_name}: {len(r.files)} {what} ({r.mode}) of "
          f"{len(r.dumped_ops)} ops, {len(r.sample_dirs)} sample{'s' * (len(r.sample_dirs) != 1)}")
    for d in r.sample_dirs:
        print(f"  {d}")
    print(f"  fused: {fused}")
    print(f"  graph JSON: {r.json_path}")
    return 0


def _run_sigmastar(args: argparse.Namespace) -> int:
    from dumpcmp.device.simulate.sigmastar import simulate_sigmastar_from_sources
    from dumpcmp.errors import ConfigError
    from dumpcmp.onnx.inputs import parse_shapes

    ascend = [f"--{o.replace('_', '-')}" for o in ("acl_json", "dump_mode", "model_name", "json_out")
              if getattr(args, o) is not None]
    if ascend or args.precision != "fp16":
        raise ConfigError(f"{', '.join(ascend) or '--precision'}: an option of Ascend simulation, not of --target "
                          "sigmastar (its widths: --quant-level)")
    if args.output is None:
        raise ConfigError("--target sigmastar needs an output folder (-o DIR)")
    r = simulate_sigmastar_from_sources(args.model, args.output, args.inputs, args.preprocess, seed=args.seed,
                                        shapes=parse_shapes(args.shape), quant_level=args.quant_level or "mixed",
                                        fault=args.fault, fault_scale=args.fault_scale,
                                        dequant_fixed=not args.no_dequant_fixed, force=args.force)
    for note in r.notes:
        print(f"dumpcmp: warning: {note}", file=sys.stderr)
    if not args.quiet:
        counts = {b: sum(1 for v in r.bits.values() if v == b) for b in (8, 16)}
        print(f"SigmaStar simulation ({r.quant_level}: {counts[16]} tensors 16-bit, {counts[8]} 8-bit): "
              f"{len(r.tensors)} tensors dumped")
        for p in (r.float_dump, r.fixed_dump, r.min_max):
            print(f"  {p}")
    return 0
