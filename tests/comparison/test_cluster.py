"""`dumpcmp compare --cluster` (dumpcmp.comparison.cluster): a model-level comparison on a Dask cluster gives the
local run's result files byte for byte, with real scheduler and worker processes on 127.0.0.1 only; a worker lost
mid-run, a cluster left without workers, an unreachable scheduler, Ctrl-C, and no `distributed` installed.

Every process a test starts it stops (the `cluster` fixture kills what is still running)."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import dumpcmp
from dumpcmp.benchmark.model import generate_model
from dumpcmp.comparison.metrics import compare_arrays

pytest.importorskip("distributed")

SRC = str(Path(dumpcmp.__file__).resolve().parents[1])  # the installed package (its _core), not the checkout
DASK = Path(sys.executable).parent / "dask"
ENV = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
       "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
DEVICES, ITERATIONS = 4, 2


def make_tree(root: Path, seed: int = 0) -> tuple[Path, Path]:
    """A dump tree of 4 devices x 2 iterations of 12 operators (NC1HWC0 and FRACTAL_NZ, fp16) and one ground truth;
    one dump file truncated and one ground-truth file missing, so rows fail and say why."""
    tree = root / "dump" / "20260101000000"
    for dev in range(DEVICES):
        for it in range(ITERATIONS):
            dump, gt = generate_model(root / f"g{dev}{it}", ops=12, bytes_per_side=1 << 19, seed=seed + dev * 2 + it)
            dst = tree / str(dev) / "net" / "1" / str(it)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(dump / "20260101000000" / "0" / "net" / "1" / "0"), str(dst))
            if (dev, it) != (0, 0):
                shutil.rmtree(root / f"g{dev}{it}")
    shutil.move(str(root / "g00" / "gt"), str(root / "gt"))
    shutil.rmtree(root / "g00")
    bad = next((tree / "1" / "net" / "1" / "1").glob("Conv2D.op3.*"))
    bad.write_bytes(bad.read_bytes()[:100])
    next((root / "gt").glob("op5.0.*.npy")).unlink()
    return root / "dump", root / "gt"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two trees, the ground truth, and the local run's result files (device vs ground truth, device vs device)."""
    base = tmp_path_factory.mktemp("cluster")
    left, gt = make_tree(base / "a")
    right, _ = make_tree(base / "b", seed=100)
    local = base / "local"
    local.mkdir()
    for name, r in (("gt", gt), ("dvd", right)):
        out = cli("compare", "-l", left, "-r", r, "-o", local / f"{name}.csv", "--quiet")
        assert out.returncode == 0, out.stderr
    return {"left": left, "gt": gt, "right": right, "local": local}


