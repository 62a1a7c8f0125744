"""Scanning a dump tree of many files (issue #35): `dumpcmp info` and the scan `dumpcmp compare` starts with.

    python bench/bench_scan.py [--files 1000000] [--cold] [--compare] [--keep DIR] [--json FILE]

Generates a run folder of `--files` device dumps (Conv2D.op{k}.{k + 1}.{ts}, one FLOAT output of 4 values) and as many
ground-truth `.npy` files (op{k}.0.{ts}.npy): the bytes of one dump written by dumpcmp.write_dump and of one `.npy`
written by NumPy, copied under every name (the header's op name is op0's: names are what a scan reads; `info` also
reads every header). Then, each in a child process, from a warm dentry cache (or with `--cold`, the page, dentry and
inode caches dropped first: root only):
- `dumpcmp info TREE --json` (every header read) and `dumpcmp info GT --json`;
- the scan alone, as `compare` runs it: `dumpcmp.dumps.scan.scan(TREE)` and `scan_ground_truth(GT)`;
- with `--compare`, the whole `dumpcmp compare -l TREE -r GT -o OUT --quiet`.
With `--other-src DIR` (the `src/` of a checkout before a change, its `_core` built: bench_large.py's way), every
run is timed with that tree's dumpcmp as well, in the same run, and its `info` JSON must be byte-identical.
Wall, CPU and peak RSS of each, and files per second. The files are generated under TMPDIR (/tmp) and deleted after,
unless `--keep DIR` (a tree there is reused).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_large import measured_run, mib, other_command  # noqa: E402
from bench_vs_original import dumpcmp_command  # noqa: E402
from dumpcmp.benchmark.common import machine_info, machine_line  # noqa: E402
from dumpcmp.dumps.dump import TensorData, write_dump  # noqa: E402

TS = 1700000000000000


def generate(root: Path, files: int) -> tuple[Path, Path]:
    dev = root / "dump" / "20260101000000" / "0" / "net" / "1" / "0"
    gt = root / "gt"
    dev.mkdir(parents=True)
    gt.mkdir()
    values = np.arange(4, dtype=np.float32).reshape(1, 4)
    write_dump(root / "one.dump", op_name="op0", outputs=[TensorData(values)])
    np.save(root / "one.npy", values)
    dump_bytes, npy_bytes = (root / "one.dump").read_bytes(), (root / "one.npy").read_bytes()
    for k in range(files):
        with open(dev / f"Conv2D.op{k}.{k + 1}.{TS + k}", "wb") as f:
            f.write(dump_bytes)
        with open(gt / f"op{k}.0.{TS + k}.npy", "wb") as f:
            f.write(npy_bytes)
    return root / "dump", gt


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


SCAN = ("import sys; from dumpcmp.dumps.scan import scan, scan_ground_truth; "
        "i = scan(sys.argv[1]); g = scan_ground_truth(sys.argv[2]); print(i.dump_count, len(g))")
# the scan with another tree's dumpcmp (its src/ first on sys.path, an editable install's finder dropped)
OTHER_SCAN = ("import sys; src = sys.argv.pop(1); "
              "sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith('_editable')]; "
              "sys.path.insert(0, src); import dumpcmp; assert dumpcmp.__file__.startswith(src), dumpcmp.__file__; "
              + SCAN.removeprefix("import sys; "))


def to_file(cmd: list[str], out: Path) -> list[str]:
    """`cmd` with its stdout in `out` (exec'd by the shell: the same process is measured)."""
    return ["sh", "-c", 'out="$1"; shift; exec "$@" > "$out"', "sh", str(out), *cmd]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=1_000_000, help="device dumps (and as many .npy files)")
    ap.add_argument("--cold", action="store_true", help="drop the page, dentry and inode caches before each run")
    ap.add_argument("--compare", action="store_true", help="also time the whole dumpcmp compare")
    ap.add_argument("--keep", type=Path, help="generate under this folder and keep it (a tree there is reused)")
    ap.add_argument("--other-src", help="also time the dumpcmp of this source tree (src/ of a checkout before a "
                    "change, its _core built) on the same files; its info JSON must be byte-identical")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    command = dumpcmp_command()
    machine = machine_info()
    print(machine_line(machine))
    with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
        root = (args.keep or Path(tmp)) / f"scan_{args.files}"
        started = time.perf_counter()
        if (root / "gt").is_dir():
            dump, gt = root / "dump", root / "gt"
        else:
            dump, gt = generate(root, args.files)
        print(f"{args.files} device dumps and {args.files} .npy files (generated in "
              f"{time.perf_counter() - started:.0f} s){'; caches dropped before each run' if args.cold else ''}")
        runs = {
            "info TREE": to_file(command + ["info", str(dump), "--json"], root / "info_tree.json"),
            "info GT": to_file(command + ["info", str(gt), "--json"], root / "info_gt.json"),
            "scan (compare's)": [sys.executable, "-c", SCAN, str(dump), str(gt)],
        }
        if args.compare:
            runs["compare"] = command + ["compare", "-l", str(dump), "-r", str(gt), "-o", str(root / "out.csv"),
                                         "--quiet", "--force"]
        if args.other_src:
            other = other_command(args.other_src)
            src = os.path.abspath(args.other_src)
            for name, cmd in list(runs.items()):
                if name == "info TREE":
                    cmd = to_file(other + ["info", str(dump), "--json"], root / "info_tree_other.json")
                elif name == "info GT":
                    cmd = to_file(other + ["info", str(gt), "--json"], root / "info_gt_other.json")
                elif name == "compare":
                    cmd = other + cmd[len(command):]
                    cmd[cmd.index(str(root / "out.csv"))] = str(root / "out_other.csv")
                else:
                    cmd = [sys.executable, "-c", OTHER_SCAN, src, str(dump), str(gt)]
                runs[name + ", other"] = cmd
        figures = {}
        for name, cmd in runs.items():
            if args.cold:
                drop_caches()
            r = measured_run(cmd)
            files = 2 * args.files if name.startswith(("scan (compare's)", "compare")) else args.files
            figures[name] = {**r, "files": files}
            print(f"  {name:25s} {r['wall_s']:7.2f} s  CPU {r['cpu_s']:7.2f} s ({r['user_s']:.2f} user + "
                  f"{r['sys_s']:.2f} sys)  {files / r['wall_s']:10,.0f} files/s  peak RSS {mib(r['peak_rss_bytes'])}, "
                  f"anonymous {mib(r['peak_anon_bytes'])}")
        if args.other_src:
            for a, b in (("info_tree", "info_tree_other"), ("info_gt", "info_gt_other"), ("out", "out_other")):
                ext = ".csv" if a == "out" else ".json"
                if (root / (a + ext)).exists() and not filecmp.cmp(root / (a + ext), root / (b + ext), shallow=False):
                    raise SystemExit(f"{a}{ext}: the other tree's output differs")
            print("  outputs of both trees byte-identical")
        for leftover in ("info_tree", "info_gt", "info_tree_other", "info_gt_other"):
            (root / (leftover + ".json")).unlink(missing_ok=True)
        if args.json:
            args.json.write_text(json.dumps({"machine": machine, "files": args.files, "cold": args.cold,
                                             "runs": figures}, indent=2))
        if not args.keep:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()
