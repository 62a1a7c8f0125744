"""`dumpcmp histogram`: one PNG per layer with the distribution of its values (counts in blue, min and max as red
dashed lines; the ground truth overlaid with -r), as SigmaStar's DumpDebug histogram.py draws them.
SigmaStar dumps (sigma_outtensor_dump.bin, onnx_NHWC_outtensor_dump.bin, text forms) are read too, -r another one
(tensors paired by name), --min-max their calibrator's tensor_min_max.txt.

The counts come from a C++ reduction over the mapped data in at most two passes (range, then counts). An existing
output folder is never emptied: without --force it is an error, with --force same-named PNGs are replaced and
nothing else is touched. A tree of several runs (iterations, devices, ...) gets one subfolder of PNGs a run, unless
the run selection options pick one.
"""

from __future__ import annotations

import argparse

from dumpcmp.cli.options import add_run_selection, count, run_selection


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("histogram", help="one histogram PNG per layer (device, and ground truth overlaid)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="DUMP_OR_FOLDER",
                   help="a dump file, a dump folder/tree, a .npy folder or a SigmaStar dump (sigma_outtensor_dump.bin)")
    p.add_argument("-r", "--right", metavar="DIR",
                   help="ground truth to overlay (pairs as compare does; for a SigmaStar dump: another one, by name)")
    p.add_argument("-f", "--fusion-json", metavar="JSON", help="the compiled model's graph JSON (with -r)")
    p.add_argument("--min-max", metavar="TXT", help="a calibrator's tensor_min_max.txt: its min/max are the red lines")
    p.add_argument("-o", "--output", default="Histograms", metavar="DIR", help="output folder (default Histograms)")
    p.add_argument("--bins", type=int, default=256, help="bins (default 256)")
    p.add_argument("--inputs", action="store_true", help="also draw every operator's inputs (without -r)")
    p.add_argument("--threads", type=count, default=0, help="threads (default: all cores)")
    p.add_argument("--force", action="store_true", help="write into an existing folder, replacing same-named PNGs")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    add_run_selection(p)
    p.set_defaults(run=run)


def _runs(args: argparse.Namespace) -> list[tuple[str | None, list]]:
    """(run, its layers) for every selected run of the target (run None: a file or a folder without runs)."""
    from dumpcmp.errors import ConfigError
    from dumpcmp.output.histogram.layers import compared_layers, dump_layers

    selection = run_selection(args)
    from dumpcmp.dumps.sigmastar import is_sigmastar_dump

    if is_sigmastar_dump(args.target) or (args.right and is_sigmastar_dump(args.right)):
        return [(None, list(_sigmastar_layers(args)))]
    if args.right:
        from dumpcmp.comparison.compare import compare_runs

        results = compare_runs(args.target, args.right, fusion_json=args.fusion_json, algorithms="0",
                               threads=args.threads, quiet=True, gt_sample=args.gt_sample, **selection)
        return [(r.run, list(compared_layers(r))) for r in results]
    if args.fusion_json:
        raise ConfigError("-f pairs with ground truth: give -r too")
    from pathlib import Path

    from dumpcmp.comparison.runs import select_runs
    from dumpcmp.dumps.scan import scan

    index = scan(args.target) if Path(args.target).is_dir() else None
    groups = select_runs(index, selection) if index is not None and len(index) else []
    if not groups:
        return [(None, list(dump_layers(args.target, inputs=args.inputs)))]
    fields = ("time", "device_id", "model_name", "model_id", "data_index")
    return [(g.key.describe(), list(dump_layers(args.target, inputs=args.inputs,
                                                selection={k: getattr(g.key, k) for k in fields})))
            for g in groups]


def _sigmastar_layers(args: argparse.Namespace) -> list:
    """SigmaStar dumps (both sides when -r is given): every tensor by name, no run selection."""
    from dumpcmp.dumps.sigmastar import is_sigmastar_dump
    from dumpcmp.errors import ConfigError
    from dumpcmp.output.histogram.layers import sigmastar_layers

    for path in [args.target] + ([args.right] if args.right else []):
        if not is_sigmastar_dump(path):
            raise ConfigError(f"{path}: not a SigmaStar dump; a SigmaStar dump's histograms pair with another one")
    if args.fusion_json or args.inputs:
        raise ConfigError("-f and --inputs do not apply to SigmaStar dumps")
    return list(sigmastar_layers(args.target, args.right))


