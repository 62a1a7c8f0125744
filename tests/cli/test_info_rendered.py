"""`dumpcmp info TREE --json` has the core write the records of plain dumps (#35: 10^6 dumps): the text is the one
the Python records give, byte for byte, whatever the dumps hold, and records the core cannot write as those bytes
(text that is not plain ASCII, numbers past 64 bits, OpDebug files) are still made by Python."""

from __future__ import annotations

import os

import numpy as np

import dumpcmp
from dumpcmp.cli import info
from dumpcmp.dumps.dump import TensorData
from dumpcmp.support import jsonfile
from dumpcmp.support.native import core

T0 = 1700000000000000


def tree(root):
    run = root / "20260101000000" / "0" / "net" / "1" / "0"
    run.mkdir(parents=True)
    one = np.ones((2, 3), np.float32)
    names = {
        f"Conv2D.conv.1.{T0}": "conv", f"Add.add.1.2.{T0 + 1}": "add", f"Add.add6.3.1.2.{T0 + 2}": "add6",
        f"Mul.mul.1.{T0 + 3}.FFTSPLUS.0.1.0": "mul", f"Mul.mul4.1.{T0 + 3}.4.1.0.0": "mul4",
        f"Sub.q.1.{T0 + 4}": 'has "quotes" and \\ and \u00e9', f"Sub.\u00e9.1.{T0 + 5}": "e",
        f"Sub.x\udcff.1.{T0 + 6}": "raw", f"Big.big.18446744073709551616.{T0 + 7}": "big",
        f"Tab.tab.1.{T0 + 8}": "tab\there", f"Empty.empty.1.{T0 + 9}": "",
    }
    for name, op in names.items():
        dumpcmp.write_dump(os.path.join(os.fsencode(run), os.fsencode(name)).decode("utf-8", "surrogateescape"),
                           op_name=op,
                           inputs=[TensorData(one, original_shape=(3, 2)), np.zeros(0, np.int8)],
                           outputs=[TensorData(np.ones(4, np.float16), format="NC1HWC0", shape=(1, 1, 1, 1, 4)),
                                    np.float64(1.5)],
                           buffers=[b"abc"])
    dumpcmp.write_dump(run / f"Opdebug.Node_OpDebug.5.1.{T0 + 10}",
                       outputs=[TensorData(np.zeros(8, np.uint8), data_type="UINT8")])
    dumpcmp.write_dump(run / f"Opdebug.other.5.1.{T0 + 11}", outputs=[np.zeros(2, np.uint8)])
    (run / f"Relu.bad.9.{T0 + 12}").write_bytes(b"\x07" * 9)
    (run / "empty_run").mkdir()
    gt = root / "gt"
    gt.mkdir()
    for k in range(3000):  # more than one batch of records written at once
        np.save(gt / f"op{k}.0.{T0 + k}.npy", np.ones((k % 3 + 1, 2), np.float32 if k % 2 else np.int64))
    np.save(gt / f"\u00e9.0.{T0}.npy", np.ones(2, np.float16))
    (gt / f"bad.0.{T0}.npy").write_bytes(b"\x93NUMPY")
    return run


def test_records_written_by_the_core_are_the_python_records(tmp_path, monkeypatch):
    tree(tmp_path)
    written: list[tuple] = []
    real = core.scan.read_records

    def recorded(entries, indent=0, threads=0):
        out = real(entries, indent, threads)
        written.extend(out)
        return out

    monkeypatch.setattr(core.scan, "read_records", recorded)
    items, ok = info.gather([str(tmp_path)], stream=True)
    pieces: list[str] = []
    jsonfile.write_text({"ok": ok, "paths": items}, pieces.append)
    plain, ok_plain = info.gather([str(tmp_path)], stream=False)
    assert ok and ok_plain
    assert "".join(pieces) == jsonfile.dumps_text({"ok": ok_plain, "paths": plain})
    made = sum(stop - start for start, stop, text, _ in written if text is not None)
    assert made == 7, written  # the plain dumps; quotes, non-ASCII, a raw byte, a tab, 2^64, OpDebug: Python
    dumps = plain[0]["runs"][0]["dumps"]
    assert len(dumps) == 13 and "overflow" in dumps[-2] and "overflow" not in dumps[-1]
    assert plain[0]["summary"]["ground_truth"] == 3001