def cli(*args: object, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dumpcmp", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env or ENV)


def same_files(local: Path, name: str, folder: Path) -> None:
    """The result files of the cluster's run: one per run, each byte-identical to the local run's."""
    expected = sorted(p.name for p in local.glob(f"{name}_*.csv"))
    assert len(expected) == DEVICES * ITERATIONS
    assert sorted(p.name for p in folder.glob(f"{name}_*.csv")) == expected
    for file in expected:
        assert (folder / file).read_bytes() == (local / file).read_bytes(), file


class Cluster:
    """A `dask scheduler` and `dask worker` processes on 127.0.0.1 (random ports): real processes, stopped at the
    end."""

    def __init__(self, folder: Path, scheduler_env: dict | None = None) -> None:
        self.folder = folder
        self.procs: list[subprocess.Popen] = []
        self.file = folder / "scheduler.json"
        self.scheduler = self._start([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", "0",
                                      "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(self.file)],
                                     {**ENV, **(scheduler_env or {})})
        deadline = time.monotonic() + 30
        while not self.file.is_file() or not self.file.read_text().strip():
            assert self.scheduler.poll() is None, "the scheduler did not start"
            assert time.monotonic() < deadline, "the scheduler wrote no address"
            time.sleep(0.1)
        time.sleep(0.1)
        self.address = json.loads(self.file.read_text())["address"]

    def _start(self, cmd: list[str], env: dict) -> subprocess.Popen:
        log = open(self.folder / f"p{len(self.procs)}.log", "wb")
        # the workers' scratch folders in the test's own folder: a worker killed on purpose leaves its folder behind
        env = {**env, "DASK_TEMPORARY_DIRECTORY": str(self.folder / "dask-scratch")}
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        log.close()
        self.procs.append(proc)
        return proc

    def worker(self, preload: str | None = None, nanny: bool = False, name: str | None = None) -> subprocess.Popen:
        cmd = [str(DASK), "worker", "--scheduler-file", str(self.file), "--host", "127.0.0.1", "--nthreads", "1",
               "--no-dashboard", "--nanny" if nanny else "--no-nanny", *(["--name", name] if name else [])]
        if preload is not None:
            script = self.folder / f"preload{len(self.procs)}.py"
            script.write_text(preload)
            cmd += ["--preload", str(script)]
        return self._start(cmd, ENV)

    def wait_workers(self, count: int) -> None:
        out = subprocess.run([sys.executable, "-c", WAIT_WORKERS, self.address, str(count)], env=ENV,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr

    def stop(self) -> None:
        for proc in reversed(self.procs):  # workers first, at once; then the scheduler
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM if proc is self.scheduler else signal.SIGKILL)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


WAIT_WORKERS = """
import sys, time
from distributed import Client
with Client(sys.argv[1], timeout=20) as c:
    c.wait_for_workers(int(sys.argv[2]), timeout=40)
"""

# a worker that dies (SIGKILL, as a lost host does) on the first batch it is given
DIE = """
import os, signal
import dumpcmp.comparison.cluster as cluster

def compare_batch(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

cluster.compare_batch = compare_batch
"""

# a worker that takes its first batch and never finishes it (it says so in a file first)
HANG = """
import time
from pathlib import Path
import dumpcmp.comparison.cluster as cluster

def compare_batch(*args, **kwargs):
    Path(MARK).touch()
    time.sleep(600)

cluster.compare_batch = compare_batch
"""


@pytest.fixture
def cluster(tmp_path: Path):
    if not DASK.is_file():
        pytest.skip("the dask command is not installed beside this Python")
    made: list[Cluster] = []

    def start(**kwargs) -> Cluster:
        c = Cluster(tmp_path, **kwargs)
        made.append(c)
        return c

    yield start
    for c in made:
        c.stop()


def test_metric_result_pickles_every_field() -> None:
    """What a worker sends back: a MetricResult pickled and loaded prints and reads the same, the notes the
    original makes from private fields (an all-zero side's NaN cosine, the "1.0" of two zero norms) included."""
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    for y in (x + 0.01, np.zeros_like(x), x.astype(bool), np.float32(2.0)):
        xx = x.astype(bool) if y.dtype == bool else (np.float32(1.5) if np.ndim(y) == 0 else x)
        r = compare_arrays(np.asarray(xx), np.asarray(y))
        back = pickle.loads(pickle.dumps(r))
        assert back.formatted() == r.formatted()
        assert [back.format(i) for i in range(10)] == [r.format(i) for i in range(10)]
        for name in ("count", "mse", "sqnr_db", "min_x", "max_x", "min_y", "max_y", "nan_x", "inf_x", "scalar",
                     "both_bool", "precise", "metrics", "mean_x", "std_y"):
            a, b = getattr(r, name), getattr(back, name)
            assert a == b or (a != a and b != b), name
    zero = compare_arrays(np.zeros(8, np.float32), np.zeros(8, np.float32))
    assert pickle.loads(pickle.dumps(zero)).format(0) == zero.format(0) == "1.0"
    with pytest.raises((ValueError, TypeError)):
        type(zero).__new__(type(zero)).__setstate__((2,))


def test_local_cluster_gives_the_local_files(trees: dict[str, Path], tmp_path: Path) -> None:
    """--cluster local:2 (two worker processes): the result file of every run of a 4-device x 2-iteration tree is
    byte-identical to the local run's, against ground truth and device against device; the summary names the
    workers."""
    for name, right in (("gt", trees["gt"]), ("dvd", trees["right"])):
        out = cli("compare", "-l", trees["left"], "-r", right, "-o", tmp_path / f"{name}.csv", "--cluster", "local:2")
        assert out.returncode == 0, out.stderr
        same_files(trees["local"], name, tmp_path)
        # a run of more than one batch may be shared by both workers (both can read every file): which is timing
        assert re.search(r"compared on [12] worker\(s\): tcp://127\.0\.0\.1:", out.stdout), out.stdout
        assert "Traceback" not in out.stderr


def test_python_api_client(trees: dict[str, Path], tmp_path: Path) -> None:
    """dumpcmp.compare_runs(..., client=) with a Client of a LocalCluster (in a child process): the same files."""
    script = f"""
import sys
from pathlib import Path
import dumpcmp
from dumpcmp.comparison.cluster import connect
if __name__ == "__main__":
    with connect("local:2") as cluster:
        results = dumpcmp.compare_runs({str(trees['left'])!r}, {str(trees['gt'])!r}, client=cluster.client)
    runs = [r.run for r in results]
    from dumpcmp.dumps.naming import run_path
    for r in results:
        r.write(run_path(Path({str(tmp_path / 'gt.csv')!r}), r.run, runs))
"""
    (tmp_path / "api.py").write_text(script)
    out = subprocess.run([sys.executable, str(tmp_path / "api.py")], capture_output=True, text=True, env=ENV,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    same_files(trees["local"], "gt", tmp_path)


def test_scheduler_and_workers_processes(trees: dict[str, Path], tmp_path: Path, cluster) -> None:
    """A real `dask scheduler` and 2 `dask worker` processes: the same files, compared by both workers."""
    c = cluster()
    c.worker()
    c.worker()
    c.wait_workers(2)
    out = cli("compare", "-l", trees["left"], "-r", trees["gt"], "-o", tmp_path / "gt.csv", "--cluster", c.address)
    assert out.returncode == 0, out.stderr
    same_files(trees["local"], "gt", tmp_path)
    assert len(set(line.split("worker(s): ")[1] for line in out.stdout.splitlines() if "worker(s): " in line)) == 2


def test_a_worker_lost_mid_run(trees: dict[str, Path], tmp_path: Path, cluster) -> None:
    """One of two workers dies (SIGKILL) on the first batch it takes: its batch runs again on the other; every row
    is there and the files are the local run's."""
    c = cluster()
    doomed = c.worker(preload=DIE)
    c.worker()
    c.wait_workers(2)
    out = cli("compare", "-l", trees["left"], "-r", trees["gt"], "-o", tmp_path / "gt.csv", "--cluster", c.address,
              "--quiet")
    assert out.returncode == 0, out.stderr
    assert doomed.wait(timeout=10) == -signal.SIGKILL  # it did take a batch, and died of it
    same_files(trees["local"], "gt", tmp_path)


def rows_of(path: Path) -> list[list[str]]:
    import csv

    with open(path, newline="") as f:
        return list(csv.reader(f))


def test_no_worker_left_fails_the_rows_with_the_reason(trees: dict[str, Path], tmp_path: Path, cluster) -> None:
    """The only worker dies on its first batch (no nanny to restart it): after --cluster-timeout the rows not compared
    say why, every row is in the file, and the run does not hang."""
    c = cluster()
    doomed = c.worker(preload=DIE)
    c.wait_workers(1)
    out = cli("compare", "-l", trees["left"], "-r", trees["gt"], "-o", tmp_path / "gt.csv", "--cluster", c.address,
              "--cluster-timeout", "1", "--quiet", timeout=90)
    assert out.returncode == 0, out.stderr
    assert doomed.wait(timeout=10) == -signal.SIGKILL
    for local in sorted(trees["local"].glob("gt_*.csv")):
        mine, theirs = rows_of(tmp_path / local.name), rows_of(local)
        assert len(mine) == len(theirs) and [r[:3] for r in mine] == [r[:3] for r in theirs]
        compared = [r for r in theirs[1:] if r[-1] == ""]
        assert compared, local.name
        reasons = {r[-1] for r, t in zip(mine[1:], theirs[1:]) if t[-1] == ""}
        assert reasons == {"not compared: no worker was left for 1 s (lost, or the client lost the scheduler)"}


def test_a_batch_that_kills_every_worker_says_so(trees: dict[str, Path], tmp_path: Path, cluster) -> None:
    """A batch that kills the worker running it (restarted by its nanny), with the scheduler allowing no failure:
    Dask gives up on it (KilledWorker) and its rows say so."""
    c = cluster(scheduler_env={"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"})
    c.worker(preload=DIE, nanny=True)
    c.wait_workers(1)
    out = cli("compare", "-l", trees["left"], "-r", trees["gt"], "-o", tmp_path / "gt.csv", "--cluster", c.address,
              "--quiet", "--device", "0", "--iteration", "0", timeout=90)
    assert out.returncode == 0, out.stderr
    rows = rows_of(tmp_path / "gt.csv")
    local = rows_of(trees["local"] / "gt_dev0_it0.csv")
    assert len(rows) == len(local)
    reasons = {r[-1] for r, t in zip(rows[1:], local[1:]) if t[-1] == ""}
    assert len(reasons) == 1 and reasons.pop().startswith("not compared: the cluster could not run its batch "
                                                          "(KilledWorker")


def test_unreachable_scheduler_exits_2_with_one_line(trees: dict[str, Path], tmp_path: Path) -> None:
    """No scheduler at the address (a port nothing listens on): exit 2, one line, nothing written."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = cli("compare", "-l", trees["left"], "-r", trees["gt"], "-o", tmp_path / "r.csv", "--cluster",
              f"tcp://127.0.0.1:{port}", timeout=60)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert f"--cluster tcp://127.0.0.1:{port}: no Dask scheduler answered" in out.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("address", ["local:0", "local:x", "two words", "local:100000", "local:\u0663"])
def test_bad_cluster_address(trees: dict[str, Path], address: str) -> None:
    out = cli("compare", "-l", trees["left"], "-r", trees["gt"], "--cluster", address)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "--cluster" in out.stderr


def test_without_distributed_cluster_says_how_to_install(trees: dict[str, Path], tmp_path: Path) -> None:
    """distributed not importable (blocked in sys.modules): --cluster exits 2 with the install line; a compare without
    it never imports distributed."""
    code = ("import sys; sys.modules['distributed'] = None\n"
            "from dumpcmp.cli.dispatch import main\n"
            "code = main(sys.argv[1:])\n"
            "assert 'dask' not in sys.modules or sys.modules.get('distributed') is None\n"
            "sys.exit(code)\n")
    out = subprocess.run([sys.executable, "-c", code, "compare", "-l", str(trees["left"]), "-r", str(trees["gt"]),
                          "--cluster", "local:2"], capture_output=True, text=True, env=ENV, timeout=60)
    assert out.returncode == 2
    assert out.stderr == 'dumpcmp: error: a cluster needs Dask distributed: pip install "dumpcmp[cluster]" (or: pip ' \
                         'install distributed)\n'
    plain = ("import sys\n"
             "from dumpcmp.cli.dispatch import main\n"
             "code = main(sys.argv[1:])\n"
             "assert 'distributed' not in sys.modules and 'dask' not in sys.modules\n"
             "sys.exit(code)\n")
    out = subprocess.run([sys.executable, "-c", plain, "compare", "-l", str(trees["left"]), "-r", str(trees["gt"]),
                          "-o", str(tmp_path / "r.csv"), "--quiet"], capture_output=True, text=True, env=ENV,
                         timeout=60)
    assert out.returncode == 0, out.stderr


def test_ctrl_c_cancels_the_tasks(trees: dict[str, Path], tmp_path: Path, cluster) -> None:
    """Ctrl-C while a worker holds a batch that never ends: the command stops (130), writes nothing, and the
    scheduler is left with none of its tasks."""
    c = cluster()
    mark = tmp_path / "started"
    c.worker(preload=f"MARK = {str(mark)!r}\n" + HANG)
    c.wait_workers(1)
    (tmp_path / "out").mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "dumpcmp", "compare", "-l", str(trees["left"]), "-r",
                             str(trees["gt"]), "-o", str(tmp_path / "out" / "r.csv"), "--cluster", c.address,
                             "--quiet"], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not mark.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else ""
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert list((tmp_path / "out").iterdir()) == []
    left = subprocess.run([sys.executable, "-c", COUNT_TASKS, c.address], env=ENV, capture_output=True, text=True,
                          timeout=60)
    assert left.returncode == 0, left.stderr
    assert left.stdout.strip() == "0"


COUNT_TASKS = """
import sys, time
from distributed import Client
with Client(sys.argv[1], timeout=20) as c:
    deadline = time.monotonic() + 20
    while True:
        n = c.run_on_scheduler(lambda dask_scheduler: sum(1 for k in dask_scheduler.tasks
                                                          if str(k).startswith("dumpcmp-compare-")))
        if n == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    print(n)
"""


def split_tree(left: Path, into: Path) -> dict[str, Path]:
    """The tree's devices spread over three roots, as three hosts' disks would hold them: w1 devices 0 and 1, w2
    device 2, w3 device 3 (hard links: no data copied)."""
    roots = {"w1": (0, 1), "w2": (2,), "w3": (3,)}
    out = {}
    for name, devices in roots.items():
        for dev in devices:
            shutil.copytree(left / "20260101000000" / str(dev), into / name / "20260101000000" / str(dev),
                            copy_function=os.link)
        out[name] = into / name
    return out


def test_each_worker_compares_the_runs_on_its_own_root(trees: dict[str, Path], tmp_path: Path, cluster) -> None:
    """-l w1=ROOT1,w2=ROOT2,w3=ROOT3 on a scheduler with 3 `dask worker` processes named w1..w3 (simulated hosts):
    each worker scans its own root, each run is compared by the worker that holds it, and the files are the local
    run's of the whole tree."""
    roots = split_tree(trees["left"], tmp_path / "hosts")
    c = cluster()
    for name in roots:
        c.worker(name=name)
    c.wait_workers(3)
    out = cli("compare", "-l", ",".join(f"{n}={r}" for n, r in roots.items()), "-r", trees["gt"],
              "-o", tmp_path / "gt.csv", "--cluster", c.address)
    assert out.returncode == 0, out.stderr
    # the same bytes, but for the root a reason naming a file gives (device 1's truncated dump lies under w1's)
    for name in (p.name for p in trees["local"].glob("gt_*.csv")):
        assert (tmp_path / name).read_bytes() == (trees["local"] / name).read_bytes().replace(
            os.fsencode(trees["left"]), os.fsencode(roots["w1"])), name
    hosts = [line.split("worker(s): ")[1] for line in out.stdout.splitlines() if "worker(s): " in line]
    assert len(hosts) == DEVICES * ITERATIONS and all("," not in h for h in hosts)
    # devices 0 and 1 on one worker, 2 and 3 each on another: three workers, the runs of a device on one
    assert [len(set(hosts[i:i + 2])) for i in range(0, len(hosts), 2)] == [1, 1, 1, 1]
    assert hosts[0] == hosts[2] and len({hosts[0], hosts[4], hosts[6]}) == 3


def test_roots_that_hold_nothing(trees: dict[str, Path], tmp_path: Path, cluster) -> None:
    """A worker whose root is missing contributes no run, the others' runs are compared; when no worker finds a
    dump, or a name matches no worker, exit 2 with one line."""
    roots = split_tree(trees["left"], tmp_path / "hosts")
    c = cluster()
    for name in ("w1", "w2"):
        c.worker(name=name)
    c.wait_workers(2)
    out = cli("compare", "-l", f"w1={roots['w1']},w2={tmp_path / 'nothing'}", "-r", trees["gt"],
              "-o", tmp_path / "gt.csv", "--cluster", c.address, "--quiet")
    assert out.returncode == 0, out.stderr
    written = sorted(p.name for p in tmp_path.glob("gt_*.csv"))
    assert written == ["gt_dev0_it0.csv", "gt_dev0_it1.csv", "gt_dev1_it0.csv", "gt_dev1_it1.csv"]
    for name in written:
        assert (tmp_path / name).read_bytes() == (trees["local"] / name).read_bytes().replace(
            os.fsencode(trees["left"]), os.fsencode(roots["w1"]))
    out = cli("compare", "-l", f"w2={tmp_path / 'nothing'}", "-r", trees["gt"], "--cluster", c.address, "--quiet")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "no worker found device dump files there" in out.stderr
    out = cli("compare", "-l", f"w9={roots['w1']}", "-r", trees["gt"], "--cluster", c.address, "--quiet")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "no worker of the cluster is w9" in out.stderr


def test_the_only_holder_lost(trees: dict[str, Path], tmp_path: Path, cluster) -> None:
    """The worker holding devices 0 and 1 dies on its first batch: no other worker holds those files, so after
    --cluster-timeout their rows say why; the other worker's runs are compared as ever."""
    roots = split_tree(trees["left"], tmp_path / "hosts")
    c = cluster()
    doomed = c.worker(preload=DIE, name="w1")
    c.worker(name="w2")
    c.wait_workers(2)
    out = cli("compare", "-l", f"w1={roots['w1']},w2={roots['w2']}", "-r", trees["gt"], "-o", tmp_path / "gt.csv",
              "--cluster", c.address, "--cluster-timeout", "1", "--quiet", timeout=90)
    assert out.returncode == 0, out.stderr
    assert doomed.wait(timeout=10) == -signal.SIGKILL
    for name in ("gt_dev2_it0.csv", "gt_dev2_it1.csv"):
        assert (tmp_path / name).read_bytes() == (trees["local"] / name).read_bytes()
    for name in ("gt_dev0_it0.csv", "gt_dev1_it1.csv"):
        mine, theirs = rows_of(tmp_path / name), rows_of(trees["local"] / name)
        assert len(mine) == len(theirs)
        reasons = {r[-1] for r, t in zip(mine[1:], theirs[1:]) if t[-1] == ""}
        assert reasons == {"not compared: no worker that holds its files was left for 1 s (lost, or the client lost "
                           "the scheduler)"}, name


# a worker that dies (SIGKILL) on the first batch it is given, once: after its nanny restarts it, it compares
DIE_ONCE = """
import os, signal
from pathlib import Path
import dumpcmp.comparison.cluster as cluster

# Dask may run a preload twice in one namespace: keep the real function once, on the module
cluster.real_compare_batch = getattr(cluster, "real_compare_batch", cluster.compare_batch)

def compare_batch(*args, **kwargs):
    mark = Path(MARK)
    if not mark.exists():
        mark.touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return cluster.real_compare_batch(*args, **kwargs)

cluster.compare_batch = compare_batch
"""


def test_a_holder_restarted_by_its_nanny_takes_its_batches_back(trees: dict[str, Path], tmp_path: Path,
                                                                cluster) -> None:
    """The only worker holding devices 0 and 1 dies on its first batch and its nanny restarts it under a new address
    (same name, same disk): its batches go to the restarted worker, and every file is the local run's (before, the
    batches stayed bound to the dead address and their rows failed after --cluster-timeout)."""
    roots = split_tree(trees["left"], tmp_path / "hosts")
    c = cluster()
    c.worker(preload=DIE_ONCE.replace("MARK", repr(str(tmp_path / "died"))), nanny=True, name="w1")
    c.worker(name="w2")
    c.worker(name="w3")
    c.wait_workers(3)
    out = cli("compare", "-l", ",".join(f"{n}={r}" for n, r in roots.items()), "-r", trees["gt"],
              "-o", tmp_path / "gt.csv", "--cluster", c.address, "--cluster-timeout", "60", "--quiet", timeout=120)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "died").exists()  # the worker did die once
    for name in (p.name for p in trees["local"].glob("gt_*.csv")):
        assert (tmp_path / name).read_bytes() == (trees["local"] / name).read_bytes().replace(
            os.fsencode(trees["left"]), os.fsencode(roots["w1"])), name


@pytest.mark.parametrize("peer", ["silent", "garbage"])
def test_a_peer_that_is_not_a_scheduler(trees: dict[str, Path], tmp_path: Path, peer: str) -> None:
    """A port that accepts and then says nothing (Dask's own connect waited for ever), or answers with bytes that
    are not Dask's (a traceback: a frame length of exabytes): exit 2, one line, within the connect timeout."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)
            if peer == "garbage":
                conn.sendall(b"HTTP/1.1 200 OK\r\n\r\n" + b"\xff" * 64)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        out = cli("compare", "-l", trees["left"], "-r", trees["gt"], "-o", tmp_path / "r.csv", "--cluster",
                  f"tcp://127.0.0.1:{server.getsockname()[1]}", timeout=60)
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr
    assert ("no Dask scheduler answered" if peer == "silent" else "is not a Dask scheduler") in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_scheduler_lost_mid_run(trees: dict[str, Path], tmp_path: Path, cluster) -> None:
    """The scheduler killed while a batch is out: the run ends at once, every row in the files, those not compared
    saying the scheduler was lost; no log line or traceback of Dask's on the terminal."""
    c = cluster()
    mark = tmp_path / "started"
    c.worker(preload=f"MARK = {str(mark)!r}\n" + HANG)
    c.wait_workers(1)
    proc = subprocess.Popen([sys.executable, "-m", "dumpcmp", "compare", "-l", str(trees["left"]), "-r",
                             str(trees["gt"]), "-o", str(tmp_path / "gt.csv"), "--cluster", c.address], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not mark.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        os.killpg(c.scheduler.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert err.startswith("dumpcmp: cluster tcp://127.0.0.1:") and err.count("\n") == 1, err
    for local in sorted(trees["local"].glob("gt_*.csv")):
        mine, theirs = rows_of(tmp_path / local.name), rows_of(local)
        assert len(mine) == len(theirs)
        assert all("scheduler-connection-lost" in r[-1] for r, t in zip(mine[1:], theirs[1:]) if t[-1] == "")


def test_max_elements_travels_and_custom_algorithms_stay_here(trees: dict[str, Path], tmp_path: Path) -> None:
    """-max N is applied by the workers (the local run's files with -max); custom algorithms, which are this
    machine's Python files, are refused with --cluster (exit 2, one line)."""
    for how, extra in (("local", []), ("cluster", ["--cluster", "local:2"])):
        (tmp_path / how).mkdir()
        out = cli("compare", "-l", trees["left"], "-r", trees["gt"], "-o", tmp_path / how / "m.csv", "--quiet",
                  "--max-elements", "100", *extra)
        assert out.returncode == 0, out.stderr
    names = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert len(names) == DEVICES * ITERATIONS
    for name in names:
        assert (tmp_path / "cluster" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
    assert (tmp_path / "local" / names[0]).read_bytes() != (trees["local"] / names[0].replace("m_", "gt_")).read_bytes()
    out = cli("compare", "-l", trees["left"], "-r", trees["gt"], "-alg", "3,1", "--cluster", "local:2")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "leave out --cluster" in out.stderr
