"""A cluster's rows streamed (issue #36 with #35's streaming): the rows of the batches back go to the result while
other batches are still running on real `dask worker` processes, the file is the local run's byte for byte, and a
batch's pairs travel packed (`dumpcmp.comparison.cluster.packed`) as the pairs the worker compares.

Every process a test starts it stops (test_cluster's `cluster` fixture)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from dumpcmp.benchmark.model import generate_model

pytest.importorskip("distributed")

from test_cluster import DIE, ENV, cli, cluster, same_files, trees  # noqa: E402,F401  (cluster, trees: fixtures)

# every batch but the first one the worker runs waits (60 s at most) until the client has put a row of the run into
# its result (MARK, made by the client's row sink), then says whether it saw it
WAIT_FOR_ROWS = """
import pickle, time
from pathlib import Path
import dumpcmp.comparison.cluster as cluster

cluster.real_compare_batch = getattr(cluster, "real_compare_batch", cluster.compare_batch)
runs = []

def compare_batch(pairs, *args, **kwargs):
    runs.append(1)
    if len(runs) > 1:
        deadline = time.monotonic() + 60
        while not Path(MARK).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        with open(MARK + ".seen", "a") as f:
            f.write("yes\\n" if Path(MARK).exists() else "no\\n")
    return cluster.real_compare_batch(pairs, *args, **kwargs)

cluster.compare_batch = compare_batch
"""

CLIENT = """
import sys
from pathlib import Path
import dumpcmp
from dumpcmp.comparison.cluster import connect
from dumpcmp.dumps.naming import run_path

address, dump, gt, out, mark = sys.argv[1:]
seen = []

def sink(row):
    seen.append(row)
    Path(mark).touch()

if __name__ == "__main__":
    with connect(address) as cluster:
        cluster.batch_bytes = 1  # a batch for each pair
        results = dumpcmp.compare_runs(dump, gt, client=cluster, quiet=True,
                                       row_sinks=lambda results: [sink for _ in results])
    assert len(seen) == sum(len(r.rows) for r in results), (len(seen), [len(r.rows) for r in results])
    runs = [r.run for r in results]
    for r in results:
        r.write(run_path(Path(out), r.run, runs) if len(runs) > 1 else Path(out))
"""


def test_rows_reach_the_result_while_batches_run(tmp_path: Path, cluster) -> None:  # noqa: F811
    """One worker; every batch after its first waits until the client has put a row into the run's result: the run
    finishes (it would not, were the rows held until every batch is back), every waiting batch saw the row, and the
    file is the local run's byte for byte."""
    dump, gt = generate_model(tmp_path / "m", ops=12, bytes_per_side=1 << 18, seed=3)
    local = tmp_path / "local"
    local.mkdir()
    assert cli("compare", "-l", dump, "-r", gt, "-o", local / "r.csv", "--quiet").returncode == 0
    c = cluster()
    mark = tmp_path / "first-row"
    c.worker(preload=f"MARK = {str(mark)!r}\n" + WAIT_FOR_ROWS)
    c.wait_workers(1)
    (tmp_path / "client.py").write_text(CLIENT)
    got = tmp_path / "got"
    got.mkdir()
    out = subprocess.run([sys.executable, str(tmp_path / "client.py"), c.address, str(dump), str(gt),
                          str(got / "r.csv"), str(mark)], capture_output=True, text=True, env=ENV, timeout=240)
    assert out.returncode == 0, out.stderr
    seen = Path(str(mark) + ".seen").read_text().split()
    assert len(seen) >= 10 and set(seen) == {"yes"}, seen
    expected = sorted(p.name for p in local.iterdir())
    assert sorted(p.name for p in got.iterdir()) == expected
    for name in expected:
        assert (got / name).read_bytes() == (local / name).read_bytes(), name


def test_a_batch_travels_packed_as_the_pairs_it_holds(tmp_path: Path) -> None:
    """What a task carries: one bytes object (nothing for Dask to walk), loaded on the worker as the pairs without
    their opened headers (`travelling`'s), every field the same, a device side's reason kept."""
    from dumpcmp.comparison.cluster import packed, reopened, travelling, unpacked
    from dumpcmp.comparison.runs import paired_runs
    from dumpcmp.comparison.sources import DeviceRef

    dump, gt = generate_model(tmp_path / "m", ops=6, bytes_per_side=1 << 16, seed=5)
    next((next(dump.iterdir()) / "0" / "net" / "1" / "0").glob("*.op3.*")).write_bytes(b"not a dump")
    pairs = paired_runs(dump, gt)[0].pairs
    sent = packed(pairs)
    assert isinstance(sent, bytes)
    back, expected = unpacked(sent), [travelling(p) for p in pairs]
    assert back == expected and pickle.loads(pickle.dumps(back)) == back
    refs = 0
    for a, b in zip(back, expected):
        assert type(a) is type(b) and a.__dict__ == b.__dict__
        for x, y in ((a.npu_ref, b.npu_ref), (a.ground_truth_ref, b.ground_truth_ref)):
            assert type(x) is type(y)
            if isinstance(x, DeviceRef):
                refs += 1
                assert x.dump is None and x.entry.dump is None and x.entry == y.entry
                assert (x.error, x.slices) == (y.error, y.slices)
    assert refs == len(pairs) and any(p.npu_ref.error for p in back)
    assert unpacked(expected) is expected  # a list (a caller's own) is taken as it is
    # opened on the worker: in place (the pairs just unpacked) as when copied, every unreadable side with its reason
    mine, copied = reopened(back, own=True), reopened(expected)
    assert mine is back and all(r.dump is None for p in expected for r in (p.npu_ref,))
    for a, b in zip(mine, copied):
        assert (a.npu_ref.error, a.npu_ref.dump is None) == (b.npu_ref.error, b.npu_ref.dump is None)
        assert (a.npu_ref.dump is None) == bool(a.npu_ref.error)
        assert a.npu_ref.dump is None or a.npu_ref.dump.outputs[0].shape == b.npu_ref.dump.outputs[0].shape


def test_a_worker_killed_mid_run_leaves_the_files_whole_and_nothing_else(trees: dict[str, Path],  # noqa: F811
                                                                          tmp_path: Path, cluster) -> None:  # noqa: F811
    """Streamed result files, one of two `dask worker`s killed (SIGKILL) on the first batch it takes: its batch runs
    on the other, every file is the local run's byte for byte, and the output folder holds those files and nothing
    else (no temporary left of the rows written while batches ran)."""
    c = cluster()
    doomed = c.worker(preload=DIE)
    c.worker()
    c.wait_workers(2)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = cli("compare", "-l", trees["left"], "-r", trees["gt"], "-o", out_dir / "gt.csv", "--cluster", c.address,
              "--quiet")
    assert out.returncode == 0, out.stderr
    assert doomed.wait(timeout=10) == -9
    same_files(trees["local"], "gt", out_dir)
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(p.name for p in trees["local"].glob("gt_*.csv"))
