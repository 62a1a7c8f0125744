"""What `compare` and `report` do after the comparison: advice, the HTML report, the gate, `--json`; the exit
code (0 pass, 1 a gate failed)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

from dumpcmp.output.advice import Advice
from dumpcmp.cli.advice_options import is_model, thresholds, write_json
from dumpcmp.output.advice import load_locate
from dumpcmp.output.gate import Bound, evaluate, extra_values, parse_bounds, parse_rules
from dumpcmp.dumps.naming import run_path
from dumpcmp.support.files import exists_error


def _html_path(path: str, run: str, runs: list[str]) -> Path:
    return run_path(path, run, runs) if len(runs) > 1 else Path(path)


def gates(args: argparse.Namespace) -> tuple[list[Bound], list[str]]:
    """The gates of --fail-below, --fail-above and --fail-on, checked against the metric columns the comparison
    will have (the built-ins -alg selects and the extra columns of -c DIR -alg Name)."""
    from dumpcmp.comparison.extra_metrics import extra_metric_names, metric_column_names
    from dumpcmp.comparison.metrics import parse_algorithms

    if not (args.fail_below or args.fail_above or args.fail_on):
        return [], []
    custom = getattr(args, "custom_algorithms", None)
    computed = parse_algorithms(args.algorithms if custom is None else custom.builtin)
    # the result file's metric columns, and the built-ins the engine computes behind them (-alg Name alone: all ten)
    columns = list(dict.fromkeys(metric_column_names(custom, computed) + metric_column_names(None, computed)))
    bounds = parse_bounds(args.fail_below, columns=columns) + \
        parse_bounds(args.fail_above, below=False, columns=columns)
    return bounds, parse_rules(args.fail_on, extra_metric_names(custom))


def check_outputs(args: argparse.Namespace, html: str | None) -> None:
    """Before a long run: the gates are checked, and output files that exist (without --force) or whose folder is
    missing are errors now."""
    from dumpcmp.errors import DumpcmpError

    gates(args)
    for path in (html, None if args.json_path in (None, "-") else args.json_path):
        if path is None:
            continue
        p = Path(path)
        folder = p.parent if str(p.parent) else Path(".")
        if not folder.is_dir():
            raise DumpcmpError(f"{p}: the folder {folder} does not exist")
        if p.exists() and not args.force:
            raise exists_error(p, "report" if path == html else "JSON file")


def finish(results: Sequence[Any], args: argparse.Namespace, *, html: str | None,
           layers: int | str | None = "auto", bins: int = 64, top_n: int = 10, out: Any = None,
           locate_results: dict[str, Any] | None = None) -> int:
    """`locate_results`: locate's result per run (when the command ran locate); else `args.locate` is read as a
    locate JSON file, if given."""
    from dumpcmp.output.advice import advise, normalise_locate
    from dumpcmp.output.histogram import read_min_max
    from dumpcmp.output.report import build, json_ready, render, verdict, write_report

    # `--json -` has standard output: the lines for people go to standard error then
    out = sys.stderr if args.json_path == "-" else out or sys.stdout
    bounds, rules = gates(args)
    from_file = [] if locate_results is not None or is_model(args.locate) else load_locate(args.locate)
    min_max = read_min_max(args.min_max) if args.min_max else None
    t = thresholds(args)
    failed = False
    runs = []
    for result in results:
        locate = list(locate_results[result.run]) if locate_results and result.run in locate_results else from_file
        if html is not None:
            data = build(result, threshold=args.threshold, thresholds=t, layers=layers, bins=bins, top_n=top_n,
                         locate=locate, min_max=min_max, custom=getattr(args, "custom", None), threads=args.threads,
                         quiet=args.quiet)
            path = write_report(_html_path(html, result.run, [r.run for r in results]), render(data), force=args.force)
            advice: list[Advice] = data.advice
            if not args.quiet:
                print(f"  report: {path}", file=out)
        else:
            advice = advise(result, thresholds=t, min_max=min_max, locate=locate)
        gate = evaluate(result, fail_on=rules, advice=advice, bounds=bounds)
        if not args.quiet:
            for a in advice:
                print("  advice " + a.line(), file=out)
        if bounds or rules:
            print(gate.text(), file=out if gate.passed else sys.stderr)
        failed |= not gate.passed
        floor = next((b.limit for b in bounds if b.below and b.metric == "CosineSimilarity"), None)
        record = {"run": result.run, "left": result.left, "right": result.right, "counts": result.counts(),
                  "verdict": verdict(result, args.threshold, normalise_locate(locate)),
                  "advice": [a.to_dict() for a in advice],
                  "gate": {"passed": gate.passed, "failing": gate.failing, "fail_below": floor,
                           "bounds": [b.to_dict() for b in bounds], "fail_on": rules}}
        extra = extra_values(result)
        if extra is not None:  # the extra metric columns' values (custom algorithms, metric plug-ins)
            record["extra_metrics"] = extra
        runs.append(json_ready(record))
        result.release()  # rows built for the advice, the report and the gate: the next run's may take their place
    if args.json_path:
        write_json(args.json_path, {"runs": runs, "passed": not failed}, force=args.force)
    return 1 if failed else 0


def write_stats_reports(results: Sequence[Any], args: argparse.Namespace, html: str, out: Any = None) -> None:
    """The HTML report of each run of a statistics compare (`dumpcmp.output.report.stats`)."""
    from dumpcmp.output.report.stats import write_stats_report

    for result in results:
        path = write_stats_report(_html_path(html, result.run, [r.run for r in results]), result, force=args.force,
                                  left=args.left, right=args.right)
        if not args.quiet:
            print(f"  report: {path}", file=out or sys.stdout)


def sigmastar_results(args: argparse.Namespace) -> tuple[Any, list[Any], dict[str, Any] | None]:
    """`-l` a SigmaStar dump: their compare (`SigmaResult`), the same as the regular rows the report, the advice and
    the gates read, and with `--locate MODEL.onnx` the rows in the ONNX graph's order and locate's result by run."""
    from dumpcmp.comparison.sigmastar import as_comparison, compare_sigmastar

    sigma = compare_sigmastar(args.left, args.right, threads=args.threads)
    producers, located = None, None
    if is_model(args.locate):
        from dumpcmp.debug.locate.sigmastar import locate_sigmastar, tensor_producers
        from dumpcmp.debug.region import OriginalModel

        model = OriginalModel.load(args.locate)
        producers = tensor_producers(model)
        found = locate_sigmastar(model, args.left, args.right, threshold=args.threshold, threads=args.threads,
                                 quiet=args.quiet)
        located = {found.run: found}
    return sigma, [as_comparison(sigma, producers)], located
