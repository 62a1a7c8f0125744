"""`dumpcmp compare -f` against the original tool (msaccucmp) on the same generated model, in the same run.

    python bench/bench_vs_original.py --msaccucmp /path/to/export --python /path/to/its/python \
        [--dumpcmp /path/to/venv/bin/dumpcmp] [--size 2GB] [--ops 40] [--repeats 1] [--dumpcmp-runs 3] \
        [--keep DIR] [--json FILE]

The model is `dumpcmp.benchmark.model.generate_model`'s (fp16 device dumps in NC1HWC0 and FRACTAL_NZ, fp32 ground
truth .npy, `--size` of ground truth in all) plus the graph JSON both tools read with `-f` (one op per dump, its
output described as tests/oracle/make_corpus.py describes one). Every file is read before each timed run (page-cached
data); then each tool runs as a whole command in a subprocess, timed wall clock from start to exit, so the fixed
costs count (interpreter start, imports, scanning, planning, writing the result): msaccucmp exactly as
tests/oracle/regenerate.py runs it (`msaccucmp.py compare -m DUMPDIR -g GTDIR -f JSON -out OUT` from its
src/compare folder), dumpcmp as `dumpcmp compare -l DUMPDIR -r GTDIR -f JSON -o OUT --quiet` with its default
threads. With `--repeats N` the two alternate N times, dumpcmp `--dumpcmp-runs K` times after each msaccucmp run
(each run on page-cached files), and the median of each tool's runs counts: one dumpcmp run lasts a second or two and
moves by a third with this kind of VM's state, where one msaccucmp run of minutes averages that out over its own
length, so the short side takes more samples. Beside them, in the same run:
every byte of the files read once through mappings in C++, and dumpcmp's start-up alone (`dumpcmp --version`).
`--dumpcmp` names the dumpcmp command to time: give a regular install's, since an editable install built with
`-Ceditable.rebuild=true` runs its build check at every start (the script says so when it times one).

The two result CSVs are compared as tests/oracle/test_oracle.py compares them (tests/oracle/agreement.py): every row of
the original's present in ours and no other, every metric cell equal to the original's printed digits, or the
script stops with exit status 1 naming them; a text cell that differs is printed as a warning. `--keep DIR` generates
into DIR and keeps it; a DIR that already holds the model (same size and ops) is reused as it is.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent / "tests" / "oracle"))

import agreement  # noqa: E402  (tests/oracle/agreement.py: how our result file is held against the original's)
from helpers import graphjson as gj  # noqa: E402  (tests/helpers/graphjson.py)
import regenerate  # noqa: E402  (tests/oracle/regenerate.py: how the original tool is run)

import dumpcmp  # noqa: E402
from dumpcmp.support.files import atomic_write_text  # noqa: E402
from dumpcmp.benchmark.common import machine_info, machine_line, parse_size, time_runs  # noqa: E402
from dumpcmp.benchmark.dumps import read_everything  # noqa: E402
from dumpcmp.benchmark.model import generate_model  # noqa: E402

# the plain layout each device layout of generate_model's model decodes into, as the graph JSON says it
PLAIN = {"NC1HWC0": "NCHW", "FRACTAL_NZ": "ND"}


def dump_folder(root: Path) -> Path:
    """The one folder of generate_model's tree that holds the dump files (the original tool takes that folder)."""
    found = {p.parent for p in (root / "dump").rglob("*") if p.is_file()}
    if len(found) != 1:
        raise SystemExit(f"{root / 'dump'}: expected the dump files in one folder, found {sorted(map(str, found))}")
    return found.pop()


def write_graph(dump_dir: Path, path: Path) -> Path:
    """The graph JSON of the generated model: one op per dump file, in task order, its output 0 described from the
    dump's header (device layout and shape, fp16) with the original op, format and shape."""
    files = sorted((p for p in dump_dir.iterdir() if p.is_file()), key=lambda p: int(p.name.split(".")[-2]))
    ops = []
    for n, f in enumerate(files):
        op_type, name = f.name.split(".")[:2]
        t = dumpcmp.open_dump(f).outputs[0]
        if t.data_type != "FLOAT16" or t.format not in PLAIN:
            raise SystemExit(f"{f}: a {t.data_type} {t.format} output; the graph writer knows fp16 "
                             f"{' and '.join(PLAIN)}")
        plain = PLAIN[t.format]
        out = gj.desc(dtype="DT_FLOAT16", layout=t.format, shape=t.shape, origin_name=name, origin_index=0,
                      origin_format=plain, ge_origin_format=plain, origin_shape=t.original_shape)
        ops.append(gj.op(name, op_type, n, outputs=[out]))
    return gj.write(path, gj.document(*ops, model="bench_net"))


