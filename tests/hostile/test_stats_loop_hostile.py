"""Hostile inputs to the statistics loop's new writers and readers: `--narrow` onto a symlink, a folder or a missing
folder, a run without a model name, a statistic.csv beside the ground truth that is a FIFO, a folder, a link to
/dev/zero or a file of garbage, `golden --stats` stopped half way. Each: exit 2 with one line naming the file (or
the run it would have used), no traceback, no hang, nothing written through a link, nothing left half-written."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from helpers.statsfile import record_of, write_stats

RUN = ("20260101000000", "0", "net", "1", "0")
TS = 1700000000000000


@pytest.fixture
def dumps(tmp_path):
    rng = np.random.default_rng(9)
    gt = tmp_path / "gt"
    gt.mkdir()
    recs = []
    for k, op in enumerate(["a", "b", "c"]):
        x = rng.standard_normal(16).astype(np.float32)
        np.save(gt / f"{op}.0.{TS + k}.npy", x)
        recs.append(record_of(op, "output", 0, x * (4 if op == "b" else 1), timestamp=TS + k))
    write_stats(tmp_path.joinpath("s", *RUN) / "statistic.csv", recs, columns="counts")
    return tmp_path


def _cli(*args, timeout=60):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "dumpcmp", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_narrow_onto_a_symlink_is_refused_then_replaced_never_written_through(dumps):
    target = dumps / "precious.json"
    target.write_text("keep me\n")
    link = dumps / "n.json"
    link.symlink_to(target)
    base = ["compare", "-l", dumps / "s", "-r", dumps / "gt", "--narrow", link]
    r = _cli(*base)
    assert r.returncode == 2 and "Traceback" not in r.stderr and str(link) in r.stderr
    assert target.read_text() == "keep me\n" and link.is_symlink()
    r = _cli(*base, "--force")
    assert r.returncode == 0, r.stderr
    assert target.read_text() == "keep me\n" and not link.is_symlink()
    assert '"layer": [\n          "b"' in link.read_text()
    # without -o the table alone is on standard output
    assert "narrowed to" not in r.stdout and "narrowed to" in r.stderr


@pytest.mark.parametrize("where", ["folder", "missing", "dangling"])
def test_narrow_path_that_cannot_be_written(dumps, where):
    path = {"folder": dumps, "missing": dumps / "no" / "n.json", "dangling": dumps / "d.json"}[where]
    if where == "dangling":
        path.symlink_to(dumps / "nowhere" / "x.json")
    r = _cli("compare", "-l", dumps / "s", "-r", dumps / "gt", "--narrow", path, "-o", dumps / "r.csv")
    assert r.returncode == 2 and "Traceback" not in r.stderr and str(path) in r.stderr
    assert not (dumps / "r.csv").exists()  # refused before the run
    assert not (dumps / "nowhere").exists()


def test_a_run_without_a_model_name_cannot_be_narrowed(dumps):
    flat = dumps / "flat"
    flat.mkdir()
    os.replace(dumps.joinpath("s", *RUN) / "statistic.csv", flat / "statistic.csv")
    r = _cli("compare", "-l", flat, "-r", dumps / "gt", "--narrow", dumps / "n.json", "-o", dumps / "r.csv")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "no model name" in r.stderr
    assert not (dumps / "n.json").exists()


@pytest.mark.parametrize("kind", ["fifo", "folder", "devzero"])
def test_a_statistics_file_beside_the_ground_truth_that_is_not_a_file_is_not_read(dumps, kind):
    p = dumps / "gt" / "statistic.csv"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "folder":
        p.mkdir()
    else:
        p.symlink_to("/dev/zero")
    r = _cli("compare", "-l", dumps / "s", "-r", dumps / "gt", "-o", dumps / "r.csv", timeout=60)
    assert r.returncode == 0, r.stderr
    assert "statistics read from" not in r.stdout
    assert "error" in (dumps / "r.csv").read_text()  # b's planted fault, from the .npy files


@pytest.mark.parametrize("garbage", [b"\xff\xfe\x00garbage", b"", b"Op Name,IO,Slot,Max Value\nb,output,0,\"1"])
def test_a_bad_statistics_file_beside_the_ground_truth_is_exit_2(dumps, garbage):
    p = dumps / "gt" / "statistic.csv"
    p.write_bytes(garbage)
    r = _cli("compare", "-l", dumps / "s", "-r", dumps / "gt", "-o", dumps / "r.csv")
    assert r.returncode == 2 and "Traceback" not in r.stderr and str(p) in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (dumps / "r.csv").exists()


def test_golden_stats_stopped_half_way_leaves_nothing(tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import dumpcmp.onnx.golden as golden
    from dumpcmp.errors import DumpcmpError
    from helpers.locate_nets import build_net, net_input

    model = build_net(tmp_path / "net.onnx", attention=False)
    out = tmp_path / "gt"
    out.mkdir()
    (out / "mine.txt").write_text("user file")

    def full_disk(*a, **k):
        raise DumpcmpError(f"{out / 'statistic.csv'}: No space left on device")

    monkeypatch.setattr(golden, "_write_stats", full_disk)
    with pytest.raises(DumpcmpError):
        golden.dump_golden(model, {"x": net_input()}, out, stats=True)
    assert os.listdir(out) == ["mine.txt"]
