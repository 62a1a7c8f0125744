"""`dumpcmp compare`: every operator of a device dump against its ground truth (the original tool's
`compare_vector -l ... -r ... [-f ...] [-q ...] -o ...`), or one operator element by element with `-d OP`.

The original tool's flags work as they did (`-l`, `-r`, `-f`, `-q`, `-o`, `-csv`, `-custom`, `-alg`, `-d`, `-t`,
`-i`); `-q` is the quantization fusion rule file there, so quiet is `--quiet` only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Iterator

from dumpcmp.cli.options import add_cluster_options, add_run_selection, cluster_session, count, positive, run_selection
from dumpcmp.support.gcpause import paused
from dumpcmp.cli.streamed import StreamedResults, discarding


EPILOG = """\
samples and iterations: a ground truth written by `dumpcmp golden` for several samples (DIR/0, DIR/1, ...) pairs
sample k with iteration (data_index) k; --gt-sample K takes folder K for every iteration, --gt-sample 0:1,1:0 maps
each iteration to a folder. The summary says which folder each run was compared with.

examples:
  dumpcmp compare -l dump/ -r golden/ -f dump/model.json -o result.csv
  dumpcmp compare -l dump/ -r golden/ -f model.json --iteration 1 --threshold 0.995
  dumpcmp compare -l dump/ -r golden/ -f model.json -alg 0,1,7 --extra -o result.csv --force
  dumpcmp compare -l dump/ -r golden/ -f model.json -d conv1 -t output -i 0 -o detail/
  dumpcmp compare -l dump_a/ -r dump_b/ -o a_vs_b.csv          # device vs device, paired by file name
  dumpcmp compare -l dump_a/ -r dump_b/ --npu-vs-npu raw -o a_vs_b.csv   # stored buffers, padding included
  dumpcmp compare -l dump/ -r dump/ --iteration 1 --right-iteration 0   # one run against another
  dumpcmp compare -l stats_dump/ -r golden/ -f model.json -o stats.csv   # statistics dump (dump_data stats)
  dumpcmp compare -l sigma_outtensor_dump.bin -r golden/ --locate model.onnx --html report.html   # SigmaStar