def model(root: Path, size: int, ops: int) -> dict[str, Path]:
    """Generate the model under `root` (or reuse the one already there, generated with the same size and ops)."""
    stamp = root / "bench_vs_original.json"
    wanted = {"size": size, "ops": ops}
    if not (stamp.is_file() and json.loads(stamp.read_text()) == wanted):
        for sub in ("dump", "gt"):
            shutil.rmtree(root / sub, ignore_errors=True)
        generate_model(root, ops=ops, bytes_per_side=size)
        write_graph(dump_folder(root), root / "model.json")
        stamp.write_text(json.dumps(wanted))
    return {"dump": dump_folder(root), "gt": root / "gt", "graph": root / "model.json"}


def files_of(paths: dict[str, Path]) -> list[Path]:
    return sorted(p for key in ("dump", "gt") for p in paths[key].rglob("*") if p.is_file()) + [paths["graph"]]


def warm(files: list[Path]) -> None:
    """Read every file once so that both tools find them in the page cache."""
    for f in files:
        with open(f, "rb", buffering=0) as fh:
            while fh.read(16 << 20):
                pass


def dumpcmp_command() -> list[str]:
    """`dumpcmp`, the console script beside this interpreter (what a user runs), or `python -m dumpcmp`."""
    script = Path(sys.executable).parent / "dumpcmp"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "dumpcmp"]


def rebuilds_on_import() -> bool:
    """Whether this interpreter's dumpcmp is an editable install that runs its build check on every import (about
    half a second per process here): fine for development, not what a user's start-up costs."""
    return any(type(f).__module__.startswith("_editable_skbc_") and getattr(f, "rebuild_flag", False)
               for f in sys.meta_path)


def timed(cmd: list[str], what: str, **kwargs) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"{what} failed ({proc.returncode}): {' '.join(cmd)}")
    return seconds


def run_dumpcmp(command: list[str], paths: dict[str, Path], out: Path) -> float:
    return timed(command + ["compare", "-l", str(paths["dump"]), "-r", str(paths["gt"]), "-f", str(paths["graph"]),
                            "-o", str(out), "--quiet"], "dumpcmp")


def run_original(python: str, tool: Path, paths: dict[str, Path], out: Path) -> tuple[float, Path]:
    out.mkdir(parents=True)
    start = time.perf_counter()
    regenerate.run_tool(python, tool, ["-m", str(paths["dump"]), "-g", str(paths["gt"]), "-f", str(paths["graph"]),
                                       "-out", str(out)])
    seconds = time.perf_counter() - start
    return seconds, regenerate.model_result(out)


def disagreements(original: Path, ours: Path) -> tuple[int, int, list[str], list[str]]:
    """Every row of the original's file against ours, cell by cell, as tests/oracle/test_oracle.py holds them:
    (rows, cells, differences that fail the run: a missing or extra row, a metric cell not the original's printed
    digits; differences in the other, text, cells)."""
    exp_text, our_text = original.read_text(encoding="utf-8"), ours.read_text(encoding="utf-8")
    table = agreement.model_rows(exp_text, our_text, True)
    header, our_header = table[("",)]
    failing = [] if our_header == header else [f"header: {header} != {our_header}"]
    text = []
    rows = cells = 0
    for key, (exp, mine) in table.items():
        if key == ("",):
            continue
        rows += 1
        cells += len(header)
        for d in agreement.cell_diffs(header, exp, mine):
            metric = d.split(":")[0] in agreement.METRICS or mine is None
            (failing if metric else text).append(f"{'/'.join(key)}: {d}")
    matched = sum(mine is not None for key, (_, mine) in table.items() if key != ("",))
    extra = len(agreement.read_rows(our_text)) - 1 - matched
    if extra:
        failing.append(f"{extra} rows in dumpcmp's file that the original's has not")
    return rows, cells, failing, text


