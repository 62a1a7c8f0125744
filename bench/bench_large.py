"""`dumpcmp compare -f` on generated models of many operators (issue #35): what a tensor costs at scale.

    python bench/bench_large.py [--ops 2000,20000] [--with-100k] [--scale 1.0] [--profile 20000] [--json FILE]
                                [--keep DIR] [--msaccucmp DIR --python PY [--dumpcmp-runs 3]]

Each model: `--ops` compute operators, fp16 device dumps in NC1HWC0 and FRACTAL_NZ (dumpcmp.write_dump and
dumpcmp.dumps.layout.convert, as dumpcmp.benchmark.model.generate_model writes them), fp32 `.npy` ground truth, and the
graph JSON both read with `-f` (tests/helpers/graphjson.py's builders, as bench/bench_vs_original.py writes it). The
mix is a real network's: tensor sizes log-uniform between 10 KB and 1 MB of ground truth (times `--scale`), one
tensor in 200 of 16 MB; one operator in four a fused one (two original ops, the dump named after the fused op), and
after one operator in three an inserted TransData (no original op, no ground truth, a dump of its own).

Every file is read once first (page-cached data); then, in the same run:
- every byte of the files read once through mappings in C++ (dumpcmp.benchmark.dumps.read_everything): the baseline;
- `dumpcmp compare -l DUMP -r GT -f GRAPH -o OUT --quiet` in a child process, timed from start to exit: wall clock,
  CPU (user + sys of that child alone, from wait4), peak RSS and peak anonymous memory (VmHWM and RssAnon of
  /proc/<pid>/status, sampled every 5 ms in the child: getrusage's ru_maxrss of a forked child counts the parent's
  pages too), µs of CPU per tensor, GB/s of the files;
- the same command with `--threads 1`, whose result file must be byte-identical (else exit status 1).
`--other-src DIR` times the dumpcmp of another source tree as well (a checkout before a change: its `src/`
with its `_core` built; imported even where this tree is installed in editable mode), whose result must be
byte-identical. `--profile N` runs the N-operator model once more
under cProfile and prints the top costs. The models are generated under a temporary folder (TMPDIR, /tmp by
default) and deleted after, unless `--keep DIR`; the result files always go to the temporary folder (a kept model's
folder is only read).

`--msaccucmp DIR --python PY` runs the original tool once on each model as well, as bench/bench_vs_original.py runs
it (`msaccucmp.py compare -m DUMPFOLDER -g GT -f GRAPH -out OUT`, tests/oracle/regenerate.py's run_tool; wall clock
and its CPU, user + sys of the child as wait4 reports it), between the dumpcmp runs: dumpcmp `--dumpcmp-runs` times
in all (default 3), the first before the original's run and the others after, each result file held against the
original's as bench_vs_original holds them (tests/oracle/agreement.py: every row, every metric cell; exit status 1
when a row or a metric cell differs), and the ratio of the wall clocks (the original's over dumpcmp's median). The
original takes minutes to hours on large models: run it in the background. Both tools get the same treatment: run
this script under `nice` and both are nice'd.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from helpers import graphjson as gj  # noqa: E402  (tests/helpers/graphjson.py)

from bench_vs_original import disagreements, dump_folder, dumpcmp_command, listed, run_original, warm  # noqa: E402
from dumpcmp.benchmark.common import machine_info, machine_line  # noqa: E402
from dumpcmp.benchmark.dumps import read_everything  # noqa: E402
from dumpcmp.benchmark.model import TS  # noqa: E402
from dumpcmp.dumps.dump import TensorData, write_dump  # noqa: E402
from dumpcmp.dumps.layout import convert  # noqa: E402

PLAIN = {"NC1HWC0": "NCHW", "FRACTAL_NZ": "ND"}


def tensor_shape(k: int, elements: int) -> tuple[str, tuple[int, ...]]:
    """Device layout and original shape of compute op k's output of about `elements` fp32 values."""
    if k % 2 == 0:
        c = 20
        hw = max(int(math.sqrt(elements / c)), 2)
        return "NC1HWC0", (1, c, hw, hw)
    m = 64
    return "FRACTAL_NZ", (m, max(elements // m, 2))


def generate_large(root: Path, ops: int, *, scale: float = 1.0, seed: int = 0) -> dict[str, Path]:
    """The model of `ops` compute operators under `root` (see the module docstring): {dump, gt, graph}."""
    dev = root / "dump" / "20260101000000" / "0" / "bench_net" / "1" / "0"
    gt = root / "gt"
    dev.mkdir(parents=True)
    gt.mkdir()
    rng = np.random.default_rng(seed)
    pool = rng.standard_normal((16 << 20) // 4 + 1024, dtype=np.float32)  # values sliced from one draw
    small, big = 10_000 * scale, 1_000_000 * scale
    graph_ops = []
    task = 0
    for k in range(ops):
        nbytes = 16_000_000 * scale if k % 200 == 199 else math.exp(rng.uniform(math.log(small), math.log(big)))
        layout, shape = tensor_shape(k, max(int(nbytes) // 4, 64))
        start = int(rng.integers(0, 1024))
        truth = pool[start:start + math.prod(shape)].reshape(shape)
        device = convert(truth.astype(np.float16), PLAIN[layout], layout)
        original = f"op{k}"
        fused = k % 4 == 3
        name = f"fused{k}" if fused else original
        out = gj.desc(dtype="DT_FLOAT16", layout=layout, shape=device.shape, origin_name=original, origin_index=0,
                      origin_format=PLAIN[layout], ge_origin_format=PLAIN[layout], origin_shape=shape)
        graph_ops.append(gj.op(name, "Conv2D", len(graph_ops), outputs=[out],
                               originals=[f"op{k}_bn", original] if fused else gj.ABSENT))
        task += 1
        write_dump(dev / f"Conv2D.{name}.{task}.{TS + task}", op_name=name,
                   outputs=[TensorData(device, format=layout, original_shape=shape)])
        np.save(gt / f"{original}.0.{TS + task}.npy", truth)
        if k % 3 == 2:  # a layout change the compiler inserted: no original op, no ground truth
            trans = f"trans_TransData_{k}"
            graph_ops.append(gj.op(trans, "TransData", len(graph_ops), originals=[], inputs=[f"{name}:0"],
                                   outputs=[gj.desc(dtype="DT_FLOAT16", layout=layout, shape=device.shape,
                                                    origin_shape=shape, ge_origin_format=PLAIN[layout])]))
            task += 1
            write_dump(dev / f"TransData.{trans}.{task}.{TS + task}", op_name=trans,
                       outputs=[TensorData(device, format=layout, original_shape=shape)])
    gj.write(root / "model.json", gj.document(*graph_ops, model="bench_net"))
    return generate_paths(root)


def status_fields(pid: int) -> dict[str, int]:
    """VmHWM, VmRSS and RssAnon of a process in bytes ({} once it is gone)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            text = f.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS", "RssAnon"):
            out[key] = int(value.split()[0]) * 1024
    return out


def measured_run(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """Run `cmd` as a child: wall seconds, CPU seconds of that child (wait4), peaks of its VmHWM and RssAnon."""
    peaks = {"VmHWM": 0, "RssAnon": 0}
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for key, value in status_fields(proc.pid).items():
                if key in peaks:
                    peaks[key] = max(peaks[key], value)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.stderr.write(out.decode(errors="replace")[-4000:] + err.decode(errors="replace")[-4000:])
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "user_s": usage.ru_utime,
            "sys_s": usage.ru_stime, "peak_rss_bytes": peaks["VmHWM"], "peak_anon_bytes": peaks["RssAnon"]}


def compare_cmd(command: list[str], paths: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return command + ["compare", "-l", str(paths["dump"]), "-r", str(paths["gt"]), "-f", str(paths["graph"]),
                      "-o", str(out), "--quiet", "--force", *extra]


def profile(command: list[str], paths: dict[str, Path], work: Path, top: int = 25) -> str:
    """The model compared once under cProfile (a child process): the `top` costs by own time and cumulative."""
    stats = work / "profile.out"
    cmd = [sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "dumpcmp"]
    subprocess.run(compare_cmd(cmd, paths, work / "profiled.csv"), check=True, capture_output=True)
    lines = []
    for order in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(str(stats), stream=buf).sort_stats(order).print_stats(top)
        lines.append(buf.getvalue())
    return "\n".join(lines)


def original_run(python: str, tool: Path, paths: dict[str, Path], out: Path) -> dict:
    """The original tool once on the model (bench_vs_original's run_original): wall seconds, the CPU of its process
    (and of the children it waited for) as wait4 reported it to subprocess, and its result file."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, result = run_original(python, tool, {**paths, "dump": dump_folder(paths["dump"].parent)}, out)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, sys_ = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    return {"wall_s": wall, "cpu_s": user + sys_, "user_s": user, "sys_s": sys_, "result": result}


def against_original(ops: int, result: Path, ours: Path) -> dict:
    """One dumpcmp result file held against the original's (exit status 1 when a row or a metric cell differs)."""
    rows, cells, failing, text = disagreements(result, ours)
    if failing:
        print(f"{ops} ops: the result files disagree ({len(failing)} rows or metric cells of {cells} cells in {rows} "
              f"rows):\n  {listed(failing)}", file=sys.stderr)
        raise SystemExit(1)
    return {"rows": rows, "cells": cells, "text_cells_differing": text}


def bench_model(ops: int, root: Path, command: list[str], scale: float, check_threads: bool,
                other: str | None = None, work: Path | None = None,
                original: tuple[str, Path] | None = None, dumpcmp_runs: int = 3) -> dict:
    started = time.perf_counter()
    # a model kept by an earlier run (--keep) is reused as it is
    paths = generate_paths(root) if (root / "model.json").is_file() else generate_large(root, ops, scale=scale)
    generated = time.perf_counter() - started
    work = work or root
    work.mkdir(parents=True, exist_ok=True)
    files = sorted(p for key in ("dump", "gt") for p in paths[key].rglob("*") if p.is_file()) + [paths["graph"]]
    tensors = sum(1 for p in files if p.parent != root)
    data_bytes = sum(p.stat().st_size for p in files)
    warm(files)
    t0 = time.perf_counter()
    read_everything(files)
    probe = time.perf_counter() - t0
    run = measured_run(compare_cmd(command, paths, work / "result.csv"))
    figures = {"ops": ops, "graph_json_bytes": paths["graph"].stat().st_size, "files": len(files),
               "tensors": tensors, "data_bytes": data_bytes, "generate_s": generated, "read_probe_s": probe,
               "read_probe_gbps": data_bytes / probe / 1e9, **run,
               "cpu_us_per_tensor": run["cpu_s"] / tensors * 1e6, "gbps": data_bytes / run["wall_s"] / 1e9}
    if other:  # the same command on another dumpcmp source tree (a build before a change), same files, same run
        figures["other"] = measured_run(compare_cmd(other_command(other), paths, work / "result_other.csv"))
        figures["other"]["src"] = other
        figures["other"]["identical"] = (work / "result.csv").read_bytes() == (work / "result_other.csv").read_bytes()
        if not figures["other"]["identical"]:
            raise SystemExit(f"{ops} ops: the result of the dumpcmp in {other} differs")
    if check_threads:
        one = measured_run(compare_cmd(command, paths, work / "result_1.csv", "--threads", "1"))
        same = (work / "result.csv").read_bytes() == (work / "result_1.csv").read_bytes()
        figures["threads_1"] = {**one, "identical": same}
        if not same:
            raise SystemExit(f"{ops} ops: the result with --threads 1 differs from the default's")
    if original:
        # dumpcmp once before the original's run (above) and the other runs after it, on the same page-cached files
        orig = original_run(*original, paths, work / "original")
        figures["original"] = {k: v for k, v in orig.items() if k != "result"}
        figures["original"].update(against_original(ops, orig["result"], work / "result.csv"))
        walls, cpus = [run["wall_s"]], [run["cpu_s"]]
        warm(files)
        for k in range(1, dumpcmp_runs):
            again = measured_run(compare_cmd(command, paths, work / f"result_{k}_after.csv"))
            against_original(ops, orig["result"], work / f"result_{k}_after.csv")
            walls.append(again["wall_s"])
            cpus.append(again["cpu_s"])
        figures["dumpcmp_runs"] = {"wall_s": walls, "cpu_s": cpus, "median_wall_s": statistics.median(walls),
                                   "median_cpu_s": statistics.median(cpus)}
        figures["speedup"] = orig["wall_s"] / statistics.median(walls)
        figures["cpu_ratio"] = orig["cpu_s"] / statistics.median(cpus)
        figures["load_after"] = os.getloadavg()
    return figures


# The dumpcmp of another source tree, run by this interpreter: an editable install of this tree puts its own finder
# first on sys.meta_path, where PYTHONPATH alone would still import this tree's dumpcmp (so "before" and "after" would
# be the same code); the child drops such finders and checks that it runs the other tree.
_OTHER = """\
import sys
src = sys.argv.pop(1)
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable")]
sys.path.insert(0, src)
import dumpcmp
if not dumpcmp.__file__.startswith(src):
    raise SystemExit(f"the other tree's dumpcmp was not imported: {dumpcmp.__file__}")
from dumpcmp.cli.dispatch import run
sys.argv[0] = "dumpcmp"
run()
"""


def other_command(src: str) -> list[str]:
    return [sys.executable, "-c", _OTHER, os.path.abspath(src)]


def mib(n: float) -> str:
    return f"{n / 2**20:7.0f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="2000,20000", help="compute operators of each model, comma separated")
    ap.add_argument("--with-100k", action="store_true", help="add the 100,000-operator model (about 30 GB)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every tensor's size (0.1: a tenth)")
    ap.add_argument("--profile", type=int, default=0, help="profile the model of this many operators (cProfile)")
    ap.add_argument("--no-threads-check", action="store_true", help="skip the --threads 1 run and its check")
    ap.add_argument("--other-src", help="also time the dumpcmp of this source tree (PYTHONPATH: src/ of an older "
                    "checkout, its _core built) on the same files; its result must be byte-identical")
    ap.add_argument("--keep", type=Path, help="generate under this folder and keep it (a model there is reused)")
    ap.add_argument("--msaccucmp", type=Path, help="also run the original tool (a checkout holding "
                    "src/compare/msaccucmp.py) once on each model and hold its result against dumpcmp's")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs msaccucmp")
    ap.add_argument("--dumpcmp-runs", type=int, default=3, help="with --msaccucmp: dumpcmp runs in all, one before "
                    "the original's and the others after (default 3; the median counts)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    counts = [int(x) for x in args.ops.split(",") if x] + ([100_000] if args.with_100k else [])
    original = None
    if args.msaccucmp:
        tool = args.msaccucmp.resolve()
        if not (tool / "src" / "compare" / "msaccucmp.py").is_file():
            raise SystemExit(f"{tool}: no src/compare/msaccucmp.py")
        if args.dumpcmp_runs < 1:
            raise SystemExit("--dumpcmp-runs must be at least 1")
        original = (args.python, tool)
    command = dumpcmp_command()
    machine = machine_info()
    print(machine_line(machine))
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-large-") as tmp:
        base = args.keep or Path(tmp)
        for ops in counts:
            root = base / f"model_{ops}"
            f = bench_model(ops, root, command, args.scale, not args.no_threads_check, args.other_src,
                            Path(tmp) / f"out_{ops}", original, args.dumpcmp_runs)
            results.append(f)
            print(f"{ops} ops: {f['tensors']} tensors, {f['data_bytes'] / 1e9:.2f} GB, graph JSON "
                  f"{f['graph_json_bytes'] / 1e6:.1f} MB (generated in {f['generate_s']:.0f} s)\n"
                  f"  read through mappings {f['read_probe_s']:6.2f} s  {f['read_probe_gbps']:6.2f} GB/s\n"
                  f"  dumpcmp compare -f    {f['wall_s']:6.2f} s  {f['gbps']:6.2f} GB/s  "
                  f"({100 * f['gbps'] / f['read_probe_gbps']:.0f}% of the read)  CPU {f['cpu_s']:.2f} s "
                  f"(user {f['user_s']:.2f}, sys {f['sys_s']:.2f}) = {f['cpu_us_per_tensor']:.0f} us/tensor\n"
                  f"  peak RSS {mib(f['peak_rss_bytes'])}, peak anonymous {mib(f['peak_anon_bytes'])}")
            if "other" in f:
                o = f["other"]
                print(f"  {o['src']}: {o['wall_s']:6.2f} s  CPU {o['cpu_s']:.2f} s = "
                      f"{o['cpu_s'] / f['tensors'] * 1e6:.0f} us/tensor, peak anonymous {mib(o['peak_anon_bytes'])}; "
                      f"result {'byte-identical' if o['identical'] else 'DIFFERENT'}")
            if "threads_1" in f:
                one = f["threads_1"]
                print(f"  --threads 1           {one['wall_s']:6.2f} s  CPU {one['cpu_s']:.2f} s; result "
                      f"{'byte-identical' if one['identical'] else 'DIFFERENT'}")
            if "original" in f:
                o, d = f["original"], f["dumpcmp_runs"]
                agree = (f"all {o['cells']} cells" if not o["text_cells_differing"] else
                         f"every metric cell ({len(o['text_cells_differing'])} text cells differ)")
                print(f"  the original tool     {o['wall_s']:6.0f} s  CPU {o['cpu_s']:.0f} s "
                      f"(user {o['user_s']:.0f}, sys {o['sys_s']:.0f})\n"
                      f"  dumpcmp, {len(d['wall_s'])} runs around it: median {d['median_wall_s']:.2f} s "
                      f"(runs {', '.join(f'{s:.2f}' for s in d['wall_s'])}), CPU median {d['median_cpu_s']:.2f} s\n"
                      f"  dumpcmp is {f['speedup']:.0f}x faster by wall clock ({f['cpu_ratio']:.0f}x by CPU); the "
                      f"result files agree on {agree} of {o['rows']} rows; load average after "
                      f"{', '.join(f'{x:.2f}' for x in f['load_after'])}")
            if ops == args.profile:
                print(profile(command, generate_paths(root), Path(tmp) / f"out_{ops}"))
            if not args.keep:
                shutil.rmtree(root)
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "scale": args.scale, "models": results}, indent=2))


def generate_paths(root: Path) -> dict[str, Path]:
    return {"dump": root / "dump", "gt": root / "gt", "graph": root / "model.json"}


if __name__ == "__main__":
    main()