statistics: a left side holding statistics files (statistic.csv) and no tensor dump, or --stats, compares each
tensor's Max/Min/Mean/L2Norm and NaN/Inf counts with the ground truth's, computed from its tensors (or with another
dump's); verdict error above --stats-error, warning above --stats-warning (docs/statistics.md).
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare device dumps with ground truth, operator by operator",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-l", "--left", required=True, metavar="DIR",
                   help='"My Output": the device dump folder or tree, or a SigmaStar dump (sigma_outtensor_dump.bin)')
    p.add_argument("-r", "--right", required=True, metavar="DIR",
                   help='"Ground Truth": a folder of {op}.{index}.{timestamp}.npy files, or another device dump')
    p.add_argument("-f", "--fusion-json", metavar="JSON", help="the compiled model's graph JSON (atc --mode=1)")
    p.add_argument("-q", "--quant-fusion-rule", metavar="JSON", help="quantization fusion rule file (AMCT)")
    p.add_argument("-cf", "--close-fusion-json", metavar="JSON",
                   help="the graph JSON of the model compiled without fusion, whose device dump -r is: each fused "
                        "tensor (-l, graph -f) is compared with the unfused op's output holding the same original "
                        "tensor (the original's -cf)")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="result file (or an existing folder: result_{time}.csv is written in it); with -d, a folder")
    p.add_argument("-csv", "--csv", action="store_true", help="write CSV (default for a .csv name)")
    p.add_argument("--output-folder", action="store_true",
                   help="-o is a folder, made when missing (as the original's -out)")
    p.add_argument("-custom", "--custom", metavar="DIR", help="folder holding format_convert/convert_X_to_Y.py "
                                                             "and metric/metric_{Name}.py metric plug-ins")
    p.add_argument("-alg", "--algorithms", metavar="LIST",
                   help="metrics by index, e.g. 0,1,2 (0 Cosine, 1 MaxAbs, 2 AccRel, 3 RelEuclid, 4 KLD, 5 Std, "
                        "6 MAE, 7 RMSE, 8 MaxRel, 9 MeanRel) or name; with -c, also custom algorithm names; "
                        "plugin:Name for a metric plug-in (docs/compare.md#metric-plug-ins); in column order; "
                        "default all")
    p.add_argument("-c", "--custom_script_path", "--custom-script-path", dest="custom_script_path", metavar="DIR",
                   help="the original tool's user script folder: DIR/algorithm/alg_{Name}.py custom algorithms "
                        "(select them with -alg Name) and DIR/format_convert converters (as -custom)")
    p.add_argument("-a", "--algorithm_options", "--algorithm-options", dest="algorithm_options", metavar="OPTIONS",
                   help='options of each algorithm, "Name:key=value,key=value;Other:key=value" (given to custom '
                        'algorithms as args.key)')
    p.add_argument("--max-elements", type=count, default=0, metavar="N",
                   help="compare only each tensor's first N elements (the original's -max N; the summary says so)")
    p.add_argument("--ffts", "-ffts", action="store_true",
                   help="FFTS+ manual-mode slices (X_lxslice{N}) compared one by one, not merged (the original's "
                        "-ffts; auto-mode threads are merged either way)")
    p.add_argument("--op-range", metavar="START,END,STEP",
                   help="only the fusion ops holding graph ops of these ids (the original's -r; needs -f), with an "
                        "OpSequence column")
    p.add_argument("--op-select", metavar="ID,ID,...",
                   help="only the fusion ops holding graph ops of these ids (the original's -s; needs -f), with an "
                        "OpSequence column")
    p.add_argument("--op-mapping", action="store_true",
                   help="write the mapping of device ops to ground-truth ops and their files instead of comparing "
                        "(the original's -map; needs -f or -q): -o FILE, or mapping_{time}.csv in a folder")
    p.add_argument("--npu-vs-npu", choices=("restored", "raw"), metavar="restored|raw",
                   help="device vs device (-r another device dump): restored (default, as the current msaccucmp) "
                        "decodes each tensor to its original shape, padding removed, and compares float32 values; "
                        "raw (as msaccucmp 72c5bd4c) compares the stored buffers, padding included")
    p.add_argument("--precise", action="store_true",
                   help="per-element terms in float64 instead of the original tool's float32 (digits may then differ "
                        "from the original's)")
    p.add_argument("--extra", action="store_true", help="add MSE, SQNR(dB) and NaN/Inf counts per side")
    p.add_argument("--overflow", action="store_true", help="add the OverFlow column (device side holds NaN/inf)")
    p.add_argument("--overflow-like-original", dest="overflow", action="store_const", const="original",
                   help="add the original's OverFlow column (-overflow_detection): YES for a float16 device tensor "
                        "reaching 65504 in magnitude, NaN for other types")
    p.add_argument("--exit-like-original", action="store_true",
                   help="exit 2, as the original tool does, when a graph op has no dump file (the result is written)")
    p.add_argument("--threshold", type=float, default=0.99, help="cosine similarity below which a layer is bad")
    add_run_selection(p)
    p.add_argument("--right-time", metavar="YYYYMMDDhhmmss", help="device vs device: the right-hand run's time")
    p.add_argument("--right-iteration", dest="right_data_index", type=count, metavar="DATA_INDEX",
                   help="device vs device: the right-hand run's iteration")
    p.add_argument("--threads", type=count, default=0, help="threads (default: all cores)")
    p.add_argument("--force", action="store_true", help="replace existing result files")
    add_cluster_options(p, "compare")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary (the table still goes to "
                                                        "standard output when there is no -o)")
    p.add_argument("--locate", metavar="MODEL.onnx",
                   help="replay every operator on its own device inputs (dumpcmp locate) and add the columns "
                        "OwnCosine, OwnRelRMSE, InheritedCosine, InheritedRelRMSE, Verdict after the original's; "
                        "with a SigmaStar dump (no -f): rows in the ONNX graph's order and locate's verdict printed")
    p.add_argument("-d", "--op", dest="op", metavar="OP", help="single-operator mode: the device op to detail")
    p.add_argument("-t", "--tensor", choices=("input", "output"), default="output", help="with -d: input or output")
    p.add_argument("-i", "--index", type=count, default=0, help="with -d: which input/output")
    p.add_argument("--top-n", type=count, default=20, help="with -d: largest errors to list")
    p.add_argument("--max-lines", type=positive, default=1_000_000, help="with -d: data rows per detail CSV file")
    p.add_argument("--summary-only", action="store_true",
                   help="with -d: leave out the element-by-element files, write the summary and the top lists "
                        "(the original's --ignore_single_op_result)")
    p.add_argument("--format", dest="detail_format", choices=("csv", "npy"), default="csv",
                   help="with -d: detail as CSV files (default) or .npy columns")
    p.add_argument("--html", metavar="HTML", help="also write the HTML report (see dumpcmp report)")
    p.add_argument("--stats", action="store_true", help="compare the left side's statistics files (statistic.csv) "
                                                        "even where tensor dumps are beside them")
    p.add_argument("--stats-warning", type=float, default=1e-3, metavar="REL",
                   help="statistics compare: RelDiff above which a tensor is a warning (default 1e-3)")
    p.add_argument("--stats-error", type=float, default=1e-2, metavar="REL",
                   help="statistics compare: RelDiff above which a tensor is an error (default 1e-2)")
    p.add_argument("--narrow", metavar="ACL_JSON",
                   help="statistics compare: write an acl.json dumping full tensors (dump_mode all) only of the "
                        "first error's op and its upstream neighbours (graph producers with -f, else the ops just "
                        "before it), up to --narrow-budget")
    p.add_argument("--narrow-budget", default="1G", metavar="BYTES",
                   help="with --narrow: bytes of tensors the region may hold, e.g. 512M, 2G (default 1G)")
    p.add_argument("--narrow-dump-path", metavar="DIR",
                   help="with --narrow: the acl.json's dump_path (default: the -l folder, made absolute)")
    from dumpcmp.cli.advice_options import add_options

    add_options(p)
    p.set_defaults(run=run)


