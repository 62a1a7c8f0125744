"""Hostile SigmaStar dumps: random truncations, byte flips, insertions and header-number edits of valid binary and
text dumps. Reading every tensor and comparing either raises DumpcmpError naming the file or succeeds; never
another exception, never a hang; a few through the real CLI: exit 2 and one line, or exit 0."""

from __future__ import annotations

import os
from pathlib import Path
import random
import re
import subprocess
import sys

import numpy as np
import pytest

from dumpcmp.comparison.sigmastar import compare_sigmastar
from dumpcmp.dumps.sigmastar import TensorSpec, open_sigmastar, write_sigmastar_dump
from dumpcmp.errors import DumpcmpError
import dumpcmp

SRC = str(Path(dumpcmp.__file__).resolve().parents[1])  # the installed package (its _core), not the checkout


def specs():
    rng = np.random.default_rng(0)
    return [TensorSpec("in/x:0", rng.integers(-99, 99, (1, 3, 3, 2)).astype(np.int16), "INPUT", 0, direction="in",
                       data_type="SGS_S16", scale=0.1),
            TensorSpec("w", rng.integers(-9, 9, (2, 2)).astype(np.int8), "CONST", 1, data_type="SGS_S8",
                       constant=True, scale=0.5),
            TensorSpec("conv", rng.integers(0, 200, (1, 3, 3, 3)).astype(np.uint8), "CONV_2D", 2,
                       data_type="SGS_U8", scale=0.02, zero_point=3, pad_to=4),
            TensorSpec("out", rng.integers(-999, 999, (5,)).astype(np.int16), "SOFTMAX", 3, data_type="SGS_S16",
                       scale=0.001)]


def mutate(data: bytes, rnd: random.Random) -> bytes:
    kind = rnd.randrange(4)
    if kind == 0:
        return data[:rnd.randrange(len(data))]
    if kind == 1:
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        return bytes(b)
    if kind == 2:
        at = rnd.randrange(len(data))
        return data[:at] + bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 8))) + data[at:]
    numbers = list(re.finditer(rb"[\d.]+", data[:data.rfind(b"//buffer")]))
    m = rnd.choice(numbers)
    new = rnd.choice([b"0", b"-1", b"999999999999999999999", b"4294967296", b"x", b"", b"1e308", b"65536",
                      b"inf", b"nan", b"-0"])
    return data[:m.start()] + new + data[m.end():]


def read_all(path):
    dump = open_sigmastar(path)
    for t in dump.tensors:
        dump.values(t)


@pytest.mark.parametrize("text", [False, True])
def test_mutated_dumps_raise_only_dumpcmp_errors(tmp_path, text):
    good = write_sigmastar_dump(tmp_path / ("good.txt" if text else "good.bin"), specs(), is_float=False, text=text)
    data = good.read_bytes()
    rnd = random.Random(39 + text)
    bad = tmp_path / ("bad.txt" if text else "bad.bin")
    outcomes = {"ok": 0, "error": 0}
    for _ in range(400):
        bad.write_bytes(mutate(data, rnd))
        try:
            read_all(bad)
            compare_sigmastar(bad, good)
            compare_sigmastar(good, bad)
            outcomes["ok"] += 1
        except DumpcmpError as error:
            assert str(error).startswith(f"{bad}: ") or str(error).startswith(f"{good}: no output tensor")
            assert "\n" not in str(error)
            outcomes["error"] += 1
    assert outcomes["error"] > 100 and outcomes["ok"] > 10


def test_mutated_dumps_through_the_cli(tmp_path):
    good = write_sigmastar_dump(tmp_path / "good.bin", specs(), is_float=False)
    data = good.read_bytes()
    rnd = random.Random(7)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    for k in range(12):
        bad = tmp_path / f"bad{k}.bin"
        bad.write_bytes(mutate(data, rnd))
        for args in (["info", bad], ["compare", "-l", bad, "-r", good]):
            r = subprocess.run([sys.executable, "-m", "dumpcmp", *map(str, args)], capture_output=True, text=True,
                               env=env, timeout=120)
            assert r.returncode in (0, 2), r.stderr
            assert "Traceback" not in r.stderr
            if r.returncode == 2:
                assert len(r.stderr.splitlines()) == 1 and str(bad) in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["good.bin"] + [f"bad{k}.bin" for k in range(12)])


def test_no_line_break_is_refused_without_reading_it_whole(tmp_path):
    path = tmp_path / "long.bin"
    path.write_bytes(b"isFloat: 1\n//out 0 s: 0.0" + b"0" * (1 << 20))
    with pytest.raises(DumpcmpError, match="a line longer than 65536 bytes at offset 11 in its header"):
        open_sigmastar(path)
