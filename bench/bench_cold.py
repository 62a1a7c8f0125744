"""`dumpcmp compare -f` on a dump set larger than memory, from a cold page cache (issue #35).

    python bench/bench_cold.py [--gb 32] [--rounds 1] [--keep DIR] [--json FILE]

Generates a model whose files (fp16 device dumps in NC1HWC0 and FRACTAL_NZ, fp32 `.npy` ground truth, the graph
JSON) add up to `--gb` GB, as bench_large.py's generator writes them but with large tensors (8-256 MB of ground truth
each, log-uniform: the activations and weights of a large language model's layers). Then, in each round and in the same
run, each from a page cache dropped first (`echo 3 > /proc/sys/vm/drop_caches`: root only):
- the disk's rate on the same files: every file read once, in order, with 8 MiB reads (what `cat` or `dd` gets): the
  baseline;
- `dumpcmp compare -l DUMP -r GT -f GRAPH -o OUT --quiet` in a child process: wall clock, CPU, peak RSS and peak
  anonymous memory, and its rate against the baseline's.
The first round's result file must equal the result of the same command on a warm cache (the last round's files
stay cached only in part: the set is larger than memory). The model is generated under TMPDIR (/tmp by default) and
deleted after, unless `--keep DIR` (a model there is reused).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from helpers import graphjson as gj  # noqa: E402  (tests/helpers/graphjson.py)

from bench_large import PLAIN, compare_cmd, generate_paths, measured_run, mib, tensor_shape  # noqa: E402
from bench_vs_original import dumpcmp_command  # noqa: E402
from dumpcmp.benchmark.common import machine_info, machine_line  # noqa: E402
from dumpcmp.benchmark.model import TS  # noqa: E402
from dumpcmp.dumps.dump import TensorData, write_dump  # noqa: E402
from dumpcmp.dumps.layout import convert  # noqa: E402

POOL_VALUES = 64 << 20  # 256 MB of float32: the largest ground truth tensor


def generate_cold(root: Path, gigabytes: float, seed: int = 0) -> dict[str, Path]:
    """Operators of 8-256 MB of ground truth each until the files add up to `gigabytes` GB."""
    dev = root / "dump" / "20260101000000" / "0" / "bench_net" / "1" / "0"
    gt = root / "gt"
    dev.mkdir(parents=True)
    gt.mkdir()
    rng = np.random.default_rng(seed)
    pool = rng.standard_normal(POOL_VALUES + 1024, dtype=np.float32)
    graph_ops = []
    total, k = 0, 0
    while total < gigabytes * 1e9:
        nbytes = math.exp(rng.uniform(math.log(8e6), math.log(256e6)))
        layout, shape = tensor_shape(k, int(nbytes) // 4)
        start = int(rng.integers(0, 1024))
        truth = pool[start:start + math.prod(shape)].reshape(shape)
        device = convert(truth.astype(np.float16), PLAIN[layout], layout)
        name = f"op{k}"
        out = gj.desc(dtype="DT_FLOAT16", layout=layout, shape=device.shape, origin_name=name, origin_index=0,
                      origin_format=PLAIN[layout], ge_origin_format=PLAIN[layout], origin_shape=shape)
        graph_ops.append(gj.op(name, "MatMul", k, outputs=[out]))
        dump_path = dev / f"MatMul.{name}.{k + 1}.{TS + k + 1}"
        write_dump(dump_path, op_name=name, outputs=[TensorData(device, format=layout, original_shape=shape)])
        gt_path = gt / f"{name}.0.{TS + k + 1}.npy"
        np.save(gt_path, truth)
        total += dump_path.stat().st_size + gt_path.stat().st_size
        k += 1
    gj.write(root / "model.json", gj.document(*graph_ops, model="bench_net"))
    return generate_paths(root)


def drop_caches() -> None:
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def disk_read(files: list[Path], block: int = 8 << 20, direct: bool = False) -> float:
    """Seconds to read every file once, in order, with `block`-byte reads into one buffer: through the page cache,
    or with O_DIRECT (the device's own rate, without the page cache's work; a page-aligned buffer)."""
    import mmap

    buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT needs
    view = memoryview(buf)
    start = time.perf_counter()
    for p in files:
        fd = os.open(p, os.O_RDONLY | (os.O_DIRECT if direct else 0))
        try:
            while os.readv(fd, [view]) == block:
                pass
        finally:
            os.close(fd)
    elapsed = time.perf_counter() - start
    view.release()
    buf.close()
    return elapsed


def generate_single(root: Path, gigabytes: float) -> dict[str, Path]:
    """One MatMul whose ground truth is `gigabytes` GB of float32 (FRACTAL_NZ fp16 on the device)."""
    dev = root / "dump" / "20260101000000" / "0" / "bench_net" / "1" / "0"
    gt = root / "gt"
    dev.mkdir(parents=True)
    gt.mkdir()
    pool = np.random.default_rng(0).standard_normal(POOL_VALUES, dtype=np.float32)
    layout, shape = "FRACTAL_NZ", (64, int(gigabytes * 1e9) // 4 // 64)
    truth = np.resize(pool, shape)
    device = convert(truth.astype(np.float16), PLAIN[layout], layout)
    out = gj.desc(dtype="DT_FLOAT16", layout=layout, shape=device.shape, origin_name="op0", origin_index=0,
                  origin_format=PLAIN[layout], ge_origin_format=PLAIN[layout], origin_shape=shape)
    write_dump(dev / f"MatMul.op0.1.{TS + 1}", op_name="op0",
               outputs=[TensorData(device, format=layout, original_shape=shape)])
    del device
    np.save(gt / f"op0.0.{TS + 1}.npy", truth)
    gj.write(root / "model.json", gj.document(gj.op("op0", "MatMul", 0, outputs=[out]), model="bench_net"))
    return generate_paths(root)


def memory_cgroup(limit: int) -> Path:
    """A new memory cgroup (v2, else v1) under this process's own, limited to `limit` bytes of memory, page cache
    included: a file larger than the limit is larger than the memory its reader has."""
    own = Path("/proc/self/cgroup").read_text().splitlines()
    v2 = Path("/sys/fs/cgroup/cgroup.controllers").is_file()
    for line in own:
        _, controllers, path = line.split(":", 2)
        if (v2 and controllers == "") or (not v2 and "memory" in controllers.split(",")):
            base = Path("/sys/fs/cgroup") if v2 else Path("/sys/fs/cgroup/memory")
            group = base / path.lstrip("/") / f"dumpcmp-bench-{os.getpid()}"
            group.mkdir()
            (group / ("memory.max" if v2 else "memory.limit_in_bytes")).write_text(str(limit))
            return group
    raise SystemExit("no memory cgroup to limit the run's memory")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=32.0, help="size of the dump set in GB (default 32)")
    ap.add_argument("--single-gb", type=float, help="instead: one tensor of this many GB of ground truth, compared "
                    "with --memory-limit-gb of memory (a memory cgroup, page cache included)")
    ap.add_argument("--memory-limit-gb", type=float, default=1.5, help="with --single-gb (default 1.5)")
    ap.add_argument("--rounds", type=int, default=1, help="cold rounds of the baseline and the compare")
    ap.add_argument("--keep", type=Path, help="generate under this folder and keep it (a model there is reused)")
    ap.add_argument("--extra", nargs="*", default=[], help="more options for dumpcmp compare (e.g. --threads 1)")
    ap.add_argument("--no-check", action="store_true", help="skip the run with --threads 1 whose result must be "
                    "identical")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    command = dumpcmp_command()
    machine = machine_info()
    print(machine_line(machine))
    group = None
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        name = f"single_{args.single_gb:g}gb" if args.single_gb else f"cold_{args.gb:g}gb"
        root = (args.keep or Path(tmp)) / name
        started = time.perf_counter()
        if (root / "model.json").is_file():
            paths = generate_paths(root)
        else:
            paths = generate_single(root, args.single_gb) if args.single_gb else generate_cold(root, args.gb)
        generated = time.perf_counter() - started
        files = sorted(p for key in ("dump", "gt") for p in paths[key].rglob("*") if p.is_file())
        data_bytes = sum(p.stat().st_size for p in files) + paths["graph"].stat().st_size
        memory = machine["memory_total_bytes"]
        if args.single_gb:
            memory = int(args.memory_limit_gb * 1e9)
            group = memory_cgroup(memory)
            command = ["sh", "-c", f'echo $$ > {group / "cgroup.procs"} && exec "$@"', "sh", *command]
        print(f"{len(files)} files, {data_bytes / 1e9:.1f} GB (generated in {generated:.0f} s), the largest "
              f"{max(p.stat().st_size for p in files) / 1e9:.1f} GB; memory {memory / 2**30:.1f} GiB"
              + (" (a memory cgroup, page cache included)" if group else ""))
        rounds = []
        try:
            for n in range(args.rounds):
                drop_caches()
                cached = disk_read(files)
                drop_caches()
                direct = disk_read(files, direct=True)
                drop_caches()
                run = measured_run(compare_cmd(command, paths, root / "result.csv", *args.extra))
                disk = min(cached, direct)
                r = {"disk_cached_s": cached, "disk_direct_s": direct, "disk_gbps": data_bytes / disk / 1e9, **run,
                     "gbps": data_bytes / run["wall_s"] / 1e9}
                rounds.append(r)
                print(f"round {n + 1}: disk read {data_bytes / cached / 1e9:.2f} GB/s through the page cache, "
                      f"{data_bytes / direct / 1e9:.2f} GB/s direct; dumpcmp compare -f {run['wall_s']:7.1f} s "
                      f"{r['gbps']:6.2f} GB/s ({100 * r['gbps'] / r['disk_gbps']:.0f}% of the faster read), CPU "
                      f"{run['cpu_s']:.1f} s (user {run['user_s']:.1f}, sys {run['sys_s']:.1f}), peak RSS "
                      f"{mib(run['peak_rss_bytes'])}, peak anonymous {mib(run['peak_anon_bytes'])}")
            identical = None
            if not args.no_check:
                measured_run(compare_cmd(command, paths, root / "result_check.csv", "--threads", "1"))
                identical = (root / "result.csv").read_bytes() == (root / "result_check.csv").read_bytes()
                print(f"result with --threads 1: {'byte-identical' if identical else 'DIFFERENT'}")
        finally:
            if group is not None:
                group.rmdir()
        if args.json:
            args.json.write_text(json.dumps({"machine": machine, "files": len(files), "data_bytes": data_bytes,
                                             "memory_bytes": memory, "rounds": rounds, "identical": identical},
                                            indent=2))
        if not args.keep:
            shutil.rmtree(root)
        if identical is False:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
