"""`dumpcmp extract MODEL.onnx --start A --end B -l DUMP -f GRAPH.json [-r GT] -o OUT`: the region of an ONNX
model between start and end layers as a runnable sub-model, with the device dump files of its operators, its input
data (.npy in the original layout and raw .bin for the device), the ground truth of its outputs, an acl.json that
dumps exactly its layers, export.log and the commands to run and compare it, in OUT/dump_result_YYYY_MM_DD_HH_MM_SS/
(MindStudio's "Dump Network" for ONNX). `dumpcmp extract MODEL.onnx --list [--grep TEXT]` lists the layers.
Needs `pip install 'dumpcmp[onnx]'`."""

from __future__ import annotations

import argparse
import sys
from dumpcmp.cli.options import add_run_selection, run_selection

EPILOG = """\
names (--start/--end): an original node name, a tensor name (a start tensor: the layers reading it; an end tensor:
the layer writing it) or a device op name from the graph JSON (the original layers it was compiled from). Repeat
--start/--end for regions with several inputs or outputs; --start X --end X exports one layer.

the run (-l): as for `dumpcmp compare`: select it with --time, --device, --model, --model-id, --iteration when the
tree holds several.

examples:
  dumpcmp extract net.onnx --list --grep conv -f net.json
  dumpcmp extract net.onnx --start conv2 --end add1 -l dump/ -f net.json -r ground_truth/ -o sub/
  dumpcmp extract net.onnx --start pool1_out --end relu3 -l dump/ -f net.json -r gt/ --data ground-truth -o sub/
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("extract", help="export the region between two layers as a sub-model with its data",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="the original .onnx file")
    p.add_argument("--list", action="store_true", help="print the layers in order with output shapes and device ops")
    p.add_argument("--grep", metavar="TEXT", help="with --list: only layers whose names, types or device ops hold TEXT")
    p.add_argument("--start", action="append", default=[], metavar="NAME", help="a start layer (repeatable)")
    p.add_argument("--end", action="append", default=[], metavar="NAME", help="an end layer (repeatable)")
    p.add_argument("-l", "--left", metavar="DIR", help="the device dump folder or tree")
    p.add_argument("-f", "--fusion-json", metavar="JSON", help="the compiled model's graph JSON (atc --mode=1)")
    p.add_argument("-r", "--right", metavar="DIR",
                   help="the ground truth folder (for expected/ and --data ground-truth)")
    p.add_argument("-o", "--output", metavar="DIR", help="folder in which dump_result_{time}/ is written")
    p.add_argument("--data", choices=("device", "ground-truth"), default="device",
                   help="where the region's input data comes from (default: the device dump)")
    p.add_argument("--bin-dtype", default="fp16", metavar="TYPE",
                   help="dtype of the raw .bin inputs: what the device model takes (fp16 default, fp32, int8, ...)")
    p.add_argument("--precision", choices=("fp16", "int8"), default="fp16",
                   help="precision in the printed `dumpcmp simulate` command (default fp16)")
    add_run_selection(p)
    p.set_defaults(run=run)


def _shape_text(shapes: tuple) -> str:
    return ", ".join("?" if s is None else "[" + ",".join(str(d) for d in s) + "]" for s in shapes)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.errors import ConfigError

    if args.list:
        from dumpcmp.debug.extract import list_layers

        layers = list_layers(args.model, args.fusion_json, args.grep)
        rows = [("#", "layer", "type", "output shape", "device op")]
        rows += [(str(x.position), x.name, x.op_type, _shape_text(x.shapes), ",".join(x.device_ops) or
                  ("-" if args.fusion_json else "")) for x in layers]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[4])
        if not layers:
            print(f"no layer matches {args.grep!r}" if args.grep else "the model has no layers", file=sys.stderr)
        return 0
    missing = [flag for flag, value in (("--start", args.start), ("--end", args.end), ("-l", args.left),
                                        ("-o", args.output)) if not value]
    if missing:
        raise ConfigError(f"extract needs {', '.join(missing)} (or --list)")
    if args.fusion_json is None:
        raise ConfigError("extract needs the graph JSON (-f) to know which device op holds which layer's data")
    from dumpcmp.debug.extract import extract

    selection = run_selection(args)
    r = extract(args.model, args.start, args.end, dump=args.left, graph_json=args.fusion_json, out=args.output,
                ground_truth=args.right, data=args.data, bin_dtype=args.bin_dtype, precision=args.precision,
                selection=selection, gt_sample=args.gt_sample)
    for note in r.notes:
        print(f"dumpcmp: warning: {note}", file=sys.stderr)
    region = r.span.region
    layers = f"{len(r.span.layers)} layer{'s' * (len(r.span.layers) != 1)}"
    print(f"{layers} from {', '.join(args.start)} to {', '.join(args.end)} -> {r.folder}")
    print(f"  model.onnx    inputs {', '.join(region.inputs)}; outputs {', '.join(region.outputs)}")
    import numpy as np

    from dumpcmp.debug.extract import BIN_DTYPES, bin_dtype_of

    for x, path in r.inputs.items():
        raw = bin_dtype_of(np.load(path, mmap_mode="r"), np.dtype(BIN_DTYPES[args.bin_dtype]))
        print(f"  inputs/       {path.name} (+ .bin, {raw.name}) from {r.sources[x]}")
    if r.expected:
        print(f"  expected/     {', '.join(p.name for p in r.expected.values())}")
    files = f"{len(r.dump_files)} dump file{'s' * (len(r.dump_files) != 1)}"
    print(f"  dump_data/    {files}: {', '.join(p.name for p in r.dump_files)}")
    print(f"  acl.json      dumps {', '.join(r.layers)}")
    print("  export.log, commands.sh")
    print("\nnext:")
    for line in r.commands:
        print(f"  {line}")
    return 0