def _result_path(output: str | None, csv_flag: bool, run: str, runs: list[str],
                 stem: str = "result") -> tuple[Path | None, bool]:
    if output is None:
        return None, csv_flag
    path = Path(output)
    from dumpcmp.dumps.naming import run_path, timestamp_now

    if path.is_dir():
        path = path / f"{stem}_{timestamp_now()}.csv"  # as the original tool names results in a folder
        csv_flag = True
    csv_format = csv_flag or path.suffix.lower() == ".csv"
    if len(runs) > 1:
        path = run_path(path, run, runs)
    return path, csv_format


def _check_output(args: argparse.Namespace) -> None:
    from dumpcmp.errors import DumpcmpError
    from dumpcmp.support.files import exists_error

    if args.output is not None and getattr(args, "output_folder", False) and not Path(args.output).is_dir():
        Path(args.output).mkdir(mode=0o700, parents=True)  # the original's -out: a folder, made when missing
    if args.output is None or Path(args.output).is_dir():
        return
    path = Path(args.output)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise DumpcmpError(f"{path}: the folder {folder} does not exist")
    if path.exists() and not args.force:
        raise exists_error(path, "result file")


@paused()  # the rows, their cells, the summary and advice of a large model: see dumpcmp.support.gcpause
@discarding  # result files written while comparing and not published (an error, a signal) are removed
def run(args: argparse.Namespace) -> int:
    from dumpcmp.comparison.compare import compare_runs
    from dumpcmp.dumps.sigmastar import is_sigmastar_dump
    from dumpcmp.output.table import text_table
    from dumpcmp.support.files import exists_error
    from dumpcmp.errors import DumpcmpError

    custom_scripts(args)
    if args.summary_only and args.op is None:
        raise DumpcmpError("--summary-only (--ignore_single_op_result) applies to -d/-op, one operator's detail files")

    placed = _placed(args)  # -l HOST=PATH,... with --cluster: nothing of the left side to look at here
    if not placed and is_sigmastar_dump(args.left):  # SigmaStar DumpDebug: their compare, their console lines
        return _run_sigmastar(args)
    selection = run_selection(args)
    args.op_ranges = _op_range(args)
    if args.close_fusion_json is not None:
        _close_fusion_only(args)
    if args.op_mapping:
        return _run_mapping(args, selection)
    if args.max_elements and (args.op is not None or args.stats or args.locate is not None):
        from dumpcmp.errors import ConfigError

        raise ConfigError("--max-elements (-max) applies to the model-level compare only, not with -d/-op, --stats "
                          "or --locate")
    if args.npu_vs_npu is not None and args.op is not None:
        from dumpcmp.errors import ConfigError

        raise ConfigError("--npu-vs-npu applies to the model-level compare only, not with -d/-op (which decodes both "
                          "device tensors by their original shapes)")
    if args.op is None and not placed:
        from dumpcmp.comparison.stats import has_stats_dump

        if args.stats or has_stats_dump(args.left):
            _no_cluster(args, "a statistics compare")
            return _run_stats(args, selection)
    if args.narrow is not None:
        from dumpcmp.errors import ConfigError

        raise ConfigError("--narrow needs a statistics compare: a -l folder holding statistics files (or --stats), "
                          "without -d")
    if args.op is not None:
        _no_cluster(args, "-d (one operator)")
        return _run_single_op(args, selection)
    _check_output(args)  # before a long run: an existing result file or a missing folder is found now
    from dumpcmp.cli.finish import check_outputs, finish

    check_outputs(args, args.html)
    locate_results: dict[str, object] = {}
    if args.locate is not None and args.fusion_json is None:
        raise DumpcmpError("--locate needs the graph JSON (-f)")
    # a CSV result file of the original columns is written as the rows come (issue #35), else after the run
    streamed = StreamedResults(args, lambda run, runs: _result_path(args.output, args.csv, run, runs)[0]) \
        if args.output is not None and args.locate is None and args.op_ranges is None and \
        _result_path(args.output, args.csv, "", [""])[1] else None
    with _cluster(args) as client:  # None without --cluster; with it, closed once the rows are back
        results = compare_runs(args.left, args.right, fusion_json=args.fusion_json,
                               quant_json=args.quant_fusion_rule, algorithms=args.algorithms, custom=args.custom,
                               threads=args.threads, quiet=args.quiet, precise=args.precise,
                               gt_sample=args.gt_sample, right_time=args.right_time,
                               right_data_index=args.right_data_index, custom_algorithms=args.custom_algorithms,
                               max_elements=args.max_elements, client=client, per_slice=args.ffts,
                               close_fusion_json=args.close_fusion_json, npu_vs_npu=args.npu_vs_npu or "restored",
                               row_sinks=streamed.sinks if streamed is not None else None,
                               keep_refs=args.html is not None,  # the report re-reads tensors (histograms)
                               **selection)
        located_on = client if args.locate is not None else None  # --locate replays on the same cluster
        if located_on is not None:
            locate_results = _locate(args, selection, located_on)
    if args.op_ranges is not None:  # -r/-s: the chosen fusion ops only
        from dumpcmp.comparison.op_range import select_ops

        results = [select_ops(r, args.op_ranges) for r in results]
        for note in args.op_ranges.warnings:
            print(f"dumpcmp: warning: {note}", file=sys.stderr)
    located: dict[str, dict] = {}
    if args.locate is not None:
        from dumpcmp.debug.locate.core import compare_columns

        if located_on is None:
            locate_results = _locate(args, selection, None)
        located = {run: compare_columns(r) for run, r in locate_results.items()}
    paths = [_result_path(args.output, args.csv, result.run, [r.run for r in results]) for result in results]
    if not args.force:
        for path, _ in paths:
            if path is not None and path.exists():
                raise exists_error(path, "result file")
    for result, (path, csv_format) in zip(results, paths):
        if path is not None and streamed is not None:
            streamed.publish(result, path)
        elif path is not None:
            result.write(path, csv_format=csv_format, extra=args.extra, overflow=args.overflow, force=args.force,
                         columns=located.get(result.run))
        else:
            sys.stdout.write(text_table(result.table(extra=args.extra, overflow=args.overflow,
                                                     columns=located.get(result.run))))
        if not args.quiet:
            print(result.summary(args.threshold), file=sys.stderr if path is None else sys.stdout)
            if path is not None:
                print(f"  result: {path}")
    # advice, the HTML report, the gates (exit 1 when one fails) and --json
    code = finish(results, args, html=args.html, out=sys.stderr if args.output is None else sys.stdout,
                  locate_results=locate_results if args.locate is not None else None)
    if code == 0 and args.exit_like_original and any(any(result.column("unmatched")) for result in results):
        return 2
    return code


