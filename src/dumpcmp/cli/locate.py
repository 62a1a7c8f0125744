"""`dumpcmp locate`: where the error starts. Every device operator is replayed in onnxruntime on its own dumped
inputs (the original model's nodes it stands for, cut out through the graph JSON), so each gets three numbers:
inherited (its device inputs against ground truth), own (its device output against the replay: the error it adds)
and total (against ground truth, as `dumpcmp compare`). The first operator whose own error crosses the threshold is
where the error starts. The dump must hold inputs (acl.json dump_mode all).

Writes OUT/locate.csv (one file per run when the dump holds several: locate_{run}.csv) and prints the verdict and
the operators that add the most error; --json FILE (or -) writes the same as JSON.

A SigmaStar dump (-l sigma_outtensor_dump.bin of the fixed model; -r the float model's dump or `dumpcmp golden`'s
tree) needs no -f: every layer (a tensor of the dump, named by its ONNX tensor name) is replayed from the ONNX node
producing it, fed the dump's own inputs (dequantised, NHWC -> NCHW): the fixed model's own error per layer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dumpcmp.cli.options import add_cluster_options, add_run_selection, cluster_session, count, run_selection


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("locate", help="replay every operator on its own device inputs: where the error starts",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", metavar="MODEL.onnx", help="the original ONNX model")
    p.add_argument("-l", "--left", required=True, metavar="DIR",
                   help="the device dump tree (dump_mode all), or a SigmaStar dump (sigma_outtensor_dump.bin)")
    p.add_argument("-r", "--right", required=True, metavar="DIR",
                   help="the ground truth (dumpcmp golden); for a SigmaStar dump also the float model's dump")
    p.add_argument("-f", "--fusion-json", metavar="JSON",
                   help="the compiled model's graph JSON (required, except for a SigmaStar dump: its tensors are "
                        "named by the ONNX tensor names)")
    p.add_argument("-q", "--quant-fusion-rule", metavar="JSON", help="quantization fusion rule file (AMCT)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="folder for locate.csv (created)")
    p.add_argument("--threshold", type=float, default=0.99,
                   help="own cosine similarity below which an operator adds error (default 0.99)")
    p.add_argument("--rrmse", type=float, default=None,
                   help="own relative RMSE (RMSE / RMS of the replay) above which an operator adds error "
                        "(default sqrt(2*(1-threshold)), 0.141 for 0.99)")
    p.add_argument("-alg", "--algorithms", metavar="LIST",
                   help="metrics for own, by index (0-9) or 'all'; cosine, max abs error and RMSE are always there")
    p.add_argument("--json", metavar="FILE", help="also write the result as JSON (- for standard output)")
    p.add_argument("--top", type=count, default=10, help="operators to list by own error (default 10)")
    add_run_selection(p)
    p.add_argument("--threads", type=count, default=0, help="onnxruntime threads (default: its own choice)")
    p.add_argument("--force", action="store_true", help="replace existing locate files")
    add_cluster_options(p, "replay")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.dumps.naming import run_path
    from dumpcmp.support.files import atomic_write_text, exists_error
    from dumpcmp.errors import DumpcmpError
    from dumpcmp.debug.locate.core import locate_runs, to_json

    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise DumpcmpError(f"{out}: exists and is not a folder")
    if not args.force and (out / "locate.csv").exists():
        raise exists_error(out / "locate.csv", "locate result")
    from dumpcmp.dumps.sigmastar import is_sigmastar_dump

    sigmastar = is_sigmastar_dump(args.left)
    if args.cluster is not None:
        from dumpcmp.comparison.cluster import placed_roots

        if sigmastar:
            raise DumpcmpError("--cluster is not available when -l is a SigmaStar dump (one file, replayed here)")
        if placed_roots(args.left) is not None:
            raise DumpcmpError("locate plans the replay from the dumps' headers on this machine: give -l a path it "
                               "sees (shared storage), not HOST=PATH roots")
    if sigmastar:  # SigmaStar DumpDebug: one run, layers by ONNX tensor name
        from dumpcmp.debug.locate.sigmastar import locate_sigmastar

        if args.fusion_json is not None or args.quant_fusion_rule is not None:
            raise DumpcmpError(f"{'-f' if args.fusion_json is not None else '-q'} is not available when -l is a "
                               "SigmaStar dump (its tensors are named by the ONNX tensor names)")
        results = [locate_sigmastar(args.model, args.left, args.right, threshold=args.threshold, rrmse=args.rrmse,
                                    algorithms=args.algorithms, threads=args.threads, quiet=args.quiet)]
    elif args.fusion_json is None:
        raise DumpcmpError("locate needs the graph JSON (-f): it says which original ops each device op stands for")
    else:
        with cluster_session(args) as client:  # None without --cluster
            results = locate_runs(args.model, args.left, args.right, fusion_json=args.fusion_json,
                                  quant_json=args.quant_fusion_rule, threshold=args.threshold, rrmse=args.rrmse,
                                  algorithms=args.algorithms, gt_sample=args.gt_sample, threads=args.threads,
                                  quiet=args.quiet, client=client, **run_selection(args))
    out.mkdir(parents=True, exist_ok=True)
    several = len(results) > 1
    for result in results:
        path = run_path(out / "locate.csv", result.run, [r.run for r in results]) if several else out / "locate.csv"
        result.write(path, force=args.force)
        if not args.quiet:
            print(result.summary(args.top))
            print(f"  result: {path}")
    if args.json == "-":
        sys.stdout.write(to_json(results) + "\n")
    elif args.json:
        atomic_write_text(args.json, to_json(results) + "\n", force=args.force, what="JSON file")
    return 0
