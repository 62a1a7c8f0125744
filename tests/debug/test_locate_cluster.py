"""`dumpcmp locate --cluster` (and `locate_runs(client=)`): the replay batches run by Dask workers, real processes on
127.0.0.1, give the rows and the file of a local run: full dumps, output-only dumps (inputs forwarded from their
producers' dumps travel by path and output index) and int8 chains (the op alone replayed on its dequantized input)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("distributed")

from helpers.locate_nets import simulated_net  # noqa: E402

import dumpcmp  # noqa: E402
from dumpcmp.comparison.cluster import connect  # noqa: E402
from dumpcmp.debug.locate import locate_runs  # noqa: E402

SRC = str(Path(dumpcmp.__file__).resolve().parents[1])  # the installed package (its _core), not the checkout
ENV = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture(scope="module")
def client():
    with connect("local:2") as cluster:
        yield cluster


@pytest.mark.parametrize("precision,dump_mode,weight", [("fp16", "all", "b0b_w"), ("fp16", "output", "wq"),
                                                         ("int8", "output", "fc_w")])
def test_the_cluster_replays_the_rows_of_a_local_run(tmp_path: Path, client, precision: str, dump_mode: str,
                                                     weight: str) -> None:
    s = simulated_net(tmp_path, precision, attention=precision == "fp16", weight=weight, dump_mode=dump_mode)
    args = (s["model"], s["dump"], s["gt"])
    # one unit a batch: every op's replay is its own task, spread over both workers
    local = locate_runs(*args, fusion_json=s["json"], batch_bytes=1, threads=1)[0]
    remote = locate_runs(*args, fusion_json=s["json"], batch_bytes=1, threads=1, client=client)[0]
    assert remote.csv_text() == local.csv_text()
    assert remote.statement() == local.statement() and local.origin is not None
    assert [r.note for r in remote.rows] == [r.note for r in local.rows]
    assert any(n.startswith("replayed on 2 worker(s): ") for n in remote.notes), remote.notes
    if dump_mode == "output":
        assert any("from " in r.note for r in remote.rows)  # forwarded inputs were read on the workers


def cli(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dumpcmp", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=ENV)


def test_cli_locate_on_a_local_cluster_writes_the_local_file(tmp_path: Path) -> None:
    s = simulated_net(tmp_path / "net", "fp16", attention=True, weight="b0b_w", dump_mode="output")
    common = ("locate", s["model"], "-l", s["dump"], "-r", s["gt"], "-f", s["json"], "--threads", "1")
    out = cli(*common, "-o", tmp_path / "here", "--quiet")
    assert out.returncode == 0, out.stderr
    out = cli(*common, "-o", tmp_path / "there", "--cluster", "local:2")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "there" / "locate.csv").read_bytes() == (tmp_path / "here" / "locate.csv").read_bytes()
    # the local run's batches (here one: a small model's decoded tensors fit in one), so the same numbers
    assert "note: replayed on 1 worker(s): tcp://127.0.0.1:" in out.stdout
    # compare --locate replays on the cluster it compares on: the same located columns
    out = cli("compare", "-l", s["dump"], "-r", s["gt"], "-f", s["json"], "--threads", "1", "--locate", s["model"],
              "-o", tmp_path / "a.csv", "--quiet")
    assert out.returncode == 0, out.stderr
    out = cli("compare", "-l", s["dump"], "-r", s["gt"], "-f", s["json"], "--threads", "1", "--locate", s["model"],
              "-o", tmp_path / "b.csv", "--quiet", "--cluster", "local:2")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "b.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()


def test_roots_only_the_workers_see_are_refused(tmp_path: Path) -> None:
    s = simulated_net(tmp_path / "net", "fp16", attention=False, weight=None, dump_mode="all")
    out = cli("locate", s["model"], "-l", f"w1={s['dump']}", "-r", s["gt"], "-f", s["json"], "-o", tmp_path / "o",
              "--cluster", "local:1")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "give -l a path it sees" in out.stderr and not (tmp_path / "o").exists()