def _close_fusion_only(args: argparse.Namespace) -> None:
    """-cf applies to the model-level compare and the op mapping: what it cannot go with exits 2 saying so."""
    from dumpcmp.errors import ConfigError

    for given, flag in ((args.op is not None, "-d/-op"), (args.stats, "--stats"), (args.locate is not None,
                                                                                   "--locate"),
                        (args.cluster is not None, "--cluster")):
        if given:
            raise ConfigError(f"-cf (a fused model's dump against the unfused model's) is not available with {flag}")


def _run_mapping(args: argparse.Namespace, selection: dict) -> int:
    """--op-mapping (the original's -map): the pairing of every device tensor, written instead of compared."""
    from dumpcmp.comparison.op_mapping import mapping_runs
    from dumpcmp.errors import ConfigError
    from dumpcmp.output.mapping_table import mapping_table, write_mapping
    from dumpcmp.output.table import text_table
    from dumpcmp.support.files import exists_error

    for given, flag in ((args.op is not None, "-d/-op"), (args.stats, "--stats"), (args.locate is not None,
                                                                                   "--locate"),
                        (args.max_elements, "--max-elements"), (args.html is not None, "--html")):
        if given:
            raise ConfigError(f"--op-mapping (-map) maps every op without comparing: not with {flag}")
    _no_cluster(args, "--op-mapping")
    _check_output(args)
    results = mapping_runs(args.left, args.right, fusion_json=args.fusion_json, quant_json=args.quant_fusion_rule,
                           close_fusion_json=args.close_fusion_json, gt_sample=args.gt_sample,
                           right_time=args.right_time, right_data_index=args.right_data_index, **selection)
    if args.op_ranges is not None:  # -r/-s: the chosen fusion ops only, with their OpSequence
        from dumpcmp.comparison.op_range import select_ops

        results = [select_ops(r, args.op_ranges) for r in results]
        for note in args.op_ranges.warnings:
            print(f"dumpcmp: warning: {note}", file=sys.stderr)
    paths = [_result_path(args.output, True, r.run, [x.run for x in results], "mapping")[0] for r in results]
    if not args.force:
        for path in paths:
            if path is not None and path.exists():
                raise exists_error(path, "mapping file")
    for result, path in zip(results, paths):
        if path is None:
            sys.stdout.write(text_table(mapping_table(result)))
            continue
        write_mapping(result, path, force=args.force)
        if not args.quiet:
            print(f"  op mapping: {path}")
    return 0