def listed(diffs: list[str], limit: int = 40) -> str:
    return "\n  ".join(diffs[:limit]) + (f"\n  ... {len(diffs) - limit} more" if len(diffs) > limit else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--msaccucmp", required=True, type=Path, help="checkout holding src/compare/msaccucmp.py")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs msaccucmp")
    ap.add_argument("--dumpcmp", help="the dumpcmp command to time (default: the one beside this interpreter); "
                    "give a regular (not editable) install's for the figure a user sees")
    ap.add_argument("--size", default="2GB", help="ground-truth bytes in all (the device side is about half: fp16)")
    ap.add_argument("--ops", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=1, help="runs of each tool, alternating; the median counts")
    ap.add_argument("--dumpcmp-runs", type=int, default=3, help="dumpcmp runs after each msaccucmp run (default 3)")
    ap.add_argument("--keep", type=Path, help="generate into this folder and keep it (reused when it matches)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    tool = args.msaccucmp.resolve()
    if not (tool / "src" / "compare" / "msaccucmp.py").is_file():
        raise SystemExit(f"{tool}: no src/compare/msaccucmp.py")
    if args.repeats < 1 or args.dumpcmp_runs < 1:
        raise SystemExit("--repeats and --dumpcmp-runs must be at least 1")

    with tempfile.TemporaryDirectory(prefix="bench-vs-original-") as tmp:
        root = (args.keep or Path(tmp) / "model").resolve()
        root.mkdir(parents=True, exist_ok=True)
        paths = model(root, parse_size(args.size), args.ops)
        files = files_of(paths)
        data_bytes = sum(f.stat().st_size for f in files)
        warm(files)
        command = args.dumpcmp.split() if args.dumpcmp else dumpcmp_command()
        # the fixed cost of a dumpcmp process: interpreter, imports (the C++ core included), argument parsing
        startup = statistics.median(timed(command + ["--version"], "dumpcmp --version") for _ in range(3))
        # every byte of the files read once through mappings in C++ (dumpcmp.benchmark.dumps's probe)
        probe = time_runs(lambda: read_everything(files), 3).median
        runs: dict[str, list[float]] = {"msaccucmp": [], "dumpcmp": []}
        for r in range(args.repeats):
            # each run finds the files page-cached: the other tool's run (msaccucmp holds several GB of arrays)
            # can push them out, and a run that reads from disk measures the disk
            warm(files)
            seconds, original = run_original(args.python, tool, paths, Path(tmp) / f"original_{r}")
            runs["msaccucmp"].append(seconds)
            warm(files)
            for k in range(args.dumpcmp_runs):
                ours = Path(tmp) / f"dumpcmp_{r}_{k}.csv"
                runs["dumpcmp"].append(run_dumpcmp(command, paths, ours))
                rows, cells, failing, text = disagreements(original, ours)
                if failing:
                    print(f"the result files disagree ({len(failing)} rows or metric cells of {cells} cells in "
                          f"{rows} rows):\n  {listed(failing)}", file=sys.stderr)
                    raise SystemExit(1)
                if text and r == 0 and k == 0:
                    print(f"warning: {len(text)} text cells differ (the metrics agree):\n  {listed(text)}",
                          file=sys.stderr)

    median = {k: statistics.median(v) for k, v in runs.items()}
    editable = not args.dumpcmp and rebuilds_on_import()
    figures = {
        "size_arg": args.size, "ops": args.ops, "files": len(files), "data_bytes": data_bytes,
        "dumpcmp_command": command, "dumpcmp_runs_per_repeat": args.dumpcmp_runs, "seconds": runs,
        "median_seconds": median, "dumpcmp_startup_seconds": startup,
        "read_probe_seconds": probe, "ceiling_speedup": median["msaccucmp"] / (startup + 2 * probe),
        "editable_rebuild_on_import": editable,
        "gb_per_s": {k: data_bytes / v / 1e9 for k, v in median.items()},
        "speedup": median["msaccucmp"] / median["dumpcmp"],
        "rows": rows, "cells": cells, "text_cells_differing": text, "machine": machine_info(),
    }
    print(f"{args.ops} ops, {len(files)} files, {data_bytes / 2**20:.0f} MiB (fp16 fractal dumps, fp32 .npy, graph "
          f"JSON), page-cached; {machine_line(figures['machine'])}")
    for k in ("msaccucmp", "dumpcmp"):
        each = ", ".join(f"{s:.2f}" for s in runs[k])
        print(f"  {k:10s} {median[k]:8.2f} s  {figures['gb_per_s'][k]:7.3f} GB/s of files   (runs: {each} s)")
    print(f"  reading the files through mappings (C++) {probe:.2f} s ({data_bytes / probe / 1e9:.2f} GB/s); dumpcmp "
          f"start-up (`dumpcmp --version`: interpreter, imports, C++ core) {startup:.2f} s: start-up plus two reads "
          f"would be {figures['ceiling_speedup']:.0f}x")
    if editable:
        print("  note: this dumpcmp is an editable install that runs its build check on every import; time a regular "
              "install with --dumpcmp for a user's start-up")
    agree = f"all {cells} cells" if not text else f"every metric cell ({len(text)} text cells differ)"
    print(f"  dumpcmp is {figures['speedup']:.1f}x faster, end to end; the result files agree on {agree} of {rows} "
          f"rows")
    if args.json:
        atomic_write_text(args.json, json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
