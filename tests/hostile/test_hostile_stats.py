"""Hostile statistics files: seeded mutations of valid statistic.csv files (bytes flipped, cut, lines swapped or
repeated, cells replaced by hostile values) read in process and through the CLI (`info`, `compare`), a FIFO and a
folder named statistic.csv, a cell larger than the CSV field limit. Every outcome is records or one DumpError naming
the file; through the CLI exit 0 or 2, no traceback, nothing written on failure."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest

from dumpcmp.dumps.stats import read_stats
from dumpcmp.errors import DumpError
from helpers.statsfile import COLUMN_SETS, record_of, write_stats

T0 = 1700000000000000
HOSTILE_CELLS = ["", "nan", "-inf", "1e999", "-1e-999", "0x10", "1_000", "١٢", "\x00", "\ufeff1", " 1 ", "N/A",
                 "True", "-0", "9" * 400, "(", "()", "[1,-2]", "1,2", '"', "\u202e", "output", "INPUT", "-1",
                 "18446744073709551616", "nan(1)", "\ud800".encode("utf-8", "surrogatepass").decode("latin-1")]


def valid_text(tmp_path, columns, rng) -> bytes:
    x = rng.standard_normal((3, 4)).astype(np.float32)
    recs = [record_of(f"op{i}", kind, s, x, timestamp=T0 + i) for i in range(4) for kind in ("input", "output")
            for s in range(2)]
    return write_stats(tmp_path / f"v_{columns}.csv", recs, columns=columns).read_bytes()


def mutate(data: bytes, r: random.Random) -> bytes:
    b = bytearray(data)
    kind = r.randrange(6)
    if kind == 0 and b:
        for _ in range(r.randint(1, 8)):
            b[r.randrange(len(b))] = r.randrange(256)
    elif kind == 1:
        b = b[:r.randrange(len(b) + 1)]
    elif kind == 2:
        lines = bytes(b).split(b"\n")
        r.shuffle(lines)
        b = bytearray(b"\n".join(lines))
    elif kind == 3:
        lines = bytes(b).split(b"\n")
        i = r.randrange(len(lines))
        lines.insert(i, lines[i] * r.randint(1, 3))
        b = bytearray(b"\n".join(lines))
    else:
        lines = bytes(b).decode("utf-8").split("\n")
        i = r.randrange(len(lines))
        cells = lines[i].split(",")
        cells[r.randrange(len(cells))] = r.choice(HOSTILE_CELLS)
        lines[i] = ",".join(cells)
        b = bytearray("\n".join(lines).encode("utf-8", "surrogateescape"))
    return bytes(b)


def test_mutations_in_process(tmp_path, rng):
    r = random.Random(37)
    bases = [valid_text(tmp_path, c, rng) for c in sorted(COLUMN_SETS)]
    path = tmp_path / "statistic.csv"
    outcomes = {"records": 0, "error": 0}
    for _ in range(3000):
        path.write_bytes(mutate(r.choice(bases), r))
        try:
            read_stats(path)
            outcomes["records"] += 1
        except DumpError as error:
            assert str(error).startswith(f"{path}: "), error
            outcomes["error"] += 1
    assert outcomes["records"] > 100 and outcomes["error"] > 100, outcomes


def test_special_files(tmp_path):
    fifo = tmp_path / "fifo" / "statistic.csv"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    with pytest.raises(DumpError, match="not a regular file"):
        read_stats(fifo)
    big = tmp_path / "statistic.csv"
    big.write_text("Op Name,IO,Slot,Max Value\n" + "a" * 200_000 + ",input,0,1\n")
    with pytest.raises(DumpError, match="line 2: not valid CSV"):
        read_stats(big)


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "dumpcmp", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=120)


def test_mutations_through_the_cli(tmp_path, rng):
    r = random.Random(3737)
    base = valid_text(tmp_path, "counts", rng)
    gt = tmp_path / "gt"
    gt.mkdir()
    for i in range(4):
        np.save(gt / f"op{i}.0.{T0 + i}.npy", rng.standard_normal((3, 4)).astype(np.float32))
    folder = tmp_path / "stats" / "20240101000000" / "0" / "net" / "1" / "0"
    folder.mkdir(parents=True)
    path = folder / "statistic.csv"
    fifo_tree = tmp_path / "fifo_tree"
    fifo_tree.mkdir()
    os.mkfifo(fifo_tree / "statistic.csv")
    codes = {0: 0, 2: 0}
    for k in range(12):
        path.write_bytes(mutate(base, r))
        out = tmp_path / f"out{k}.csv"
        for args in (("info", path), ("compare", "-l", tmp_path / "stats", "-r", gt, "-o", out)):
            done = run_cli(*args)
            assert done.returncode in (0, 2), (args, done.stderr)
            assert "Traceback" not in done.stderr, done.stderr
            codes[done.returncode] += 1
            if args[0] == "compare" and done.returncode == 2:
                assert not out.exists() and str(path) in done.stderr
    # a FIFO in a tree is skipped by the scan; named, it is refused at once
    done = run_cli("info", fifo_tree / "statistic.csv")
    assert done.returncode == 2 and "not a regular file" in done.stderr
    assert codes[0] and codes[2], codes
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".dumpcmp-")) == []