def custom_scripts(args: argparse.Namespace) -> None:
    """-c DIR (the original's user script folder): its algorithm/ plug-ins for -alg, its format_convert/ converters
    as -custom; -a checked (it only reaches custom algorithms). `dumpcmp report` takes them the same way."""
    from dumpcmp.comparison.custom_alg import CustomAlgorithms, parse_algorithm_options
    from dumpcmp.errors import ConfigError

    args.custom_algorithms = None
    folder = args.custom_script_path
    metric_roots = [args.custom] if args.custom is not None else []  # -custom DIR/metric: metric plug-ins
    if args.custom is not None and not (Path(args.custom) / "format_convert").is_dir() and \
            (Path(args.custom) / "metric").is_dir():  # a folder of metric plug-ins only: no converters to load
        args.custom = None
    if folder is None:
        parse_algorithm_options(args.algorithm_options)
        # the columns in -alg's order, as the original; or metric plug-ins in -alg
        if getattr(args, "op", None) is None and (_names_plugins(args.algorithms) or
                                                  _alg_order_matters(args.algorithms)):
            args.custom_algorithms = CustomAlgorithms(None, args.algorithms, args.algorithm_options, metric_roots)
            _refuse_fixed_columns(args.custom_algorithms)
        return
    if args.custom is None and (Path(folder) / "format_convert").is_dir():
        args.custom = folder
    elif args.custom is not None and Path(args.custom).resolve() != Path(folder).resolve() and \
            (Path(folder) / "format_convert").is_dir():
        raise ConfigError(f"-c {folder} and -custom {args.custom} both give format converters; give one")
    if getattr(args, "op", None) is None:
        args.custom_algorithms = CustomAlgorithms(folder, args.algorithms, args.algorithm_options, metric_roots)
        _refuse_fixed_columns(args.custom_algorithms)
        for note in args.custom_algorithms.warnings:
            print(f"dumpcmp: warning: {note}", file=sys.stderr)


