"""`dumpcmp compare -f --cluster` against the same command on one machine (issue #36): what Dask costs.

    python bench/bench_cluster.py [--ops 43000] [--scale 0.01] [--host-ops 4000] [--host-scales 0.01,0.1]
                                  [--other-src DIR] [--runs N] [--json FILE] [--keep DIR]

A real Dask cluster on 127.0.0.1 only: a `dask scheduler` and `dask worker` processes (one thread each, no nanny),
started and stopped by this script; every compare is a child process timed by bench_large.measured_run (wall, CPU,
peak RSS of that child: the client). bench_large's generator writes the models (fp16 device dumps, fp32 `.npy`
ground truth, the graph JSON; at --scale 0.01 the 43,000-operator model holds about 100,000 tensors). In one run:
1. the `--ops` model, page-cached, compared with `--threads 2` on this machine and with `--cluster` on 2 workers x 1
   thread: the throughput ratio (local wall / cluster wall) and whether the result files are byte-identical (else
   exit status 1);
2. Dask's cost per task: 200 empty tasks one after another (a submit and its result: the round trip) and 2,000 at
   once (per task); the tasks the compare ran (the workers' own `executed_count`), times the round trip, as a share
   of the cluster run's wall clock;
3. the bytes the workers sent (their own `transfer_outgoing_bytes_total`, before and after the run: only the tasks'
   results travel, the rows) per 1,000 rows of the result;
4. a simulated 8-host run: 8 workers, named w1..w8, each given its own root (`-l w1=ROOT1,...,w8=ROOT8`) holding
   one device of the `--host-ops` model (hard links of the same files), the ground truth shared; for each of
   `--host-scales` (the same operators, tensors that many times their size): the client's peak RSS, which must not
   follow the data's size (`--host-scales ""`: no 8-host run; `--hosts N`: N hosts).
`--other-src DIR` (a checkout's `src/`, its `_core` built: main before a change) runs parts 1-3 with that dumpcmp as
well, client and workers alike (a cluster of its own), alternating with this tree's `--runs` times (default 1),
each run's ratio printed; every result file must be byte-identical to the first local run's.
Models are generated under a temporary folder (TMPDIR, /tmp by default) and deleted after, unless `--keep DIR`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_large import compare_cmd, generate_large, generate_paths, measured_run, mib  # noqa: E402
from bench_vs_original import dumpcmp_command, warm  # noqa: E402
from dumpcmp.benchmark.common import machine_info, machine_line  # noqa: E402

HOST = "127.0.0.1"  # the only address this script listens on or connects to


def child_env(src: str | None = None) -> dict[str, str]:
    """This environment, with `src` (default: this interpreter's dumpcmp) first on the path of the children."""
    import dumpcmp

    env = dict(os.environ)
    src = src or str(Path(dumpcmp.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    return env


class LoopbackCluster:
    """A `dask scheduler` and `workers` `dask worker` processes of one thread each on 127.0.0.1 (names w1, w2, ...),
    and a Client connected to it; everything stopped on exit."""

    def __init__(self, work: Path, workers: int, env: dict[str, str] | None = None) -> None:
        self.work, self.workers, self.procs, self.env = work, workers, [], env
        self.client = None

    def __enter__(self) -> "LoopbackCluster":
        from distributed import Client

        self.work.mkdir(parents=True, exist_ok=True)
        sched = self.work / "scheduler.json"
        sched.unlink(missing_ok=True)
        env = self.env or child_env()
        log = open(self.work / "dask.log", "ab")
        self.procs.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", HOST, "--port", "0",
             "--no-dashboard", "--scheduler-file", str(sched)], stdout=log, stderr=log, env=env))
        try:
            deadline = time.monotonic() + 60
            while not sched.is_file() or not sched.stat().st_size:
                if time.monotonic() > deadline or self.procs[0].poll() is not None:
                    raise SystemExit(f"the Dask scheduler did not start (see {self.work / 'dask.log'})")
                time.sleep(0.1)
            for k in range(1, self.workers + 1):
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(sched),
                     "--host", HOST, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--name", f"w{k}"],
                    stdout=log, stderr=log, env=env))
            self.client = Client(scheduler_file=str(sched), timeout=30)
            self.client.wait_for_workers(self.workers, timeout=120)
        except BaseException:
            self.__exit__()
            raise
        return self

    @property
    def address(self) -> str:
        return self.client.scheduler.address

    def counters(self) -> dict[str, int]:
        """The workers' own totals: tasks executed, bytes and transfers sent to others (the client included)."""
        def read(dask_worker) -> tuple[int, int, int]:
            return (dask_worker.state.executed_count, dask_worker.transfer_outgoing_bytes_total,
                    dask_worker.transfer_outgoing_count_total)

        got = self.client.run(read).values()
        return {"tasks": sum(g[0] for g in got), "bytes": sum(g[1] for g in got),
                "transfers": sum(g[2] for g in got)}

    def cpu(self) -> list[float]:
        """CPU seconds (user + sys) each process has used so far: the scheduler's, then each worker's."""
        ticks = os.sysconf("SC_CLK_TCK")
        out = []
        for proc in self.procs:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()
            out.append((int(fields[11]) + int(fields[12])) / ticks)
        return out

    def __exit__(self, *exc: object) -> None:
        if self.client is not None:
            self.client.close()
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def timeline(stream: list[dict], began: float, ended: float, workers: int) -> dict[str, float]:
    """When the compare's tasks ran (the scheduler's task stream): seconds from the command's start to the first
    task, from the last task's end to the command's end (the client's work alone), and the share of the time between
    the first task's start and the last one's end when a worker was computing nothing."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for task in stream:
        if "dumpcmp-compare" in str(task.get("key", "")):
            for ss in task["startstops"]:
                if ss["action"] == "compute":
                    spans.setdefault(task["worker"], []).append((ss["start"], ss["stop"]))
    if not spans:
        return {}
    first = min(a for v in spans.values() for a, _ in v)
    last = max(b for v in spans.values() for _, b in v)
    busy = sum(b - a for v in spans.values() for a, b in v)
    return {"before_first_task_s": first - began, "after_last_task_s": ended - last, "tasks_span_s": last - first,
            "workers_idle_share": max(0.0, 1 - busy / max(1e-9, workers * (last - first)))}  # clocks: ms apart


def noop(x: int) -> int:
    return x


def task_cost(client) -> dict[str, float]:
    """Seconds per empty task: one after another (submit, result: the round trip) and 2,000 submitted at once."""
    client.submit(noop, -1, pure=False).result()
    t0 = time.perf_counter()
    for i in range(200):
        client.submit(noop, i, pure=False).result()
    serial = (time.perf_counter() - t0) / 200
    t0 = time.perf_counter()
    client.gather(client.map(noop, range(2000), pure=False))
    batched = (time.perf_counter() - t0) / 2000
    return {"round_trip_s": serial, "per_task_at_once_s": batched}


def model_files(paths: dict[str, Path]) -> list[Path]:
    return sorted(p for key in ("dump", "gt") for p in paths[key].rglob("*") if p.is_file()) + [paths["graph"]]


def rows_of(result: Path) -> int:
    """Rows of a result file (every file written beside it, one per run, counted when there are several)."""
    files = sorted(result.parent.glob(result.stem + "*" + result.suffix))
    return sum(max(0, len(f.read_bytes().splitlines()) - 1) for f in files)


def model(root: Path, ops: int, scale: float) -> dict[str, Path]:
    # a model kept by an earlier run (--keep) is reused as it is
    return generate_paths(root) if (root / "model.json").is_file() else generate_large(root, ops, scale=scale)


def local_vs_cluster(root: Path, ops: int, scale: float, command: list[str], src: str | None = None,
                     tag: str = "") -> dict:
    """Parts 1-3 on the `ops` model: local --threads 2 against 2 workers x 1 thread, same files, same run; `src`:
    the dumpcmp of that source tree (client and workers); `tag`: the result files' suffix."""
    started = time.perf_counter()
    paths = model(root, ops, scale)
    files = model_files(paths)
    data_bytes = sum(p.stat().st_size for p in files)
    tensors = sum(1 for p in files if p.parent != root)
    f = {"ops": ops, "scale": scale, "tensors": tensors, "data_bytes": data_bytes, "src": src or "this tree",
         "generate_s": time.perf_counter() - started}
    warm(files)
    out = root / "out"
    out.mkdir(exist_ok=True)
    env = child_env(src) if src else None
    local, clustered = out / f"local{tag}.csv", out / f"cluster{tag}.csv"
    f["local"] = measured_run(compare_cmd(command, paths, local, "--threads", "2"), env=env)
    with LoopbackCluster(root / "dask", 2, env) as cluster:
        cluster.client.get_task_stream()  # the scheduler records when each task ran from now on
        before, cpu, began = cluster.counters(), cluster.cpu(), time.time()
        f["cluster"] = measured_run(compare_cmd(command, paths, clustered, "--cluster", cluster.address), env=env)
        ended = time.time()
        used = [b - a for a, b in zip(cpu, cluster.cpu())]
        f["timeline"] = timeline(cluster.client.get_task_stream(start=began), began, ended, 2)
        after = cluster.counters()
        f["scheduler_cpu_s"], f["workers_cpu_s"] = used[0], used[1:]
        f["cost"] = task_cost(cluster.client)
    f["result"] = local.read_bytes()
    f["identical"] = f["result"] == clustered.read_bytes()
    f["rows"] = rows_of(local)
    f["ratio"] = f["local"]["wall_s"] / f["cluster"]["wall_s"]
    f["tasks"] = after["tasks"] - before["tasks"]
    f["sent_bytes"] = after["bytes"] - before["bytes"]
    f["transfers"] = after["transfers"] - before["transfers"]
    f["sent_per_1000_rows"] = f["sent_bytes"] / max(1, f["rows"]) * 1000
    f["overhead_s"] = f["tasks"] * f["cost"]["round_trip_s"]
    f["overhead_share"] = f["overhead_s"] / f["cluster"]["wall_s"]
    f["cluster_tensors_per_s_per_worker"] = tensors / f["cluster"]["wall_s"] / 2
    f["cluster_gbps_per_worker"] = data_bytes / f["cluster"]["wall_s"] / 2 / 1e9
    return f


