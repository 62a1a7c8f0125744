"""`dumpcmp bench layouts|compare|dumps`: how fast the layout codec and the comparison run on this machine, next
to what the machine allows (memcpy, a one-pass memory read) and a NumPy reference, all measured in the same run.

  dumpcmp bench layouts [--dtype fp16,fp32,int8,bf16] [--size 256MB] [--threads 1,2] [--formats NC1HWC0,...|all]
  dumpcmp bench compare [--size 1GB] [--threads 1,2] [--metric plugin:NAME [--custom DIR]]
  dumpcmp bench dumps DIR [-r GT_DIR] [-f model.json] [--threads 1,2]

Every kernel run is checked once against its reference (layouts: byte for byte against the NumPy recipe;
metrics: as printed, %.6f, against a float64 NumPy implementation); a mismatch stops the run with exit code 1.
Generated data lives in memory or a temporary folder removed afterwards; DIR is only read. A --size whose working
set does not fit in the available memory (MemAvailable) is refused with exit code 2.

JSON (--json FILE), schema "dumpcmp-bench/1", one object:
  schema       "dumpcmp-bench/1"
  benchmark    "layouts" | "compare" | "dumps"
  options      the command's options (size, threads, ...) as given
  machine      cpu (model name), cores_logical, cores_physical, cores_usable, memory_total_bytes,
               memory_available_bytes, platform, python, numpy, dumpcmp, simd_level (the kernels' instruction set),
               cpu_simd_flags, DUMPCMP_SIMD, dumpcmp_threads
  parameters   what was asked (size_bytes, dtypes, formats, threads, repeats, ...)
  unit         what GB/s counts
  checked      true when every kernel run agreed with its reference
  results      one object per measured row:
    layouts    case ("NC1HWC0->NCHW"), layout, direction (decode|encode), dtype, threads, plain_format, plain_shape,
               device_shape, plain_bytes, device_bytes, elements, kernel, gbps {median, min, max},
               elements_per_s, memcpy_gbps, read_probe_gbps, numpy_gbps, vs_memcpy, vs_read_probe, x_numpy, check
    compare    case ("fp16 NC1HWC0 dump vs fp32 NCHW"), metrics ("10 metrics" | "without KLD"), threads, bytes,
               elements, gbps {median, min, max}, elements_per_s, read_probe_gbps, numpy_gbps, vs_read_probe,
               reads (how often any exact implementation reads both sides: 3 with KLD, 2 with the cosine, else 1),
               ceiling_gbps (read_probe_gbps / reads), vs_ceiling, x_numpy, check
    dumps      step ("index by name" | "read headers" | "read probe" | "compare" | "numpy reference"), threads,
               files, seconds, files_per_s, gbps {median, min, max} (of the files' bytes) or null,
               [tensors, tensors_per_s, tensor_gbps, check]
  plus per benchmark: notes (layouts, compare), measurements and peak_extra_rss_bytes (compare), files, dumps,
  ground_truth_files, file_bytes, rows (count per status), failed_reasons, compared_bytes, anon_peak_extra_bytes,
  checked_rows, unchecked (reason -> rows) (dumps).
GB/s is 1e9 bytes per second; min and max are the slowest and the fastest timed run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

SCHEMA = "dumpcmp-bench/1"

EPILOG = """\
examples:
  dumpcmp bench layouts --size 64MB --dtype fp16 --threads 1,2 --json layouts.json --plot layouts.png
  dumpcmp bench layouts --formats all --dtype fp16,fp32,int8,bf16 --size 16MB
  dumpcmp bench compare --size 256MB
  dumpcmp bench dumps npu/ -r golden/ -f model.json
