"""The oracle harness's stand-in for CANN's libascend_dump_parser.so (tests/oracle/standin/dump_parser.cpp), built
as regenerate.py builds it and called as the current msaccucmp calls it (ctypes, the whole file, a JSON path): its
JSON must say what dumpcmp's own reader reads from the same dump, and a damaged header must fail without a file."""

from __future__ import annotations

import ctypes
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import regenerate  # noqa: E402  (this folder is on sys.path: see tests/conftest.py)

import dumpcmp
from dumpcmp import TensorData

FORMAT_NUMBERS = {"NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "FRACTAL_NZ": 29}
TYPE_NUMBERS = {"FLOAT": 1, "FLOAT16": 2, "INT8": 3, "INT32": 7, "BOOL": 11, "BF16": 27}


@pytest.fixture(scope="module")
def parser(tmp_path_factory):
    if shutil.which("c++") is None:
        pytest.skip("no C++ compiler")
    folder = regenerate.build_standin(tmp_path_factory.mktemp("standin"))
    lib = ctypes.CDLL(str(folder / "libascend_dump_parser.so"))
    lib.ParseDumpProtoToJson.restype = ctypes.c_int
    return lib


def _parse(lib, data: bytes, out) -> int:
    return lib.ParseDumpProtoToJson(ctypes.c_char_p(data), ctypes.c_size_t(len(data)), str(out).encode())


def test_json_says_what_dumpcmp_reads(parser, tmp_path):
    rng = np.random.default_rng(3)
    nz = TensorData(rng.standard_normal((32, 16)).astype(np.float16), format="FRACTAL_NZ", original_shape=(18, 20),
                    address=0x1234567890, sub_format=0)
    x = TensorData(rng.standard_normal((1, 2, 3, 3, 16)).astype(np.float32), format="NC1HWC0",
                   original_shape=(1, 20, 3, 3), address=7)
    path = dumpcmp.write_dump(tmp_path / "Conv2D.op_\"q\"\\x.1.1700000000000000", op_name='op_"q"\\x',
                              inputs=[x, rng.integers(-5, 5, (4,)).astype(np.int32)], outputs=[nz, np.array(True)],
                              dump_time=1700000000000000, attrs=[("_sgt_json_info", '{"threadMode": 1}')],
                              workspaces=[b"abc"])
    out = tmp_path / "h.json"
    assert _parse(parser, Path(path).read_bytes(), out) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    mine = dumpcmp.open_dump(path)
    assert doc["op_name"] == mine.op_name and int(doc["dump_time"]) == mine.dump_time
    assert doc["attr"] == [{"name": "_sgt_json_info", "value": '{"threadMode": 1}'}]
    assert [w["size"] for w in doc["space"]] == [3]
    for kind, ours in (("input", mine.inputs), ("output", mine.outputs)):
        assert len(doc[kind]) == len(ours)
        for item, t in zip(doc[kind], ours):
            assert "data" not in item  # the reader takes the bytes from the file after the header
            assert item["data_type"] == TYPE_NUMBERS[t.data_type]
            assert item["format"] == FORMAT_NUMBERS[t.format]
            assert item["shape"]["dim"] == list(t.shape)
            assert item["original_shape"]["dim"] == list(t.original_shape or ())
            assert int(item["size"]) == t.size and item["address"] == t.address


def test_damaged_header_fails_without_a_file(parser, tmp_path):
    path = dumpcmp.write_dump(tmp_path / "Relu.r.1.1700000000000000", outputs=[np.ones(3, np.float32)])
    data = Path(path).read_bytes()
    header = int.from_bytes(data[:8], "little")
    for bad in (data[:5], (header + 10 ** 6).to_bytes(8, "little") + data[8:], data[:8] + b"\xff" * header):
        out = tmp_path / "bad.json"
        assert _parse(parser, bad, out) != 0
        assert not out.exists()