def roots_by_host(paths: dict[str, Path], base: Path, hosts: int) -> list[Path]:
    """`hosts` roots, each holding one device (0, 1, ...) of the model's dump: hard links of its files."""
    src = next(p for p in paths["dump"].rglob("*") if p.is_file()).parent  # .../{time}/0/{model}/{id}/{iteration}
    rel = src.relative_to(paths["dump"]).parts  # (time, device, model, id, iteration)
    roots = []
    for k in range(hosts):
        root = base / f"root{k + 1}"
        dest = root.joinpath(rel[0], str(k), *rel[2:])
        if not dest.is_dir():
            dest.mkdir(parents=True)
            for p in src.iterdir():
                os.link(p, dest / p.name)
        roots.append(root)
    return roots


def eight_hosts(base: Path, ops: int, scales: list[float], command: list[str], hosts: int = 8) -> list[dict]:
    """Part 4: `hosts` workers, each its own root, the client's peak memory for each data size."""
    results = []
    with LoopbackCluster(base / "dask", hosts) as cluster:
        for scale in scales:
            root = base / f"scale_{scale:g}"
            started = time.perf_counter()
            paths = model(root, ops, scale)
            roots = roots_by_host(paths, root / "hosts", hosts)
            generated = time.perf_counter() - started
            device_bytes = sum(p.stat().st_size for p in paths["dump"].rglob("*") if p.is_file())
            gt_bytes = sum(p.stat().st_size for p in paths["gt"].rglob("*") if p.is_file())
            left = ",".join(f"w{k + 1}={r}" for k, r in enumerate(roots))
            out = root / "out"
            out.mkdir(exist_ok=True)
            before = cluster.counters()
            cmd = command + ["compare", "-l", left, "-r", str(paths["gt"]), "-f", str(paths["graph"]),
                             "-o", str(out / "result.csv"), "--quiet", "--force", "--cluster", cluster.address]
            run = measured_run(cmd)
            after = cluster.counters()
            results.append({"ops": ops, "scale": scale, "hosts": hosts, "generate_s": generated,
                            "data_bytes": device_bytes * hosts + gt_bytes, "rows": rows_of(out / "result.csv"),
                            "tasks": after["tasks"] - before["tasks"],
                            "sent_bytes": after["bytes"] - before["bytes"], **run})
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=43_000, help="compute operators of the local-vs-cluster model")
    ap.add_argument("--scale", type=float, default=0.01, help="multiply every tensor's size (see bench_large.py)")
    ap.add_argument("--host-ops", type=int, default=4000, help="compute operators of the 8-host model")
    ap.add_argument("--host-scales", default="0.01,0.1", help="tensor scales of the 8-host runs, comma separated")
    ap.add_argument("--hosts", type=int, default=8, help="simulated hosts (worker processes) of those runs")
    ap.add_argument("--other-src", help="also run parts 1-3 with the dumpcmp of this source tree (src/ of another "
                    "checkout, its _core built), client and workers, alternating with this tree's runs")
    ap.add_argument("--runs", type=int, default=1, help="parts 1-3 this many times (each source, alternating)")
    ap.add_argument("--keep", type=Path, help="generate under this folder and keep it (a model there is reused)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    # SIGTERM unwinds as Ctrl-C does: the cluster's processes are stopped and the temporary folder deleted
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    command = dumpcmp_command()
    machine = machine_info()
    print(machine_line(machine))
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
        base = args.keep or Path(tmp)
        runs, first = [], None
        for n in range(max(1, args.runs)):
            for src in [None, args.other_src] if args.other_src else [None]:
                f = local_vs_cluster(base / f"model_{args.ops}_{args.scale:g}", args.ops, args.scale, command, src,
                                     f"_{len(runs)}")
                first = first or f["result"]
                f["identical"] = f["identical"] and f.pop("result") == first
                runs.append(f)
                print_run(f, n)
        scales = [float(x) for x in args.host_scales.split(",") if x]
        hosts = eight_hosts(base / "hosts", args.host_ops, scales, command, args.hosts) if scales else []
        for h in hosts:
            print(f"{h['hosts']} hosts, {h['ops']} ops x {h['hosts']} devices at scale {h['scale']:g}: "
                  f"{h['data_bytes'] / 1e9:.2f} GB, "
                  f"{h['rows']} rows, {h['tasks']} tasks, {h['wall_s']:.2f} s; client peak RSS "
                  f"{mib(h['peak_rss_bytes'])}, anonymous {mib(h['peak_anon_bytes'])}; workers sent "
                  f"{h['sent_bytes'] / 1e6:.2f} MB")
        if len(runs) > 1:
            print("ratios: " + ", ".join(f"{f['src']} {f['ratio']:.2f}" for f in runs))
        if args.json:
            args.json.write_text(json.dumps({"machine": machine, "local_vs_cluster": runs[0], "runs": runs,
                                             "hosts": hosts}, indent=2))
        if not all(f["identical"] for f in runs):
            raise SystemExit("a cluster's result differs from the local run's (or another source's)")


def print_run(f: dict, n: int) -> None:
    loc, clu, cost = f["local"], f["cluster"], f["cost"]
    print(f"run {n + 1}, {f['src']}: {f['ops']} ops: {f['tensors']} tensors, {f['rows']} rows, "
          f"{f['data_bytes'] / 1e9:.2f} GB (generated in {f['generate_s']:.0f} s)\n"
          f"  local --threads 2          {loc['wall_s']:6.2f} s  CPU {loc['cpu_s']:6.2f} s  "
          f"peak RSS {mib(loc['peak_rss_bytes'])}\n"
          f"  --cluster 2 workers x 1    {clu['wall_s']:6.2f} s  CPU {clu['cpu_s']:6.2f} s (client)  "
          f"peak RSS {mib(clu['peak_rss_bytes'])} (client)\n"
          f"  throughput ratio {f['ratio']:.2f} (goal >= 0.8); result "
          f"{'byte-identical' if f['identical'] else 'DIFFERENT'}\n"
          f"  empty task: round trip {cost['round_trip_s'] * 1e3:.2f} ms, 2,000 at once "
          f"{cost['per_task_at_once_s'] * 1e3:.2f} ms each; the compare ran {f['tasks']} tasks: "
          f"{f['overhead_s']:.2f} s = {100 * f['overhead_share']:.1f}% of the run (goal <= 5%)\n"
          f"  sent by the workers: {f['sent_bytes'] / 1e6:.2f} MB in {f['transfers']} transfers = "
          f"{f['sent_per_1000_rows'] / 1e3:.1f} kB per 1,000 rows (goal <= 1 MB)\n"
          f"  CPU of the cluster's processes during the run: scheduler {f['scheduler_cpu_s']:.2f} s, workers "
          f"{' + '.join(f'{c:.2f}' for c in f['workers_cpu_s'])} s")
    t = f["timeline"]
    if t:
        print(f"  timeline: first task {t['before_first_task_s']:.2f} s after the start, tasks over "
              f"{t['tasks_span_s']:.2f} s with the workers idle {100 * t['workers_idle_share']:.0f}% of it, "
              f"the client alone {t['after_last_task_s']:.2f} s after the last")


if __name__ == "__main__":
    main()