"""


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmark the layout codec and the comparison on this machine",
                       description=__doc__, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = p.add_subparsers(dest="bench", metavar="BENCHMARK")
    kinds.required = True

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--threads", default=None, help="thread counts, comma-separated (default: 1 and all)")
        q.add_argument("--repeats", type=int, default=5, help="timed runs per measurement (default 5)")
        q.add_argument("--json", metavar="FILE", help="write the results and the machine's description here")
        q.add_argument("--plot", metavar="FILE.png", help="bar chart of GB/s (needs matplotlib: dumpcmp[plot])")
        q.add_argument("--force", action="store_true", help="replace an existing --json or --plot file")
        q.add_argument("--quiet", action="store_true", help="no progress bar (-q is compare's quantization file)")
        q.set_defaults(run=run)

    q = kinds.add_parser("layouts", help="layout conversions (decode and encode) against memcpy, a memory read "
                         "and NumPy", description="Throughput of every device layout's decode and encode.")
    q.add_argument("--dtype", default="fp16,fp32", help="fp16, fp32, int8, bf16, comma-separated (default fp16,fp32)")
    q.add_argument("--size", default="256MB", help="bytes of the plain tensor per case (default 256MB)")
    q.add_argument("--formats", default="NC1HWC0,FRACTAL_Z,FRACTAL_NZ",
                   help="device layouts, comma-separated, or 'all' (default NC1HWC0,FRACTAL_Z,FRACTAL_NZ)")
    common(q)

    q = kinds.add_parser("compare", help="the metrics kernel on a synthetic pair (plain and through dump layouts)",
                         description="Throughput of the metrics kernel against a memory read and NumPy.")
    q.add_argument("--size", default="1GB", help="bytes of fp32 ground truth per side (default 1GB)")
    q.add_argument("--tmp", metavar="DIR", default=None,
                   help="where the temporary dumps go (default: the system's temporary folder)")
    q.add_argument("--metric", metavar="plugin:NAME", action="append", default=[],
                   help="also time this metric plug-in on every case (repeatable; docs/compare.md#metric-plug-ins)")
    q.add_argument("--custom", metavar="DIR", default=None,
                   help="the folder whose metric/metric_{NAME}.py holds --metric's plug-ins (else: entry points)")
    common(q)
    q.set_defaults(repeats=3)

    q = kinds.add_parser("dumps", help="index and compare a dump tree you point at (read-only)",
                         description="Indexing and comparing a real dump tree, against a read of the same files.")
    q.add_argument("dump_dir", metavar="DIR", help="the device dump tree (only read)")
    q.add_argument("-r", "--ground-truth", metavar="GT_DIR", default=None,
                   help="ground truth folder (default: compare the tree with itself, device vs device)")
    q.add_argument("-f", "--fusion-json", metavar="FILE", default=None, help="the model's graph JSON")
    q.add_argument("--check-rows", default="all",
                   help="compared rows checked against NumPy: a number (the first ones) or 'all' (default all)")
    common(q)
    q.set_defaults(repeats=3)


def _plugins(names: list[str], folder: str | None) -> list:
    """--metric plugin:NAME (or NAME) as loaded plug-ins; one that does not exist or import: ConfigError."""
    from dumpcmp.comparison.metric_plugin import available_metrics, load_metric, plugin_name
    from dumpcmp.errors import ConfigError

    roots = [folder] if folder is not None else []
    found = []
    for item in names:
        name = plugin_name(item.strip()) or item.strip()
        plugin = load_metric(name, roots)
        if plugin is None:
            raise ConfigError(f"--metric {item}: no metric plug-in of that name; available: "
                              f"{available_metrics(roots)} (--custom DIR with DIR/metric/metric_{{NAME}}.py, or "
                              f"entry points of the group dumpcmp.metrics)")
        if plugin.problem:
            raise ConfigError(f"--metric {item}: {plugin.problem}")
        found.append(plugin)
    return found


def _require_matplotlib() -> None:
    from dumpcmp.errors import ConfigError

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ConfigError("--plot needs matplotlib: pip install 'dumpcmp[plot]' (or pip install matplotlib)") from None


def _series(result: dict) -> tuple[str, list[str], dict[str, list[float]]]:
    """Title, bar labels and named series of GB/s for the plot."""
    kind = result["benchmark"]
    if kind == "layouts":
        from dumpcmp.benchmark.layouts import plot_series

        labels, series = plot_series(result)
        return "layout codec, GB/s of the plain tensor", labels, series
    labels, series = [], {}
    if kind == "compare":
        for r in result["results"]:
            label = f"{r['case']}, {r['metrics']}"
            if label not in labels:
                labels.append(label)
        for t in result["parameters"]["threads"]:
            got = {f"{r['case']}, {r['metrics']}": r["gbps"]["median"] for r in result["results"] if r["threads"] == t}
            series[f"{t} thread(s)"] = [got.get(lab, 0.0) for lab in labels]
        probe = {f"{r['case']}, {r['metrics']}": r["read_probe_gbps"] for r in result["results"]}
        series["read probe"] = [probe[lab] or 0.0 for lab in labels]
        return "metrics kernel, GB/s of both sides", labels, series
    steps = [r for r in result["results"] if r.get("gbps") or r.get("tensor_gbps")]
    labels = [f"{r['step']} ({r['threads']} thr)" for r in steps]
    series["GB/s of the files"] = [(r["gbps"] or {}).get("median", 0.0) for r in steps]
    series["tensor GB/s"] = [r.get("tensor_gbps") or 0.0 for r in steps]
    return "dump tree", labels, series


def write_plot(result: dict, path: str, *, force: bool = True) -> None:
    """A horizontal grouped bar chart of GB/s per case, one colour per series (whole or not at all; without `force`
    an existing `path` is an error)."""
    from dumpcmp.support.files import atomic_write

    _require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")  # no display needed, and none is looked for
    import matplotlib.pyplot as plt

    title, labels, series = _series(result)
    height = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(10, max(3.0, 0.25 * len(labels) * len(series) + 1.5)))
    try:
        for k, (name, values) in enumerate(series.items()):
            ax.barh([i + k * height for i in range(len(labels))], values, height=height, label=name)
        ax.set_yticks([i + height * (len(series) - 1) / 2 for i in range(len(labels))])
        ax.set_yticklabels(labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("GB/s (1e9 bytes per second, median)")
        ax.set_title(f"{title}\n{result['machine'].get('cpu')}, kernels: {result['machine'].get('simd_level')}",
                     fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        atomic_write(path, lambda f: fig.savefig(f, dpi=100, format=Path(path).suffix[1:].lower() or "png"),
                     force=force)
    finally:
        plt.close(fig)


def _measure(args: argparse.Namespace) -> tuple[dict, str]:
    from dumpcmp.benchmark import common
    from dumpcmp.errors import ConfigError

    try:
        if args.bench == "layouts":
            from dumpcmp.benchmark import layouts

            formats = layouts.ALL_FORMATS if args.formats.strip().lower() == "all" else \
                tuple(f for f in args.formats.split(",") if f.strip())
            result = layouts.run(common.parse_size(args.size), tuple(d for d in args.dtype.split(",") if d.strip()),
                                 args.threads, args.repeats, formats=formats, quiet=args.quiet)
            return result, layouts.format_table(result)
        if args.bench == "compare":
            from dumpcmp.benchmark import compare

            bench = compare.run_compare_benchmark(common.parse_size(args.size), threads=args.threads,
                                                  repeat=args.repeats, folder=args.tmp, quiet=args.quiet,
                                                  plugins=_plugins(args.metric, args.custom))
            result = bench.to_dict()
            return result, compare.format_table(result)
        from dumpcmp.benchmark import dumps

        check = None if args.check_rows.strip().lower() == "all" else int(args.check_rows)
        result = dumps.run_dumps_benchmark(args.dump_dir, args.ground_truth, fusion_json=args.fusion_json,
                                           threads=args.threads, repeat=args.repeats, check_rows=check,
                                           quiet=args.quiet)
        return result, dumps.format_table(result)
    except ValueError as error:  # a bad --size, --dtype, --formats or --threads
        if isinstance(error, ConfigError):
            raise
        raise ConfigError(str(error)) from None


def run(args: argparse.Namespace) -> int:
    from dumpcmp.benchmark.common import CheckFailed
    from dumpcmp.errors import ConfigError
    from dumpcmp.support.files import exists_error

    if args.repeats < 1:
        raise ConfigError(f"--repeats {args.repeats}: at least 1")
    if args.plot:
        _require_matplotlib()  # before minutes of measuring, not after
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        kinds = FigureCanvasAgg.get_supported_filetypes()
        kind = Path(args.plot).suffix[1:].lower() or "png"
        if kind not in kinds:
            raise ConfigError(f"{args.plot}: matplotlib writes no {kind!r} files; name it .png, .svg or .pdf "
                              f"(it writes {', '.join(sorted(kinds))})")
    for out in (args.json, args.plot):
        if out and not Path(out).resolve().parent.is_dir():
            raise ConfigError(f"{out}: the folder {Path(out).resolve().parent} does not exist")
        if out and not args.force and os.path.lexists(out):  # before minutes of measuring, not after
            raise exists_error(out)
    try:
        result, table = _measure(args)
    except CheckFailed as error:
        print(f"dumpcmp: error: benchmark stopped, a kernel gave a wrong result: {error}", file=sys.stderr)
        return 1
    options = {k: v for k, v in vars(args).items() if k != "run"}
    result = {"schema": SCHEMA, "benchmark": result["benchmark"], "options": options, **result}
    print(table)
    if args.json:
        from dumpcmp.support.files import atomic_write_text

        atomic_write_text(args.json, json.dumps(result, indent=2, default=_jsonable) + "\n", force=args.force)
        print(f"JSON: {os.fspath(args.json)}")
    if args.plot:
        write_plot(result, args.plot, force=args.force)
        print(f"plot: {os.fspath(args.plot)}")
    return 0


def _jsonable(value: object) -> object:
    if hasattr(value, "tolist"):
        return value.tolist()  # NumPy scalars and shapes
    return str(value)