def _op_range(args: argparse.Namespace) -> object:
    """--op-range / --op-select (the original's -r / -s), checked as the original checks them."""
    from dumpcmp.comparison.op_range import OpRange
    from dumpcmp.errors import ConfigError

    if args.op_range is None and args.op_select is None:
        return None
    if args.op_range is not None and args.op_select is not None:
        raise ConfigError("-r (--op-range) and -s (--op-select) cannot be used at the same time")
    if args.fusion_json is None:
        raise ConfigError("-r/-s (--op-range/--op-select) take effect only when the graph JSON (-f) is given")
    if args.op is not None or args.stats or args.locate is not None:
        raise ConfigError("-r/-s (--op-range/--op-select) apply to the model-level compare only, not with -d/-op, "
                          "--stats or --locate")
    return OpRange.parse_range(args.op_range) if args.op_range is not None else OpRange.parse_select(args.op_select)


def _refuse_fixed_columns(custom: object) -> None:
    """A metric plug-in's column named as one of the result file's other columns: a file no reader could take apart."""
    from dumpcmp.errors import ConfigError
    from dumpcmp.output import table

    fixed = {*table.ROW_COLUMNS, table.OVERFLOW_COLUMN, table.REASON_COLUMN, *table.EXTRA_COLUMNS,
             *table.LOCATED_COLUMNS, "OpSequence"}
    for plugin in getattr(custom, "plugins", {}).values():
        for column in plugin.columns:
            if column in fixed:
                raise ConfigError(f"metric plug-in {plugin.name} ({plugin.origin}): its column {column!r} is one of "
                                  f"the result file's own columns; name it otherwise")


def _names_plugins(selection: str | None) -> bool:
    """-alg names something other than a built-in metric (a metric plug-in, dumpcmp.comparison.metric_plugin)."""
    from dumpcmp.comparison.metrics import METRIC_INDEX

    items = [item.strip() for item in (selection or "").split(",") if item.strip()]
    return (selection or "").strip().lower() != "all" and any(
        item not in METRIC_INDEX and not item.isdigit() for item in items)


def _alg_order_matters(selection: str | None) -> bool:
    """-alg names the built-ins in another order than the result file's usual one (the original follows -alg)."""
    from dumpcmp.comparison.metrics import parse_algorithms

    if selection is None or selection.strip().lower() == "all":
        return False
    seen = list(dict.fromkeys(parse_algorithms(item) for item in selection.split(",") if item.strip()))
    return seen != sorted(seen)


def _locate(args: argparse.Namespace, selection: dict, client: object) -> dict[str, object]:
    """--locate: `dumpcmp locate`'s results by run (on the cluster `client` when there is one)."""
    from dumpcmp.debug.locate.core import locate_runs

    return {r.run: r for r in locate_runs(
        args.locate, args.left, args.right, fusion_json=args.fusion_json, quant_json=args.quant_fusion_rule,
        threshold=args.threshold, threads=args.threads, quiet=args.quiet, gt_sample=args.gt_sample, client=client,
        **selection)}


def _no_cluster(args: argparse.Namespace, what: str) -> None:
    from dumpcmp.errors import ConfigError

    if args.cluster is not None:
        raise ConfigError(f"--cluster compares model-level runs; {what} runs on this machine (leave out --cluster)")


