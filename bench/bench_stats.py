"""The statistics compare (issue #37) on a model of many operators: `dumpcmp compare -l stats/ -r gt/ -f model.json`.

    python bench/bench_stats.py [--ops 20000] [--scale 0.01] [--keep DIR] [--json FILE]

The model is bench_large.py's (fp16 NC1HWC0 and FRACTAL_NZ dumps, fp32 `.npy` ground truth, fused and inserted ops,
the graph JSON). Its device statistics are written as the runtime writes a `dump_data: stats` run: one
`statistic.csv` in the run folder of a tree beside the dump tree, a row per device output, computed by the core
(`_core.compare.stats_many`, each dump decoded to its plain shape) and written by `dumpcmp.dumps.stats`. Then, each in
a child process on page-cached files: the statistics compare, the same with `--threads 1` (its result must be
byte-identical), and the tensor compare of the same model for reference: wall, CPU, peak RSS and anonymous memory,
and the size of the statistics file against the tensor dumps'.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from bench_large import PLAIN, compare_cmd, generate_large, generate_paths, measured_run, mib  # noqa: E402
from bench_vs_original import dumpcmp_command, warm  # noqa: E402
from dumpcmp.benchmark.common import machine_info, machine_line  # noqa: E402
from dumpcmp.dumps import naming  # noqa: E402
from dumpcmp.dumps.dump import open_dump  # noqa: E402
from dumpcmp.dumps.stats import STATS_FILE, stats_csv_text, stats_record  # noqa: E402
from dumpcmp.support.native import core  # noqa: E402


def write_statistics(dump_root: Path, stats_root: Path) -> Path:
    """The statistic.csv of every device output under `dump_root`'s run folder, in the same run folder of
    `stats_root`."""
    run = next(p.parent for p in dump_root.rglob("*") if p.is_file())
    records, sources = [], []
    for path in sorted(run.iterdir()):
        name = naming.parse_name(path.name)
        dump = open_dump(path)
        for i, t in enumerate(dump.outputs):
            shape = list(t.original_shape or t.shape)
            sources.append(core.compare.source_from_dump(dump._file, "output", i, PLAIN.get(t.format), shape)
                           if t.format in PLAIN else core.compare.source_from_dump(dump._file, "output", i))
            records.append(dict(op_name=dump.op_name, kind="output", slot=i, op_type=name.op_type,
                                task_id=name.task_id, timestamp=name.timestamp, data_size=t.size,
                                data_type=t.data_type, format=t.format, shape=tuple(shape)))
    out = stats_root / run.relative_to(dump_root) / STATS_FILE
    out.parent.mkdir(parents=True)
    stats = core.compare.stats_many(sources)
    out.write_text(stats_csv_text(stats_record(s, **r) for s, r in zip(stats, records)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=20_000, help="compute operators (default 20,000)")
    ap.add_argument("--scale", type=float, default=0.01, help="bench_large.py's tensor size factor (default 0.01)")
    ap.add_argument("--keep", type=Path, help="generate under this folder and keep it (a model there is reused)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    command = dumpcmp_command()
    machine = machine_info()
    print(machine_line(machine))
    with tempfile.TemporaryDirectory(prefix="bench-stats-") as tmp:
        root = (args.keep or Path(tmp)) / f"model_{args.ops}"
        paths = generate_paths(root) if (root / "model.json").is_file() else \
            generate_large(root, args.ops, scale=args.scale)
        stats_root = root / "stats"
        started = time.perf_counter()
        csv_path = next(stats_root.rglob(STATS_FILE), None) if stats_root.is_dir() else None
        if csv_path is None:
            csv_path = write_statistics(paths["dump"], stats_root)
        written = time.perf_counter() - started
        dump_bytes = sum(p.stat().st_size for p in paths["dump"].rglob("*") if p.is_file())
        warm([p for key in ("dump", "gt") for p in paths[key].rglob("*") if p.is_file()] + [csv_path])
        stat_paths = dict(paths, dump=stats_root)
        runs = {"statistics compare": measured_run(compare_cmd(command, stat_paths, root / "stats.csv")),
                "statistics, --threads 1": measured_run(compare_cmd(command, stat_paths, root / "stats_1.csv",
                                                                    "--threads", "1")),
                "tensor compare": measured_run(compare_cmd(command, paths, root / "tensors.csv"))}
        identical = (root / "stats.csv").read_bytes() == (root / "stats_1.csv").read_bytes()
        rows = csv_path.read_text().count("\n") - 1
        print(f"{args.ops} ops: {rows} statistics rows ({csv_path.stat().st_size:,} bytes, written in {written:.1f} s) "
              f"against {dump_bytes:,} bytes of tensor dumps: {dump_bytes / csv_path.stat().st_size:.1f}x smaller")
        for name, r in runs.items():
            print(f"  {name:24s} {r['wall_s']:7.2f} s  CPU {r['cpu_s']:6.2f} s  peak RSS {mib(r['peak_rss_bytes'])}, "
                  f"anonymous {mib(r['peak_anon_bytes'])}")
        print(f"  result with --threads 1: {'byte-identical' if identical else 'DIFFERENT'}")
        if args.json:
            args.json.write_text(json.dumps({"machine": machine, "ops": args.ops, "scale": args.scale, "rows": rows,
                                             "stats_bytes": csv_path.stat().st_size, "dump_bytes": dump_bytes,
                                             "runs": runs, "identical": identical}, indent=2))
        if not args.keep:
            shutil.rmtree(root)
        if not identical:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
