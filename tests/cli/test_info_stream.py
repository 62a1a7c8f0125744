"""`dumpcmp info TREE --json` on a tree of 10^6 dumps (#35): the records are written as the headers are read, a
batch at a time, not gathered (headers, records and the whole text) first."""

from __future__ import annotations

import json
import sys

import numpy as np

import dumpcmp
from dumpcmp.cli import info, main
from dumpcmp.dumps.dump import TensorData
from dumpcmp.support import jsonfile
from dumpcmp.support.native import core

T0 = 1700000000000000


class Recorder:
    def __init__(self, read):
        self.pieces, self.read, self.read_when = [], read, []

    def write(self, text):
        self.pieces.append(text)
        self.read_when.append(sum(self.read))

    def flush(self):
        pass


def test_records_are_written_while_headers_are_read(tmp_path, monkeypatch):
    run = tmp_path / "20260101000000" / "0" / "net" / "1" / "0"
    run.mkdir(parents=True)
    for k in range(200):
        dumpcmp.write_dump(run / f"Relu.op{k}.{k}.{T0 + k}", op_name=f"op{k}",
                           outputs=[TensorData(np.ones(2, np.float32))])
    (run / f"Relu.bad.99.{T0 + 99}").write_bytes(b"\x07" * 9)
    read: list[int] = []
    real = core.dump.read_headers

    def counted(paths, threads=0):
        read.append(len(paths))
        return real(paths, threads)

    monkeypatch.setattr(core.dump, "read_headers", counted)
    real_records = core.scan.read_records  # the records' headers are read by the core as it writes them

    def counted_records(entries, indent=0, threads=0):
        read.append(len(entries))
        return real_records(entries, indent, threads)

    monkeypatch.setattr(core.scan, "read_records", counted_records)
    monkeypatch.setattr(info, "_HEADER_BATCH", 8, raising=False)
    monkeypatch.setattr(jsonfile, "_FLUSH", 256, raising=False)
    out = Recorder(read)
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["info", "--json", str(tmp_path)]) == 0
    text = "".join(out.pieces)
    tree = json.loads(text)["paths"][0]
    assert tree["summary"] == {"runs": 1, "dumps": 200, "ground_truth": 0, "converted": 0, "stats": 0, "skipped": 1}
    assert [d["op_name"] for d in tree["runs"][0]["dumps"]] == [f"op{k}" for k in range(200)]
    assert tree["skipped"][0]["path"].endswith("Relu.bad.99.1700000000000099")
    assert max(read) <= 64 and sum(read) >= 201  # headers read a batch at a time (one more to find the tree usable)
    first_record = next(i for i, p in enumerate(out.pieces) if '"tensors"' in "".join(out.pieces[:i + 1]))
    assert out.read_when[first_record] < 201  # the first records went out before the last header was read
    monkeypatch.setattr(jsonfile, "_FLUSH", 1 << 20)
    monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    items, ok = info.gather([str(tmp_path)])  # the same records, made whole (the text output's way)
    assert text == jsonfile.dumps_text({"ok": ok, "paths": items})


def test_descs_are_the_tensors_records_in_their_order(tmp_path):
    path = tmp_path / f"Add.a.1.{T0}"
    dumpcmp.write_dump(path, op_name="a", inputs=[TensorData(np.ones(3, np.float16)), TensorData(np.ones(2, np.int8))],
                       outputs=[TensorData(np.ones((2, 2), np.float32))])
    d = dumpcmp.open_dump(path)
    fields = ("kind", "index", "data_type", "format", "shape", "original_shape", "sub_format", "size")
    assert [[getattr(t.desc, f) for f in fields] for t in d.tensors()] == \
        [[getattr(t, f) for f in fields] for t in d.descs()]
    assert [t.kind for t in d.descs()] == ["input", "input", "output"]
