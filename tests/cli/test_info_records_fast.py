"""`dumpcmp info TREE --json` writes plain dumps' records straight from the headers the core reads
(`core.scan.read_records`, #35: 10^6 dumps, no `Dump` made for them): on odd trees the JSON is the Python path's
(`gather` without streaming: a `Dump` and a dict per record) byte for byte, at any batch size, and the core's
answer covers every dump once, in order."""

from __future__ import annotations

import os

import numpy as np
import pytest

import dumpcmp
from dumpcmp.cli import info
from dumpcmp.dumps.dump import TensorData
from dumpcmp.dumps.scan import scan
from dumpcmp.support import jsonfile
from dumpcmp.support.native import core

T0 = 1700000000000000


def _fs(folder, name: bytes) -> str:
    return os.path.join(os.fsencode(folder), name).decode("utf-8", "surrogateescape")


def odd_tree(root) -> None:
    run = root / "20260101000000" / "0" / "net" / "1" / "0"
    run.mkdir(parents=True)
    for k in range(9):  # plain dumps around every odd one
        dumpcmp.write_dump(run / f"Conv2D.op{k}.{k + 1}.{T0 + 10 * k}", op_name=f"op{k}",
                           inputs=[TensorData(np.ones((2, 3), np.float32), original_shape=(3, 2))],
                           outputs=[np.ones(k + 1, np.float16)], workspaces=[b"w" * k])
    dumpcmp.write_dump(_fs(run, b"Relu.x\xff.1." + str(T0 + 11).encode()), op_name="raw")  # a non-UTF-8 name
    dumpcmp.write_dump(run / f"Relu.\u00e9.1.{T0 + 12}", op_name="e")  # UTF-8, not ASCII: Python's record
    dumpcmp.write_dump(run / f"Relu.ok.1.{T0 + 13}", op_name="caf\u00e9")  # non-ASCII op name in the header
    (run / f"Relu.bad.9.{T0 + 14}").write_bytes(b"\x07" * 9)  # does not open as a dump
    (run / f"Relu.empty.9.{T0 + 15}").write_bytes(b"")
    (run / f"Relu.gone.9.{T0 + 16}").symlink_to(run / "nowhere")  # a broken link
    os.symlink(run / f"Conv2D.op0.1.{T0}", run / f"Conv2D.link.1.{T0 + 17}")  # a link to a dump
    closed = run / f"Relu.closed.1.{T0 + 18}"
    dumpcmp.write_dump(closed, op_name="closed")
    closed.chmod(0)  # unreadable (but not for root)
    dumpcmp.write_dump(run / f"Opdebug.Node_OpDebug.5.1.{T0 + 19}",
                       outputs=[TensorData(np.zeros(8, np.uint8), data_type="UINT8")])
    (run / "notes.txt").write_text("no scheme")
    (run / "statistic.csv").write_text("Op Type,Op Name,Task ID,Stream ID,Timestamp,Input/Output,Slot,Data Size,"
                                       "Data Type,Format,Shape,Max,Min,Avg,Count\n"
                                       "Add,a,1,1,1,input,0,8,DT_FLOAT,ND,2,1,0,0.5,2\n")
    hashed = root / "20260101000000" / "0" / "net" / "1" / "1"
    hashed.mkdir()
    dumpcmp.write_dump(hashed / "1234567890", op_name="mapped")
    dumpcmp.write_dump(hashed / "2222222222", op_name="unmapped")
    (hashed / "mapping.csv").write_text(f"1234567890,Mul.mapped.1.{T0 + 20}\n")
    gt = root / "gt"
    gt.mkdir()
    np.save(gt / f"op0.0.{T0}.npy", np.ones(3, np.float32))


@pytest.mark.parametrize("batch", [1, 2, 3, 4096])
def test_the_core_records_are_the_python_path_on_odd_trees(tmp_path, monkeypatch, batch):
    odd_tree(tmp_path)
    monkeypatch.setattr(info, "_HEADER_BATCH", batch)
    items, ok = info.gather([str(tmp_path)], stream=True)
    pieces: list[str] = []
    jsonfile.write_text({"ok": ok, "paths": items}, pieces.append)
    plain, ok_plain = info.gather([str(tmp_path)], stream=False)
    assert ok == ok_plain
    assert "".join(pieces) == jsonfile.dumps_text({"ok": ok_plain, "paths": plain})
    runs = plain[0]["runs"]
    assert sum(len(r["dumps"]) for r in runs) >= 14
    reasons = {os.path.basename(s["path"]): s["reason"] for s in plain[0]["skipped"]}
    assert f"Relu.bad.9.{T0 + 14}" in reasons and f"Relu.empty.9.{T0 + 15}" in reasons
    assert "2222222222" in reasons


def test_read_records_covers_every_dump_once_in_order(tmp_path):
    odd_tree(tmp_path)
    plain, _ = info.gather([str(tmp_path)], stream=False)
    records = {d["path"]: d for r in plain[0]["runs"] for d in r["dumps"]}
    index = scan(str(tmp_path), opened=True)
    for group in index:
        entries = group.entries
        out = core.scan.read_records(entries, 2, 1)
        covered = [i for start, stop, _, _ in out for i in range(start, stop)]
        assert covered == list(range(len(entries)))
        for start, stop, text, other in out:
            if text is None:  # left to Python: its Dump, or why it does not open
                assert stop == start + 1 and other is not None
                continue
            assert other is None
            expected = [jsonfile.dumps_text(records[e.path])[:-1] for e in entries[start:stop]]
            assert text == ",\n    ".join(r.replace("\n", "\n    ") for r in expected)


def test_a_del_character_is_written_the_same_whatever_is_written_with_it(tmp_path):
    # orjson leaves DEL (0x7f) raw, the standard library escapes it: a record holding one was written raw alone
    # (info --json's streamed records) and escaped in a document with other non-ASCII text (the whole-value path)
    run = tmp_path / "20260101000000" / "0" / "net" / "1" / "0"
    run.mkdir(parents=True)
    dumpcmp.write_dump(run / f"Relu.a.1.{T0}", op_name="s\x7fed")
    dumpcmp.write_dump(run / f"Relu.b.1.{T0 + 1}", op_name="caf\u00e9")
    items, ok = info.gather([str(tmp_path)], stream=True)
    pieces: list[str] = []
    jsonfile.write_text({"ok": ok, "paths": items}, pieces.append)
    plain, ok_plain = info.gather([str(tmp_path)], stream=False)
    assert "".join(pieces) == jsonfile.dumps_text({"ok": ok_plain, "paths": plain})
    assert "\x7f" not in "".join(pieces) and "s\\u007fed" in "".join(pieces)
    assert jsonfile.dumps_text({"a": "x\x7f"}) == '{\n  "a": "x\\u007f"\n}\n'