def run(args: argparse.Namespace) -> int:
    import contextlib
    from pathlib import Path

    from dumpcmp.errors import ConfigError, DumpcmpError
    from dumpcmp.dumps.naming import run_path
    from dumpcmp.output.histogram import histogram, lookup_min_max, pair_histograms, read_min_max
    from dumpcmp.output.histogram.plot import Plotter, safe_name
    from dumpcmp.support.files import file_set, made_folder
    from dumpcmp.support.progress import Progress

    if args.bins < 1:
        raise ConfigError(f"--bins must be at least 1, not {args.bins}")
    out = Path(args.output)
    if out.exists():
        if not out.is_dir():
            raise DumpcmpError(f"{out}: exists and is not a folder")
        if any(out.iterdir()) and not args.force:
            raise DumpcmpError(f"{out}: exists and is not empty; choose another folder or pass --force to write "
                               f"into it (nothing in it is deleted)")
    min_max = read_min_max(args.min_max) if args.min_max else None
    runs = _runs(args)
    # several runs: one subfolder a run, named as compare names a run's result file
    folders = [out if len(runs) == 1 else out / run_path("run", run or "", [r or "" for r, _ in runs]).name
               for run, _ in runs]
    places = [(folder, k) for folder, (_, run_layers) in zip(folders, runs) for k in range(len(run_layers))]
    layers = [layer for _, run_layers in runs for layer in run_layers]
    for folder in folders:  # nothing written through a link planted in the output folder, nothing made before
        if folder != out and folder.is_symlink():
            raise DumpcmpError(f"{folder}: is a symbolic link; choose another output folder")
    # each folder's PNGs are drawn in a private folder and published together at the end: all of them or none
    with contextlib.ExitStack() as stack:
        stack.enter_context(made_folder(out))
        staged = {}
        for folder in dict.fromkeys(folders):
            if folder != out:
                stack.enter_context(made_folder(folder))
            staged[folder] = stack.enter_context(file_set(folder, force=args.force, what="histograms"))
        written, problems = 0, []
        plotter = None  # made at the first PNG; entered last, it has written every PNG before the sets publish
        with Progress(len(layers), "histograms", quiet=args.quiet) as progress:
            for (folder, k), layer in zip(places, layers):
                progress.advance()
                if layer.error or (layer.device is None and layer.ground_truth is None):
                    problems.append(f"{layer.name}: {layer.error or 'nothing to read'}")
                    continue
                mm = lookup_min_max(min_max, [layer.name]) if min_max else None
                try:
                    if layer.ground_truth is not None and layer.device is not None:
                        hx, hy = pair_histograms(layer.device, layer.ground_truth, args.bins, args.threads, mm)
                    else:
                        src = layer.device if layer.device is not None else layer.ground_truth
                        hx, hy = histogram(src, args.bins, threads=args.threads), None
                        if mm is not None:
                            from dumpcmp.output.histogram import common_range

                            hx = histogram(src, args.bins, common_range((hx.min, hx.max), mm), args.threads)
                except (DumpcmpError, ValueError) as error:
                    problems.append(f"{layer.name}: {error}")
                    continue
                title = f"#{k} {layer.name}" + (f" ({layer.op_type})" if layer.op_type else "")
                if plotter is None:
                    plotter = stack.enter_context(Plotter(background=True))
                plotter.draw(Path(staged[folder].path(f"{k:04d}_{safe_name(layer.name)}.png")), title, hx, hy, mm,
                             force=True)
                written += 1
    if not args.quiet:
        print(f"{written} histograms in {out}" + (f"; {len(problems)} layers not drawn:" if problems else ""))
        for p in problems[:20]:
            print("  " + p)
    return 0
