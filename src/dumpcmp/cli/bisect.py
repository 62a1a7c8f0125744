"""`dumpcmp bisect MODEL.onnx --run "CMD" -r GT -o OUT`: find the first layer below the threshold with about
⌈log2 n⌉ + 1 device runs, for networks whose full dump does not fit on disk or takes too long. Each round writes an
acl.json that dumps only the layers it tests, runs CMD (your device run), compares those layers with the ground
truth and halves the suspect range. Every round is printed and logged in OUT/bisect.log; run the same command again
to resume an interrupted bisect. The layer found is then replayed by `dumpcmp locate` on its own device inputs (one
more run, dumping its inputs too). A failing CMD stops the bisect with its exit code and output."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from dumpcmp.cli.options import add_run_selection, run_selection

EPILOG = """\
placeholders in CMD (each replaced once by its shell-quoted value: write them outside quotes):
  {model}       the device model (--device-model, default MODEL)
  {acl_json}    this round's acl.json (OUT/round_NN/acl.json): dump only these layers
  {dump}        this round's dump folder (OUT/round_NN/dump; also the acl.json's dump_path)
  {graph_json}  where the run may write the compiled graph JSON when -f is not given (OUT/round_NN/model.json)
  {round}       the round number

without -f, the graph JSON is {graph_json} or the one *.json the run leaves in {dump} (dumpcmp simulate writes
{dump}/model.json); the first round then dumps the layers writing the model's outputs, by their ONNX names.

examples:
  dumpcmp bisect net.onnx -r gt/ -o bisect/ -f net.json \\
      --run "msame --model net.om --input x.bin --output out --acl-json {acl_json}"
  dumpcmp bisect net.onnx -r gt/ -o bisect/ \\
      --run "dumpcmp simulate {model} --precision int8 -i x.npy --acl-json {acl_json} -o {dump}"
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bisect", help="find the first bad layer in O(log n) device runs, dumping few layers each",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="the original .onnx file")
    p.add_argument("--run", dest="command", required=True, metavar="CMD",
                   help="the device run, with placeholders (below)")
    p.add_argument("-r", "--right", required=True, metavar="DIR", help="the ground truth folder")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for the rounds and the log")
    p.add_argument("-f", "--fusion-json", metavar="JSON", help="the compiled model's graph JSON (atc --mode=1)")
    p.add_argument("--device-model", metavar="FILE", help="what {model} stands for (default MODEL)")
    p.add_argument("--model-name", dest="acl_model_name",
                   help="the acl.json's model_name (default: the device model's file stem)")
    p.add_argument("--threshold", type=float, default=0.99, help="cosine similarity below which a layer is bad")
    p.add_argument("--last", metavar="LAYER",
                   help="search up to this layer (compiled op or original name; default the last): for outputs that "
                        "hide an error, such as a saturated softmax")
    p.add_argument("--per-round", type=int, default=1, metavar="K",
                   help="layers dumped per run (default 1: binary search; K cuts the range in K+1 parts)")
    p.add_argument("--no-locate", action="store_true",
                   help="skip the last run that replays the layer found on its own device inputs (dumpcmp locate)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="limit for one device run (reached: exit code 124)")
    add_run_selection(p)  # the runs of each round's dump compared (default all: a layer is below if it is in any)
    p.set_defaults(run=run)


def _selection_flags(args: argparse.Namespace) -> str:
    """The run selection options as given, for the printed next command."""
    flags = {"time": "--time", "device_id": "--device", "model_name": "--model", "model_id": "--model-id",
             "data_index": "--iteration"}
    given = [f" {flags[k]} {shlex.quote(str(v))}" for k, v in run_selection(args).items() if v is not None]
    if args.gt_sample is not None:
        sample = args.gt_sample if isinstance(args.gt_sample, int) else \
            ",".join(f"{i}:{k}" for i, k in args.gt_sample.items())
        given.append(f" --gt-sample {sample}")
    return "".join(given)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.debug.bisect import RunFailed, bisect

    try:
        r = bisect(args.model, args.command, args.right, args.output, graph_json=args.fusion_json,
                   device_model=args.device_model, model_name=args.acl_model_name, threshold=args.threshold,
                   per_round=args.per_round, echo=print, timeout=args.timeout,
                   with_locate=not args.no_locate, last=args.last, selection=run_selection(args),
                   gt_sample=args.gt_sample)
    except RunFailed as failed:
        sys.stdout.flush()
        print(f"dumpcmp: error: {failed} (in {failed.folder}); its output:", file=sys.stderr)
        sys.stderr.write(failed.output if failed.output.endswith("\n") or not failed.output
                         else failed.output + "\n")
        return failed.returncode if 0 < failed.returncode < 256 else 1
    if r.layer is not None and r.folder is not None:
        print(f"  its dump: {r.folder / 'dump'}; log: {r.log}")
        # the locate run dumped the layer's inputs too: the sub-model can take the device's own data
        dump, data = (Path(args.output) / "locate" / "dump", "") if r.locate is not None else \
            (r.folder / "dump", " --data ground-truth")
        print(f"  next: dumpcmp extract {args.model} --start {r.layer} --end {r.layer} -l {dump} -f {r.graph_json} "
              f"-r {args.right}{data}{_selection_flags(args)} -o {Path(args.output) / 'extract'}")
        if len(r.dump_runs) > 1:  # extract cuts one run
            from dumpcmp.dumps.scan import SELECT_FLAGS

            print(f"  (the dump holds {len(r.dump_runs)} runs: add {SELECT_FLAGS} to extract one of them)")
    else:
        print(f"  log: {r.log}")
    return 0