def _placed(args: argparse.Namespace) -> bool:
    """--cluster with -l HOST=PATH,...: the left side lies on the workers' disks, not here."""
    if args.cluster is None or args.op is not None or args.stats:
        return False
    from dumpcmp.comparison.cluster import placed_roots

    return placed_roots(args.left) is not None


@contextlib.contextmanager
def _cluster(args: argparse.Namespace) -> Iterator[object]:
    """`cluster_session` (cli/options.py), after what compare refuses with --cluster."""
    from dumpcmp.errors import ConfigError

    if args.cluster is not None and _placed(args) and (args.locate is not None or args.html is not None):
        raise ConfigError("--locate and --html read the left side on this machine: give -l a path it sees")
    if args.cluster is not None and args.custom_algorithms is not None:
        raise ConfigError("custom algorithms (-c DIR -alg, or -alg in another order than the columns') run on this "
                          "machine only: leave out --cluster")
    with cluster_session(args) as cluster:
        yield cluster


_GATES = ("--fail-below", "--fail-above", "--fail-on", "--json")
_FLAG_DEST = {"-d": "op", "--locate": "locate", "--html": "html", "-f": "fusion_json", "--fail-below": "fail_below",
              "--fail-above": "fail_above", "--fail-on": "fail_on", "--json": "json_path", "--cluster": "cluster",
              "--npu-vs-npu": "npu_vs_npu"}


def _refuse(args: argparse.Namespace, flags: tuple[str, ...], where: str) -> None:
    """Exit 2 naming the first of `flags` given: an option a route does not apply is refused, never ignored."""
    from dumpcmp.errors import ConfigError

    for flag in flags:
        if getattr(args, _FLAG_DEST[flag], None) is not None:
            raise ConfigError(f"{flag} is not available {where}")


def _run_sigmastar(args: argparse.Namespace) -> int:
    """Their compare and console lines; --html, --locate MODEL.onnx and the gates on the same rows (cli/finish.py)."""
    from dumpcmp.cli.finish import check_outputs, finish, sigmastar_results

    _refuse(args, ("-d", "-f", "--cluster", "--npu-vs-npu"), "when -l is a SigmaStar dump")
    _check_output(args)
    check_outputs(args, args.html)
    result, results, located = sigmastar_results(args)
    path = _result_path(args.output, True, "", [""])[0]
    if path is not None:
        result.write(path, force=args.force)
    sys.stdout.write("".join(line + "\n" for line in result.lines()))
    out = sys.stderr if path is None else sys.stdout  # their lines alone on standard output without -o
    for note in [] if args.quiet else result.notes:
        print(f"dumpcmp: note: {note}", file=sys.stderr)
    if path is not None and not args.quiet:
        print(f"  result: {path}")
    for r in [] if args.quiet else (located or {}).values():
        print("  locate: " + r.statement(), file=out)
    if args.html is None and args.fail_below is None and not args.fail_on and args.json_path is None:
        return 0
    return finish(results, args, html=args.html, out=out, locate_results=located)


def _run_single_op(args: argparse.Namespace, selection: dict) -> int:
    from dumpcmp.comparison.detail import format_top_table
    from dumpcmp.errors import DumpcmpError
    from dumpcmp.comparison.single_op import compare_op

    if args.output is None:
        raise DumpcmpError("-d (single-operator mode) needs -o OUTPUT_FOLDER for the detail files")
    result = compare_op(args.left, args.right, args.op, args.output, kind=args.tensor, index=args.index,
                        fusion_json=args.fusion_json, quant_json=args.quant_fusion_rule, custom=args.custom,
                        max_lines=args.max_lines, top_n=args.top_n, fmt=args.detail_format, threads=args.threads,
                        force=args.force, gt_sample=args.gt_sample, per_slice=args.ffts,
                        details=not args.summary_only, **selection)
    for note in result.notes:
        print(f"dumpcmp: note: {note}", file=sys.stderr)
    if not args.quiet:
        print(f"{result.total_count} elements compared; summary: {result.summary_path}")
        print(f"  absolute error {result.min_abs_error:.6f} .. {result.max_abs_error:.6f}, "
              f"relative error {result.min_rel_error:.6f} .. {result.max_rel_error:.6f}")
        print(f"  {len(result.detail_files)} detail file(s) in {args.output}")
        if args.top_n > 0:
            print(format_top_table(result, args.top_n))
    return 0


