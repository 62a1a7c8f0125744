"""Hostile FFTS+ slices: overlapping, inconsistent shapes, cut axes that disagree, slicing attributes that are not
what the runtime writes. The compare finishes (no traceback, no crash); the op's row says why."""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import dumpcmp
from dumpcmp.cli import main

TS = 1700000000000700
SRC = os.path.join(os.path.dirname(dumpcmp.__file__), os.pardir)


def facts(mode=1, count=2, cuts=([1, 2],), table=None):
    out = {"threadMode": mode, "slice_instance_num": count, "outputCutList": [list(c) for c in cuts]}
    if table is not None:
        out["output_tensor_slice"] = table
    return out


def rng_dims(lo, hi, rows=3):
    return [{"lower": 0, "higher": rows}, {"lower": lo, "higher": hi}]


def write(folder, op, parts, attrs, manual=False):
    folder.mkdir(parents=True, exist_ok=True)
    for k, (part, attr) in enumerate(zip(parts, attrs)):
        name = f"{op}_lxslice{k}" if manual else op
        value = attr if isinstance(attr, str) else json.dumps(attr)
        dumpcmp.write_dump(folder / f"Relu.{name}.3.{TS}.4.1.{k}.0", op_name=name, inputs=[part], outputs=[part],
                           dump_time=TS, attrs=[] if attr is None else [("_sgt_json_info", value)])


def whole(folder, op, array):
    folder.mkdir(parents=True, exist_ok=True)
    dumpcmp.write_dump(folder / f"Relu.{op}.3.{TS}", op_name=op, inputs=[array], outputs=[array], dump_time=TS)


A = np.arange(12, dtype=np.float32).reshape(3, 4)
TABLE = [[rng_dims(0, 2)], [rng_dims(2, 4)]]
CASES = {
    "overlapping": ([A[:, :2], A[:, 1:3]], [facts(table=[[rng_dims(0, 2)], [rng_dims(1, 3)]])] * 2, False,
                    "overlapping FFTS+ slices"),
    "shapes that do not fit": ([A[:, :2], A[:2, 2:]], [facts()] * 2, True, "does not fit"),
    "cut axes disagree": ([A[:, :2], A[:, 2:]], [facts(mode=0), facts(mode=0, cuts=([2, 1],))], True,
                          "disagree"),
    "not JSON": ([A[:, :2], A[:, 2:]], ["{threadMode: 1"] * 2, False, "not JSON"),
    "not an object": ([A[:, :2], A[:, 2:]], ["[1, 2]"] * 2, False, "not a JSON object"),
    "no attribute": ([A[:, :2], A[:, 2:]], [None] * 2, False, "without its slicing attribute"),
    "cut list of strings": ([A[:, :2], A[:, 2:]], [facts(cuts=(["a", "b"],))] * 2, False, "not a list of lists"),
    "slice table short": ([A[:, :2], A[:, 2:]], [facts(table=[[rng_dims(0, 2)]])] * 2, False,
                          "no valid entry for slice 1"),
    "negative extent": ([A[:, :2], A[:, 2:]], [facts(table=[[rng_dims(2, 0)], [rng_dims(2, 4)]])] * 2, False,
                        "negative extent"),
    "buffer not the slice": ([A[:, :2], A[:, 2:]], [facts(table=[[rng_dims(0, 3)], [rng_dims(3, 4)]])] * 2, False,
                             "holds 6 elements"),
    "data types differ": ([A[:, :2].astype(np.float16), A[:, 2:]], [facts(mode=0)] * 2, True,
                          "is FLOAT, "),
    "cut axis beyond the rank": ([A[:, :2], A[:, 2:]], [facts(mode=0, cuts=([1, 1, 2],))] * 2, True,
                                 "cut along axis 2"),
}


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return {r["TensorIndex"]: r for r in csv.DictReader(f)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_slices_the_row_says_why(tmp_path, case):
    parts, attrs, manual, words = CASES[case]
    write(tmp_path / "left", "op", parts, attrs, manual)
    whole(tmp_path / "right", "op", A)
    out = tmp_path / "r.csv"
    proc = subprocess.run([sys.executable, "-m", "dumpcmp", "compare", "-l", str(tmp_path / "left"), "-r",
                           str(tmp_path / "right"), "-o", str(out), "--quiet"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.path.abspath(SRC)}, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    got = rows(out)
    reasons = " ".join(r["CompareFailReason"] for r in got.values())
    assert words in reasons, got
    assert str(tmp_path / "left") in reasons  # the file is named


def test_a_truncated_slice_the_row_says_why(tmp_path):
    write(tmp_path / "left", "op", [A[:, :2], A[:, 2:]], [facts(table=TABLE)] * 2)
    victim = sorted((tmp_path / "left").iterdir())[1]
    victim.write_bytes(victim.read_bytes()[:-20])
    whole(tmp_path / "right", "op", A)
    out = tmp_path / "r.csv"
    assert main(["compare", "-l", str(tmp_path / "left"), "-r", str(tmp_path / "right"), "-o", str(out),
                 "--quiet"]) in (0, 1)
    reasons = " ".join(r["CompareFailReason"] for r in rows(out).values())
    assert victim.name in reasons, reasons


def test_random_slicing_attributes_never_crash(tmp_path, capsys):
    """Slicing attributes mutated at random (types, ranges, sizes): every run ends with its result file."""
    r = random.Random(38)
    junk = [None, -1, 0, 1, 2, 7, 2 ** 63, -2 ** 70, 1.5, "x", [], {}, [[]], [[1, 2]], [[2, 1]], [[0, 0]],
            [[{"lower": 0, "higher": 2}]], [[[{"lower": 0, "higher": 3}, {"lower": 0, "higher": 2}]]] * 2,
            [[[{"lower": "a", "higher": None}]]], True]
    keys = ["threadMode", "slice_instance_num", "outputCutList", "output_tensor_slice"]
    whole(tmp_path / "right", "op", A)
    for case in range(60):
        left = tmp_path / f"left{case}"
        attrs = []
        for _ in range(2):
            f = facts(table=TABLE)
            for k in r.sample(keys, r.randint(1, 3)):
                f[k] = r.choice(junk)
            attrs.append(f)
        write(left, "op", [A[:, :2], A[:, 2:]], attrs, manual=r.random() < 0.5)
        out = tmp_path / f"r{case}.csv"
        code = main(["compare", "-l", str(left), "-r", str(tmp_path / "right"), "-o", str(out), "--quiet"])
        assert code in (0, 1) and out.is_file()
    capsys.readouterr()
