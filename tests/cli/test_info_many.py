"""`dumpcmp info --json` as written for trees of 10^6 files (#35): the parsed names are dataclasses.asdict's, the
.npy entries are NumPy's own reading, and the JSON (orjson, indented by two) reads back to the same values; names
that are not ASCII or not UTF-8 still come out as escapes."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

import dumpcmp
from dumpcmp.cli import main
from dumpcmp.dumps import naming
from dumpcmp.dumps.dump import TensorData

T0 = 1700000000000000


def run_json(capsys, *args):
    code = main(["info", "--json", *map(str, args)])
    out = capsys.readouterr().out
    return code, out, json.loads(out)


def expected_name(file_name: str) -> dict:
    parsed = naming.parse_name(file_name)
    want = {"scheme": parsed.scheme, **dataclasses.asdict(parsed)}
    if want.get("shape") is not None:
        want["shape"] = list(want["shape"])
    return want


def test_names_and_npy_entries_are_the_references(tmp_path, capsys):
    run = tmp_path / "dump" / "20260101000000" / "0" / "net" / "1" / "0"
    run.mkdir(parents=True)
    names = [f"Conv2D.conv1.3.9.{T0}", f"MatMul.mm.4.{T0 + 1}.FFTSPLUS.2.1.0", f"Relu.r.5.6.{T0 + 2}.7"]
    for name in names:
        dumpcmp.write_dump(run / name, op_name=name.split(".")[1], outputs=[TensorData(np.ones(4, np.float32))])
    gt = tmp_path / "gt"
    gt.mkdir()
    arrays = {f"conv1.0.{T0}.npy": np.arange(6, dtype=np.float16).reshape(2, 3),
              f"mm.0.{T0}.npy": np.asfortranarray(np.ones((3, 4), np.float32)),  # not plain: NumPy reads it
              f"r.0.{T0}.npy": np.zeros((0, 5), np.int32),
              "conv1.output.0.2x3.npy": np.ones((2, 3), np.float32)}
    for file_name, a in arrays.items():
        np.save(gt / file_name, a)
    code, text, doc = run_json(capsys, tmp_path / "dump", gt)
    assert code == 0 and text.startswith('{\n  "ok": true,')
    dumps = [d for run_ in doc["paths"][0]["runs"] for d in run_["dumps"]]
    assert sorted((d["file_name"], json.dumps(d["name"], sort_keys=True)) for d in dumps) == \
        sorted((n, json.dumps(expected_name(n), sort_keys=True)) for n in names)
    tree = doc["paths"][1]
    entries = tree["ground_truth"] + tree.get("converted", [])
    assert {e["file_name"] for e in entries} == set(arrays)
    for e in entries:
        a = np.load(gt / e["file_name"], mmap_mode="r")
        assert e["name"] == expected_name(e["file_name"])
        assert (e["dtype"], e["shape"], e["bytes"]) == (str(a.dtype), list(a.shape), a.nbytes)
        assert e["fortran_order"] == bool(a.flags.f_contiguous and not a.flags.c_contiguous)


def test_names_that_are_not_ascii_or_not_utf8_are_escaped(tmp_path, capsys):
    folder = os.fsencode(tmp_path)
    for raw in (b"Conv2D.caf\xc3\xa9.1.1700000000000000", b"Conv2D.bad\xff.2.1700000000000001"):
        path = os.path.join(folder, raw)
        dumpcmp.write_dump(os.fsdecode(path), op_name="x", outputs=[TensorData(np.ones(2, np.float32))])
    code, text, doc = run_json(capsys, tmp_path)
    assert code == 0 and text.isascii()
    got = sorted(d["file_name"] for r in doc["paths"][0]["runs"] for d in r["dumps"])
    assert got == sorted([os.fsdecode(b"Conv2D.bad\xff.2.1700000000000001"), "Conv2D.caf\u00e9.1.1700000000000000"])
