"""`dumpcmp report`: compare a device dump with its ground truth and write one self-contained HTML report (run,
verdict, a chart per operator, the full table, histograms and top errors of the worst layers, advice). A statistics
dump (dump_data stats) gets the statistics compare's page: each side's statistics and the verdict per tensor. A
SigmaStar dump (sigma_outtensor_dump.bin) gets the usual page from its compare's rows (MSE, RelativeL1, Jump added);
--locate MODEL.onnx puts them in the ONNX graph's order and runs locate, no -f.

Exit codes: 0 written (and the gates pass), 1 a gate failed (--fail-below, --fail-above, --fail-on), 2 bad input.
"""

from __future__ import annotations

import argparse

from dumpcmp.cli.options import add_run_selection, count, run_selection
from dumpcmp.errors import ConfigError


def _layers(text: str) -> int | str | None:
    if text == "all":
        return None
    if text == "auto":
        return "auto"
    return count(text)


def add_parser(sub: argparse._SubParsersAction) -> None:
    from dumpcmp.cli.advice_options import add_options

    p = sub.add_parser("report", help="an HTML report of a comparison (chart, table, histograms, advice)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-l", "--left", required=True, metavar="DIR",
                   help='"My Output": the device dump folder or tree, or a SigmaStar dump (sigma_outtensor_dump.bin; '
                        'no -f, --locate MODEL.onnx orders its rows by the ONNX graph)')
    p.add_argument("-r", "--right", required=True, metavar="DIR", help='"Ground Truth": .npy folder or device dump')
    p.add_argument("-f", "--fusion-json", metavar="JSON", help="the compiled model's graph JSON (atc --mode=1)")
    p.add_argument("-q", "--quant-fusion-rule", metavar="JSON", help="quantization fusion rule file (AMCT)")
    p.add_argument("-o", "--output", required=True, metavar="HTML", help="the report file")
    p.add_argument("-custom", "--custom", metavar="DIR", help="folder holding format_convert/convert_X_to_Y.py")
    p.add_argument("-alg", "--algorithms", metavar="LIST",
                   help="metrics by index or name; with -c, also custom algorithm names, in column order (default "
                        "all)")
    p.add_argument("-c", "--custom_script_path", "--custom-script-path", dest="custom_script_path", metavar="DIR",
                   help="the original tool's user script folder: DIR/algorithm/alg_{Name}.py custom algorithms "
                        "(select them with -alg Name; their columns are in the table, the details and the gates) "
                        "and DIR/format_convert converters (as -custom)")
    p.add_argument("-a", "--algorithm_options", "--algorithm-options", dest="algorithm_options", metavar="OPTIONS",
                   help='options of each algorithm, "Name:key=value,key=value;Other:key=value"')
    p.add_argument("--threshold", type=float, default=0.99, help="cosine similarity below which a layer is bad")
    p.add_argument("--histograms", type=_layers, default="auto", metavar="N|all|auto",
                   help="embed histograms and top errors of the N worst layers, or of all; auto (default): all when "
                        "the compared tensors hold 32 Mi elements or fewer together, else the 20 worst")
    p.add_argument("--bins", type=int, default=64, help="histogram bins (default 64)")
    p.add_argument("--top-n", type=count, default=10, help="largest element errors per embedded layer (default 10)")
    add_run_selection(p)
    p.add_argument("--threads", type=count, default=0, help="threads (default: all cores)")
    p.add_argument("--force", action="store_true", help="replace an existing report / JSON file")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    add_options(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from dumpcmp.cli.advice_options import is_model
    from dumpcmp.comparison.compare import compare_runs
    from dumpcmp.cli.finish import check_outputs

    if args.bins < 1:
        raise ConfigError(f"--bins must be at least 1, not {args.bins}")
    from dumpcmp.cli.compare import custom_scripts

    custom_scripts(args)  # -c DIR -alg Name -a ...: the custom algorithms' columns, as compare's
    check_outputs(args, args.output)
    from dumpcmp.dumps.sigmastar import is_sigmastar_dump

    if is_sigmastar_dump(args.left):  # SigmaStar DumpDebug: their compare's rows, the usual report
        return _sigmastar_report(args)
    from dumpcmp.comparison.stats import has_stats_dump

    if has_stats_dump(args.left):  # a statistics dump: the statistics compare's page, no histograms
        from dumpcmp.comparison.extra_metrics import extra_metric_names

        if extra_metric_names(args.custom_algorithms):
            raise ConfigError("custom algorithms (-c DIR -alg Name) read tensors: a statistics dump has none")
        # a gate the statistics page does not apply must not pass in silence (as compare refuses it)
        for flag, given in (("--fail-below", args.fail_below), ("--fail-above", args.fail_above),
                            ("--fail-on", args.fail_on), ("--json", args.json_path)):
            if given is not None:
                raise ConfigError(f"{flag} is not available for a statistics dump (its verdicts are in the "
                                  f"report's Verdict column)")
        return _stats_report(args)
    results = compare_runs(args.left, args.right, fusion_json=args.fusion_json, quant_json=args.quant_fusion_rule,
                           algorithms=args.algorithms, custom=args.custom, threads=args.threads, quiet=args.quiet,
                           gt_sample=args.gt_sample, custom_algorithms=args.custom_algorithms,
                           **run_selection(args))
    locate_results = None
    if is_model(args.locate):
        from dumpcmp.debug.locate.core import locate_runs

        if args.fusion_json is None:
            raise ConfigError("--locate MODEL.onnx needs the graph JSON (-f)")
        locate_results = {r.run: r for r in locate_runs(
            args.locate, args.left, args.right, fusion_json=args.fusion_json, quant_json=args.quant_fusion_rule,
            threshold=args.threshold, threads=args.threads, quiet=args.quiet, gt_sample=args.gt_sample,
            **run_selection(args))}
    return _summaries_and_page(args, results, locate_results)


def _summaries_and_page(args: argparse.Namespace, results: list, located: dict | None) -> int:
    """The summaries (and locate's statements) on standard output, then the page and the gates (cli/finish.py)."""
    from dumpcmp.cli.finish import finish

    if not args.quiet:
        for result in results:
            print(result.summary(args.threshold))
        for r in (located or {}).values():
            print("  locate: " + r.statement())
    return finish(results, args, html=args.output, layers=args.histograms, bins=args.bins, top_n=args.top_n,
                  locate_results=located)


def _stats_report(args: argparse.Namespace) -> int:
    from dumpcmp.cli.finish import write_stats_reports
    from dumpcmp.comparison.stats import compare_stats

    results = compare_stats(args.left, args.right, fusion_json=args.fusion_json, quant_json=args.quant_fusion_rule,
                            threads=args.threads, gt_sample=args.gt_sample, **run_selection(args))
    if not args.quiet:
        for result in results:
            print(result.summary())
    write_stats_reports(results, args, args.output)
    return 0


def _sigmastar_report(args: argparse.Namespace) -> int:
    from dumpcmp.cli.finish import sigmastar_results

    given = [flag for flag, value in (("-f", args.fusion_json), ("-q", args.quant_fusion_rule),
                                      ("-custom", args.custom), ("-alg", args.algorithms)) if value is not None]
    if given:
        raise ConfigError(f"{given[0]} is not available when -l is a SigmaStar dump (its rows are paired by tensor "
                          "name and get every metric)")
    _, results, located = sigmastar_results(args)
    return _summaries_and_page(args, results, located)
