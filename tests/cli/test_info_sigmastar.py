"""`dumpcmp info` on SigmaStar DumpDebug dumps: the tensor list, JSON, and a corrupt file as one line, exit 2."""

from __future__ import annotations

import json
import os
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

from dumpcmp.cli import main
from dumpcmp.dumps.sigmastar import TensorSpec, write_sigmastar_dump
import dumpcmp

SRC = str(Path(dumpcmp.__file__).resolve().parents[1])  # the installed package (its _core), not the checkout


def specs():
    return [TensorSpec("images", np.zeros((1, 2, 2, 3), np.int16), "INPUT", 0, direction="in", data_type="SGS_S16",
                       scale=0.5, zero_point=1),
            TensorSpec("w", np.ones((3, 3), np.int8), "CONST", 1, data_type="SGS_S8", constant=True, scale=0.25),
            TensorSpec("conv1/out:0", np.ones((1, 2, 2, 5), np.int16), "CONV_2D", 2, data_type="SGS_S16",
                       scale=0.125, pad_to=8)]


@pytest.mark.parametrize("text", [False, True])
def test_info_lists_tensors(tmp_path, capsys, text):
    path = write_sigmastar_dump(tmp_path / ("d.txt" if text else "d.bin"), specs(), is_float=False, text=text)
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    kind = "text" if text else "binary"
    assert out[0] == path.name
    assert out[1] == (f"  SigmaStar DumpDebug {kind} dump (isFloat: 0, fixed-point values), 3 tensors, "
                      f"{os.path.getsize(path)} bytes")
    assert out[2] == "     0 in  0   images  op_out[0] INPUT  SGS_S16 shape [1,2,2,3]  24 bytes  s: 0.5 z: 1"
    assert out[3].endswith("SGS_S8 shape [3,3]  9 bytes  s: 0.25 z: 0  constant")
    assert out[4] == ("     2 out 0   conv1/out:0  op_out[2] CONV_2D  SGS_S16 shape [1,2,2,5]  64 bytes  "
                      "s: 0.125 z: 0")


def test_info_json(tmp_path, capsys):
    path = write_sigmastar_dump(tmp_path / "d.bin", specs(), is_float=False)
    assert main(["info", "--json", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    item = doc["paths"][0]
    assert item["kind"] == "sigmastar" and item["file"]["is_float"] is False
    t = item["file"]["tensors"][2]
    assert (t["name"], t["shape"], t["size"], t["op_type"], t["constant"]) == ("conv1/out:0", [1, 2, 2, 5], 64,
                                                                              "CONV_2D", False)


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    return subprocess.run([sys.executable, "-m", "dumpcmp", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("cut, message", [(-10, "tensor 2 ('conv1/out:0'): truncated"),
                                          (None, "tensor 1 ('w'): bad header line")])
def test_info_corrupt_file_one_line_exit_2(tmp_path, cut, message):
    path = write_sigmastar_dump(tmp_path / "d.bin", specs(), is_float=False)
    data = path.read_bytes()
    if cut is None:
        start = data.index(b"//out 0 s: 0.250000")
        data = data[:start] + b"//out 0 s: 0.25 broken name: w\n" + data[data.index(b"\n", start) + 1:]
    else:
        data = data[:cut]
    path.write_bytes(data)
    r = run_cli("info", path)
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.splitlines() == [r.stderr.strip()]
    assert r.stderr.startswith(f"dumpcmp: error: {path}: {message}")
    assert "Traceback" not in r.stderr