def _run_stats(args: argparse.Namespace, selection: dict) -> int:
    """The statistics compare (dumpcmp.comparison.stats): one CSV per run, or the table on standard output."""
    from dumpcmp.comparison.extra_metrics import extra_metric_names
    from dumpcmp.comparison.stats import compare_stats
    from dumpcmp.errors import ConfigError
    from dumpcmp.output.table import text_table
    from dumpcmp.support.files import exists_error

    # a gate the statistics compare does not apply must not pass in silence (a CI job would read it as passed)
    _refuse(args, ("--locate", "--npu-vs-npu") + _GATES,
            "for a statistics compare (its verdicts are in the result's Verdict column)")
    if extra_metric_names(args.custom_algorithms):
        raise ConfigError("custom algorithms (-c DIR -alg Name) read tensors: a statistics dump has none")
    _check_output(args)
    budget = _check_narrow(args)
    if args.html is not None:
        from dumpcmp.cli.finish import check_outputs

        check_outputs(args, args.html)
    results = compare_stats(args.left, args.right, fusion_json=args.fusion_json, quant_json=args.quant_fusion_rule,
                            warning=args.stats_warning, error=args.stats_error, threads=args.threads,
                            gt_sample=args.gt_sample, **selection)
    paths = [_result_path(args.output, True, r.run, [x.run for x in results])[0] for r in results]
    if not args.force:
        for path in paths:
            if path is not None and path.exists():
                raise exists_error(path, "result file")
    for result, path in zip(results, paths):
        if path is not None:
            result.write(path, force=args.force)
        else:
            sys.stdout.write(text_table(result.table()))
        if not args.quiet:
            print(result.summary(), file=sys.stderr if path is None else sys.stdout)
            if path is not None:
                print(f"  result: {path}")
    if args.html is not None:
        from dumpcmp.cli.finish import write_stats_reports

        write_stats_reports(results, args, args.html, sys.stderr if args.output is None else sys.stdout)
    if args.narrow is not None:
        _write_narrow(args, results, budget)
    return 0


def _check_narrow(args: argparse.Namespace) -> int:
    """--narrow's budget, and its file checked before the run (an existing one is kept without --force)."""
    from dumpcmp.debug.narrow import parse_size
    from dumpcmp.errors import ConfigError
    from dumpcmp.support.files import exists_error

    if args.narrow is None:
        return 0
    path = Path(args.narrow)
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; --narrow takes the acl.json file to write")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ConfigError(f"{path}: the folder {folder} does not exist")
    if os.path.lexists(path) and not args.force:
        raise exists_error(path, "config")
    return parse_size(args.narrow_budget)


def _write_narrow(args: argparse.Namespace, results: list, budget: int) -> None:
    from dumpcmp.debug.narrow import narrow, write_narrow_acl_json
    from dumpcmp.graph.graph_json import load_graph

    graph = None
    if args.fusion_json is not None:
        graph = load_graph(args.fusion_json, quant_fusion=args.quant_fusion_rule)
    plan = next((p for p in (narrow(r, graph, budget=budget) for r in results) if p is not None), None)
    if plan is None:
        print(f"dumpcmp: no tensor is an error: nothing to narrow; {args.narrow} not written", file=sys.stderr)
        return
    dump_path = args.narrow_dump_path or os.path.abspath(args.left)
    written = write_narrow_acl_json(plan, args.narrow, dump_path=dump_path, force=args.force)
    if not args.quiet:
        out = sys.stderr if args.output is None else sys.stdout  # the table alone on standard output without -o
        print(plan.summary(), file=out)
        for note in plan.notes:
            print(f"  note: {note}", file=out)
        print(f"  acl.json: {written} (dump_path {dump_path})", file=out)
